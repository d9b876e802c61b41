package early

import (
	"go/build"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestImports: on linux/amd64 the package imports nothing but unsafe, so that Go initialises
// it before syscall and all that sorts before it; elsewhere syscall alone, right after it. os,
// or anything that imports it, would put it behind a few more milliseconds of forkbomb's
// start, which is most of what a world fork costs.
func TestImports(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("early.go"); err != nil {
		t.Skip("not run from the source tree; the run from it checks the imports")
	}
	p, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"syscall"}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		allowed = []string{"unsafe"}
	}
	for _, im := range p.Imports {
		if !slices.Contains(allowed, im) {
			t.Errorf("imports %s, which would initialise the package later (allowed here: %s)", im, strings.Join(allowed, " "))
		}
	}
}

// TestCmdline: the kernel's argv is os.Args (the test binary's own, with its flags).
func TestCmdline(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("no /proc/self/cmdline here: the early path is left to the verb proper")
	}
	args, ok := cmdline()
	if !ok {
		t.Fatal("cmdline not read")
	}
	if strings.Join(args, "\x00") != strings.Join(os.Args, "\x00") {
		t.Errorf("cmdline %q, os.Args %q", args, os.Args)
	}
}

// TestFork: the link is made only where the verb proper would make it the same way, under
// the source's lock taken without waiting; every other case changes nothing and is left to
// the verb proper. The lock file is never opened through a symbolic link.
func TestFork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(at("a.world"), []byte("world"), 0o600); err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) bool {
		fa, errA := os.Stat(at(a))
		fb, errB := os.Stat(at(b))
		return errA == nil && errB == nil && os.SameFile(fa, fb)
	}
	absent := func(name string) bool {
		_, err := os.Lstat(at(name))
		return os.IsNotExist(err)
	}

	if !fork(at("a.world"), at("b.world")) || !same("a.world", "b.world") {
		t.Fatal("a regular, unlocked source was not linked")
	}
	if fi, err := os.Lstat(at("a.world.lock")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the lock file: %v %v, want a regular file of mode 0600", fi, err)
	}
	// never inherited by a child
	if fd, errno := OpenLock(at("a.world")); errno != 0 {
		t.Errorf("OpenLock: errno %d", errno)
	} else {
		flags, err := fcntl(fd, syscall.F_GETFD)
		syscall.Close(fd)
		if err != nil || flags&syscall.FD_CLOEXEC == 0 {
			t.Errorf("the lock's descriptor: flags %#x %v, want FD_CLOEXEC", flags, err)
		}
	}
	// a path the kernel would read cut short is no path
	if _, errno := OpenLock(at("a.world") + "\x00x"); errno != uintptr(syscall.EINVAL) {
		t.Errorf("OpenLock of a path with a NUL: errno %d, want EINVAL", errno)
	}
	if fork(at("a.world"), at("n.world\x00x")) || fork(at("a.world\x00x"), at("n.world")) || !absent("n.world") {
		t.Error("a path with a NUL was linked")
	}
	if fork(at("a.world"), at("b.world")) {
		t.Error("a destination that exists was reported linked")
	}
	if fork(at("none.world"), at("c.world")) || !absent("c.world") {
		t.Error("a missing source was linked")
	}
	os.Mkdir(at("d.world"), 0o700)
	if fork(at("d.world"), at("e.world")) || !absent("e.world") {
		t.Error("a folder was linked")
	}
	os.Symlink("a.world", at("l.world"))
	if fork(at("l.world"), at("f.world")) || !absent("f.world") {
		t.Error("a symbolic link was linked")
	}
	// the lock's file planted as a link: not followed, its target not made
	os.WriteFile(at("g.world"), []byte("world"), 0o600)
	os.Symlink(at("target"), at("g.world.lock"))
	if fork(at("g.world"), at("h.world")) || !absent("h.world") || !absent("target") {
		t.Error("the lock was taken through a symbolic link")
	}
	if _, errno := OpenLock(at("g.world")); errno != uintptr(syscall.ELOOP) {
		t.Errorf("OpenLock through a link: errno %d, want ELOOP", errno)
	}
	// the lock held by another open file (another forkbomb): left to the verb, which waits
	held, err := os.OpenFile(at("a.world.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if fork(at("a.world"), at("i.world")) || !absent("i.world") {
		t.Error("the source was linked while its lock was held")
	}
	syscall.Flock(int(held.Fd()), syscall.LOCK_UN)
	if !fork(at("a.world"), at("i.world")) || !same("a.world", "i.world") {
		t.Error("not linked once the lock was let go")
	}
}

func fcntl(fd, cmd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
