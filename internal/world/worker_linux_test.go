package world

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/interp"

	"github.com/forkbomb/forkbomb/internal/testutil"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// hostBait is a host folder a world must not see: secret.txt (a script that prints the
// secret), exe (an executable that prints it), real-SECRET/ and ln, a link to it.
type hostBait struct {
	dir, secret string
}

func newHostBait(t *testing.T) hostBait {
	t.Helper()
	dir, _ := testutil.OutsideDir(t)
	b := hostBait{dir: dir, secret: "SECRET-" + strconv.Itoa(os.Getpid()) + "-bait"}
	for name, body := range map[string]string{"secret.txt": "echo " + b.secret + "\n", "exe": "#!/bin/sh\necho ran-" + b.secret + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "real-"+b.secret), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real-"+b.secret, filepath.Join(dir, "ln")); err != nil {
		t.Fatal(err)
	}
	return b
}

// state is the bait folder as seen from outside: names, modes, sizes and contents.
func (b hostBait) state(t *testing.T) string {
	t.Helper()
	var lines []string
	filepath.Walk(b.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		data, _ := os.ReadFile(p)
		lines = append(lines, p+" "+fi.Mode().String()+" "+strconv.Itoa(len(data))+" "+string(data))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func needLandlock(t *testing.T) {
	t.Helper()
	if v, err := ll.LandlockGetABIVersion(); err != nil || v < 1 {
		testutil.SkipOrFail(t, "the kernel has no Landlock (ABI %d, %v): the worker is confined by seccomp alone", v, err)
	}
}

// TestWorkerKernelLayer attacks the kernel layer alone: the worker runs mvdan.cc/sh with its
// default handlers — none of the world's hooks — so every probe below goes straight to the
// host's open, stat, readlink, exec and user database. Confined, each must fail (loudly: the
// denial is in the output) and leave the host as it was, checked from outside; the positive
// control runs the same bare interpreter in this process, unconfined, where each one leaks.
func TestWorkerKernelLayer(t *testing.T) {
	needLandlock(t)
	b := newHostBait(t)
	H, S := b.dir, b.secret
	root, err := user.Lookup("root")
	if err != nil {
		t.Skipf("no root user to look up: %v", err)
	}
	probes := []struct {
		name, script string
		wrote        string
		leak         func(out string) bool
	}{
		{name: "open", script: "read l < " + H + "/secret.txt; echo $l"},
		{name: "stat", script: "[ -e " + H + "/secret.txt ] && echo " + S},
		{name: "cd", script: "cd " + H + " && echo " + S},
		{name: "command -v path", script: "command -v " + H + "/exe >/dev/null && echo " + S},
		{name: "type path", script: "type " + H + "/exe >/dev/null && echo " + S},
		{name: "source through PATH", script: "PATH=" + H + "; source secret.txt"},
		{name: "pwd -P", script: "PWD=" + H + "/ln; pwd -P"},
		{name: "exec", script: H + "/exe"},
		{name: "glob", script: "echo " + H + "/real-*"},
		{name: "write", script: "echo x > " + H + "/w1", wrote: "w1"},
		{name: "tilde user", script: "echo ~root", leak: func(out string) bool { return strings.Contains(out, root.HomeDir) }},
	}
	leaked := func(p string, wrote string, leak func(string) bool, out string) bool {
		if leak != nil {
			return leak(out)
		}
		if wrote != "" {
			_, err := os.Lstat(filepath.Join(H, wrote))
			return err == nil
		}
		return strings.Contains(out, S)
	}
	r := bareRunner()
	defer r.Close()
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			before := b.state(t)
			res, _, err := r.Exec(context.Background(), nil, p.script, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout) + string(res.Stderr)
			if res.Failed != "" {
				t.Fatalf("the bare worker failed: %s", res.Failed)
			}
			if leaked(p.name, p.wrote, p.leak, out) {
				t.Errorf("the confined worker reached the host: %q", out)
			}
			if after := b.state(t); after != before {
				t.Errorf("the host folder changed:\n%s\n---\n%s", before, after)
			}
			if p.name == "open" && !strings.Contains(out, "permission denied") && !strings.Contains(out, "operation not permitted") {
				t.Errorf("the denial is not loud: %q", out)
			}

			var stdout, stderr bytes.Buffer
			runBare(context.Background(), p.script, strings.NewReader(""), &stdout, &stderr)
			if out := stdout.String() + stderr.String(); !leaked(p.name, p.wrote, p.leak, out) {
				t.Errorf("control: the unconfined interpreter did not reach the host, so this probe proves nothing: %q", out)
			}
			if p.wrote != "" {
				os.Remove(filepath.Join(H, p.wrote))
			}
		})
	}
}

