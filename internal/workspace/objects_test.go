package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestObjectCache: the base's commit and trees a diff reads are kept, and a
// later diff reads them with no git process; a kept file whose bytes are not
// the object's (damaged, or put there) is a miss that git answers, and is
// mended; an object of another kind under the id is refused.
func TestObjectCache(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			testObjectCache(t, format)
		})
	}
}

func testObjectCache(t *testing.T, format string) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "--object-format="+format)
	if err := os.MkdirAll(filepath.Join(repo, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, s := range map[string]string{"a/x": "1", "y": "2"} {
		if err := os.WriteFile(filepath.Join(repo, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-qm", "c")
	commit, root, sub := git("rev-parse", "HEAD"), git("rev-parse", "HEAD^{tree}"), git("rev-parse", "HEAD:a")
	cache := filepath.Join(t.TempDir(), objCacheName)
	g := gitCmd{gitDir: filepath.Join(repo, ".git")}
	read := func() (*objects, map[string][]byte) {
		t.Helper()
		o := &objects{ctx: context.Background(), g: g, cache: cache, sha256: format == "sha256"}
		defer o.close()
		tree, err := o.treeOf(commit)
		if err != nil || tree != root {
			t.Fatalf("treeOf: %q, %v; want %s", tree, err, root)
		}
		got := map[string][]byte{}
		for _, id := range []string{root, sub} {
			if got[id], err = o.get(id, "tree"); err != nil {
				t.Fatal(err)
			}
		}
		return o, got
	}
	first, want := read()
	if first.cat == nil {
		t.Fatal("the first read started no git cat-file")
	}
	commitBytes, err := os.ReadFile(filepath.Join(cache, commit))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{commit, root, sub} {
		if _, err := os.Stat(filepath.Join(cache, id)); err != nil {
			t.Errorf("%s not kept: %v", id, err)
		}
	}
	second, got := read()
	if second.cat != nil {
		t.Error("a read of kept objects started git cat-file")
	}
	for id := range want {
		if !bytes.Equal(got[id], want[id]) {
			t.Errorf("kept %s reads %q, git's %q", id, got[id], want[id])
		}
	}

	// Another tree's bytes under the subfolder's id: a miss, answered by
	// git, and the file mended.
	if err := os.WriteFile(filepath.Join(cache, sub), want[root], 0o600); err != nil {
		t.Fatal(err)
	}
	third, got := read()
	if third.cat == nil {
		t.Error("a damaged kept tree was used without git")
	}
	if !bytes.Equal(got[sub], want[sub]) {
		t.Errorf("damaged %s read as %q, want %q", sub, got[sub], want[sub])
	}
	if b, _ := os.ReadFile(filepath.Join(cache, sub)); !bytes.Equal(b, want[sub]) {
		t.Errorf("damaged %s not mended: %q", sub, b)
	}

	// A link or a pipe where a kept object was: a miss, never followed or
	// waited on.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, want[sub], 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(cache, sub))
	if err := os.Symlink(outside, filepath.Join(cache, sub)); err != nil {
		t.Fatal(err)
	}
	if viaLink, _ := read(); viaLink.cat == nil {
		t.Error("a link in the cache was followed")
	}
	os.Remove(filepath.Join(cache, root))
	if err := syscall.Mkfifo(filepath.Join(cache, root), 0o600); err != nil {
		t.Fatal(err)
	}
	if viaPipe, _ := read(); viaPipe.cat == nil {
		t.Error("a pipe in the cache was read as a kept object")
	}

	// A cache folder that is a link: not read (though it holds the
	// objects), nothing written through it.
	elsewhere := t.TempDir()
	for id, b := range map[string][]byte{commit: commitBytes, root: want[root], sub: want[sub]} {
		if err := os.WriteFile(filepath.Join(elsewhere, id), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	linked := filepath.Join(t.TempDir(), objCacheName)
	if err := os.Symlink(elsewhere, linked); err != nil {
		t.Fatal(err)
	}
	cache = linked
	if linkedRead, _ := read(); linkedRead.cat == nil {
		t.Error("a linked cache folder was read from")
	}
	if left, _ := os.ReadDir(elsewhere); len(left) != 3 {
		t.Errorf("written through a linked cache folder: %v", left)
	}

	// The commit's own bytes asked for as a tree: refused, kept or not.
	cache = filepath.Join(filepath.Dir(outside), objCacheName)
	o := &objects{ctx: context.Background(), g: g, cache: cache, sha256: format == "sha256"}
	defer o.close()
	if _, err := o.get(commit, "tree"); err == nil || !strings.Contains(err.Error(), "not a tree") {
		t.Errorf("a commit read as a tree: %v", err)
	}
	if _, err := o.get("HEAD", "tree"); err == nil {
		t.Error("a name that is no object id was read")
	}
}
