package progfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestOpenAndCheck: a plain program of root's or the caller's passes; every other kind of
// file is refused with its reason, by Open through the descriptor and by Check on the path.
func TestOpenAndCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name string, mode uint32) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Chmod(p, mode); err != nil { // raw bits: 0o4000 is set-user-id
			t.Fatal(err)
		}
		return p
	}
	good := file("good", 0o755)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
	}{
		{good, ""},
		{link, "symbolic link"},
		{file("groupw", 0o775), "writable by group or others"},
		{file("otherw", 0o757), "writable by group or others"},
		{file("setuid", 0o4755), "set-user-id"},
		{file("plain", 0o644), "not executable"},
		{dir, "not a regular file"},
		{fifo, "not a regular file"},
	} {
		f, err := Open(c.path)
		cerr := Check(c.path)
		if c.want == "" {
			if err != nil || cerr != nil {
				t.Errorf("%s: Open %v, Check %v; want it accepted", c.path, err, cerr)
				continue
			}
			// The descriptor is the file checked: its /proc link names it.
			if got, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); got != c.path {
				t.Errorf("%s: descriptor names %q", c.path, got)
			}
			f.Close()
			continue
		}
		// O_NOFOLLOW on a final link: ELOOP from open(2) itself, or the check's words.
		if err == nil || !(strings.Contains(err.Error(), c.want) || c.want == "symbolic link" && errors.Is(err, syscall.ELOOP)) {
			t.Errorf("%s: Open said %v, want %q", c.path, err, c.want)
		}
		if cerr == nil || !strings.Contains(cerr.Error(), c.want) {
			t.Errorf("%s: Check said %v, want %q", c.path, cerr, c.want)
		}
		if f != nil {
			f.Close()
		}
	}
	if _, err := Open(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
