//go:build linux || darwin

package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestFindGitDirs: the scan finds what git would take for a git directory
// (setup.c, is_git_directory), by layout and not by name, and nothing it
// would not; it does not descend into what it found. Each layout is
// written as "path" (a folder), "path=content" (a file) or "path->target"
// (a symlink). macOS's scan (walkGitDirs) is judged by the same cases.
func TestFindGitDirs(t *testing.T) {
	t.Parallel()
	repo := []string{"r/HEAD=ref: refs/heads/main\n", "r/objects", "r/refs"}
	for _, tc := range []struct {
		name   string
		layout []string
		want   []string
	}{
		{"bare", repo, []string{"r"}},
		{"bare, nested", []string{"a/b/r.git/HEAD=0123", "a/b/r.git/objects", "a/b/r.git/refs"}, []string{"a/b/r.git"}},
		{"HEAD a symlink", []string{"r/HEAD->refs/heads/main", "r/objects", "r/refs"}, []string{"r"}},
		{"objects a symlink", []string{"r/HEAD=x", "r/objects->../o", "o", "r/refs"}, []string{"r"}},
		{"no HEAD", []string{"r/objects", "r/refs"}, nil},
		{"HEAD a folder", []string{"r/HEAD", "r/objects", "r/refs"}, nil},
		{"no refs", []string{"r/HEAD=x", "r/objects"}, nil},
		{"refs a dangling symlink", []string{"r/HEAD=x", "r/objects", "r/refs->nowhere"}, nil},
		{"commondir", []string{"w/HEAD=x", "w/commondir=../c\n", "c/objects", "c/refs"}, []string{"w"}},
		{"commondir a symlink", []string{"w/HEAD=x", "w/commondir->../cd", "cd=../c\n", "c/objects", "c/refs"}, []string{"w"}},
		{"commondir to nothing", []string{"w/HEAD=x", "w/commondir=../none\n"}, nil},
		{"not descended", append(slices.Clone(repo), "r/sub/HEAD=x", "r/sub/objects", "r/sub/refs", "r/x/.git"), []string{"r"}},
		{".git by name", []string{"p/.git", "q/.git=gitdir: ../r\n"}, []string{"p/.git", "q/.git"}},
		{"root not judged", []string{"HEAD=x", "objects", "refs"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for _, e := range tc.layout {
				p, content, isFile := strings.Cut(e, "=")
				p, target, isLink := strings.Cut(p, "->")
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				switch {
				case isLink:
					err = os.Symlink(target, full)
				case isFile:
					err = os.WriteFile(full, []byte(content), 0o644)
				default:
					err = os.MkdirAll(full, 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for name, find := range map[string]func(string) ([]string, error){"FindGitDirs": sandbox.FindGitDirs, "walkGitDirs": sandbox.WalkGitDirs} {
				found, err := find(root)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, f := range found {
					rel, _ := filepath.Rel(root, f)
					got = append(got, rel)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s found %q, want %q", name, got, tc.want)
				}
			}
		})
	}
}
