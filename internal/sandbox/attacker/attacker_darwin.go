package attacker

import (
	"bytes"
	"strconv"

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
	}
	return 0, false
}
