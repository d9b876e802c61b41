package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is the sandbox's own control group: under cgroup v2 one directory,
// under v1 one directory per controller. A nil *cgroup is valid and does
// nothing (no limit was asked for, or none could be made).
type cgroup struct {
	v2  string
	v1  map[string]string // controller → directory
	dir []string          // every directory, for cleanup
	// weighted: its CPU weight is set (Policy.Nice's, or its Yield's)
	weighted bool
}

var cgroupSeq atomic.Int64

// newCgroup makes a cgroup with the given limits. It tries cgroup v2 (a
// writable, delegated subtree with the controllers enabled), then v1 (root,
// or a delegated v1 hierarchy). When neither works it returns nil and a
// warning: the init then falls back to rlimits.
//
// With weigh (Policy.Nice) the cgroup is made for the CPU weight alone
// when nothing else asks for one, and its weight is set to nice's where
// the CPU controller can be had; where it cannot, nothing fails and no
// warning is given (the nice of each process, or the session's group,
// still holds).
func newCgroup(memory int64, pids int, cpus float64, weigh bool, nice int) (*cgroup, string) {
	if memory == 0 && pids == 0 && cpus == 0 {
		if !weigh {
			return nil, ""
		}
		name := fmt.Sprintf("forkbomb-%d-%d", os.Getpid(), cgroupSeq.Add(1))
		for _, newCg := range []func(string, int64, int, float64, bool, int) (*cgroup, error){newCgroupV2, newCgroupV1} {
			if cg, err := newCg(name, 0, 0, 0, true, nice); err == nil {
				if cg.weighted {
					return cg, ""
				}
				cg.remove()
			}
		}
		return nil, ""
	}
	name := fmt.Sprintf("forkbomb-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	reclaimCgroups()
	v2err := error(nil)
	if cg, err := newCgroupV2(name, memory, pids, cpus, weigh, nice); err == nil {
		return cg, ""
	} else {
		v2err = err
	}
	if cg, err := newCgroupV1(name, memory, pids, cpus, weigh, nice); err == nil {
		return cg, ""
	} else {
		w := fmt.Sprintf("no usable cgroup (v2: %v; v1: %v): --memory is enforced per process (RLIMIT_DATA), --pids per sandbox user (RLIMIT_NPROC)", v2err, err)
		if cpus > 0 {
			w += ", --cpus is not enforced"
		}
		return nil, w
	}
}

func newCgroupV2(name string, memory int64, pids int, cpus float64, weigh bool, nice int) (*cgroup, error) {
	mnt := mountpointOf("cgroup2", "")
	if mnt == "" {
		return nil, errors.New("not mounted")
	}
	rel := ownCgroup("")
	if rel == "" {
		return nil, errors.New("own cgroup unknown")
	}
	parent := filepath.Join(mnt, rel)
	need := []string{}
	if memory > 0 {
		need = append(need, "memory")
	}
	if pids > 0 {
		need = append(need, "pids")
	}
	if cpus > 0 {
		need = append(need, "cpu")
	}
	avail, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	for _, c := range need {
		if !hasWord(string(avail), c) {
			if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				return nil, fmt.Errorf("controller %s not delegated here", c)
			}
		}
	}
	// The weight's controller is wanted, not needed: without it the rest
	// stands.
	cpu := cpus > 0
	if !cpu && weigh {
		cpu = hasWord(string(avail), "cpu") || os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0) == nil
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	cg := &cgroup{v2: dir, dir: []string{dir}}
	writes := map[string]string{}
	if memory > 0 {
		writes["memory.max"] = strconv.FormatInt(memory, 10)
		writes["memory.swap.max"] = "0"
	}
	if pids > 0 {
		writes["pids.max"] = strconv.Itoa(pids)
	}
	if cpus > 0 {
		writes["cpu.max"] = fmt.Sprintf("%d 100000", int64(cpus*100000))
	}
	for f, v := range writes {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0); err != nil && f != "memory.swap.max" {
			cg.remove()
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	if cpu && weigh {
		// The group competes with its siblings (the judge's runs, say) as
		// one, whatever its processes' own nice, and they cannot leave it.
		cg.weighted = os.WriteFile(filepath.Join(dir, "cpu.weight.nice"), []byte(strconv.Itoa(nice)), 0) == nil
	}
	return cg, nil
}

func newCgroupV1(name string, memory int64, pids int, cpus float64, weigh bool, nice int) (*cgroup, error) {
	cg := &cgroup{v1: map[string]string{}}
	type w struct{ file, val string }
	want := map[string][]w{}
	if memory > 0 {
		m := strconv.FormatInt(memory, 10)
		want["memory"] = []w{{"memory.limit_in_bytes", m}, {"memory.memsw.limit_in_bytes", m}}
	}
	if pids > 0 {
		want["pids"] = []w{{"pids.max", strconv.Itoa(pids)}}
	}
	if cpus > 0 {
		want["cpu"] = []w{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.FormatInt(int64(cpus*100000), 10)}}
	}
	if weigh {
		want["cpu"] = append(want["cpu"], w{"cpu.shares", strconv.Itoa(niceWeights[nice])})
	}
	for ctrl, writes := range want {
		if ctrl == "cpu" && cpus == 0 {
			// the weight alone: wanted, not needed
			mnt := mountpointOf("cgroup", ctrl)
			dir := filepath.Join(mnt, ownCgroup(ctrl), name)
			if mnt == "" || os.Mkdir(dir, 0o755) != nil {
				continue
			}
			cg.v1[ctrl] = dir
			cg.dir = append(cg.dir, dir)
			cg.weighted = os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(writes[0].val), 0) == nil
			continue
		}
		mnt := mountpointOf("cgroup", ctrl)
		if mnt == "" {
			cg.remove()
			return nil, fmt.Errorf("%s controller not mounted", ctrl)
		}
		dir := filepath.Join(mnt, ownCgroup(ctrl), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, err
		}
		cg.v1[ctrl] = dir
		cg.dir = append(cg.dir, dir)
		for _, x := range writes {
			err := os.WriteFile(filepath.Join(dir, x.file), []byte(x.val), 0)
			if x.file == "cpu.shares" {
				cg.weighted = err == nil
			}
			if err != nil && x.file != "memory.memsw.limit_in_bytes" && x.file != "cpu.shares" { // absent without swap accounting; the weight is wanted, not needed
				cg.remove()
				return nil, fmt.Errorf("%s: %w", x.file, err)
			}
		}
	}
	return cg, nil
}

