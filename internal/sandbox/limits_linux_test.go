package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

func cgroupAvailable(t *testing.T) bool {
	l := probe(t).Layer("cgroup")
	return l != nil && l.Status == "ok"
}

// TestMemoryLimit: --memory stops a memory bomb; the host (this test
// process) is unhurt.
func TestMemoryLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		p := attackPolicy(t, mode, t.TempDir(), "alloc", "1073741824") // 1 GiB
		p.Memory = 128 << 20
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.code() == 0 || strings.Contains(o.out, "ok: allocated") {
			t.Fatalf("LEAK: a 1 GiB allocation succeeded under a 128 MiB limit")
		}
		if cgroupAvailable(t) && (o.res.Limit != "memory" || o.code() != sandbox.ExitKilledByLimit) {
			t.Errorf("with a cgroup the OOM kill should be reported: limit %q code %d", o.res.Limit, o.code())
		}
	})
	t.Run("control", func(t *testing.T) {
		o := runPolicy(t, attackPolicy(t, modes(t)[0], t.TempDir(), "alloc", "1073741824"))
		if o.code() != 0 {
			t.Fatalf("positive control: 1 GiB without a limit failed: %s", o.all())
		}
	})
}

// TestPidsLimit: --pids stops a fork bomb, and nothing of it survives.
func TestPidsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		if mode == sandbox.ModeLandlock && !cgroupAvailable(t) {
			testutil.SkipNotApplicable(t, "without a cgroup or a user namespace, RLIMIT_NPROC counts every process of the user; documented in SECURITY.md")
		}
		m := sleepMarker()
		p := attackPolicy(t, mode, t.TempDir(), "forkbomb", "500", m)
		p.Pids = 64
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.code() == 0 {
			t.Errorf("LEAK: 500 processes started under --pids 64")
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Errorf("LEAK: %d fork-bomb processes survived", len(s))
		}
	})
	t.Run("control", func(t *testing.T) {
		m := sleepMarker()
		o := runPolicy(t, attackPolicy(t, modes(t)[0], t.TempDir(), "forkbomb", "500", m))
		if o.code() != 0 {
			t.Fatalf("positive control: 500 processes without a limit failed: %s", o.out)
		}
	})
}

// TestPOSIXIPC: POSIX semaphores and shared memory work inside (Python
// multiprocessing, as test runners use it).
func TestPOSIXIPC(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testutil.SkipOrFail(t, "needs /usr/bin/python3 (Debian package python3)")
	}
	script := `/usr/bin/python3 -c '
import multiprocessing as mp
from multiprocessing import shared_memory
def sq(x): return x*x
if __name__ == "__main__":
    with mp.Pool(2) as p: r = sum(p.map(sq, range(10)))
    s = mp.Semaphore(1); s.acquire(); s.release()
    m = shared_memory.SharedMemory(create=True, size=64); m.buf[0] = 7; v = m.buf[0]; m.close(); m.unlink()
    print("IPC-OK", r, v)'`
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		o := runPolicy(t, shPolicy(mode, t.TempDir(), script))
		if !strings.Contains(o.out, "IPC-OK 285 7") {
			t.Fatalf("multiprocessing, semaphores or shared memory broken inside: %s", o.all())
		}
	})
}

// TestExitStatus: the command's own status passes through; a signal
// becomes 128+n.
func TestExitStatus(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		for script, want := range map[string]int{"exit 0": 0, "exit 7": 7, "kill -TERM $$": 143} {
			if o := runPolicy(t, shPolicy(mode, t.TempDir(), script)); o.err != nil || o.code() != want {
				t.Errorf("%q: code %d err %v, want %d", script, o.code(), o.err, want)
			}
		}
	})
}

