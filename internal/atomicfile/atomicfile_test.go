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

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if data, err := Read(p, 10); data != nil || err != nil {
		t.Errorf("a missing file: %q, %v; want nil, nil", data, err)
	}
	mustWrite(t, p, "")
	if data, err := Read(p, 10); data == nil || len(data) != 0 || err != nil {
		t.Errorf("an empty file: %q (nil %v), %v; want empty, not nil", data, data == nil, err)
	}
	mustWrite(t, p, "0123456789")
	if data, err := Read(p, 10); string(data) != "0123456789" || err != nil {
		t.Errorf("ten bytes at most ten: %q, %v", data, err)
	}
	if _, err := Read(p, 9); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("ten bytes at most nine: %v; want an error", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("f", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(link, 10); err == nil || !strings.Contains(err.Error(), link) {
		t.Errorf("a symbolic link: %v; want an error naming it", err)
	}
	if _, err := Read(dir, 10); err == nil {
		t.Errorf("a folder: no error")
	}
}

// TestUpdate: updates from many goroutines, each through its own lock
// file descriptor as another process's would be, each see the one before
// (none is lost); an error from the change leaves the file as it was.
func TestUpdate(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "sub", "count")
	const n = 20
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- Update(p, 100, func(old []byte) ([]byte, error) {
				return append(old, 'x'), nil
			})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(p); string(data) != strings.Repeat("x", n) {
		t.Fatalf("after %d updates: %q", n, data)
	}
	if err := Update(p, 100, func([]byte) ([]byte, error) { return nil, os.ErrInvalid }); err != os.ErrInvalid {
		t.Errorf("a failed change: %v", err)
	}
	if data, _ := os.ReadFile(p); string(data) != strings.Repeat("x", n) {
		t.Errorf("a failed change changed the file: %q", data)
	}
}
