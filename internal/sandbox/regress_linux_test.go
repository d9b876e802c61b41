package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// Regression tests for the review of the sandbox: each is an attack that
// once worked.

// TestAttackInheritedDescriptors: a descriptor forkbomb's caller left open
// (a directory, a file) does not reach the command.
func TestAttackInheritedDescriptors(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "TOPSECRET")
	dir, err := os.Open(outside)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// Go opens files close-on-exec; a caller's shell would not.
	if _, err := dupNoCloexec(int(dir.Fd()), 77); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(77)
	const script = `ls /proc/self/fd; cat /proc/self/fd/77/secret 2>&1; true`
	has77 := func(out string) bool { return slices.Contains(strings.Fields(out), "77") }
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		o := runPolicy(t, shPolicy(mode, t.TempDir(), script))
		if o.err != nil || o.code() != 0 {
			t.Fatalf("the probe did not run: %v, exit %d: %s", o.err, o.code(), o.all())
		}
		if strings.Contains(o.out, "TOPSECRET") {
			t.Fatalf("LEAK: an inherited directory descriptor opened the host")
		}
		if has77(o.out) {
			t.Fatalf("LEAK: descriptor 77 reached the command")
		}
	})
	t.Run("control", func(t *testing.T) {
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), script)
		p.NoSandbox = true
		if o := runPolicy(t, p); !strings.Contains(o.out, "TOPSECRET") || !has77(o.out) {
			t.Fatalf("positive control: unconfined, descriptor 77 and the secret through it not seen: %s", o.all())
		}
	})
}

func dupNoCloexec(fd, to int) (int, error) {
	return to, syscall.Dup3(fd, to, 0)
}

// TestAttackGitSymlinkAndFifo: a .git that is a symlink in the workdir is
// refused (it could be re-pointed), a fifo named .git does not hang a run,
// and a .git symlink chain that would exhaust the mount table fails the
// run instead of downgrading it to the Landlock backend.
func TestAttackGitSymlinkAndFifo(t *testing.T) {
	requireLayer(t, "mount namespace")
	t.Run("symlinked .git", func(t *testing.T) {
		wd := t.TempDir()
		os.MkdirAll(filepath.Join(wd, "meta", "proj.git", "hooks"), 0o755)
		os.MkdirAll(filepath.Join(wd, "proj"), 0o755)
		os.Symlink("../meta/proj.git", filepath.Join(wd, "proj", ".git"))
		_, err := sandbox.Run(context.Background(), shPolicy(sandbox.ModeAuto, wd, "true"), sandbox.Stdio{})
		if !errors.Is(err, sandbox.ErrSetup) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("a symlinked .git was not refused: %v", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		wd := t.TempDir()
		os.Mkdir(filepath.Join(wd, "x"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(wd, "x", ".git"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan outcome, 1)
		go func() { done <- runPolicy(t, shPolicy(sandbox.ModeAuto, wd, "echo hello")) }()
		select {
		case o := <-done:
			if o.out != "hello\n" {
				t.Fatalf("run with a fifo .git: %v %q", o.err, o.all())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a fifo named .git hung the run")
		}
	})
	t.Run("mount table exhaustion", func(t *testing.T) {
		wd := t.TempDir()
		deep := filepath.Join(wd, "c")
		for i := 0; i < 25; i++ {
			deep = filepath.Join(deep, "c")
		}
		os.MkdirAll(deep, 0o755)
		os.MkdirAll(filepath.Join(wd, "n", ".git"), 0o755)
		p := deep
		for i := 0; i < 25; i++ {
			rel, _ := filepath.Rel(filepath.Join(wd, "n", ".git"), p)
			os.Symlink(rel, filepath.Join(wd, "n", ".git", "l"+string(rune('a'+i))))
			p = filepath.Dir(p)
		}
		res, err := sandbox.Run(context.Background(), shPolicy(sandbox.ModeAuto, wd, "true"), sandbox.Stdio{})
		if err == nil || (res != nil && res.Mode == sandbox.ModeLandlock) {
			t.Fatalf("a crafted tree ran (mode %v) instead of failing: %v", res, err)
		}
	})
}

// TestAttackUnreadableDirHidesGit: a folder of the caller's that the scan
// cannot read (the command could chmod it back) fails the run closed.
func TestAttackUnreadableDirHidesGit(t *testing.T) {
	if os.Getuid() == 0 {
		testutil.SkipNotApplicable(t, "root reads every folder regardless of its mode; nothing to hide the scan from")
	}
	requireLayer(t, "mount namespace") // the scan keeps .git read-only, which only the namespaces backend does
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "sub", ".git", "hooks"), 0o755)
	os.Chmod(filepath.Join(wd, "sub"), 0o100)
	defer os.Chmod(filepath.Join(wd, "sub"), 0o755)
	_, err := sandbox.Run(context.Background(), shPolicy(sandbox.ModeAuto, wd, "true"), sandbox.Stdio{})
	if !errors.Is(err, sandbox.ErrSetup) || !strings.Contains(err.Error(), "cannot check") {
		t.Fatalf("an unreadable folder was skipped by the .git scan: %v", err)
	}
}

// TestHomeWritable: the private $HOME is writable for every caller (as
// root, /root is both a hidden folder and the home).
func TestHomeWritable(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		o := runPolicy(t, shPolicy(mode, t.TempDir(), `touch "$HOME/x" && echo ok`))
		if o.out != "ok\n" {
			t.Fatalf("$HOME is not writable: %s", o.all())
		}
	})
}

