package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestPid1HistoryCut: a pid 1 holds its commit and the ancestors only —
// no later commit, no other branch, tag, stash or remote — and making it
// does not touch the user's repository.
func TestPid1HistoryCut(t *testing.T) {
	repo := userRepo(t)
	base := testutil.Git(t, repo, "rev-parse", "HEAD~1")
	testutil.Git(t, repo, "tag", "v1")
	testutil.Git(t, repo, "checkout", "-qb", "sibling")
	write(t, filepath.Join(repo, "sibling.txt"), "a sibling's work\n")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "sibling")
	sibling := testutil.Git(t, repo, "rev-parse", "HEAD")
	testutil.Git(t, repo, "checkout", "-q", "main")
	future := testutil.Git(t, repo, "rev-parse", "HEAD")
	write(t, filepath.Join(repo, "main.go"), "package main // stashed\n")
	testutil.Git(t, repo, "stash", "-q")
	testutil.Git(t, repo, "remote", "add", "origin", "https://example.invalid/repo.git")
	before := dirState(t, repo)

	s := newStore(t)
	m, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo, Rev: "HEAD~1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Base != base {
		t.Fatalf("base %s, want %s", m.Base, base)
	}
	tree := filepath.Join(s.Root, "p1", "tree")
	refs := testutil.Git(t, tree, "for-each-ref", "--format=%(refname)")
	if refs != "refs/heads/forkbomb" {
		t.Errorf("refs in pid 1: %q, want only refs/heads/forkbomb", refs)
	}
	if r := testutil.Git(t, tree, "remote"); r != "" {
		t.Errorf("remotes in pid 1: %q", r)
	}
	for _, sha := range []string{future, sibling} {
		if exec.Command("git", "-C", tree, "cat-file", "-e", sha).Run() == nil {
			t.Errorf("pid 1 holds commit %s from outside its history", sha)
		}
	}
	if n := testutil.Git(t, tree, "rev-list", "--count", "--all"); n != "1" {
		t.Errorf("pid 1 holds %s commits, want 1", n)
	}
	// On its own branch at base, clean, and no reflog naming where it
	// came from.
	if h := testutil.Git(t, tree, "symbolic-ref", "HEAD"); h != "refs/heads/forkbomb" {
		t.Errorf("HEAD is %s, want refs/heads/forkbomb", h)
	}
	if h := testutil.Git(t, tree, "rev-parse", "HEAD"); h != base {
		t.Errorf("HEAD at %s, want %s", h, base)
	}
	if st := testutil.Git(t, tree, "status", "--porcelain"); st != "" {
		t.Errorf("pid 1 is not clean: %q", st)
	}
	if _, err := os.Stat(filepath.Join(tree, ".git", "logs")); !os.IsNotExist(err) {
		t.Errorf("pid 1 has a reflog (%v)", err)
	}
	if after := dirState(t, repo); after != before {
		t.Errorf("the user's repository changed")
	}
}

