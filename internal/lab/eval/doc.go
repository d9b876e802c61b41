// Package eval ranks agents on the user's own repository: killed mutants
// become faults, each fault is committed into a throwaway clone, every
// engine races (alone, one fork) to fix it, and the judge scores its patch
// with the repository's tests — the ones that killed the mutant among
// them, its edits to tests stripped. Each attempt is an ordinary run in
// the runs folder, so `show` and the UI read it.
package eval
