package workspace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSplitStatMatchesGit: the stat and the patch the diff takes from one
// diff-tree --patch-with-stat are byte for byte what diff-tree --stat
// --summary and diff-tree -p give on their own — for edits, additions,
// deletions, renames, mode changes, links, binary files, and names that
// hold a newline, a carriage return, "diff --git " or quotes — and no change gives neither.
func TestSplitStatMatchesGit(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	git := func(args ...string) []byte {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", repo}, args...)...)
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		p = filepath.Join(repo, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	git("init", "-q")
	write("edit.txt", strings.Repeat("line\n", 50), 0o644)
	write("gone.txt", "bye\n", 0o644)
	write("old/name.go", strings.Repeat("package x // long enough to be seen as a rename\n", 20), 0o644)
	write("run.sh", "echo\n", 0o644)
	write("blob.bin", "\x00\x01\x02", 0o644)
	git("add", "-A")
	git("commit", "-qm", "base")
	base := strings.TrimSpace(string(git("rev-parse", "HEAD")))
	write("edit.txt", strings.Repeat("line\n", 25)+"changed\n"+strings.Repeat("line\n", 24), 0o644)
	os.Remove(filepath.Join(repo, "gone.txt"))
	os.Rename(filepath.Join(repo, "old/name.go"), filepath.Join(repo, "new/name.go"))
	os.MkdirAll(filepath.Join(repo, "new"), 0o755)
	os.Rename(filepath.Join(repo, "old/name.go"), filepath.Join(repo, "new/name.go"))
	os.Chmod(filepath.Join(repo, "run.sh"), 0o755)
	write("blob.bin", "\x00\x03\x04\x05", 0o644)
	write("n\ndiff --git a/x b/x", "tricky\n", 0o644)
	write("r\r\ndiff --git a/y b/y\r", "tricky too\n", 0o644)
	write("\"quoted\" \\ name", "q\n", 0o644)
	os.Symlink("edit.txt", filepath.Join(repo, "link"))
	git("add", "-A")
	git("commit", "-qm", "changed")
	head := strings.TrimSpace(string(git("rev-parse", "HEAD")))

	args := append(diffArgs[:len(diffArgs):len(diffArgs)], "--binary", "--full-index")
	for _, c := range []struct{ name, from, to string }{{"changes", base, head}, {"none", head, head}} {
		// as the stat was asked for alone (--binary would imply -p)
		wantStat := git(append(append([]string{"diff-tree", "--stat", "--summary"}, diffArgs...), c.from, c.to)...)
		wantPatch := git(append(append([]string{"diff-tree", "-p"}, args...), c.from, c.to)...)
		stat, patch, err := splitStat(git(append(append([]string{"diff-tree", "--patch-with-stat", "--summary"}, args...), c.from, c.to)...))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if stat != string(wantStat) {
			t.Errorf("%s: stat\n%q\nwant\n%q", c.name, stat, wantStat)
		}
		if !bytes.Equal(patch, wantPatch) {
			t.Errorf("%s: patch\n%q\nwant\n%q", c.name, patch, wantPatch)
		}
		if c.name == "changes" && (!strings.Contains(stat, "rename") || !strings.Contains(stat, "mode change") || !strings.Contains(string(patch), "GIT binary patch")) {
			t.Errorf("the fixture lacks a kind of change:\n%s", stat)
		}
	}
	for _, bad := range []string{" a | 1 +\n 1 file changed\n", " a | 1 +\ndiff --git a/a b/a\n"} {
		if _, _, err := splitStat([]byte(bad)); err == nil {
			t.Errorf("splitStat(%q): no error", bad)
		}
	}
}