// TestPid1Depth: with Depth, the pid 1's history stops that many commits
// from its base (what a bisect of a range asks for), and RepoHistory lists
// a range of the user's repository as the pid 1 would.
func TestPid1Depth(t *testing.T) {
	t.Parallel()
	repo := userRepo(t) // two commits
	for i := 3; i <= 5; i++ {
		write(t, filepath.Join(repo, "lib", "lib.go"), fmt.Sprintf("package lib\n\nconst V = %d\n", i))
		testutil.Git(t, repo, "commit", "-qam", fmt.Sprint(i))
	}
	root := testutil.Git(t, repo, "rev-list", "--max-parents=0", "HEAD")
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo, Rev: "HEAD", Depth: 3}); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(s.Root, "p1", "tree")
	if n := testutil.Git(t, tree, "rev-list", "--count", "--all"); n != "3" {
		t.Errorf("pid 1 holds %s commits, want 3", n)
	}
	if exec.Command("git", "-C", tree, "cat-file", "-e", root).Run() == nil {
		t.Error("pid 1 holds the root commit, more than 3 commits from its base")
	}
	good := testutil.Git(t, repo, "rev-parse", "HEAD~2")
	got, err := workspace.RepoHistory(repo).FirstParents(ctx, good, testutil.Git(t, repo, "rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(testutil.Git(t, tree, "rev-list", "--reverse", "HEAD~2..HEAD"))
	if !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("the user's range %v, the pid 1's %v", got, want)
	}
	if _, err := workspace.RepoHistory(repo).FirstParents(ctx, testutil.Git(t, repo, "rev-parse", "HEAD"), good); err == nil {
		t.Error("a range whose good is not an ancestor of bad was listed")
	}

	// Grafts (deprecated) in the user's repository are not its history:
	// neither the snapshot's fetch nor the range's list follows them.
	head, parent := testutil.Git(t, repo, "rev-parse", "HEAD"), testutil.Git(t, repo, "rev-parse", "HEAD~1")
	write(t, filepath.Join(repo, ".git", "info", "grafts"), head+" "+root+"\n")
	if _, err := s.New(ctx, "p2", workspace.NewOptions{Repo: repo, Rev: "HEAD", Depth: 2}); err != nil {
		t.Fatal(err)
	}
	tree = filepath.Join(s.Root, "p2", "tree")
	if p := testutil.Git(t, tree, "rev-parse", "HEAD~1"); p != parent {
		t.Errorf("the snapshot's HEAD~1 is %s, want the commit's own parent %s", p, parent)
	}
	if got, err := workspace.RepoHistory(repo).FirstParents(ctx, parent, head); err != nil || !slices.Equal(got, []string{head}) {
		t.Errorf("the range after HEAD~1 with grafts: %v, %v; want [%s]", got, err, head)
	}
}

// TestPid1SHA256: a repository of SHA-256 objects gets a pid 1 of the
// same format (read from its commit's name), and a fork's diff against it.
func TestPid1SHA256(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(repo, "a.txt"), "a\n")
	testutil.Git(t, repo, "init", "-q", "--object-format=sha256")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "one")
	s := newStore(t)
	m, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	if want := testutil.Git(t, repo, "rev-parse", "HEAD"); m.Base != want || len(m.Base) != 64 {
		t.Fatalf("base %q, want %q", m.Base, want)
	}
	tree := filepath.Join(s.Root, "p1", "tree")
	if f := testutil.Git(t, tree, "rev-parse", "--show-object-format"); f != "sha256" {
		t.Errorf("pid 1's objects are %s, want sha256", f)
	}
	if patch := forkPatch(t, s, "p1", "echo b >> a.txt"); !bytes.Contains(patch, []byte("+b\n")) {
		t.Errorf("patch %q lacks the change", patch)
	}
}

// TestPid1Ignores: a diff leaves out what any of the pid 1's .gitignore
// files ignores, nested ones too; it reads no other file as ignore rules.
func TestPid1Ignores(t *testing.T) {
	t.Parallel()
	repo := userRepo(t) // its .gitignore: *.o and build/
	write(t, filepath.Join(repo, "sub", ".gitignore"), "*.tmp\n")
	write(t, filepath.Join(repo, "sub", "deep", ".gitignore"), "*.log\n")
	write(t, filepath.Join(repo, "notes", "gitignore"), "*.txt\n")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "ignores")
	s := newStore(t)
	m, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(m.Ignores))
	if want := []string{".gitignore", "sub/.gitignore", "sub/deep/.gitignore"}; !slices.Equal(got, want) {
		t.Errorf("ignore files %q, want %q", got, want)
	}
	patch := forkPatch(t, s, "p1", "echo >a.o; echo >x.tmp; echo >sub/x.tmp; echo >sub/deep/x.log; echo >sub/x.log; echo >notes/x.txt")
	for _, p := range []string{"x.tmp", "sub/x.log", "notes/x.txt"} {
		if !bytes.Contains(patch, []byte("+++ b/"+p+"\n")) {
			t.Errorf("%s missing from the patch", p)
		}
	}
	for _, p := range []string{"a.o", "sub/x.tmp", "sub/deep/x.log"} {
		if bytes.Contains(patch, []byte("b/"+p)) {
			t.Errorf("%s is ignored but in the patch", p)
		}
	}
}