// TestWorldProbes are issue 21's probes, each through the world's shell — in the worker (both
// layers) and in this process (the hooks alone) — against the positive control of the bare
// interpreter on the host, where each answers from the host.
func TestWorldProbes(t *testing.T) {
	b := newHostBait(t)
	H, S := b.dir, b.secret
	cwd, _ := os.Getwd()
	root, err := user.Lookup("root")
	if err != nil {
		t.Skipf("no root user to look up: %v", err)
	}
	tilde := func(out string) bool { return strings.Contains(out, root.HomeDir+"\n") }
	// source's search of $PATH: the secret, or the host path it found (in an error message).
	found := func(out string) bool { return strings.Contains(out, S) || strings.Contains(out, H+"/secret.txt") }
	probes := []struct {
		name, script string
		leak         func(out string) bool
	}{
		{"pwd -P of /proc/self/cwd", "PWD=/proc/self/cwd; pwd -P", func(out string) bool { return strings.Contains(out, cwd) }},
		{"pwd -P of a host link", "PWD=" + H + "/ln; pwd -P", nil},
		{"command -vv", "command -vv " + H + "/exe >/dev/null && echo " + S, nil},
		{"builtin type", "builtin type " + H + "/exe >/dev/null && echo " + S, nil},
		{"builtin command -v", "builtin command -v " + H + "/exe >/dev/null && echo " + S, nil},
		{"command -v -v", "command -v -v " + H + "/exe >/dev/null && echo " + S, nil},
		{"source through PATH", "PATH=" + H + "; source secret.txt", found},
		{"dot through PATH", "PATH=" + H + "; . secret.txt", found},
		{"builtin source through PATH", "PATH=" + H + "; builtin source secret.txt", found},
		{"builtin eval ~user", `builtin eval "echo ~root" | cat`, tilde},
		{"command eval ~user", `command eval "echo ~root"`, tilde},
		{"builtin builtin eval ~user", `builtin builtin eval "echo ~root"`, tilde},
	}
	leaked := func(leak func(string) bool, out string) bool {
		if leak != nil {
			return leak(out)
		}
		return strings.Contains(out, S)
	}
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			res, err := r.ExecFile(context.Background(), file, p.script, nil, Limits{})
			if err != nil || res.Failed != "" {
				t.Fatalf("worker: %v %s", err, res.Failed)
			}
			if out := string(res.Stdout) + string(res.Stderr); leaked(p.leak, out) {
				t.Errorf("worker: the world answered from the host: %q", out)
			}
			res, err = New().Exec(context.Background(), p.script, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if out := string(res.Stdout) + string(res.Stderr); leaked(p.leak, out) {
				t.Errorf("in process: the world's hooks answered from the host: %q", out)
			}
			var stdout, stderr bytes.Buffer
			runBare(context.Background(), p.script, strings.NewReader(""), &stdout, &stderr)
			if out := stdout.String() + stderr.String(); !leaked(p.leak, out) {
				t.Errorf("control: the bare interpreter did not reach the host, so this probe proves nothing: %q", out)
			}
		})
	}
}

