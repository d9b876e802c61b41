//go:build linux && !amd64

package sandbox

// workerLegacyDenied: arm64 (and the architectures without a filter) have no legacy calls.
var workerLegacyDenied []uint32