// TestWithChanges: --with-changes carries uncommitted tracked and untracked
// changes (not ignored files) into the snapshot.
func TestWithChanges(t *testing.T) {
	repo := userRepo(t)
	write(t, filepath.Join(repo, "main.go"), "package main // edited\n")
	write(t, filepath.Join(repo, "new.txt"), "untracked\n")
	write(t, filepath.Join(repo, "junk.o"), "ignored\n")
	before := dirState(t, repo)
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo, WithChanges: true}); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(s.Root, "p1", "tree")
	for f, want := range map[string]string{"main.go": "package main // edited\n", "new.txt": "untracked\n"} {
		if got, _ := os.ReadFile(filepath.Join(tree, f)); string(got) != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "junk.o")); err == nil {
		t.Errorf("an ignored file was carried over")
	}
	if st := testutil.Git(t, tree, "status", "--porcelain"); st != "" {
		t.Errorf("pid 1 is not clean: %q", st)
	}
	if after := dirState(t, repo); after != before {
		t.Errorf("the user's repository changed")
	}
}

// TestForkIsolation: writes in a fork are seen neither by its source nor
// by its siblings; a fork of a fork sees its source as it was when forked.
func TestForkIsolation(t *testing.T) {
	for _, method := range []workspace.Method{"", workspace.MethodCopy} {
		t.Run(string(method)+"auto", func(t *testing.T) {
			s := newStore(t)
			s.ForkMethod = method
			if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"a", "b"} {
				if _, err := s.Fork(ctx, "p1", f); err != nil {
					t.Fatal(err)
				}
			}
			execIn(t, s, "a", "echo from-a > main.go; echo new > only-a")
			if _, err := s.Fork(ctx, "a", "a2"); err != nil {
				t.Fatal(err)
			}
			execIn(t, s, "a", "echo later > main.go")
			if got := execIn(t, s, "b", "cat main.go; ls only-a 2>&1 || true"); strings.Contains(got, "from-a") || !strings.Contains(got, "No such file") {
				t.Errorf("a sibling sees a's writes: %q", got)
			}
			if got := execIn(t, s, "p1", "cat main.go; echo scratch > main.go"); strings.Contains(got, "from-a") {
				t.Errorf("the source sees a fork's writes: %q", got)
			}
			if got := execIn(t, s, "p1", "cat main.go"); strings.Contains(got, "scratch") {
				t.Errorf("a command in pid 1 changed it: %q", got)
			}
			if got := execIn(t, s, "a2", "cat main.go only-a"); got != "from-a\nnew\n" {
				t.Errorf("fork of a fork sees %q, want a as it was when forked", got)
			}
			if m, _ := s.Get(ctx, "a"); method == "" && m.Method != workspace.MethodOverlay {
				t.Errorf("auto method is %s on a machine with overlayfs", m.Method)
			}
		})
	}
}

const layer1 = `set -e
echo changed >> main.go
rm docs/a.md
mv lib/lib.go lib/renamed.go
chmod +x main.go
ln -s main.go link-to-main
printf '\000\001\002binary\377' > bin.dat
echo odd > "with space.txt"
echo odd > "$(printf 'new\nline')"
echo odd > "$(printf 'tab\there')"
echo odd > 'ünï cødé.txt'
echo odd > 'quo"te'
echo odd > ./-dash
echo odd > 'back\slash'
mkdir -p deep/a/b && echo deep > deep/a/b/c
echo ignored > x.o
mkdir build && echo ignored > build/out
echo changed >> tracked.o
mkdir .GIT && echo evil > .GIT/config
`

const layer2 = `set -e
rm -r deep
rm bin.dat && mkdir bin.dat && echo now-a-dir > bin.dat/x
rm -r lib && echo now-a-file > lib
mkdir -p docs && rm -rf docs && mkdir docs && echo fresh > docs/b.md
echo more >> main.go
ln -sfn "with space.txt" link-to-main
rm 'quo"te'
`

