package testutil

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcsWith lists the host's live processes (no zombie) whose command line
// holds marker: a sandboxed process seen from outside its namespaces.
func ProcsWith(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue // a zombie is dead already
		}
		pids = append(pids, pid)
	}
	return pids
}

// ProcsLeft is ProcsWith once no process holds marker, or after 10 s (what a
// loaded kernel may still be finishing of processes it was told to kill):
// nil when every one is gone.
func ProcsLeft(marker string) []int {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p := ProcsWith(marker); len(p) == 0 || time.Now().After(deadline) {
			return p
		}
	}
}

// CPUWeight reads pid's CPU cgroup's weight from the host's cgroupfs when
// that cgroup is one of forkbomb's (forkbomb-*): cpu.shares (v1) or
// cpu.weight.nice (v2); "" where there is none.
func CPUWeight(pid int) (shares, weight string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", ""
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(filepath.Base(f[2]), "forkbomb-") {
			continue
		}
		switch {
		case f[1] == "":
			weight = read(filepath.Join("/sys/fs/cgroup", f[2], "cpu.weight.nice"))
			if weight == "" {
				weight = read(filepath.Join("/sys/fs/cgroup/unified", f[2], "cpu.weight.nice"))
			}
		case hasWord(f[1], "cpu"):
			for _, dir := range []string{"cpu,cpuacct", "cpu", "cpuacct,cpu"} {
				if s := read(filepath.Join("/sys/fs/cgroup", dir, f[2], "cpu.shares")); s != "" {
					shares = s
				}
			}
		}
	}
	return shares, weight
}

func hasWord(list, w string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == w {
			return true
		}
	}
	return false
}

// AutogroupNice is pid's session group's nice (/proc/PID/autogroup:
// "/autogroup-N nice K"), or -1: unreadable, or pid is in no session
// group (see CallerGroupNice).
func AutogroupNice(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) != 3 {
		return -1
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return n
}

// GroupSteps is how many steps pid's scheduling group is below the
// caller's, read from outside: its cgroup's weight where it is in one of
// forkbomb's with a CPU weight (cpu.weight.nice, or cpu.shares of nice 0
// or 10), else its session group's nice less the caller's
// (CallerGroupNice). ok is false where neither can be read.
func GroupSteps(pid int) (steps int, ok bool) {
	shares, weight := CPUWeight(pid)
	switch {
	case shares == "1024" || weight == "0":
		return 0, true
	case shares == "110" || weight == "10":
		return 10, true
	case weight != "":
		n, err := strconv.Atoi(weight)
		return n, err == nil
	case shares != "":
		return 0, false
	case Autogroup():
		own, n := CallerGroupNice(), AutogroupNice(pid)
		return n - own, own >= 0 && n >= 0
	}
	return 0, false
}

// CallerGroupNice is the nice of the caller's own scheduling group, which
// a lowered sandbox's group is measured from: its session group's, or 0
// where the caller is in none. A process whose ancestors never started a
// session of their own (a CI runner's commands, started by a pid 1 that
// never called setsid) is in the kernel's default group, the root task
// group, weighed as nice 0; its /proc/PID/autogroup is empty.
func CallerGroupNice() int {
	data, err := os.ReadFile("/proc/self/autogroup")
	if err == nil && len(bytes.TrimSpace(data)) == 0 {
		return 0
	}
	return AutogroupNice(os.Getpid())
}

// Autogroup says whether the kernel schedules each session as a group
// here, and shows a process's group.
func Autogroup() bool {
	on, _ := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	if strings.TrimSpace(string(on)) != "1" {
		return false
	}
	_, err := os.Stat("/proc/self/autogroup")
	return err == nil
}

// ProcNice is pid's nice value (the 19th field of /proc/PID/stat), read
// from outside its namespaces; os.Getpid() for the caller's own.
func ProcNice(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	if f := strings.Fields(rest); len(f) > 16 {
		if n, err := strconv.Atoi(f[16]); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/stat: no nice in %q", pid, data)
}
