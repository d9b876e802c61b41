// Package world is a whole agent workspace in one file: a virtual filesystem and the state of a
// shell, run by mvdan.cc/sh's interpreter with every filesystem, stat, directory and exec hook
// routed to that filesystem and every command a Go function. Nothing a script does reaches the
// host: there is no host path behind any name, no host binary behind any command and no socket
// API at all. A checkpoint is a copy of the file; a fork is a copy.
//
// The file format is documented in docs/WORLDS.md; format.go is its only reader and writer.
package world
