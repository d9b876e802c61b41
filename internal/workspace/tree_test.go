package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTreeEditorMatchesGit: trees forkbomb writes itself are the trees git
// writes for the same files — ordering included, where a folder sorts as
// if its name ended in "/" ("a.txt" < "a/" < "a0"), and a folder left empty
// is dropped — so diff-tree reads them as git would.
func TestTreeEditorMatchesGit(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", repo}, args...)...)
		c.Stdin = strings.NewReader(stdin)
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "init", "-q")
	files := map[string]string{"a.txt": "1", "a/x": "2", "a-b": "3", "a0": "4", "b/c/d/e": "5", "-dash": "6", "ünï": "7"}
	var index strings.Builder
	for p, content := range files {
		sha := run(content, "hash-object", "-w", "--stdin")
		index.WriteString("100644 " + sha + "\t" + p + "\x00")
	}
	run(index.String(), "update-index", "--add", "-z", "--index-info")
	want := run("", "write-tree")

	g := gitCmd{gitDir: filepath.Join(repo, ".git")}
	obj := &objects{ctx: context.Background(), g: g}
	defer obj.close()
	bw := blobWriter{dir: filepath.Join(repo, ".git", "objects")}
	te := newTreeEditor(obj, bw, "", true)
	for p, content := range files {
		sha, err := bw.writeObject("blob", []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		if err := te.set(p, "100644", sha); err != nil {
			t.Fatal(err)
		}
	}
	// A folder that ends up empty is no part of the tree.
	sha, _ := bw.writeObject("blob", []byte("gone"))
	te.set("empty/soon/gone", "100644", sha)
	te.remove("empty/soon/gone")
	got, err := te.write()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("forkbomb's tree %s, git's %s:\n%s\nvs\n%s", got, want, run("", "ls-tree", "-r", got), run("", "ls-tree", "-r", want))
	}
	// Editing git's tree: remove a folder, turn a file into a folder.
	commit := run("", "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", "-m", "t", want)
	te2 := newTreeEditor(obj, bw, commit, false)
	te2.remove("b")
	te2.remove("a0")
	s2, _ := bw.writeObject("blob", []byte("8"))
	te2.set("a0/inside", "100755", s2)
	got2, err := te2.write()
	if err != nil {
		t.Fatal(err)
	}
	listing := run("", "ls-tree", "-r", got2)
	if strings.Contains(listing, "b/c/d/e") || !strings.Contains(listing, "100755 blob "+s2+"\ta0/inside") || !strings.Contains(listing, "a.txt") {
		t.Errorf("edited tree:\n%s", listing)
	}
	run("", "fsck", "--no-dangling", "--strict")
}
