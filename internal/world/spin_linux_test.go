package world

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spinName is the name forkbomb-test-spin gives the thread it spins on, so that a test can
// see from outside (/proc/PID/task/TID/comm) that the spin has begun.
const spinName = "fb-test-spin"

func markSpinning() {
	runtime.LockOSThread() // the name stays with the spin
	if p, err := unix.BytePtrFromString(spinName); err == nil {
		unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
	}
}

// waitSpinning waits until a worker of this process has a thread spinning in
// forkbomb-test-spin, and returns the worker's pid.
func waitSpinning(t *testing.T) int {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(time.Minute)
	for {
		comms, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/comm")
		for _, c := range comms {
			if b, err := os.ReadFile(c); err != nil || strings.TrimSpace(string(b)) != spinName {
				continue
			}
			pid := strings.Split(c, "/")[2]
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid …: the fields after the command's closing parenthesis
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) > 1 && f[1] == self {
				n, _ := strconv.Atoi(pid)
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker of this test began forkbomb-test-spin within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
