package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWorldWorkerSelection: a world's script runs in the slim forkbomb-world
// beside forkbomb when it is a checked file of the same build, else in
// forkbomb itself, with one warning naming why and the fix — and in every
// case the exec runs once, with its output and its world kept (the worker
// that refused ran nothing). The control: the good one serves.
func TestWorldWorkerSelection(t *testing.T) {
	core, _ := binaries(t)
	slim := filepath.Join(filepath.Dir(core), "forkbomb-world")
	good, err := os.ReadFile(slim)
	if err != nil {
		t.Fatal(err)
	}
	// Another build: its embedded copy of the world's doc.go says something else (the same
	// length, so the binary still runs), which is what a build from other sources is to the
	// fingerprint.
	line := []byte("// Package world is a whole agent workspace in one file")
	if bytes.Count(good, line) == 0 {
		t.Fatalf("%s holds no embedded copy of internal/world/doc.go", slim)
	}
	stale := bytes.ReplaceAll(good, line, []byte("// Package world is a whole agent WORKSPACE in one file"))
	notAWorker, err := os.ReadFile(filepath.Join(filepath.Dir(core), "forkbomb-init"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		worker []byte // written as forkbomb-world; nil none
		mode   os.FileMode
		link   bool // forkbomb-world is a symbolic link to a good one instead
		slim   bool // the slim worker serves
		warn   string
	}{
		{"the same build", good, 0o755, false, true, ""},
		{"none", nil, 0, false, false, ""},
		{"another build", stale, 0o755, false, false, "is not of the build that started it"},
		{"another program", notAWorker, 0o755, false, false, "not run by hand"},
		{"writable by others", good, 0o777, false, false, "writable by group or others"},
		{"a symbolic link", good, 0, true, false, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			lone := filepath.Join(dir, "forkbomb")
			copyFile(t, core, lone)
			w := filepath.Join(dir, "forkbomb-world")
			switch {
			case tc.link:
				real := filepath.Join(dir, "real-world")
				if err := os.WriteFile(real, tc.worker, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(real, w); err != nil {
					t.Fatal(err)
				}
			case tc.worker != nil:
				if err := os.WriteFile(w, tc.worker, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(w, tc.mode); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			if _, e, code := fb(t, lone, dir, "world", "init", "w.world"); code != 0 {
				t.Fatalf("world init: %d %s", code, e)
			}
			exe, out, errOut, code := workerOf(t, lone, dir, "w.world", "n=$(cat /work/n 2>/dev/null); echo $((n+1)) > /work/n; sleep 3; cat /work/n")
			if code != 0 || out != "1\n" {
				t.Fatalf("exec: exit %d, stdout %q, want 1 (run once); stderr: %s", code, out, errOut)
			}
			want := lone
			if tc.slim {
				want = w
			}
			if exe != want {
				t.Errorf("the worker was %s, want %s", exe, want)
			}
			if tc.warn == "" && errOut != "" || tc.warn != "" && (strings.Count(errOut, "world worker") != 1 || !strings.Contains(errOut, tc.warn) ||
				!strings.Contains(errOut, "CGO_ENABLED=0 go build -o bin/ ./cmd/...")) {
				t.Errorf("stderr: %q, want one warning with %q", errOut, tc.warn)
			}
			if out, _, _ := fb(t, lone, dir, "world", "cat", "w.world", "/work/n"); out != "1\n" {
				t.Errorf("the world kept %q, want 1", out)
			}
		})
	}
}

// workerOf runs script in the world at file through bin in dir and returns the executable of
// the worker it started (its child that runs as the world's worker), with the exec's output.
func workerOf(t *testing.T, bin, dir, file, script string) (exe, stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := startBin(t, func() *exec.Cmd {
		cmd := exec.Command(bin, "world", "exec", file, script)
		cmd.Dir = dir
		out.Reset()
		errb.Reset()
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.WaitDelay = time.Minute
		return cmd
	})
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	parent := strconv.Itoa(cmd.Process.Pid)
	// A worker that refuses ends at once and the next one runs the script, which sleeps: the
	// last worker seen is the one that ran it. The sleep is the window this poll must see it
	// in: 3 s, as one second was missed once with the machine's load at 25 (CI beside builds).
poll:
	for {
		select {
		case <-done:
			break poll
		case <-time.After(5 * time.Millisecond):
		}
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			st, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			// pid (comm) state ppid …: comm may hold spaces, so read after its last ')'
			f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
			if len(f) < 2 || f[1] != parent {
				continue
			}
			pd := filepath.Dir(p)
			argv, _ := os.ReadFile(filepath.Join(pd, "cmdline"))
			if !bytes.Contains(argv, []byte("\x00forkbomb-world-worker\x00")) {
				continue // not yet executed
			}
			if e, err := os.Readlink(filepath.Join(pd, "exe")); err == nil {
				exe = e
			}
		}
	}
	return exe, out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
