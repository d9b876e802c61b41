package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// reflink is the cloner of macOS: clonefile(2) of the open file (APFS),
// which makes dst itself and fails, making nothing, elsewhere (HFS+, a
// network volume, another volume). The clone takes the caller as its
// owner and never follows a link at dst.
func reflink(in *os.File, dst string) error {
	return unix.Fclonefileat(int(in.Fd()), unix.AT_FDCWD, dst, unix.CLONE_NOFOLLOW|unix.CLONE_NOOWNERCOPY)
}

// copyWhiteout makes nothing: macOS has no overlayfs, so nothing reads a
// whiteout in a copy there, and a character device 0/0 is its console.
func copyWhiteout(out string, perm os.FileMode) error { return nil }
