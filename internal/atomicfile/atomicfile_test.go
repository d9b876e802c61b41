package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir, p string) // what is at p before the write
		wantErr bool
	}{
		{"new file", func(*testing.T, string, string) {}, false},
		{"replaces a file", func(t *testing.T, _, p string) { mustWrite(t, p, "old") }, false},
		{"replaces a symbolic link, not its target", func(t *testing.T, dir, p string) {
			mustWrite(t, filepath.Join(dir, "target"), "target")
			if err := os.Symlink("target", p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a folder at the path", func(t *testing.T, _, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(p, "inside"), "kept")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			tc.setup(t, dir, p)
			err := Write(p, []byte("new"))
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), p) {
					t.Fatalf("err %v, want an error naming %s", err, p)
				}
				if b, _ := os.ReadFile(filepath.Join(p, "inside")); string(b) != "kept" {
					t.Errorf("the folder's file is %q, want it kept", b)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: %v %v, want a regular file, mode 0600", p, fi.Mode(), err)
				}
				if b, _ := os.ReadFile(p); string(b) != "new" {
					t.Errorf("content %q, want new", b)
				}
				if b, err := os.ReadFile(filepath.Join(dir, "target")); err == nil && string(b) != "target" {
					t.Errorf("the link's target was written through: %q", b)
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
}

// TestWriteUnwritableFolder: the temporary file cannot be made; the error names the path.
func TestWriteUnwritableFolder(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := Write(p, []byte("x")); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v, want an error naming %s", err, p)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
