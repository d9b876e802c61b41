package workspace_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestPid1Seed: a snapshot takes the history it shares with a kept pid 1
// of an ancestor from that pid 1's object files (hard links), and from no
// other: not a pid 1 of a later commit, of a sibling branch, of
// uncommitted changes, a shallow one, nor one an older forkbomb made. Either way its history is its
// base and the base's ancestors, whole, and its only ref is its branch.
func TestPid1Seed(t *testing.T) {
	t.Parallel()
	repo := userRepo(t)
	commit := func(file, text string) string {
		write(t, filepath.Join(repo, file), text)
		testutil.Git(t, repo, "add", "-A")
		testutil.Git(t, repo, "commit", "-qm", file)
		return testutil.Git(t, repo, "rev-parse", "HEAD")
	}
	c1 := commit("a.txt", "one\n")
	testutil.Git(t, repo, "checkout", "-qb", "sibling")
	sibling := commit("sibling.txt", "a sibling's work\n")
	testutil.Git(t, repo, "checkout", "-q", "main")
	c2 := commit("a.txt", "two\n")
	future := testutil.Git(t, repo, "rev-parse", "HEAD:a.txt")
	testutil.Git(t, repo, "checkout", "-q", c1)
	write(t, filepath.Join(repo, "secret.txt"), "uncommitted, never a commit's\n")
	secret := testutil.Git(t, repo, "hash-object", "secret.txt")
	s := newStore(t)
	if _, err := s.New(ctx, "changes", workspace.NewOptions{Repo: repo, WithChanges: true}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, "secret.txt"))
	testutil.Git(t, repo, "checkout", "-q", "main")
	// A pid 1 an older forkbomb made (no seed mark: its fetch may have
	// followed the repository's grafts) is no seed, even of its own base.
	if _, err := s.New(ctx, "legacy", workspace.NewOptions{Repo: repo, Rev: c1}); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(s.Root, "legacy", "meta.json")
	b, err := os.ReadFile(meta)
	var fields map[string]any
	if err == nil {
		err = json.Unmarshal(b, &fields)
	}
	if err != nil || fields["seed"] != true {
		t.Fatalf("legacy's meta has no seed mark: %s %v", b, err)
	}
	delete(fields, "seed")
	if b, err = json.Marshal(fields); err == nil {
		err = os.WriteFile(meta, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]workspace.NewOptions{
		"future":  {Repo: repo, Rev: c2},
		"sibling": {Repo: repo, Rev: sibling},
		"shallow": {Repo: repo, Rev: c1, Depth: 1},
	} {
		if _, err := s.New(ctx, name, o); err != nil {
			t.Fatal(err)
		}
	}
	objects := func(name string) map[string]uint64 {
		return testutil.ObjectFiles(t, filepath.Join(s.Root, name, "tree", ".git"))
	}
	check := func(name, base string, commits int, absent ...string) {
		t.Helper()
		tree := filepath.Join(s.Root, name, "tree")
		if refs := testutil.Git(t, tree, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/forkbomb" {
			t.Errorf("%s: refs %q, want only refs/heads/forkbomb", name, refs)
		}
		if h := testutil.Git(t, tree, "rev-parse", "HEAD"); h != base {
			t.Errorf("%s: HEAD %s, want %s", name, h, base)
		}
		if n := testutil.Git(t, tree, "rev-list", "--count", "HEAD"); n != string(rune('0'+commits)) {
			t.Errorf("%s: %s commits, want %d", name, n, commits)
		}
		if out, err := exec.Command("git", "-C", tree, "fsck", "--connectivity-only", "--no-dangling").CombinedOutput(); err != nil {
			t.Errorf("%s: fsck: %v: %s", name, err, out)
		}
		if st := testutil.Git(t, tree, "status", "--porcelain"); st != "" {
			t.Errorf("%s: not clean: %q", name, st)
		}
		for _, sha := range absent {
			if exec.Command("git", "-C", tree, "cat-file", "-e", sha).Run() == nil {
				t.Errorf("%s holds %s, from outside its history", name, sha)
			}
		}
	}

	// c1 has a later commit's, a sibling's, the changes', a shallow and an
	// unmarked pid 1 of its own to be seeded from: none may seed it.
	if _, err := s.New(ctx, "old", workspace.NewOptions{Repo: repo, Rev: c1}); err != nil {
		t.Fatal(err)
	}
	check("old", c1, 3, c2, future, sibling, secret)
	old := objects("old")
	for name := range map[string]bool{"future": true, "sibling": true, "changes": true, "shallow": true, "legacy": true} {
		for f, ino := range objects(name) {
			if old[f] == ino {
				t.Errorf("old shares %s with %s", f, name)
			}
		}
	}

	// A seed held exclusively (being removed) is not waited for: the
	// snapshot is made whole without it.
	lock, err := os.OpenFile(filepath.Join(s.Root, "old", "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := s.New(ctx, "held", workspace.NewOptions{Repo: repo, Rev: c2}); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	check("held", c2, 4, sibling, secret)
	held := objects("held")
	for f, ino := range old {
		if held[f] == ino {
			t.Errorf("held was seeded from old while old was held: %s", f)
		}
	}
	if err := s.Remove(ctx, "held"); err != nil { // else the newest seed of c2
		t.Fatal(err)
	}

	// c2 is seeded from old (c1, its parent): every object file of old's is
	// in the new snapshot, the same file.
	if _, err := s.New(ctx, "next", workspace.NewOptions{Repo: repo, Rev: c2}); err != nil {
		t.Fatal(err)
	}
	check("next", c2, 4, sibling, secret)
	next := objects("next")
	for f, ino := range old {
		if next[f] != ino {
			t.Errorf("next was not seeded from old: %s is not the same file", f)
		}
	}
}
