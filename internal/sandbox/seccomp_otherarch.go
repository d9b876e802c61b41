//go:build linux && !amd64 && !arm64

package sandbox

// No seccomp filter is defined for this architecture yet; buildFilter
// refuses, so the sandbox does not start without it.
const (
	nativeArch    = 0
	x32Bit        = 0
	cloneFlagsArg = 0
)

var archDenied []uint32