// TestPatchRoundTrip: git apply of a fork's patch on a fresh copy of the
// base reproduces the fork's tree exactly — modified, added, deleted,
// renamed files, modes, symlinks, binary files, odd names, a file turned
// folder and back, a folder deleted and made again — leaving out only
// ignored new files and anything under .git in any letter case; for one
// layer of changes and for a fork of a fork, for every fork method.
func TestPatchRoundTrip(t *testing.T) {
	for _, method := range []workspace.Method{workspace.MethodOverlay, workspace.MethodCopy} {
		t.Run(string(method), func(t *testing.T) {
			s := newStore(t)
			s.ForkMethod = method
			if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Fork(ctx, "p1", "f1"); err != nil {
				t.Fatal(err)
			}
			execIn(t, s, "f1", layer1)
			check := func(name string) {
				d, err := s.Diff(ctx, name, false)
				if err != nil {
					t.Fatal(err)
				}
				want := treeOf(t, mergedTree(t, s, name))
				for k := range want {
					if k == "x.o" || strings.HasPrefix(k, "build") || strings.HasPrefix(k, ".GIT") {
						delete(want, k)
					}
				}
				got := treeOf(t, applyToBase(t, s, "p1", d.Patch))
				for _, line := range diffTrees(want, got) {
					t.Errorf("%s: fork | applied patch: %s", name, line)
				}
				if !strings.Contains(strings.Join(d.Excluded, " "), ".GIT") && method == workspace.MethodOverlay {
					t.Errorf("%s: .GIT not reported as left out: %v", name, d.Excluded)
				}
				if strings.Contains(string(d.Patch), ".GIT") || strings.Contains(string(d.Patch), "x.o") {
					t.Errorf("%s: the patch carries .GIT or an ignored file", name)
				}
				if !strings.Contains(string(d.Patch), "rename from lib/lib.go") && name == "f1" {
					t.Errorf("%s: the rename was not detected", name)
				}
			}
			check("f1")
			if _, err := s.Fork(ctx, "f1", "f2"); err != nil {
				t.Fatal(err)
			}
			execIn(t, s, "f2", layer2)
			check("f2")
			check("f1") // its source's patch did not change
		})
	}
}

// TestGitReadOnlyInWorkspace: a command in a fork cannot write its .git.
func TestGitReadOnlyInWorkspace(t *testing.T) {
	s := newStore(t)
	s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)})
	s.Fork(ctx, "p1", "f")
	before := dirState(t, filepath.Join(s.Root, "p1", "tree", ".git"))
	out := execIn(t, s, "f", "echo '[core] fsmonitor=x' >> .git/config 2>&1; echo x > .git/hooks/pre-commit 2>&1; git log --oneline | wc -l; true")
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("writes to .git were not refused: %s", out)
	}
	if after := dirState(t, filepath.Join(s.Root, "p1", "tree", ".git")); after != before {
		t.Errorf("pid 1's .git changed")
	}
	if up, _ := os.ReadDir(filepath.Join(s.Root, "f", "upper")); len(up) != 0 {
		t.Errorf("the fork's upper layer holds %v", up)
	}
}