// TestKernelInterfacesRefused: /proc, /sys, /dev and service folders
// cannot be exposed with --ro or --rw.
func TestKernelInterfacesRefused(t *testing.T) {
	for _, p := range []string{"/proc/sys/kernel", "/sys/fs/cgroup", "/run", "/dev"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		_, err := sandbox.Run(context.Background(), sandbox.Policy{Command: []string{"true"}, Workdir: t.TempDir(), ReadWrite: []string{p}}, sandbox.Stdio{})
		if !errors.Is(err, sandbox.ErrInvalidPolicy) {
			t.Errorf("--rw %s: %v, want refusal", p, err)
		}
	}
}

var _ = exec.Command

// TestAttackOtherTerminals: the command cannot write to (or read from)
// another terminal of the user's by its /dev/pts path — in Landlock mode
// the host's /dev/pts is not granted; in namespace mode it is not there.
func TestAttackOtherTerminals(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		m, s := openPty(t)
		// (probed: the command ran to the write, else nothing written proves nothing)
		if o := runPolicy(t, shPolicy(mode, t.TempDir(), "echo INJECTED > "+s.Name()+" 2>&1; echo probed")); o.err != nil || o.code() != 0 || !strings.Contains(o.out, "probed") {
			t.Fatalf("the probe did not run: %v, exit %d: %s", o.err, o.code(), o.all())
		}
		if got := beforeMarker(t, m, s); got != "" {
			t.Fatalf("LEAK: the command wrote to another terminal (%s): %q", s.Name(), got)
		}
	})
	t.Run("control", func(t *testing.T) {
		m, s := openPty(t)
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), "echo INJECTED > "+s.Name())
		p.NoSandbox = true
		runPolicy(t, p)
		if got := beforeMarker(t, m, s); !strings.Contains(got, "INJECTED") {
			t.Fatalf("positive control: an unconfined write to the terminal was not seen: %q", got)
		}
	})
}

// beforeMarker is what the terminal's master reads before a marker the
// test writes to its other end: what was written there earlier, as the
// kernel hands a terminal's output to its master in order, however late
// its worker runs on a loaded machine (a minute at most).
func beforeMarker(t *testing.T, m, s *os.File) string {
	t.Helper()
	const marker = "FORKBOMB-PTY-MARKER"
	if _, err := s.WriteString(marker); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 4096)
	for deadline := time.Now().Add(time.Minute); !bytes.Contains(got, []byte(marker)); {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal's master did not read the test's marker within a minute: %q", got)
		}
		fds := []unix.PollFd{{Fd: int32(m.Fd()), Events: unix.POLLIN}}
		if n, _ := unix.Poll(fds, 100); n <= 0 {
			continue
		}
		n, err := unix.Read(int(m.Fd()), buf)
		if err != nil && err != unix.EINTR && err != unix.EAGAIN {
			t.Fatal(err)
		}
		got = append(got, buf[:max(n, 0)]...)
	}
	return string(got[:bytes.Index(got, []byte(marker))])
}
