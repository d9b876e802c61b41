//go:build linux || darwin

package workspace

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeCloner stands in for FICLONE and clonefile: it "clones" by copying
// the bytes of the file it is handed, or fails for the names in refuse
// (as clonefile does across volumes, or on HFS+), and records what it was
// asked to clone and what it was handed.
type fakeCloner struct {
	refuse string // a name part whose files it cannot clone
	mu     sync.Mutex
	asked  []string
	kinds  []uint32 // the file type of each descriptor it was handed
}

func (f *fakeCloner) clone(in *os.File, dst string) error {
	var st unix.Stat_t
	unix.Fstat(int(in.Fd()), &st)
	f.mu.Lock()
	f.asked = append(f.asked, filepath.Base(dst))
	f.kinds = append(f.kinds, uint32(st.Mode&unix.S_IFMT))
	f.mu.Unlock()
	if f.refuse != "" && strings.Contains(filepath.Base(dst), f.refuse) {
		return errors.New("clone: operation not supported")
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(out, in)
	return err
}

// forkSource is a fork's tree as a hostile command leaves it: files of
// several modes, a read-only folder, links to a host secret (absolute and
// through a folder), a FIFO and a socket.
func forkSource(t *testing.T) (src, secret string) {
	t.Helper()
	base := t.TempDir()
	src, host := filepath.Join(base, "src"), filepath.Join(base, "host")
	for _, d := range []string{src, host, filepath.Join(src, "lib", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(host, "secret")
	files := map[string]os.FileMode{"main.go": 0o644, "run.sh": 0o755, "private": 0o600, "lib/deep/big.bin": 0o644, "lib/readonly.txt": 0o444, "empty": 0o644}
	for name, mode := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte("content of "+name+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(src, name), mode)
	}
	os.Truncate(filepath.Join(src, "empty"), 0)
	if err := os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"leak": secret, "lib/hostdir": host, "rel": "main.go"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	short, err := os.MkdirTemp("", "sock") // a socket's path is short on macOS
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	l, err := net.Listen("unix", filepath.Join(short, "s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Rename(filepath.Join(short, "s"), filepath.Join(src, "sock")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(src, "lib"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "lib"), 0o755) })
	return src, secret
}

// TestCopyTreeClones: a fork's copy is a clone of each regular file where
// the cloner can make one and a plain copy where it cannot (clonefile on
// HFS+ or across volumes, FICLONE on ext4), with every file, mode and link
// of the source; the cloner is only ever handed a regular file layerfs
// opened, never a link, FIFO or socket, and nothing behind a link is
// copied.
func TestCopyTreeClones(t *testing.T) {
	t.Parallel()
	src, _ := forkSource(t)
	for _, tc := range []struct {
		name      string
		clone     *fakeCloner
		allCloned bool
	}{
		{"every file cloned", &fakeCloner{}, true},
		{"big files refused", &fakeCloner{refuse: "big"}, false},
		{"no cloner", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			var clone cloner
			if tc.clone != nil {
				clone = tc.clone.clone
			}
			all, err := copyTree(src, dst, clone)
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "lib"), 0o755) })
			if err != nil {
				t.Fatal(err)
			}
			if all != tc.allCloned {
				t.Errorf("every file cloned: %v, want %v", all, tc.allCloned)
			}
			sameTree(t, src, dst)
			if tc.clone == nil {
				return
			}
			if len(tc.clone.asked) != 6 {
				t.Errorf("the cloner was asked for %v, want the 6 regular files", tc.clone.asked)
			}
			for i, k := range tc.clone.kinds {
				if k != unix.S_IFREG {
					t.Errorf("the cloner was handed %s as file type %o", tc.clone.asked[i], k)
				}
			}
		})
	}
}

// sameTree compares a copy with its source: the same names, kinds,
// permissions, bytes and link targets; no FIFO or socket; nothing of
// what a link points to.
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	want := map[string]string{}
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(src, p)
		switch m := fi.Mode(); {
		case m&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			want[rel] = "link " + target
		case m.IsRegular():
			data, _ := os.ReadFile(p)
			want[rel] = m.Perm().String() + " " + string(data)
		case m.IsDir():
			want[rel] = "dir " + m.Perm().String()
		}
		return nil
	})
	got := map[string]string{}
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(dst, p)
		switch m := fi.Mode(); {
		case m&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			got[rel] = "link " + target
		case m.IsRegular():
			data, _ := os.ReadFile(p)
			got[rel] = m.Perm().String() + " " + string(data)
		case m.IsDir():
			got[rel] = "dir " + m.Perm().String()
		default:
			got[rel] = "special " + m.String()
		}
		return nil
	})
	delete(want, ".")
	delete(got, ".")
	for rel, w := range want {
		if got[rel] != w {
			t.Errorf("%s: %q in the copy, want %q", rel, got[rel], w)
		}
	}
	for rel, g := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s: %q in the copy, not in the source", rel, g)
		}
		if strings.Contains(g, "HOST-SECRET") {
			t.Errorf("LEAK: %s holds the host secret", rel)
		}
	}
}

// TestCloneWorks: the store's probe says a filesystem clones only when a
// clone of its own succeeds there, and leaves nothing behind.
func TestCloneWorks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if !cloneWorks(dir, (&fakeCloner{}).clone) {
		t.Error("a cloner that clones was reported not to work")
	}
	if cloneWorks(dir, (&fakeCloner{refuse: "probe"}).clone) {
		t.Error("a cloner that refuses was reported to work")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %v", entries)
	}
}
