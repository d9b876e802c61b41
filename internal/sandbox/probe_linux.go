package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Probe reports which layers work on this machine, by building a real
// sandbox with each backend and inspecting it from inside.
func Probe(ctx context.Context) (*ProbeReport, error) {
	return ProbeWith(ctx, ProbeOptions{})
}

// ProbeWith is Probe with options.
func ProbeWith(ctx context.Context, o ProbeOptions) (*ProbeReport, error) {
	rep := &ProbeReport{UID: os.Getuid(), Mode: ModeNone}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		rep.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	dir, err := MkdirTemp("probe")
	if err != nil {
		return nil, err
	}
	defer RemoveAll(dir)

	nsRep, nsErr := probeMode(ctx, ModeNamespaces, dir, o.Init)
	if nsErr != nil {
		rep.add("user namespace", false, nsErr.Error())
	} else {
		rep.Mode = ModeNamespaces
		rep.Layers = append(rep.Layers, nsRep.Layers...)
	}
	llRep, llErr := probeMode(ctx, ModeLandlock, dir, o.Init)
	switch {
	case llErr != nil:
		rep.add("landlock-only fallback", false, llErr.Error())
	default:
		if rep.Mode == ModeNone {
			rep.Mode = ModeLandlock
			rep.Layers = append(rep.Layers, llRep.Layers...)
		}
		rep.add("landlock-only fallback", true, "used where user namespaces are refused")
	}

	cg, warn := newCgroup(64<<20, 64, 1, false, 0)
	switch {
	case cg == nil:
		rep.add("cgroup", false, warn)
	case cg.v2 != "":
		rep.add("cgroup", true, "v2 (memory, pids, cpu) at "+filepath.Dir(cg.v2))
	default:
		rep.add("cgroup", true, "v1 (memory, pids, cpu)")
	}
	cg.remove()
	rep.add("rlimits", true, "core dumps off; RLIMIT_DATA / RLIMIT_NPROC stand in for a missing cgroup")
	// After the probes: a stale init has been found out by now.
	rep.Init = lookupInit(o.Init).describe()
	return rep, nil
}

func probeMode(ctx context.Context, mode Mode, dir, init string) (*ProbeReport, error) {
	r, err := Policy{Command: []string{"true"}, Workdir: dir, Mode: mode, Init: init}.resolve()
	if err != nil {
		return nil, err
	}
	return runProbe(ctx, r)
}

// probeInside runs in the init after set-up and inspects the sandbox.
func probeInside(cfg *initConfig) *ProbeReport {
	rep := &ProbeReport{}
	if cfg.Mode == ModeNamespaces {
		rep.add("user namespace", true, fmt.Sprintf("uid %d inside, no capabilities on the host", os.Getuid()))
		var st unix.Statfs_t
		ro := unix.Statfs("/", &st) == nil && st.Flags&unix.ST_RDONLY != 0
		rep.add("mount namespace", ro, "read-only host, credential folders hidden, private /tmp and $HOME")
		rep.add("pid namespace", os.Getpid() == 1, "init is pid 1; host processes invisible")
		if cfg.NewNet {
			data, _ := os.ReadFile("/proc/net/dev")
			ifaces := 0
			for _, l := range strings.Split(string(data), "\n")[2:] {
				if strings.TrimSpace(l) != "" {
					ifaces++
				}
			}
			rep.add("network namespace", ifaces == 1, "loopback only, no DNS")
		}
		rep.add("overlayfs", overlayWorks() == nil, "O(1) forks of workspaces")
	}
	_, _ = onRestrictedThread(cfg, func() (int, error) {
		status, _ := os.ReadFile("/proc/thread-self/status")
		field := func(name string) string {
			for _, l := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(l, name+":"); ok {
					return strings.TrimSpace(v)
				}
			}
			return ""
		}
		abi := landlockABI()
		rep.add("landlock", abi > 0, fmt.Sprintf("ABI %d", abi))
		blocked := unix.Unshare(0) == unix.EPERM
		rep.add("seccomp", field("Seccomp") == "2" && blocked, "filter mode (Seccomp: "+field("Seccomp")+"); namespace, mount, ptrace, bpf, io_uring… denied; memfd_create too under a program rule")
		rep.add("no_new_privs", field("NoNewPrivs") == "1", "")
		rep.add("capabilities dropped", field("CapEff") == "0000000000000000" && field("CapBnd") == "0000000000000000", "effective and bounding sets empty")
		return 0, nil
	})
	sid, _ := unix.Getsid(0)
	rep.add("new session", sid == os.Getpid(), "setsid: no controlling terminal, so no TIOCSTI into the caller's")
	return rep
}

// overlayWorks mounts and unmounts a throwaway overlay in the private /tmp.
func overlayWorks() error {
	base, err := os.MkdirTemp("/tmp", "overlay-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,userxattr", base, base, base)
	if err := unix.Mount("overlay", base+"/merged", "overlay", 0, opts); err != nil {
		return err
	}
	return unix.Unmount(base+"/merged", unix.MNT_DETACH)
}
