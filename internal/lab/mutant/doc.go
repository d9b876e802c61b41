// Package mutant measures a test suite by the mutants of the source it
// kills.
//
// Mutants are generated from Go's AST (go.go) and, for Python and
// JavaScript, from a tokenizer that skips strings and comments
// (token.go). Each mutant is written into its own O(1) fork of one
// pristine snapshot and the tests run there confined, offline and with a
// timeout, so a mutant that deletes files or loops forever harms nothing
// (run.go). A mutant is killed (the tests failed), survived (they passed),
// timed out, not compiling (the build failed), or not covered (no test
// reaches its line, known from `go test -coverprofile`; such mutants are
// not run). The report is a terminal summary (per-file score, surviving
// mutants as diffs) and Stryker's mutation-testing-report-schema JSON
// (report.go).
package mutant