// TestBadInput: every bad input gets an error naming it and changes
// nothing.
func TestBadInput(t *testing.T) {
	s := newStore(t)
	repo := userRepo(t)
	empty := t.TempDir()
	testutil.Git(t, empty, "init", "-q")
	linky := userRepo(t)
	os.Symlink("/etc/passwd", filepath.Join(linky, "escape"))
	testutil.Git(t, linky, "add", "escape")
	testutil.Git(t, linky, "commit", "-qm", "link out")
	inRepo, _ := workspace.Open(filepath.Join(repo, ".forkbomb"))
	cases := map[string]error{}
	_, cases["name with .."] = s.New(ctx, "..", workspace.NewOptions{Repo: repo})
	_, cases["name with /"] = s.New(ctx, "a/b", workspace.NewOptions{Repo: repo})
	_, cases["missing repo"] = s.New(ctx, "x", workspace.NewOptions{Repo: filepath.Join(repo, "nope")})
	_, cases["not a repo"] = s.New(ctx, "x", workspace.NewOptions{Repo: t.TempDir()})
	_, cases["no commits"] = s.New(ctx, "x", workspace.NewOptions{Repo: empty})
	_, cases["bad rev"] = s.New(ctx, "x", workspace.NewOptions{Repo: repo, Rev: "no-such-branch"})
	_, cases["option as rev"] = s.New(ctx, "x", workspace.NewOptions{Repo: repo, Rev: "--output=/tmp/x"})
	_, cases["symlink out"] = s.New(ctx, "x", workspace.NewOptions{Repo: linky})
	_, cases["state in repo"] = inRepo.New(ctx, "x", workspace.NewOptions{Repo: repo})
	_, cases["fork of missing"] = s.Fork(ctx, "nope", "y")
	_, cases["fork bad name"] = s.Fork(ctx, "nope", "../y")
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
	if all, _ := s.List(ctx); len(all) != 0 {
		t.Errorf("bad input left workspaces: %v", all)
	}
	if entries, _ := os.ReadDir(s.Root); len(entries) > 2 { // .lock, .capabilities.json
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("bad input left files in the state directory: %v", names)
	}
}

// TestRemove: rm leaves nothing; a pid 1 with forks, or a workspace a
// command runs in, is refused (and a cancelled caller stops waiting).
func TestRemove(t *testing.T) {
	s := newStore(t)
	s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)})
	s.Fork(ctx, "p1", "f")
	execIn(t, s, "f", "mkdir ro && chmod 0 ro; echo x > file")
	if err := s.Remove(ctx, "p1"); !errors.Is(err, workspace.ErrHasForks) {
		t.Errorf("removing a pid 1 with forks: %v", err)
	}
	// A command that says when it runs, then runs until it is stopped.
	running, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := s.Exec(running, "f", sandbox.Policy{Command: []string{"/bin/sh", "-c", "touch started; exec sleep 600"}}, sandbox.Stdio{})
		done <- err
	}()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(s.Root, "f", "upper", "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	if err := s.Remove(ctx, "f"); !errors.Is(err, workspace.ErrInUse) {
		t.Errorf("removing a workspace in use: %v", err)
	}
	// The caller's cancellation ends the wait for the command's lock.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Remove(cancelled, "f"); !errors.Is(err, context.Canceled) {
		t.Errorf("removing a workspace in use, cancelled: %v, want the wait stopped", err)
	}
	stop()
	<-done
	for _, n := range []string{"f", "p1"} {
		if err := s.Remove(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(s.Root); len(entries) > 2 {
		t.Errorf("rm left %d entries", len(entries))
	}
}

// TestCrashRecovery: a forkbomb killed with SIGKILL in the middle of making
// a pid 1 leaves nothing the next command does not reclaim, and the user's
// repository untouched.
func TestCrashRecovery(t *testing.T) {
	repo := userRepo(t)
	for i := 0; i < 300; i++ {
		write(t, filepath.Join(repo, "bulk", strings.Repeat("d", i%7+1), "f"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+".txt"), strings.Repeat("data ", i))
	}
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "bulk")
	before := dirState(t, repo)
	root := filepath.Join(t.TempDir(), "state")
	exe, _ := os.Executable()
	killed := 0
	for attempt := 0; attempt < 5 && killed < 2; attempt++ {
		cmd := exec.Command(exe, "__workspace_new", root, "p1", repo)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it as soon as its temporary directory exists.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			entries, _ := os.ReadDir(root)
			found := false
			for _, e := range entries {
				found = found || strings.HasPrefix(e.Name(), ".tmp-")
			}
			if found {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err != nil {
			killed++
		} else {
			os.RemoveAll(filepath.Join(root, "p1")) // finished before the kill; try again
		}
	}
	if killed == 0 {
		testutil.SkipOrFail(t, "could not kill the operation mid-way on this machine")
	}
	// A pid 1's build holds a lock in its folder; a child the killed
	// process was starting may hold it until its exec, so the store is
	// opened again until the lock is let go.
	var s *workspace.Store
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if s, err = workspace.Open(root); err != nil {
			t.Fatal(err)
		}
		var left []string
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") || e.Name() == "p1" {
				left = append(left, e.Name())
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind after a crash: %v", left)
		}
	}
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo}); err != nil {
		t.Errorf("the name is not usable after a crash: %v", err)
	}
	if after := dirState(t, repo); after != before {
		t.Errorf("the user's repository changed")
	}
}

