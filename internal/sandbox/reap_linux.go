package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killDescendants kills every process the command left behind.
//
// In namespace mode the init is the first process of its own pid namespace,
// so kill(-1) reaches exactly the sandbox's processes. Without a pid namespace kill(-1)
// would reach every process of the user, so the init (a child subreaper, to
// which every orphaned descendant is reparented) kills its children until
// none is left.
func killDescendants(cfg *initConfig) {
	if cfg.Mode == ModeNamespaces {
		_ = unix.Kill(-1, syscall.SIGKILL)
		for {
			if _, err := syscall.Wait4(-1, nil, 0, nil); err == syscall.ECHILD {
				return
			} else if err != nil && err != syscall.EINTR {
				return
			}
		}
	}
	self := os.Getpid()
	// Until no child is left: each round kills every current child, and
	// what they forked meanwhile is reparented here for the next round.
	for {
		kids := childrenOf(self)
		for _, k := range kids {
			killChild(k, self)
		}
		for {
			wpid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if wpid <= 0 || err != nil {
				break
			}
		}
		if len(kids) == 0 {
			if _, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); err == syscall.ECHILD {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killChild kills pid through a pidfd, after checking — on that pidfd's
// process — that it is still our child: a pid that was reaped and reused
// by an unrelated process in between is never signalled.
func killChild(pid, self int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if ppidOf(pid) == self {
		_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
	}
}

// ppidOf reads a process's parent from /proc, or -1.
func ppidOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command name may hold spaces and parentheses; fields after the
	// last ')' are fixed: state, ppid, ...
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if ppidOf(p) == pid {
			out = append(out, p)
		}
	}
	return out
}
