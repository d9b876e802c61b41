//go:build unix

// Package progfile holds the checks a program that forkbomb runs in its own name must pass:
// the sandbox's standalone init, the world's slim worker and the core's forkbomb-full.
// Whoever can change such a file could change forkbomb itself, so it may be written by no one
// else.
package progfile

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Check checks the file at path itself (a final symbolic link is refused, not followed) as
// checkStat does.
func Check(path string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return err
	}
	return checkStat(uint32(st.Mode), st.Uid)
}

// checkStat checks a program file's mode and owner: a regular file, executable, neither
// set-id nor writable by group or others, owned by root or the caller.
func checkStat(mode, uid uint32) error {
	switch {
	case mode&syscall.S_IFMT == syscall.S_IFLNK:
		return errors.New("it is a symbolic link (not followed)")
	case mode&syscall.S_IFMT != syscall.S_IFREG:
		return errors.New("it is not a regular file")
	case mode&0o022 != 0:
		return errors.New("it is writable by group or others (mode 0" + strconv.FormatUint(uint64(mode&0o7777), 8) + ")")
	case mode&(syscall.S_ISUID|syscall.S_ISGID) != 0:
		return errors.New("it is set-user-id or set-group-id")
	case uid != 0 && uid != uint32(os.Getuid()):
		return errors.New("it is owned by uid " + strconv.FormatUint(uint64(uid), 10) + ", neither root nor you")
	case mode&0o111 == 0:
		return errors.New("it is not executable")
	}
	return nil
}