// TestReclaimSparesBuilds: a pid 1 is built without the store lock, under
// a lock of its own in its temporary directory; the reclaim every store
// runs at open leaves such a directory alone while that lock is held, and
// removes it once its holder is gone (as a killed creator's would be).
// While it is held, other pid 1s are made.
func TestReclaimSparesBuilds(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "state")
	if _, err := workspace.Open(root); err != nil {
		t.Fatal(err)
	}
	building := filepath.Join(root, ".tmp-p1-1-1")
	if err := os.Mkdir(building, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(building, ".building"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A link named like a build's folder is removed, never followed: the
	// folder it names gets no lock file and keeps its contents.
	outside := t.TempDir()
	write(t, filepath.Join(outside, "keep"), "kept")
	if err := os.Symlink(outside, filepath.Join(root, ".tmp-link-1-1")); err != nil {
		t.Fatal(err)
	}
	s, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, ".tmp-link-1-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link was not reclaimed: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 || entries[0].Name() != "keep" {
		t.Errorf("reclaim followed the link: %v", entries)
	}
	if _, err := s.New(ctx, "p2", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(building); err != nil {
		t.Fatalf("a build under way was reclaimed: %v", err)
	}
	f.Close()
	// A child of another test between its fork and its exec may hold the
	// lock's file a moment longer: read again until it lets go.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := workspace.Open(root); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(building)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a build whose creator is gone was not reclaimed: %v", err)
		}
	}
	if m, err := s.Get(ctx, "p2"); err != nil || m.Kind != workspace.KindPid1 {
		t.Errorf("p2: %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(root, "p2", ".building")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("p2 kept its building lock's file: %v", err)
	}
}

// TestConcurrentForks: many forkbomb processes (here, stores on the same
// root) forking at once never corrupt the state: every distinct name is
// made once, a contested name exactly once.
func TestConcurrentForks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	s0, _ := workspace.Open(root)
	if _, err := s0.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		go func(i int) {
			s, _ := workspace.Open(root)
			_, err := s.Fork(ctx, "p1", "f"+string(rune('a'+i)))
			errs <- err
		}(i)
		go func() {
			s, _ := workspace.Open(root)
			_, err := s.Fork(ctx, "p1", "contested")
			errs <- err
		}()
	}
	ok, exists := 0, 0
	for i := 0; i < 16; i++ {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, workspace.ErrExists):
			exists++
		default:
			t.Errorf("fork: %v", err)
		}
	}
	if ok != 9 || exists != 7 {
		t.Errorf("%d forks made and %d refused as existing; want 9 and 7", ok, exists)
	}
	all, _ := s0.List(ctx)
	if len(all) != 10 {
		t.Errorf("%d workspaces, want 10", len(all))
	}
}

// TestForkProbeCancelled: how forks are made is probed once and kept in
// the store's root, but not from a probe whose context ended: a first
// fork cancelled mid-probe would otherwise leave every later fork without
// overlayfs. The next fork probes again and gets overlayfs where the
// sandbox's probe offers it.
func TestForkProbeCancelled(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "state")
	s, err := workspace.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	s.PrepareForks(cancelled)
	if _, err := os.Stat(filepath.Join(root, ".capabilities.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cancelled probe left its answer: %v", err)
	}
	m, err := s.Fork(ctx, "p1", "f1")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sandbox.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := workspace.MethodReflink
	if l := rep.Layer("overlayfs"); l != nil && l.Status == "ok" {
		want = workspace.MethodOverlay
	}
	if m.Method != want && !(want == workspace.MethodReflink && m.Method == workspace.MethodCopy) {
		t.Errorf("fork made by %s after a cancelled probe, want %s", m.Method, want)
	}
	if _, err := os.Stat(filepath.Join(root, ".capabilities.json")); err != nil {
		t.Errorf("the fork's probe left no answer: %v", err)
	}
}

