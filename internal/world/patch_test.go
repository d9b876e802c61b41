package world

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// patchCase is a trunk and what a branch of it changes.
type patchCase struct {
	name   string
	trunk  func(f *FS) error
	branch func(f *FS) error
	want   string // in the patch text
}

func patchCases() []patchCase {
	lines := func(n int, f func(int) string) []byte {
		var b bytes.Buffer
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.Bytes()
	}
	bin := make([]byte, 3000)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	none := func(*FS) error { return nil }
	return []patchCase{
		{"edit in the middle", func(f *FS) error {
			return f.WriteFile("/work/a.txt", lines(40, func(i int) string { return fmt.Sprint("line ", i) }), 0o644)
		}, func(f *FS) error {
			return f.WriteFile("/work/a.txt", lines(40, func(i int) string {
				if i == 3 || i == 30 {
					return "changed"
				}
				return fmt.Sprint("line ", i)
			}), 0o644)
		}, "@@ -1,7 +1,7 @@"},
		{"new file in new folders", none, func(f *FS) error {
			if err := f.MkdirAll("/work/x/y", 0o755); err != nil {
				return err
			}
			return f.WriteFile("/work/x/y/new", []byte("hello\n"), 0o644)
		}, "new file mode 100644"},
		{"no newline at the end", func(f *FS) error { return f.WriteFile("/work/n", []byte("a\nb"), 0o644) },
			func(f *FS) error { return f.WriteFile("/work/n", []byte("a\nc"), 0o644) }, noNewline},
		{"newline added at the end", func(f *FS) error { return f.WriteFile("/work/n", []byte("a"), 0o644) },
			func(f *FS) error { return f.WriteFile("/work/n", []byte("a\n"), 0o644) }, "-a\n" + noNewline + "+a\n"},
		{"removed, folder left empty", func(f *FS) error {
			if err := f.MkdirAll("/work/d/e", 0o755); err != nil {
				return err
			}
			return f.WriteFile("/work/d/e/gone", []byte("bye\n"), 0o644)
		}, func(f *FS) error { return f.Remove("/work/d", true) }, "deleted file mode 100644"},
		{"empty file made and removed", func(f *FS) error { return f.WriteFile("/work/old-empty", nil, 0o644) },
			func(f *FS) error {
				if err := f.Remove("/work/old-empty", false); err != nil {
					return err
				}
				return f.WriteFile("/work/new-empty", nil, 0o644)
			}, "index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"},
		{"executable bit", func(f *FS) error { return f.WriteFile("/work/run.sh", []byte("echo\n"), 0o644) },
			func(f *FS) error { return f.Chmod("/work/run.sh", 0o755) }, "old mode 100644\nnew mode 100755\n"},
		{"binary", func(f *FS) error { return f.WriteFile("/work/b.dat", bin, 0o644) }, func(f *FS) error {
			b := append([]byte(nil), bin...)
			b[1000] ^= 0xff
			if err := f.WriteFile("/work/b.dat", b, 0o644); err != nil {
				return err
			}
			return f.WriteFile("/work/new.dat", []byte("\x00\x01\x02"), 0o644)
		}, "GIT binary patch\nliteral 3000\n"},
		{"odd names", none, func(f *FS) error {
			for _, n := range []string{"with space", "with\nnewline", "quote\"back\\slash", "-dash", "latin1-\xe9\xff", "tab\there", "✓ utf8"} {
				if err := f.WriteFile("/work/"+n, []byte(n+"\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		}, `"b/with\nnewline"`},
		{"symlinks", func(f *FS) error {
			if err := f.WriteFile("/work/t", []byte("t\n"), 0o644); err != nil {
				return err
			}
			return f.Symlink("t", "/work/link")
		}, func(f *FS) error {
			if err := f.Remove("/work/link", false); err != nil {
				return err
			}
			if err := f.Symlink("/work/elsewhere", "/work/link"); err != nil {
				return err
			}
			return f.Symlink("t", "/work/link2")
		}, "new file mode 120000"},
		{"file becomes a folder and a folder a file", func(f *FS) error {
			if err := f.WriteFile("/work/p", []byte("file\n"), 0o644); err != nil {
				return err
			}
			if err := f.MkdirAll("/work/q", 0o755); err != nil {
				return err
			}
			return f.WriteFile("/work/q/inside", []byte("in\n"), 0o644)
		}, func(f *FS) error {
			if err := f.Remove("/work/p", false); err != nil {
				return err
			}
			if err := f.MkdirAll("/work/p", 0o755); err != nil {
				return err
			}
			if err := f.WriteFile("/work/p/now", []byte("dir\n"), 0o644); err != nil {
				return err
			}
			if err := f.Remove("/work/q", true); err != nil {
				return err
			}
			return f.WriteFile("/work/q", []byte("file now\n"), 0o644)
		}, "diff --git a/q/inside b/q/inside\ndeleted"},
		{"file becomes a symlink", func(f *FS) error { return f.WriteFile("/work/s", []byte("s\n"), 0o644) }, func(f *FS) error {
			if err := f.Remove("/work/s", false); err != nil {
				return err
			}
			return f.Symlink("target", "/work/s")
		}, "deleted file mode 100644"},
		{"one name of a hard-link group", func(f *FS) error {
			if err := f.WriteFile("/work/h1", []byte("shared\n"), 0o644); err != nil {
				return err
			}
			return f.Link("/work/h1", "/work/h2")
		}, func(f *FS) error { return f.WriteFile("/work/h1", []byte("written through\n"), 0o644) }, "diff --git a/h2 b/h2"},
		{"past the comparison bound", func(f *FS) error {
			return f.WriteFile("/work/big", lines(3000, func(i int) string { return fmt.Sprint(i) }), 0o644)
		}, func(f *FS) error {
			return f.WriteFile("/work/big", lines(3000, func(i int) string { return fmt.Sprint("first ", 2999-i) }), 0o644)
		}, "@@ -1,3000 +1,3000 @@"},
		{"nothing changed", func(f *FS) error { return f.WriteFile("/work/same", []byte("same\n"), 0o644) }, none, ""},
	}
}

// build makes the case's trunk and branch.
func (c patchCase) build(t *testing.T) (*World, *World) {
	t.Helper()
	trunk := New()
	if err := c.trunk(trunk.FS); err != nil {
		t.Fatal(err)
	}
	b, err := trunk.Encode()
	if err != nil {
		t.Fatal(err)
	}
	branch, err := Decode(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.branch(branch.FS); err != nil {
		t.Fatal(err)
	}
	return trunk, branch
}

// TestPatchRoundTrip: a branch's patch applied to its trunk gives the branch's tracked files —
// bytes, executable bits and symlinks — whatever the change.
func TestPatchRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range patchCases() {
		t.Run(c.name, func(t *testing.T) {
			trunk, branch := c.build(t)
			patch, err := Diff(trunk, branch)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(patch), c.want) || (c.want == "") != (len(patch) == 0) {
				t.Errorf("the patch lacks %q:\n%s", c.want, patch)
			}
			if err := trunk.ApplyPatch(patch, 0); err != nil {
				t.Fatalf("%v\n%s", err, patch)
			}
			if got, want := trunk.FS.tracked(), branch.FS.tracked(); !maps.EqualFunc(got, want, func(a, b tracked) bool {
				return a.mode == b.mode && bytes.Equal(a.data, b.data)
			}) {
				t.Errorf("patched trunk differs from the branch:\n%v\n%v", got, want)
			}
			if again, _ := Diff(trunk, branch); len(again) != 0 {
				t.Errorf("a patch remains after applying it:\n%s", again)
			}
		})
	}
}

// TestPatchIsGits: git apply takes the patch in the trunk's export and makes the branch's
// export (files, executable bits, symlinks; git tracks no empty folder): the patch is a git
// patch, not one only forkbomb reads.
func TestPatchIsGits(t *testing.T) {
	testutil.Need(t, "git")
	t.Parallel()
	for _, c := range patchCases() {
		t.Run(c.name, func(t *testing.T) {
			trunk, branch := c.build(t)
			patch, err := Diff(trunk, branch)
			if err != nil {
				t.Fatal(err)
			}
			got, want := filepath.Join(t.TempDir(), "got"), filepath.Join(t.TempDir(), "want")
			if err := trunk.Export(got); err != nil {
				t.Fatal(err)
			}
			if err := branch.Export(want); err != nil {
				t.Fatal(err)
			}
			if len(patch) > 0 {
				pf := filepath.Join(t.TempDir(), "patch")
				if err := os.WriteFile(pf, patch, 0o600); err != nil {
					t.Fatal(err)
				}
				testutil.Git(t, got, "apply", pf)
			}
			if g, w := hostTree(t, got), hostTree(t, want); !maps.Equal(g, w) {
				t.Errorf("git apply made\n%v\nwant\n%v", g, w)
			}
		})
	}
}

// hostTree is a folder's files as "mode:content" and symlinks as "link:target".
func hostTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "link:" + target
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = fmt.Sprintf("%v:%s", fi.Mode().Perm()&0o100 != 0, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyPatchRefuses: a patch that does not fit the world, or that would write where a
// patch may not, changes nothing that matters and says ErrPatch; the control applies.
func TestApplyPatchRefuses(t *testing.T) {
	t.Parallel()
	base := func(t *testing.T) *World {
		w := New()
		for p, c := range map[string]string{"/work/f": "one\ntwo\nthree\n", "/work/g": "g\n"} {
			if err := w.FS.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.FS.Symlink("/tmp", "/work/out"); err != nil {
			t.Fatal(err)
		}
		return w
	}
	edit := "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	for _, tc := range []struct{ name, patch string }{
		{"control", edit},
		{"context that is not there", strings.Replace(edit, " one", " uno", 1)},
		{"a hash of other bytes", strings.Replace(edit, "--- a/f", "index 1111111..2222222 100644\n--- a/f", 1)},
		{"a file made where one is", "diff --git a/g b/g\nnew file mode 100644\n--- /dev/null\n+++ b/g\n@@ -0,0 +1 @@\n+x\n"},
		{"through a symlink", "diff --git a/out/x b/out/x\nnew file mode 100644\n--- /dev/null\n+++ b/out/x\n@@ -0,0 +1 @@\n+x\n"},
		{"a parent component", "diff --git a/../x b/../x\nnew file mode 100644\n--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n"},
		{"a rename", "diff --git a/f b/h\nsimilarity index 100%\nrename from f\nrename to h\n"},
		{"a hunk past the end", strings.Replace(edit, "@@ -1,3 +1,3 @@", "@@ -9,3 +9,3 @@", 1)},
		{"a short hunk", strings.TrimSuffix(edit, " three\n")},
		{"a removal that leaves lines", "diff --git a/g b/g\ndeleted file mode 100644\n"},
		{"a binary delta", "diff --git a/g b/g\nindex 1111111..2222222 100644\nGIT binary patch\ndelta 3\nzcmV?d00001\n\n"},
		{"no newline at the patch's end", strings.TrimSuffix(edit, "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := base(t)
			err := w.ApplyPatch([]byte(tc.patch), 0)
			if tc.name == "control" {
				if b, _ := w.FS.ReadFile("/work/f"); err != nil || string(b) != "one\nTWO\nthree\n" {
					t.Fatalf("control: %v %q", err, b)
				}
				return
			}
			if !errors.Is(err, ErrPatch) {
				t.Fatalf("applied (err %v)", err)
			}
			if _, err := w.FS.Stat("/tmp/x", false); err == nil {
				t.Errorf("ESCAPE: written through the symlink")
			}
		})
	}
}

// TestApplyPatchLimit: a patch that would make the world larger than its bound is refused.
func TestApplyPatchLimit(t *testing.T) {
	t.Parallel()
	trunk, branch := New(), New()
	if err := branch.FS.WriteFile("/work/big", bytes.Repeat([]byte("x\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	patch, err := Diff(trunk, branch)
	if err != nil {
		t.Fatal(err)
	}
	if err := trunk.ApplyPatch(patch, 100); !errors.Is(err, ErrLimit) {
		t.Errorf("err %v, want ErrLimit", err)
	}
	if err := New().ApplyPatch(patch, 2000); err != nil {
		t.Errorf("control: %v", err)
	}
}

// FuzzApplyPatch: whatever the patch, ApplyPatch returns (no panic, no hang).
func FuzzApplyPatch(f *testing.F) {
	for _, c := range patchCases() {
		trunk, branch := New(), New()
		if c.trunk(trunk.FS) != nil || c.trunk(branch.FS) != nil || c.branch(branch.FS) != nil {
			f.Fatal(c.name)
		}
		if p, err := Diff(trunk, branch); err == nil {
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		w := New()
		w.FS.WriteFile("/work/a.txt", []byte("line 0\nline 1\n"), 0o644)
		w.ApplyPatch(patch, 1<<20)
	})
}
