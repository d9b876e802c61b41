//go:build !linux

package world

// slimWorker: only Linux confines the worker, and only there does a slim one pay for its
// checks; elsewhere the running binary serves.
func slimWorker() *workerBin { return nil }