// shellBuiltins are bash's builtins that mvdan.cc/sh implements (checked with IsBuiltin).
var shellBuiltins = []string{"alias", "bg", "break", "builtin", "cd", "command", "continue", "declare", "dirs",
	"echo", "eval", "exec", "exit", "export", "false", "fg", "getopts", "hash", "help", "let", "local", "mapfile",
	"popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift", "shopt",
	"source", ".", "test", "[", "times", "trap", "true", "type", "umask", "unalias", "unset", "wait"}

// TestEveryCommandStaysInWorld drives the shell with every program and builtin of the world,
// bare and inside each wrapper (builtin, command, eval, source), against a host file that
// exists and one that does not. Nothing may differ between the two answers (a difference is an
// oracle on the host), the secret may never show, and the host folder is checked from outside
// after each. The run is in the worker (both layers) and in this process (the hooks alone).
// The control: the same differential on the bare interpreter sees the host.
func TestEveryCommandStaysInWorld(t *testing.T) {
	b := newHostBait(t)
	H, S := b.dir, b.secret
	var names []string
	for n := range commands {
		if !strings.HasPrefix(n, "forkbomb-test-") && n != "date" && n != "sleep" {
			names = append(names, n)
		}
	}
	for _, n := range shellBuiltins {
		if interp.IsBuiltin(n) && n != "exit" && n != "exec" && n != "times" && n != "wait" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	wrappers := map[string]func(c string) string{
		"plain":   func(c string) string { return c },
		"builtin": func(c string) string { return "builtin " + c },
		"command": func(c string) string { return "command " + c },
		"eval":    func(c string) string { return "eval '" + c + "'" },
		"source":  func(c string) string { return "echo '" + c + "' > /tmp/s; source /tmp/s" },
	}
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	before := b.state(t)
	run := func(t *testing.T, script string) string {
		res, err := r.ExecFile(context.Background(), file, script, nil, Limits{WallTime: 5e9})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout) + string(res.Stderr) + strconv.Itoa(res.Status)
		res, err = New().Exec(context.Background(), script, nil, Limits{WallTime: 5e9})
		if err != nil {
			t.Fatal(err)
		}
		return out + "\n--- in process:\n" + string(res.Stdout) + string(res.Stderr) + strconv.Itoa(res.Status)
	}
	for _, n := range names {
		for wname, wrap := range wrappers {
			t.Run(n+"/"+wname, func(t *testing.T) {
				script := func(p string) string {
					return wrap(n+" "+p) + "; echo rc=$?; " + wrap(n+" -r "+p+" "+p+"/x") + "; echo rc=$?"
				}
				yes := run(t, script(H+"/secret.txt"))
				no := run(t, script(H+"/nosuch.txt"))
				if strings.Contains(yes, S) {
					t.Errorf("the secret showed: %s", yes)
				}
				if strings.ReplaceAll(yes, "secret.txt", "X") != strings.ReplaceAll(no, "nosuch.txt", "X") {
					t.Errorf("a host file's existence changed the answer:\n%s\n--- missing:\n%s", yes, no)
				}
				if after := b.state(t); after != before {
					t.Fatalf("the host folder changed:\n%s", after)
				}
			})
		}
	}
	t.Run("control", func(t *testing.T) {
		bare := func(p string) string {
			var out bytes.Buffer
			runBare(context.Background(), "test -e "+p+"; echo rc=$?; source "+p, strings.NewReader(""), &out, &out)
			return strings.ReplaceAll(out.String(), p, "X")
		}
		if yes, no := bare(H+"/secret.txt"), bare(H+"/nosuch.txt"); yes == no || !strings.Contains(yes, S) {
			t.Errorf("the differential does not see the host through the bare interpreter:\n%s\n---\n%s", yes, no)
		}
	})
}

