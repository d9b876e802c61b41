package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// initRunsArg makes the test binary a forkbomb process of its own (see
// TestMain): initRunsMain.
const initRunsArg = "__forkbomb_init_runs"

// initRunsMain starts sandboxes the way one forkbomb process does — two
// runs, a session, a probe — all given the init at args[0], in the workdir
// args[1]; with args[2], that file is renamed over the init between the
// first run and the second. Each command appends a line to the workdir's
// "ran"; a line per start on stdout says which init served it.
func initRunsMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: INIT WORKDIR [REPLACEMENT]")
		return 2
	}
	init, wd := args[0], args[1]
	ctx := context.Background()
	ran := []string{"/bin/sh", "-c", "echo ran >> ran"}
	report := func(what string, res *sandbox.Result, err error) {
		if res == nil {
			fmt.Printf("%s err=%v\n", what, err)
			return
		}
		fmt.Printf("%s init=%s code=%d err=%v\n", what, res.Init, res.ExitCode, err)
	}
	for i := range 2 {
		res, err := sandbox.Run(ctx, sandbox.Policy{Command: ran, Workdir: wd, Init: init}, sandbox.Stdio{})
		report("run", res, err)
		if i == 0 && len(args) > 2 {
			if err := os.Rename(args[2], init); err != nil {
				fmt.Println("replace:", err)
				return 1
			}
		}
	}
	s, err := sandbox.Start(ctx, sandbox.Policy{Workdir: wd, Init: init})
	if err != nil {
		fmt.Printf("session err=%v\n", err)
		return 1
	}
	res, err := s.Run(ctx, sandbox.Cmd{Argv: ran}, sandbox.Stdio{})
	s.Close()
	report("session", res, err)
	rep, err := sandbox.ProbeWith(ctx, sandbox.ProbeOptions{Init: init})
	if err != nil || rep.Init == nil {
		fmt.Printf("probe err=%v\n", err)
		return 1
	}
	fmt.Printf("probe init=%s standalone=%t reason=%s\n", rep.Init.Path, rep.Init.Standalone, rep.Init.Reason)
	return 0
}

// TestInitSelection: the slim init serves only when it is a checked file of
// the same build. A stale one (another build), a symbolic link to a good
// one, a group-writable one and one owned by someone else are each refused;
// the start falls back to the running binary before the command has run
// (every command ran exactly once), and the rest of the process keeps to
// it, with one warning on stderr saying how to fix it. An init replaced at
// its path after the check is not what runs: the file checked is. The
// "same build" case is the positive control: the slim init does serve.
func TestInitSelection(t *testing.T) {
	t.Parallel()
	good := testInit(t)
	if good == "" {
		testutil.SkipOrFail(t, "no slim init to select: %v", slimInit.err)
	}
	exe := attackerExe(t)
	var staleOnce sync.Once
	var stale string
	staleDir := t.TempDir() // the subtests' share, kept until the last ends
	getStale := func(t *testing.T) string {
		staleOnce.Do(func() { stale = staleInit(t, good, staleDir) })
		if stale == "" {
			t.Fatal("no stale init (its build failed in another subtest)")
		}
		return stale
	}
	copyGood := func(t *testing.T, dst string, mode os.FileMode) {
		t.Helper()
		data, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dst, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	type setup func(t *testing.T, dir string) (init, replacement string)
	cases := []struct {
		name    string
		make    setup
		root    bool   // needs root (chown)
		refused string // in the warning and the probe; "" when the slim init must serve
	}{
		{name: "same build", make: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, sandbox.InitName)
			copyGood(t, p, 0o755)
			return p, ""
		}},
		{name: "replaced after the check", make: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, sandbox.InitName)
			copyGood(t, p, 0o755)
			data, err := os.ReadFile(getStale(t))
			if err != nil {
				t.Fatal(err)
			}
			r := filepath.Join(dir, "replacement")
			if err := os.WriteFile(r, data, 0o755); err != nil {
				t.Fatal(err)
			}
			return p, r
		}},
		{name: "another build", refused: "from another build", make: func(t *testing.T, dir string) (string, string) {
			return getStale(t), ""
		}},
		{name: "symbolic link", refused: "a symbolic link", make: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, sandbox.InitName)
			if err := os.Symlink(good, p); err != nil {
				t.Fatal(err)
			}
			return p, ""
		}},
		{name: "group-writable", refused: "writable by group or others", make: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, sandbox.InitName)
			copyGood(t, p, 0o775)
			return p, ""
		}},
		{name: "owned by another user", root: true, refused: "owned by uid 4242", make: func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, sandbox.InitName)
			copyGood(t, p, 0o755)
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return p, ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.root && os.Getuid() != 0 {
				t.Skip("needs root to give the file to another user (the unprivileged run cannot make one)")
			}
			init, replacement := c.make(t, t.TempDir())
			wd := t.TempDir()
			cmd := osexec.Command(exe, initRunsArg, init, wd)
			if replacement != "" {
				cmd.Args = append(cmd.Args, replacement)
			}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
			}
			t.Logf("stdout:\n%s\nstderr:\n%s", indent(out.String()), indent(errb.String()))

			want := init
			if c.refused != "" {
				want = "/proc/self/exe"
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 4 {
				t.Fatalf("want 4 report lines, got %q", lines)
			}
			for _, l := range lines[:3] {
				if !strings.HasSuffix(l, " init="+want+" code=0 err=<nil>") {
					t.Errorf("%q: want init=%s, exit 0", l, want)
				}
			}
			probe := lines[3]
			if !strings.HasPrefix(probe, fmt.Sprintf("probe init=%s standalone=%t ", want, c.refused == "")) || !strings.Contains(probe, c.refused) {
				t.Errorf("probe says %q; want init %s, refused for %q", probe, want, c.refused)
			}
			if got := readFile(t, filepath.Join(wd, "ran")); got != "ran\nran\nran\n" {
				t.Errorf("the three commands left %q: a refused init's start must run nothing, the fallback everything once", got)
			}
			warnings := strings.Count(errb.String(), "forkbomb: warning: sandbox init ")
			switch {
			case c.refused == "" && warnings != 0:
				t.Errorf("a warning where the slim init served: %s", errb.String())
			case c.refused != "" && warnings != 1:
				t.Errorf("%d warnings; want exactly one for the process", warnings)
			case c.refused != "" && (!strings.Contains(errb.String(), c.refused) || !strings.Contains(errb.String(), "go build -o bin/ ./cmd/...")):
				t.Errorf("the warning names neither %q nor the fix: %s", c.refused, errb.String())
			}
		})
	}
}

// TestInitByHand: the standalone init started by anything but forkbomb
// refuses with a message, and does nothing.
func TestInitByHand(t *testing.T) {
	t.Parallel()
	good := testInit(t)
	if good == "" {
		testutil.SkipOrFail(t, "no slim init: %v", slimInit.err)
	}
	for _, args := range [][]string{nil, {"sandbox", "--", "true"}} {
		out, err := osexec.Command(good, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "not run by hand") {
			t.Errorf("%s %q: %v, %q; want a refusal", good, args, err, out)
		}
	}
}
