package progfile

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The constants this package keeps by hand are the kernel's, as golang.org/x/sys/unix has them.
func TestConstantsAreTheKernels(t *testing.T) {
	t.Parallel()
	if oPath != unix.O_PATH {
		t.Errorf("oPath = %#x, unix.O_PATH = %#x", oPath, unix.O_PATH)
	}
	if stNoexec != unix.ST_NOEXEC {
		t.Errorf("stNoexec = %#x, unix.ST_NOEXEC = %#x", stNoexec, unix.ST_NOEXEC)
	}
}