// TestCommandErrors: a command that cannot be found or run is an error the
// caller can tell apart from the command's own failure.
func TestCommandErrors(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		wd := t.TempDir()
		writeFile(t, wd+"/notexec", "#!/bin/sh\n")
		for cmd, want := range map[string]error{
			"no-such-command-xyz": sandbox.ErrCommandNotFound,
			"./notexec":           sandbox.ErrCommandNotExecutable,
		} {
			_, err := sandbox.Run(context.Background(), sandbox.Policy{Command: []string{cmd}, Workdir: wd, Mode: mode}, sandbox.Stdio{})
			if !errors.Is(err, want) {
				t.Errorf("%s: err %v, want %v", cmd, err, want)
			}
		}
	})
}

// TestOutputCap: --max-output is enforced while streaming: not one byte
// more is passed on, and the command is killed.
func TestOutputCap(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		p := shPolicy(mode, t.TempDir(), "yes forkbomb")
		p.MaxOutput = 1000
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if len(o.out) != 1000 {
			t.Errorf("captured %d bytes, want exactly 1000", len(o.out))
		}
		if o.res.Limit != "output" || o.code() != sandbox.ExitKilledByLimit {
			t.Errorf("limit %q code %d, want output/137", o.res.Limit, o.code())
		}
	})
}

// TestPolicyRefusals: paths that would undo the credential masks are
// refused before anything runs.
func TestPolicyRefusals(t *testing.T) {
	home := t.TempDir() + "/bob"
	writeFile(t, home+"/.ssh/id_rsa", "x")
	writeFile(t, home+"/src/a", "x")
	t.Setenv("HOME", home)
	for name, tc := range map[string]struct {
		p     sandbox.Policy
		field string // the PolicyError's Field: the library names its own field, never a flag
	}{
		"workdir is home":       {sandbox.Policy{Workdir: home}, "Workdir"},
		"workdir is /":          {sandbox.Policy{Workdir: "/"}, "Workdir"},
		"ro inside .ssh":        {sandbox.Policy{Workdir: home + "/src", ReadOnly: []string{home + "/.ssh"}}, "ReadOnly"},
		"rw holds home":         {sandbox.Policy{Workdir: home + "/src", ReadWrite: []string{home + "/.."}}, "ReadWrite"},
		"env looks like a key":  {sandbox.Policy{Workdir: home + "/src", Env: []string{"OPENAI_API_KEY"}}, "Env"},
		"env is not a name":     {sandbox.Policy{Workdir: home + "/src", Env: []string{"A=B"}}, "Env"},
		"setenv looks like key": {sandbox.Policy{Workdir: home + "/src", SetEnv: []string{"GITHUB_TOKEN=x"}}, "SetEnv"},
		"workdir missing":       {sandbox.Policy{Workdir: home + "/nope"}, "Workdir"},
		"bad network":           {sandbox.Policy{Workdir: home + "/src", Network: "bridge"}, "Network"},
		"bad mode":              {sandbox.Policy{Workdir: home + "/src", Mode: "docker"}, "Mode"},
		"negative memory":       {sandbox.Policy{Workdir: home + "/src", Memory: -1}, "Memory"},
		"ro and rw of one path": {sandbox.Policy{Workdir: home + "/src", ReadOnly: []string{home + "/src"}}, "ReadOnly"},
		"hide the root":         {sandbox.Policy{Workdir: home + "/src", Hide: []string{"/"}}, "Hide"},
	} {
		p := tc.p
		p.Command = []string{"true"}
		_, err := sandbox.Run(context.Background(), p, sandbox.Stdio{})
		if !errors.Is(err, sandbox.ErrInvalidPolicy) {
			t.Errorf("%s: err %v, want ErrInvalidPolicy", name, err)
		}
		var pe *sandbox.PolicyError
		if !errors.As(err, &pe) || pe.Field != tc.field || strings.Contains(err.Error(), "--") {
			t.Errorf("%s: err %v, want a PolicyError of field %s that names no flag", name, err, tc.field)
		}
	}
	// The cause stays reachable: a workdir that is missing is fs.ErrNotExist.
	_, err := sandbox.Run(context.Background(), sandbox.Policy{Command: []string{"true"}, Workdir: home + "/nope"}, sandbox.Stdio{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing workdir: %v does not unwrap to fs.ErrNotExist", err)
	}
}