// TestPanicIsTheCallsFailure: a panic in a command — on the exec's goroutine, and in a
// pipeline stage's goroutine, which kills its worker — is that exec's failure (status 125, the
// panic's message), nothing of it is kept, and the next exec runs (in a new worker). test -O,
// -G and [[ -O ]] panicked inside the interpreter (issue 21) and now answer.
func TestPanicIsTheCallsFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	for _, script := range []string{"echo kept > f; forkbomb-test-panic one", "echo kept > f; forkbomb-test-panic two | cat"} {
		res, err := r.ExecFile(context.Background(), file, script, nil, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != statusFailed || !strings.Contains(res.Failed, "forkbomb-test-panic") {
			t.Errorf("%q: status %d, failed %q", script, res.Status, res.Failed)
		}
	}
	res, err := r.ExecFile(context.Background(), file, "[ -e f ] && echo kept; echo x > o; test -O o; echo O=$?; [ -G o ]; echo G=$?; [[ -O o ]] | cat; echo alive", nil, Limits{})
	if err != nil || res.Status != 0 || strings.Contains(string(res.Stdout), "kept") || !strings.Contains(string(res.Stdout), "alive") {
		t.Errorf("after the panics: %v %d %q %q", err, res.Status, res.Stdout, res.Stderr)
	}
	w := New()
	if res, err := w.Exec(context.Background(), "forkbomb-test-panic three", nil, Limits{}); err != nil || res.Status != statusFailed {
		t.Errorf("in process: %v %+v", err, res)
	}
	if res, err := w.Exec(context.Background(), "echo x > o; test -O o; echo O=$?; [[ -G o ]]; echo G=$?", nil, Limits{}); err != nil || res.Status != 0 || string(res.Stdout) != "O=0\nG=0\n" {
		t.Errorf("in process, -O and -G: %v %+v", err, res)
	}
}

// TestEveryLimitHolds: the wall time ends what checks its context (awk's loop, seq) and what
// never does (a command that spins: the worker is killed at the deadline and a grace); the
// world is as it was, the lock is free after, and ctx's end (SIGINT, SIGTERM in world exec)
// kills the worker at once.
func TestEveryLimitHolds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(file)
	r := NewRunner()
	defer r.Close()
	lim := Limits{WallTime: 300 * time.Millisecond}
	for _, script := range []string{"echo x > f; awk 'BEGIN{while(1){}}'", "echo x > f; seq 1 100000000000 | tail -1", "echo x > f; forkbomb-test-spin"} {
		done := make(chan Result, 1)
		go func() {
			res, err := r.ExecFile(context.Background(), file, script, nil, lim)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		select {
		case res := <-done:
			if res.Status != 124 || !strings.Contains(res.Limit, "wall time") {
				t.Errorf("%q: %+v", script, res)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("%q: not ended by its wall time", script)
		}
		if now, _ := os.ReadFile(file); !bytes.Equal(now, orig) {
			t.Errorf("%q: the world changed", script)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		unlock, err := Lock(ctx, file)
		cancel()
		if err != nil {
			t.Fatalf("the lock is still held: %v", err)
		}
		unlock()
	}
	for _, script := range []string{"awk 'BEGIN{while(1){}}'", "seq 1 100000000000 | tail -1"} {
		done := make(chan Result, 1)
		go func() { res, _ := New().Exec(context.Background(), script, nil, lim); done <- res }()
		select {
		case res := <-done:
			if res.Status != 124 {
				t.Errorf("in process %q: %+v", script, res)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("in process %q: not ended by its wall time", script)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.ExecFile(ctx, file, "forkbomb-test-spin", nil, Limits{WallTime: time.Hour})
		done <- err
	}()
	// cancelled once the worker spins: what ends it then is its kill, not a check of ctx
	worker := waitSpinning(t)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("a cancelled exec did not end")
	}
	// and the worker is gone, not left spinning (dead, or a zombie not yet reaped)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(worker) + "/stat")
		if err != nil || bytes.Contains(stat, []byte(") Z ")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled exec's worker (pid %d) still runs: %s", worker, stat)
		}
	}
	if res, err := r.ExecFile(context.Background(), file, "echo alive", nil, Limits{}); err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("after: %v %+v", err, res)
	}
}

// TestWorkerDeniesMissedHooks: a world command that forgets the world — reading, stat'ing or
// writing a host file, dialing loopback, running a host program, signalling forkbomb's process
// group — fails in the worker, checked from outside (the file, a counting listener); the same
// command in this process, unconfined, reaches each (the control).
func TestWorkerDeniesMissedHooks(t *testing.T) {
	needLandlock(t)
	b := newHostBait(t)
	ln := testutil.CountLoopback(t)
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	for _, p := range [][2]string{
		{"read", filepath.Join(b.dir, "secret.txt")}, {"stat", filepath.Join(b.dir, "secret.txt")},
		{"write", filepath.Join(b.dir, "w")}, {"dial", ln.Addr()}, {"exec", filepath.Join(b.dir, "exe")},
		{"signal", ""},
	} {
		t.Run(p[0], func(t *testing.T) {
			script := "forkbomb-test-host " + p[0] + " " + p[1]
			before, n := b.state(t), ln.Count(t)
			res, err := r.ExecFile(context.Background(), file, script, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout) + string(res.Stderr)
			if p[0] == "dial" {
				time.Sleep(testutil.InFlight) // what the kernel may still be queueing
			}
			if strings.Contains(out, "reached") || strings.Contains(out, b.secret) || ln.Count(t) != n || b.state(t) != before {
				t.Errorf("the worker reached the host: %q", out)
			}
			if !strings.Contains(out, "permission denied") && !strings.Contains(out, "operation not permitted") {
				t.Errorf("not denied by the kernel: %q", out)
			}
			n = ln.Count(t)
			res, err = New().Exec(context.Background(), script, nil, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Stdout), "reached") {
				t.Errorf("control: unconfined, the command did not reach the host: %q %q", res.Stdout, res.Stderr)
			}
			if got := ln.Count(t); p[0] == "dial" && got != n+1 {
				t.Errorf("control: the listener counted %d connections, want the command's one", got-n)
			}
			os.Remove(filepath.Join(b.dir, "w"))
		})
	}
}

