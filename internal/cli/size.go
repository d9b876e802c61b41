package cli

import "github.com/forkbomb/forkbomb/internal/sandbox"

// parseSize reads a byte count such as 512M, 2G, 1.5GiB or 4096 (binary
// units: K = 1024); the lab's policies read sizes the same way.
func parseSize(s string) (int64, error) { return sandbox.ParseBytes(s) }
