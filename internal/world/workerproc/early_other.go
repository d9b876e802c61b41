//go:build !linux

package workerproc

// Claim returns nil: only Linux starts a worker early (only there is there a slim one).
func Claim() *Proc { return nil }
