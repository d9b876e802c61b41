//go:build !linux

package sandbox

// availableMemory is unknown here: DefaultLimits uses a fixed share.
func availableMemory() int64 { return 0 }