// isWeighted says whether the cgroup's CPU weight is set: its processes,
// whatever sessions they make, compete as one group of that weight.
func (cg *cgroup) isWeighted() bool { return cg != nil && cg.weighted }

// weightFile is the file of the cgroup's CPU weight and whether it is
// v1's cpu.shares (a weight) rather than v2's cpu.weight.nice (a nice).
func (cg *cgroup) weightFile() (string, bool) {
	if cg.v2 != "" {
		return filepath.Join(cg.v2, "cpu.weight.nice"), false
	}
	return filepath.Join(cg.v1["cpu"], "cpu.shares"), true
}

func (cg *cgroup) add(pid int) error {
	if cg == nil {
		return nil
	}
	for _, d := range cg.dir {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// oomKills is how many processes the kernel's OOM killer killed in the
// cgroup so far.
func (cg *cgroup) oomKills() int64 { return counter(cg.memoryEvents(), "oom_kill") }

// counter reads "key N" from a cgroup events file; 0 if absent.
func counter(file, key string) int64 {
	if file == "" {
		return 0
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// memoryEvents is the file that counts the cgroup's OOM kills, or "".
func (cg *cgroup) memoryEvents() string {
	switch {
	case cg == nil:
		return ""
	case cg.v2 != "":
		return filepath.Join(cg.v2, "memory.events")
	}
	if d, ok := cg.v1["memory"]; ok {
		return filepath.Join(d, "memory.oom_control")
	}
	return ""
}

// remove deletes the cgroup directories; the kernel refuses while a process
// is still in one, which lasts only until the pid namespace is torn down.
func (cg *cgroup) remove() {
	if cg == nil {
		return
	}
	for _, d := range cg.dir {
		for i := 0; i < 50; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// reclaimCgroups removes the empty cgroups of forkbomb processes that were
// killed before they could (forkbomb-PID-N next to the ones we make).
func reclaimCgroups() {
	var parents []string
	if mnt := mountpointOf("cgroup2", ""); mnt != "" {
		parents = append(parents, filepath.Join(mnt, ownCgroup("")))
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if mnt := mountpointOf("cgroup", c); mnt != "" {
			parents = append(parents, filepath.Join(mnt, ownCgroup(c)))
		}
	}
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), "forkbomb-")
			if !ok || !e.IsDir() {
				continue
			}
			pidStr, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				os.Remove(filepath.Join(parent, e.Name())) // fails harmlessly while in use
			}
		}
	}
}

// mountpointOf finds where a cgroup hierarchy is mounted: fstype cgroup2,
// or fstype cgroup with the given controller among its options.
func mountpointOf(fstype, controller string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		i := strings.Index(line, " - ")
		if i < 0 {
			continue
		}
		pre, post := strings.Fields(line[:i]), strings.Fields(line[i+3:])
		if len(pre) < 5 || len(post) < 3 || post[0] != fstype {
			continue
		}
		if controller == "" || hasWord(strings.ReplaceAll(post[2], ",", " "), controller) {
			return pre[4]
		}
	}
	return ""
}

// ownCgroup is this process's cgroup path in the v2 hierarchy (controller
// "") or in the v1 hierarchy of a controller.
func ownCgroup(controller string) string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
		if controller != "" && hasWord(strings.ReplaceAll(parts[1], ",", " "), controller) {
			return parts[2]
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
