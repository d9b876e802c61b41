package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// killAll kills every process left in the cgroup once the init is gone.
// Under a pid namespace that is nothing: the kernel ended them with the
// init. In the landlock backend there is no namespace, and the init is in
// the cgroup it limits: a fork bomb held at --pids can leave it unable to
// make a thread, and a Go runtime that cannot make one aborts — so the
// orphans of a dead init are killed here, from outside the cgroup.
func (cg *cgroup) killAll() {
	if cg == nil || len(cg.dir) == 0 {
		return
	}
	if cg.v2 != "" && os.WriteFile(filepath.Join(cg.v2, "cgroup.kill"), []byte("1"), 0) == nil {
		return // the kernel kills the whole cgroup at once (5.14+)
	}
	procs := filepath.Join(cg.dir[0], "cgroup.procs")
	name := filepath.Base(cg.dir[0])
	// A bomb can fork while its siblings are killed, but never past the
	// cgroup's limit; each pass kills all it sees.
	for pass := 0; pass < 1000; pass++ {
		data, err := os.ReadFile(procs)
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			return
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid <= 0 {
				continue
			}
			// A pidfd pins the process: checked to be in this cgroup,
			// then signalled, so a reused pid is never hit.
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if own, _ := os.ReadFile("/proc/" + f + "/cgroup"); strings.Contains(string(own), "/"+name) {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
	}
}