// TestKeptForkSkipsFlush: a fork's commands unmount its overlay without
// flushing the host's filesystem (overlayfs's volatile mount: its marker
// is in the work layer while the command runs), forkbomb removes the
// marker once the command has ended, and every later command mounts the
// fork again and sees what the earlier ones wrote. A marker left by a
// forkbomb killed mid-command is removed at the next command; once the
// machine has restarted in between (a boot stamp of another boot), the
// fork is refused with sandbox.ErrLayersLost and its files are left as
// they are.
func TestKeptForkSkipsFlush(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	testutil.OpenOverlayWork(t, s.Root)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "p1", "f"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Get(ctx, "f"); m.Method != workspace.MethodOverlay {
		testutil.SkipOrFail(t, "fork method %s: no overlayfs here", m.Method)
	}
	if _, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err != nil {
		testutil.SkipOrFail(t, "no boot ID on this kernel: forks flush as before (%v)", err)
	}
	work := filepath.Join(s.Root, "f", "work")
	marked := func() bool { // as its owner sees it: overlayfs leaves the folders mode 000
		p := work
		for _, n := range []string{"work", "incompat", "volatile"} {
			p = filepath.Join(p, n)
			os.Chmod(p, 0o700)
		}
		_, err := os.Lstat(p)
		return err == nil
	}
	// The command holds its mount until its stdin closes, which the test
	// does once it has looked for the marker.
	in, hold, _ := os.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, "f", sandbox.Policy{Command: []string{"/bin/sh", "-c", "echo one > kept.txt; cat >/dev/null"}}, sandbox.Stdio{Stdin: in})
		done <- err
	}()
	seen := false
	for range 1500 { // the mount's whole life, however slow its start
		if seen = marked(); seen {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	hold.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	in.Close()
	if !seen {
		t.Fatal("no volatile marker while a command ran: the fork's overlay was mounted with the flush")
	}
	if marked() {
		t.Error("the marker outlived the command: overlayfs would refuse the fork's next mount but for forkbomb's check")
	}
	for _, n := range []string{"two", "three"} {
		if got := execIn(t, s, "f", "cat kept.txt; echo "+n+" >> kept.txt"); !strings.HasPrefix(got, "one\n") {
			t.Fatalf("a later command sees %q, want what the earlier ones wrote", got)
		}
	}
	// A marker a killed forkbomb left, on this boot: removed, and mounted.
	marked() // opens up what is there
	if err := os.MkdirAll(filepath.Join(work, "work", "incompat", "volatile"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := execIn(t, s, "f", "cat kept.txt"); got != "one\ntwo\nthree\n" {
		t.Fatalf("after a marker of this boot: %q", got)
	}
	// A restart since: refused, the files untouched.
	marked()
	if err := os.MkdirAll(filepath.Join(work, "work", "incompat", "volatile"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(work+".boot", []byte("another boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Exec(ctx, "f", sandbox.Policy{Command: []string{"/bin/true"}}, sandbox.Stdio{})
	if !errors.Is(err, sandbox.ErrLayersLost) {
		t.Fatalf("a fork whose unflushed mount a restart cut: %v, want ErrLayersLost", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.Root, "f", "upper", "kept.txt")); string(got) != "one\ntwo\nthree\n" {
		t.Errorf("the refused fork's files changed: %q", got)
	}
	// The lock is released on that refusal: the fork can be removed.
	if err := s.Remove(ctx, "f"); err != nil {
		t.Errorf("remove after the refusal: %v", err)
	}
}
