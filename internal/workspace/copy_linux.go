package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// reflink is the cloner of Linux: FICLONE into a new file, which is
// removed again when the filesystem shares no blocks.
func reflink(in *os.File, dst string) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = unix.IoctlFileClone(int(out.Fd()), int(in.Fd()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// copyWhiteout makes a whiteout: a character device 0/0, which the kernel
// lets anyone make.
func copyWhiteout(out string, perm os.FileMode) error {
	return unix.Mknod(out, unix.S_IFCHR|uint32(perm), 0)
}
