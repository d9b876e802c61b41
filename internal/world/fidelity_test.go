package world

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// oddWorld holds everything the format must keep: binary and UTF-8 files, an empty directory,
// relative and absolute symlinks, a hard-link group, modes, mtimes and odd names.
func oddWorld(t *testing.T) *World {
	t.Helper()
	w := New()
	f := w.FS
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	must(f.MkdirAll("/work/dir/empty", 0o750))
	must(f.WriteFile("/work/bin.dat", bin, 0o600))
	must(f.WriteFile("/work/utf8 ✓.txt", []byte("héllo wörld\n"), 0o644))
	must(f.WriteFile("/work/with\nnewline", []byte("nl"), 0o644))
	must(f.WriteFile("/work/-leading-dash", []byte("dash"), 0o755))
	must(f.WriteFile("/work/dir/latin1-\xe9\xff", []byte("not utf-8 \xff\xfe"), 0o640))
	must(f.WriteFile("/work/dir/a", []byte("linked"), 0o644))
	must(f.Link("/work/dir/a", "/work/dir/b"))
	must(f.Symlink("a", "/work/dir/rel-link"))
	must(f.Symlink("/work/bin.dat", "/work/abs-link"))
	must(f.Symlink("dangling", "/work/dir/dangling-link"))
	must(f.Chmod("/work/dir", 0o755|fs.ModeSticky))
	ts := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, p := range []string{"/work/bin.dat", "/work/utf8 ✓.txt", "/work/dir/a", "/work/dir/empty", "/work/dir", "/work"} {
		must(f.Chtimes(p, ts))
		ts = ts.Add(time.Hour)
	}
	res, err := w.Exec(context.Background(), "cd dir; odd=$'\\xff'; f() { echo f; }", nil, Limits{})
	if err != nil || res.Status != 0 {
		t.Fatalf("%v %d %s", err, res.Status, res.Stderr)
	}
	// The exec changed /work's mtime? It did not write; set it again to be sure it is kept.
	return w
}

// TestFidelityRoundTrip: save → load → fork → export → import keeps the world byte for byte.
func TestFidelityRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := oddWorld(t)
	trunk := filepath.Join(dir, "trunk.world")
	if err := w.Save(trunk); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(trunk)
	loaded, err := Load(trunk, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := loaded.Encode()
	if !bytes.Equal(again, saved) {
		t.Fatalf("load → encode differs from the saved file")
	}
	branch := filepath.Join(dir, "branch.world")
	if err := Fork(trunk, branch); err != nil {
		t.Fatal(err)
	}
	forked, err := Load(branch, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "export")
	if err := forked.Export(out); err != nil {
		t.Fatal(err)
	}
	// What the host sees: the hard link is one inode, the link targets are as written.
	a, _ := os.Stat(filepath.Join(out, "dir/a"))
	b, _ := os.Stat(filepath.Join(out, "dir/b"))
	if !os.SameFile(a, b) {
		t.Errorf("hard-link group not kept on export")
	}
	if tgt, _ := os.Readlink(filepath.Join(out, "abs-link")); tgt != "/work/bin.dat" {
		t.Errorf("symlink target %q", tgt)
	}
	if st, _ := os.Lstat(filepath.Join(out, "dir")); st.Mode()&fs.ModeSticky == 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("dir mode %v", st.Mode())
	}
	if st, err := os.Stat(filepath.Join(out, "dir/latin1-\xe9\xff")); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("non-UTF-8 name: %v %v", st, err)
	}
	imported, err := Import(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	imported.State = forked.State // import brings files only; the shell state is the world's
	got, _ := imported.Encode()
	if !bytes.Equal(got, saved) {
		t.Errorf("export → import changed the world:\n got %s\nwant %s", got, saved)
	}
}

// TestForkIsolation: whatever a branch does, the trunk's bytes do not change.
func TestForkIsolation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trunk := filepath.Join(dir, "trunk.world")
	if err := oddWorld(t).Save(trunk); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(trunk)
	branch := filepath.Join(dir, "branch.world")
	if err := Fork(trunk, branch); err != nil {
		t.Fatal(err)
	}
	if err := Fork(trunk, branch); err == nil {
		t.Errorf("fork over an existing world succeeded")
	}
	res, err := ExecFile(context.Background(), branch, "echo changed > /work/dir/a; rm -r /work/dir/empty; ln -s ../trunk.world /work/escape; echo x > /work/escape; X=branch", nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(trunk)
	if sha256.Sum256(before) != sha256.Sum256(after) {
		t.Errorf("the trunk changed")
	}
	bw, _ := Load(branch, 0)
	if got, _ := bw.FS.ReadFile("/work/dir/b"); string(got) != "changed\n" {
		t.Errorf("branch: hard link sees %q (status %d, %s)", got, res.Status, res.Stderr)
	}
	// Positive control: the same exec on the trunk does change its bytes.
	if _, err := ExecFile(context.Background(), trunk, "echo changed > /work/dir/a", nil, Limits{}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(trunk); bytes.Equal(before, after) {
		t.Errorf("control: an exec on the trunk did not change it")
	}
}

// TestLockSerializesExecs: concurrent read-modify-write execs on one world lose no update.
func TestLockSerializesExecs(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "w.world")
	if err := New().Save(file); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ExecFile(context.Background(), file, `c=$(cat /work/c 2>/dev/null || echo 0); echo $((c+1)) > /work/c`, nil, Limits{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	w, err := Load(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := w.FS.ReadFile("/work/c"); strings.TrimSpace(string(got)) != "8" {
		t.Errorf("counter %q after %d execs", got, n)
	}
}

func TestImportRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(dir string) error
	}{
		{"relative link out", func(d string) error { return os.Symlink("../../etc/passwd", filepath.Join(d, "l")) }},
		{"absolute link out", func(d string) error { return os.Symlink("/etc/passwd", filepath.Join(d, "l")) }},
		{"fifo", func(d string) error { return syscall.Mkfifo(filepath.Join(d, "p"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := t.TempDir()
			if err := tc.make(d); err != nil {
				t.Fatal(err)
			}
			if _, err := Import(d, 0); err == nil {
				t.Errorf("import accepted it")
			}
		})
	}
	// Control: a link that stays inside is imported.
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644)
	os.Symlink("f", filepath.Join(d, "l"))
	if _, err := Import(d, 0); err != nil {
		t.Errorf("control: %v", err)
	}
}
