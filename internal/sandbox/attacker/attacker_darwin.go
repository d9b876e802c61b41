package attacker

import (
	"bytes"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// platformVerb runs the verbs that attack what only macOS has.
func platformVerb(verb string, args []string) (int, bool) {
	switch verb {
	case "procargs":
		// Another process's arguments and environment, as ps -E reads
		// them (sysctl kern.procargs2): forkbomb's own environment holds
		// the user's keys.
		pid, _ := strconv.Atoi(args[0])
		raw, err := unix.SysctlRaw("kern.procargs2", pid)
		if err != nil {
			return report(err, ""), true
		}
		return report(nil, string(bytes.ReplaceAll(raw, []byte{0}, []byte{'\n'}))), true
	case "tiocsti":
		c := byte('X')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return report(e, ""), true
		}
		return report(nil, "injected"), true
	case "sysctl":
		// A value of the machine's kernel any process could read without
		// a sandbox (the control reads kern.hostname both ways).
		v, err := unix.Sysctl(args[0])
		return report(err, fmt.Sprintf("%s = %s", args[0], v)), true
	}
	return 0, false
}
