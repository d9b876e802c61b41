package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cliInit is the line GODEBUG=inittrace=1 prints once the CLI's package is initialised: a
// process that never prints it ended before forkbomb's start proper (internal/world/early).
const cliInit = "init github.com/forkbomb/forkbomb/internal/cli @"

// TestWorldForkEarly: `world fork SRC DST` is done before forkbomb's start proper — a hard link
// to SRC under its lock, the verb's message, exit 0, and the CLI never initialised — and every
// case that path does not own goes on to the verb proper with its own answer: DST existing, SRC
// not a regular file, flags, and SRC's lock held by another process (the fork then waits for
// it, in the verb proper, and links once it is free: the early path does not ignore the lock).
func TestWorldForkEarly(t *testing.T) {
	core, _ := binaries(t)
	dir := t.TempDir()
	if _, e, code := fb(t, core, dir, "world", "init", "a.world"); code != 0 {
		t.Fatalf("world init: %d %s", code, e)
	}
	src := filepath.Join(dir, "a.world")
	traced := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(core, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	sameFile := func(a, b string) bool {
		fa, errA := os.Stat(a)
		fb, errB := os.Stat(b)
		return errA == nil && errB == nil && os.SameFile(fa, fb)
	}

	t.Run("early", func(t *testing.T) {
		out, errOut, code := traced("world", "fork", "a.world", "b.world")
		if code != 0 || out != "b.world: fork of a.world\n" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		if strings.Contains(errOut, cliInit) {
			t.Errorf("the CLI was initialised: the fork did not end the process early\n%s", errOut)
		}
		// on linux/amd64 early makes its own system calls: it runs before syscall's initialiser
		if runtime.GOARCH == "amd64" && strings.Contains(errOut, "init syscall @") {
			t.Errorf("syscall was initialised before the fork ended the process\n%s", errOut)
		}
		if !sameFile(src, filepath.Join(dir, "b.world")) {
			t.Error("b.world is not a link to a.world")
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"destination exists", []string{"world", "fork", "a.world", "b.world"}, 1, "fork world: link a.world b.world: file exists"},
		{"source not a regular file", []string{"world", "fork", ".", "c.world"}, 1, "fork world: . is not a regular file"},
		{"a flag", []string{"world", "fork", "--help"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := traced(tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.err) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, cliInit) {
				t.Errorf("the verb proper did not run\n%s", errOut)
			}
		})
	}

	t.Run("lock held", func(t *testing.T) {
		lock, err := os.OpenFile(src+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(core, "world", "fork", "a.world", "d.world")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		// The verb proper's start, then its wait on the lock: nothing is linked while it is held.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), cliInit) {
		}
		waitBlockedOnLock(t, cmd.Process.Pid) // not a guess at how long it takes to get there
		if _, err := os.Lstat(filepath.Join(dir, "d.world")); err == nil {
			t.Fatal("d.world was made while a.world's lock was held")
		}
		syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		go func() {
			for sc.Scan() {
			}
		}()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("fork after the lock was freed: %v", err)
		}
		if !sameFile(src, filepath.Join(dir, "d.world")) {
			t.Error("d.world is not a link to a.world")
		}
	})
}

// waitBlockedOnLock waits (a minute at most) until the kernel's table of
// file locks shows process pid waiting for a flock; where there is no
// such table (macOS), 200 ms.
func waitBlockedOnLock(t *testing.T, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		time.Sleep(200 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(locks), "\n") {
			// "7: -> FLOCK  ADVISORY  WRITE 4321 fe:00:5678 0 EOF": a waiter
			f := strings.Fields(l)
			if len(f) >= 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == strconv.Itoa(pid) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d was not seen waiting for the lock within a minute:\n%s", pid, locks)
		}
	}
}