// TestRunnerOnce: a Runner made for one exec (`forkbomb world exec`) closes its worker's stdin
// once the request is written, so that worker ends on its own after its answer, with Close
// not yet called; a second exec on it runs in a worker of its own. The control: a Runner's
// worker lives on and serves the next exec itself. Each exec's world is kept.
func TestRunnerOnce(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	count := "n=$(cat n 2>/dev/null); echo $((n+1)) > n; cat n"
	exec := func(r *Runner, want string) *workerProc {
		t.Helper()
		res, err := r.ExecFile(context.Background(), file, count, nil, Limits{})
		if err != nil || res.Status != 0 || string(res.Stdout) != want {
			t.Fatalf("exec: %v, status %d, stdout %q (want %q), stderr %q", err, res.Status, res.Stdout, want, res.Stderr)
		}
		return r.proc
	}
	once := NewRunnerOnce()
	defer once.Close()
	// At once after the first exec, while its worker may still be ending, the second is
	// served (by a worker of its own).
	if exec(once, "1\n") == exec(once, "2\n") {
		t.Error("the once-Runner's worker served two execs")
	}
	first := exec(once, "3\n")
	select {
	case <-first.exited:
	case <-time.After(time.Minute):
		t.Fatal("the once-Runner's worker did not end on its own after its answer")
	}
	if second := exec(once, "4\n"); second == first || second.proc.Process.Pid == first.proc.Process.Pid {
		t.Error("the once-Runner's second exec did not run in a worker of its own")
	}
	r := NewRunner()
	defer r.Close()
	p := exec(r, "5\n")
	if exec(r, "6\n") != p {
		t.Error("control: a Runner's second exec did not run in its first worker")
	}
	select {
	case <-p.exited:
		t.Error("control: a Runner's worker ended without Close")
	default:
	}
}
