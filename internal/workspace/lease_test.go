package workspace_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// makeTemps is a forkbomb that makes temporary workspaces in the store at
// root and is then killed: a pid 1 "t1" of repo, a fork "t1-f" of it, and a
// fork "kept-t" of the kept pid 1 kept. It says "ready" and waits.
func makeTemps(root, repo, kept string) {
	s, err := workspace.Open(root)
	if err == nil {
		_, err = s.New(ctx, "t1", workspace.NewOptions{Repo: repo, Temp: true})
	}
	if err == nil {
		_, err = s.ForkTemp(ctx, "t1", "t1-f")
	}
	if err == nil {
		_, err = s.ForkTemp(ctx, kept, kept+"-t")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	waitKilled()
}

// waitKilled says "ready" and waits to be killed (or for the test to be
// gone: its stdin closed).
func waitKilled() {
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startReady starts this test binary with args (a forkbomb of main_test.go)
// and waits for its "ready"; it is killed when the test ends.
func startReady(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0], args...)
	c.Stderr = os.Stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		c.Process.Kill()
		c.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		c.Process.Kill()
		t.Fatalf("%s: %q %v", args[0], line, err)
	}
	return c
}

// holdWorkspace is a forkbomb that holds the kept workspace name of the
// store at root (a race or judge of a base) until killed.
func holdWorkspace(root, name string) {
	s, err := workspace.Open(root)
	if err == nil {
		_, err = s.Hold(name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	waitKilled()
}

// TestRemoveHeld: 'workspace rm' of a kept workspace another forkbomb
// holds is refused, as Prune refuses it, until that forkbomb ends; this
// process's own hold does not keep it from this process.
func TestRemoveHeld(t *testing.T) {
	t.Parallel()
	repo := userRepo(t)
	s := newStore(t)
	for _, n := range []string{"base", "mine"} {
		if _, err := s.New(ctx, n, workspace.NewOptions{Repo: repo}); err != nil {
			t.Fatal(err)
		}
	}
	holder := startReady(t, "__workspace_hold", s.Root, "base")
	if err := s.Remove(ctx, "base"); !errors.Is(err, workspace.ErrInUse) || !strings.Contains(err.Error(), "a running forkbomb uses base") {
		t.Fatalf("rm of a base another forkbomb holds: %v", err)
	}
	if _, err := s.Get(ctx, "base"); err != nil {
		t.Fatalf("the held base is gone: %v", err)
	}
	release, err := s.Hold("mine")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := s.Remove(ctx, "mine"); err != nil {
		t.Fatalf("rm of a workspace this process holds: %v", err)
	}
	holder.Process.Kill()
	holder.Wait()
	if err := s.Remove(ctx, "base"); err != nil {
		t.Fatalf("rm once its holder is gone: %v", err)
	}
}

// TestPruneLeased: a temporary workspace is removed by Prune once the
// process that made it is gone, however it went (SIGKILL here), and never
// while it lives; a workspace made by new or fork is never temporary; a
// kept pid 1 whose forks a killed forkbomb left says how to remove them.
func TestPruneLeased(t *testing.T) {
	t.Parallel()
	repo := userRepo(t)
	s := newStore(t)
	if _, err := s.New(ctx, "kept", workspace.NewOptions{Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "kept", "kept-user"); err != nil {
		t.Fatal(err)
	}
	if m, err := s.ForkTemp(ctx, "kept", "kept-mine"); err != nil || !m.Temp {
		t.Fatalf("this process's temporary fork: %+v %v", m, err)
	}
	maker := startReady(t, "__workspace_temp", s.Root, repo, "kept")
	names := func() []string {
		all, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, m := range all {
			n = append(n, m.Name)
			if temp := m.Name == "t1" || m.Name == "t1-f" || m.Name == "kept-t" || m.Name == "kept-mine"; m.Temp != temp {
				t.Errorf("%s: temp %v", m.Name, m.Temp)
			}
		}
		return n
	}
	all := []string{"kept", "kept-mine", "kept-t", "kept-user", "t1", "t1-f"}
	// alive: nothing is the maker's to lose, nor this process's
	p, err := s.Prune(ctx, workspace.PruneOptions{})
	if err != nil || len(p.Removed) != 0 {
		t.Fatalf("prune while the makers live: %+v %v", p, err)
	}
	if got := names(); !slices.Equal(got, all) {
		t.Fatalf("workspaces %v, want %v", got, all)
	}
	if err := s.Remove(ctx, "kept"); !errors.Is(err, workspace.ErrHasForks) || strings.Contains(err.Error(), "killed") {
		t.Fatalf("rm kept while its forks' makers live: %v", err)
	}
	// what extra names is still never a live maker's
	if p, err = s.Prune(ctx, workspace.PruneOptions{Also: func(m *workspace.Meta) bool { return m.Temp }}); err != nil || len(p.Removed) != 0 {
		t.Fatalf("prune of every temporary one by name while the makers live: %+v %v", p, err)
	}
	if err := maker.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the maker ended before it was killed: %v", err)
	}

	maker.Process.Kill()
	maker.Wait()
	err = s.Remove(ctx, "kept")
	if !errors.Is(err, workspace.ErrHasForks) || !strings.Contains(err.Error(), "1 of them left by a forkbomb that was killed") {
		t.Fatalf("rm kept once a maker is gone: %v", err)
	}
	p, err = s.Prune(ctx, workspace.PruneOptions{DryRun: true})
	if want := []string{"kept-t", "t1-f", "t1"}; err != nil || !slices.Equal(p.Removed, want) {
		t.Fatalf("dry run: %+v %v, want %v removed", p, err, want)
	}
	// a dry run looks for a command running in one, as the removal does
	inUse, err := s.UseLock("t1-f")
	if err != nil {
		t.Fatal(err)
	}
	p, err = s.Prune(ctx, workspace.PruneOptions{DryRun: true})
	inUse()
	if err != nil || !slices.Equal(p.Removed, []string{"kept-t"}) || len(p.Kept) != 2 ||
		!strings.Contains(p.Kept[0], "t1-f: ") || !strings.Contains(p.Kept[0], "command is running") || p.Kept[1] != "t1: it has forks" {
		t.Fatalf("dry run with a command running in t1-f: %+v %v", p, err)
	}
	if got := names(); !slices.Equal(got, all) {
		t.Fatalf("a dry run removed: left %v", got)
	}
	var forgot []string
	p, err = s.Prune(ctx, workspace.PruneOptions{Forget: func(m *workspace.Meta) error {
		forgot = append(forgot, m.Name)
		if _, err := s.Get(ctx, m.Name); !errors.Is(err, workspace.ErrNotFound) {
			t.Errorf("%s is forgotten before it is removed: %v", m.Name, err)
		}
		return nil
	}})
	if want := []string{"kept-t", "t1-f", "t1"}; err != nil || !slices.Equal(p.Removed, want) || len(p.Kept) != 0 || !slices.Equal(forgot, want) {
		t.Fatalf("prune: %+v %v, want %v removed and forgotten (forgotten: %v)", p, err, want, forgot)
	}
	if got, want := names(), []string{"kept", "kept-mine", "kept-user"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}

	// extra: a kept pid 1 goes once nothing is forked from it
	isKept := func(m *workspace.Meta) bool { return m.Name == "kept" }
	if p, err = s.Prune(ctx, workspace.PruneOptions{Also: isKept}); err != nil || len(p.Removed) != 0 || len(p.Kept) != 1 || !strings.HasPrefix(p.Kept[0], "kept: ") {
		t.Fatalf("prune of a pid 1 with forks: %+v %v", p, err)
	}
	for _, f := range []string{"kept-user", "kept-mine"} {
		if err := s.Remove(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// a kept pid 1 a forkbomb holds (a race or judge between forks) stays
	release, err := s.Hold("kept")
	if err != nil {
		t.Fatal(err)
	}
	if p, err = s.Prune(ctx, workspace.PruneOptions{Also: isKept}); err != nil || len(p.Removed) != 0 || len(p.Kept) != 1 || !strings.Contains(p.Kept[0], "uses it") {
		t.Fatalf("prune of a held pid 1: %+v %v", p, err)
	}
	// a second hold in this process shares the first's lock: the pid 1 is
	// let go only when both are
	release2, err := s.Hold("kept")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if p, err = s.Prune(ctx, workspace.PruneOptions{Also: isKept}); err != nil || len(p.Removed) != 0 {
		t.Fatalf("prune of a pid 1 held twice, let go once: %+v %v", p, err)
	}
	release2()
	// (a process another test is starting can hold a copy of the hold's
	// descriptor for a moment, until its exec)
	// What is kept for it elsewhere is forgotten before a pid 1 can be
	// made again under its name, which needs the store lock
	forget := func(m *workspace.Meta) error {
		if !s.StoreLocked() {
			t.Errorf("%s is forgotten without the store lock held: a pid 1 of its name could be made meanwhile", m.Name)
		}
		return errors.New("planted")
	}
	// a deadline, not a count: a child another test forks holds the
	// hold's descriptor until its exec, which a loaded machine may delay
	for deadline := time.Now().Add(30 * time.Second); ; {
		p, err = s.Prune(ctx, workspace.PruneOptions{Also: isKept, Forget: forget})
		if err == nil && slices.Equal(p.Removed, []string{"kept"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prune of a pid 1 with no forks: %+v %v", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if want := []string{"kept: planted"}; len(p.Kept) != 0 || !slices.Equal(p.Errors, want) {
		t.Fatalf("Forget's error: kept %q, errors %q, want errors %q", p.Kept, p.Errors, want)
	}
	if _, err := s.Hold("kept"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("hold of a pruned pid 1: %v", err)
	}
	// this process's lease went with its fork: a new temporary one of
	// the same name is leased again, and kept from Prune
	if _, err := s.New(ctx, "t1", workspace.NewOptions{Repo: repo, Temp: true}); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Prune(ctx, workspace.PruneOptions{}); err != nil || len(p.Removed) != 0 {
		t.Fatalf("prune of this process's new temporary pid 1: %+v %v", p, err)
	}
}

// TestLeaseNoFollow: a workspace's lease file is never opened through a
// symlink nor as anything but a regular file: a link planted in its place
// is not followed (checked from outside: its dangling target is not made),
// and neither Hold nor Prune takes it for a free lease.
func TestLeaseNoFollow(t *testing.T) {
	t.Parallel()
	repo := userRepo(t)
	s := newStore(t)
	for _, name := range []string{"kept", "fifo"} {
		if _, err := s.New(ctx, name, workspace.NewOptions{Repo: repo}); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(t.TempDir(), "made-through-the-link")
	if err := os.Symlink(target, filepath.Join(s.Root, "kept", "lease")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.Root, "fifo", "lease"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kept", "fifo"} {
		if release, err := s.Hold(name); err == nil {
			release()
			t.Errorf("hold of %s through a planted lease file", name)
		}
	}
	p, err := s.Prune(ctx, workspace.PruneOptions{Also: func(*workspace.Meta) bool { return true }})
	if err != nil || len(p.Removed) != 0 || len(p.Kept) != 2 {
		t.Fatalf("prune with planted lease files: %+v %v", p, err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link's target was made: %v", err)
	}
}
