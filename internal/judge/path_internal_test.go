package judge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestJudgedPATH: the judged run's PATH names no folder of the judged copy
// — inside the folder it is seen at, through a link or not, or relative
// (resolved from the working directory, the copy) — and keeps the rest in
// order.
func TestJudgedPATH(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := filepath.Join(dir, "repo")
	tools := filepath.Join(dir, "tools")
	for _, d := range []string{filepath.Join(at, "bin"), tools} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(at, "bin"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, at, want string }{
		{at + "/bin:/usr/bin:" + tools + ":.::bin:" + at + ":" + link + ":" + at + "/../repo/bin:" + at + "x", at, "/usr/bin:" + tools + ":" + at + "x"},
		{at + "/bin:.", at, "/usr/local/bin:/usr/bin:/bin"},
		{"/usr/bin:bin", "", "/usr/bin"},
	} {
		if got := judgedPATH(c.path, c.at); got != c.want {
			t.Errorf("judgedPATH(%q, %q) = %q, want %q", c.path, c.at, got, c.want)
		}
	}
}

// TestJudgedAtFallsBack: the judged copy is seen at the repository's own
// path unless a folder the run is shown lies inside it (here a toolchain
// folder of the home, reached through a link) or the path is a system
// folder the copy would stand in for: then at the judge's own folder.
// Not parallel: it sets HOME.
func TestJudgedAtFallsBack(t *testing.T) {
	dir := t.TempDir()
	home, top, cache := filepath.Join(dir, "home"), filepath.Join(dir, "repo"), filepath.Join(dir, "cache")
	for _, d := range []string{home, filepath.Join(top, "tools", "nvm")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	o := Options{CacheDir: cache}
	mine := judgedDir(cache, "base-1")
	if got := judgedAt(o, top, "base-1"); got != top {
		t.Errorf("a plain repository: judged at %s, want %s", got, top)
	}
	if got := judgedAt(o, "/etc", "base-1"); got != mine {
		t.Errorf("a repository at /etc: judged at %s, want %s", got, mine)
	}
	if err := os.Symlink(filepath.Join(top, "tools", "nvm"), filepath.Join(home, ".nvm")); err != nil {
		t.Fatal(err)
	}
	if got := judgedAt(o, top, "base-1"); got != mine {
		t.Errorf("a toolchain folder inside the repository: judged at %s, want %s", got, mine)
	}
}

// TestStageHidden: a --hidden folder inside the repository is copied out,
// with its files; one outside it, or the repository itself, is used as it
// is; unstage removes the copies.
func TestStageHidden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	top, outside, cache := filepath.Join(dir, "repo"), filepath.Join(dir, "outside"), filepath.Join(dir, "cache")
	inside := filepath.Join(top, "hidden")
	for _, d := range []string{inside, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(inside, "h_test.go"), []byte("package h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, unstage := stageHidden(t.Context(), cache, []string{inside, outside, top}, top)
	if got[1] != outside || got[2] != top {
		t.Errorf("staged %q: want the folder outside and the repository as they are", got)
	}
	if !within(got[0], filepath.Join(cache, tempDir)) || hiddenHash(got[:1]) != hiddenHash([]string{inside}) {
		t.Errorf("the folder inside the repository: staged at %s, hash %s, want a copy in the cache folder with the same files", got[0], hiddenHash(got[:1]))
	}
	unstage()
	if left, _ := os.ReadDir(filepath.Join(cache, tempDir)); len(left) != 0 {
		t.Errorf("unstage left %v", left)
	}
}

// TestOwnWordsStaged: a refusal of a --hidden folder the judge copied out
// of the repository names the folder the user passed, not the copy.
func TestOwnWordsStaged(t *testing.T) {
	t.Parallel()
	staged, user := "/srv/state/judge/tmp/forkbomb-hidden-1/0", "/home/u/repo/hidden-tests"
	o := Options{Hidden: []string{staged, "/srv/other"}, stagedFrom: map[string]string{staged: user}}
	err := o.ownWords(&sandbox.PolicyError{Field: "ReadOnly", Value: staged, Reason: "refused"})
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || pe.Value != user || !strings.Contains(err.Error(), "--hidden "+user) || strings.Contains(err.Error(), staged) {
		t.Errorf("%v: want --hidden %s and no word of the copy", err, user)
	}
	err = o.ownWords(&sandbox.PolicyError{Field: "ReadOnly", Value: "/srv/other", Reason: "refused"})
	if !strings.Contains(err.Error(), "--hidden /srv/other") {
		t.Errorf("%v: want --hidden /srv/other", err)
	}
}
