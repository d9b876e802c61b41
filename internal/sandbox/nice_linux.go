package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lowerThread lowers the calling thread's CPU priority by n nice steps
// (at most to 19): a process it starts begins with that priority, and so
// does every thread and process that one makes. The caller is locked to
// its thread and ends it with its goroutine: without CAP_SYS_NICE nothing
// raises a priority again, so the thread must not serve anything else.
func lowerThread(n int) error {
	if n == 0 {
		return nil
	}
	tid := syscall.Gettid()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid) // the kernel's 20 - nice
	if err != nil {
		return fmt.Errorf("getpriority: %w", err)
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-raw+n, 19)); err != nil {
		return fmt.Errorf("setpriority: %w", err)
	}
	return nil
}

// autogroupOn: the kernel schedules each session as a group, read once.
var autogroupOn = sync.OnceValue(func() bool {
	on, err := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled")
	return err == nil && strings.TrimSpace(string(on)) == "1"
})

// autogroupNice reads a /proc/PID/autogroup file ("/autogroup-N nice K"):
// K, or 0.
func autogroupNice(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 3 && f[1] == "nice" {
		if k, err := strconv.Atoi(f[2]); err == nil {
			return k
		}
	}
	return 0
}

// niceWeights is the kernel's CPU weight of each nice value from 0 to 19
// (sched_prio_to_weight), nice 0 being 1024: cgroup v1's cpu.shares for a
// group as heavy as one task of that nice.
var niceWeights = [20]int{1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15}

// cgroupYielder is a sandbox's cgroup's CPU weight under a Yield.
type cgroupYielder struct {
	file string
	v1   bool
	nice int
	cur  int // the nice it was last set to
}

func (c *cgroupYielder) set(lowered bool) error {
	n := 0
	if lowered {
		n = c.nice
	}
	if n == c.cur {
		return nil
	}
	val := strconv.Itoa(n)
	if c.v1 {
		val = strconv.Itoa(niceWeights[n])
	}
	err := os.WriteFile(c.file, []byte(val), 0)
	if err == nil {
		c.cur = n
	}
	return err
}

func (c *cgroupYielder) close() {}

// autogroupYielder is a sandbox's session group under a Yield, through its
// /proc/PID/autogroup file, opened while the init is still its owner's.
type autogroupYielder struct {
	f        *os.File
	own, cur int // the caller's group's nice; the sandbox group's
	nice     int
}

// newAutogroupYielder opens the session group of the session pid leads, or
// returns nil where autogroup does not apply.
func newAutogroupYielder(pid, nice int) *autogroupYielder {
	if !autogroupOn() {
		return nil
	}
	path := "/proc/" + strconv.Itoa(pid) + "/autogroup"
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return &autogroupYielder{f: f, own: autogroupNice("/proc/self/autogroup"), cur: autogroupNice(path), nice: nice}
}

func (a *autogroupYielder) set(lowered bool) error {
	n := a.own
	if lowered {
		n = min(a.own+a.nice, 19)
	}
	if n == a.cur {
		return nil
	}
	_, err := a.f.Write([]byte(strconv.Itoa(n)))
	if err == nil {
		a.cur = n
	}
	return err
}

func (a *autogroupYielder) close() { a.f.Close() }
