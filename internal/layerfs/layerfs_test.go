//go:build linux || darwin

package layerfs

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// hostile lays out a fork layer with every kind of trap a fork can make,
// next to a "host" folder holding a secret it must never read.
func hostile(t *testing.T) (layer, secret string) {
	t.Helper()
	base := t.TempDir()
	layer, host := filepath.Join(base, "layer"), filepath.Join(base, "host")
	for _, d := range []string{layer, host, filepath.Join(layer, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(host, "secret")
	must(t, os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(layer, "ok.txt"), []byte("fine\n"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(layer, "foo")))
	must(t, os.WriteFile(filepath.Join(layer, "foo\r"), []byte("decoy\n"), 0o644))
	must(t, os.Symlink(host, filepath.Join(layer, "dirlink")))
	must(t, unix.Mkfifo(filepath.Join(layer, "fifo"), 0o644))
	big, err := os.Create(filepath.Join(layer, "sparse"))
	must(t, err)
	must(t, big.Truncate(1<<40)) // 1 TiB, no blocks
	big.Close()
	// Bound in a short folder and moved into the layer: macOS caps a
	// socket's path at 104 bytes, and its temp folders are long.
	short, err := os.MkdirTemp("", "sock")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(short) })
	l, err := net.Listen("unix", filepath.Join(short, "s"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	must(t, os.Rename(filepath.Join(short, "s"), filepath.Join(layer, "sock")))
	return layer, secret
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// within fails the test if f does not return in time: an open that
// blocks (a FIFO) is the bug this package exists to prevent.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// TestReadFileRefusesTraps: symlinks (at the end or on the way), FIFOs,
// sockets and a 1 TiB sparse file are refused without reading a byte of
// what lies behind them; a regular file reads.
func TestReadFileRefusesTraps(t *testing.T) {
	t.Parallel()
	layer, secret := hostile(t)
	// Positive control: the traps do lead to the secret when followed.
	if data, err := os.ReadFile(filepath.Join(layer, "foo")); err != nil || !strings.Contains(string(data), "HOST-SECRET") {
		t.Fatalf("control: the planted link does not reach the secret: %v", err)
	}
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) { readTraps(t, r, layer, secret) })
	}
}

func readTraps(t *testing.T, r resolution, layer, secret string) {
	d, err := r.open(layer)
	must(t, err)
	defer d.Close()
	cases := []struct {
		rel  string
		want error
	}{
		{"foo", ErrSymlink},
		{"dirlink/secret", ErrSymlink},
		{"fifo", ErrNotRegular},
		{"sock", ErrNotRegular},
		{"sparse", ErrTooLarge},
		{"sub", ErrNotRegular},
		{"../host/secret", ErrNotExist},
		{secret, ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.rel, func(t *testing.T) {
			within(t, "ReadFile "+c.rel, func() {
				data, _, err := d.ReadFile(c.rel, 1<<20)
				if strings.Contains(string(data), "HOST-SECRET") {
					t.Errorf("LEAK: read the host secret through %q", c.rel)
				}
				if !errors.Is(err, c.want) {
					t.Errorf("ReadFile(%q) = %v, want %v", c.rel, err, c.want)
				}
			})
		})
	}
	data, _, err := d.ReadFile("foo\r", 1<<20)
	if err != nil || string(data) != "decoy\n" {
		t.Errorf(`ReadFile("foo\r") = %q, %v: the name must be read as it is`, data, err)
	}
	if _, _, err := d.ReadFile("ok.txt", 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a 5-byte file under a 2-byte limit: %v", err)
	}
}

// TestWalkReportsKinds: a walk names every entry with its own kind, never
// descends a symlink, and stops at its limits.
func TestWalkReportsKinds(t *testing.T) {
	t.Parallel()
	layer, _ := hostile(t)
	whiteout := unix.Mknod(filepath.Join(layer, "sub", "gone"), unix.S_IFCHR|0o644, 0) == nil
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) { walkKinds(t, r, layer, whiteout) })
	}
}

func walkKinds(t *testing.T, r resolution, layer string, whiteout bool) {
	d, err := r.open(layer)
	must(t, err)
	defer d.Close()
	got := map[string]Kind{}
	must(t, d.Walk(WalkLimits{}, func(e WalkEntry) error { got[e.Rel] = e.Kind; return nil }))
	want := map[string]Kind{"ok.txt": KindFile, "foo": KindSymlink, "foo\r": KindFile, "dirlink": KindSymlink,
		"fifo": KindOther, "sock": KindOther, "sparse": KindFile, "sub": KindDir}
	if whiteout { // only root may make one on macOS
		want["sub/gone"] = KindWhiteout
	}
	for rel, k := range want {
		if got[rel] != k {
			t.Errorf("%q: kind %d, want %d", rel, got[rel], k)
		}
	}
	for rel := range got {
		if strings.HasPrefix(rel, "dirlink/") {
			t.Errorf("LEAK: the walk went through a symlink: %q", rel)
		}
	}
	if err := d.Walk(WalkLimits{Entries: 3}, func(WalkEntry) error { return nil }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a walk over its entry limit: %v", err)
	}
	if err := d.Walk(WalkLimits{Depth: 1}, func(WalkEntry) error { return nil }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a walk over its depth limit: %v", err)
	}
}

// TestLayersMergedView: lookups and listings see what overlayfs would —
// whiteouts (device and xattr forms) delete, opaque folders hide what is
// below — and a listing never follows a lower layer's symlink where the
// upper layer holds a folder of that name.
func TestLayersMergedView(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	upper, lower, host := filepath.Join(base, "upper"), filepath.Join(base, "lower"), filepath.Join(base, "host")
	for _, d := range []string{upper, lower, host, filepath.Join(upper, "d"), filepath.Join(upper, "op"), filepath.Join(lower, "op")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(host, "host-file-name"), nil, 0o644))
	must(t, os.Symlink(host, filepath.Join(lower, "d"))) // upper "d" is a folder over a lower symlink
	must(t, os.WriteFile(filepath.Join(lower, "a.txt"), []byte("lower"), 0o644))
	must(t, os.WriteFile(filepath.Join(lower, "b.txt"), []byte("lower"), 0o644))
	must(t, os.WriteFile(filepath.Join(lower, "op", "hidden"), []byte("lower"), 0o644))
	must(t, os.WriteFile(filepath.Join(upper, "a.txt"), []byte("upper"), 0o644))
	// b.txt deleted by an xattr whiteout (an empty file marked so).
	must(t, os.WriteFile(filepath.Join(upper, "b.txt"), nil, 0o644))
	if err := unix.Setxattr(filepath.Join(upper, "b.txt"), "user.overlay.whiteout", []byte("y"), 0); err != nil {
		testutil.SkipOrFail(t, "user xattrs unsupported on this filesystem: %v", err)
	}
	must(t, unix.Setxattr(filepath.Join(upper, "op"), "user.overlay.opaque", []byte("y"), 0))
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) { mergedView(t, r, upper, lower) })
	}
}

func mergedView(t *testing.T, r resolution, upper, lower string) {
	l := r.layers(t, upper, lower)
	defer l.Close()
	if data, _, err := l.ReadFile("a.txt", 100); err != nil || string(data) != "upper" {
		t.Errorf("a.txt = %q, %v; want the upper layer's", data, err)
	}
	if _, _, err := l.ReadFile("b.txt", 100); !errors.Is(err, ErrNotExist) {
		t.Errorf("b.txt behind a whiteout: %v", err)
	}
	if _, _, err := l.ReadFile("op/hidden", 100); !errors.Is(err, ErrNotExist) {
		t.Errorf("op/hidden under an opaque folder: %v", err)
	}
	names, err := l.List("d", 100)
	must(t, err)
	if len(names) != 0 {
		t.Errorf("LEAK: listing d showed %v (a lower layer's symlink was followed)", names)
	}
	root, err := l.List(".", 100)
	must(t, err)
	if strings.Join(root, ",") != "a.txt,d/,op/" {
		t.Errorf("root lists %v", root)
	}
}

// TestWriteFileNeverWritesThrough: a write replaces the name by rename; a
// symlink or FIFO at the name, or a symlinked folder on the way, never
// leads the write (or an open) outside the layer.
func TestWriteFileNeverWritesThrough(t *testing.T) {
	t.Parallel()
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) { writeTraps(t, r) })
	}
}

func writeTraps(t *testing.T, r resolution) {
	layer, secret := hostile(t)
	l := r.layers(t, layer)
	defer l.Close()
	within(t, "write over a fifo", func() {
		if err := l.WriteFile("fifo", []byte("x"), 0o644); err != nil {
			t.Errorf("write over a fifo: %v", err)
		}
	})
	if err := l.WriteFile("foo", []byte("pwned"), 0o644); !errors.Is(err, ErrSymlink) {
		t.Errorf("write to a symlink: %v, want refused", err)
	}
	if err := l.WriteFile("dirlink/secret", []byte("pwned"), 0o644); !errors.Is(err, ErrSymlink) {
		t.Errorf("write through a symlinked folder: %v, want refused", err)
	}
	if data, _ := os.ReadFile(secret); string(data) != "HOST-SECRET\n" {
		t.Fatalf("LEAK: the host file changed: %q", data)
	}
	must(t, l.WriteFile("new/deep/file", []byte("ok"), 0o600))
	var st syscall.Stat_t
	must(t, syscall.Lstat(filepath.Join(layer, "new/deep/file"), &st))
	if st.Mode&0o777 != 0o600 {
		t.Errorf("mode %o", st.Mode&0o777)
	}
	entries, _ := os.ReadDir(filepath.Join(layer, "new", "deep"))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestNoHangOnFifoUnderContext shows the control for within: opening the
// FIFO the ordinary way would block (run with a context so the test ends).
func TestNoHangOnFifoUnderContext(t *testing.T) {
	t.Parallel()
	layer, _ := hostile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	opened := make(chan struct{})
	go func() {
		f, err := os.OpenFile(filepath.Join(layer, "fifo"), os.O_RDONLY, 0)
		if err == nil {
			f.Close()
		}
		close(opened)
	}()
	select {
	case <-opened:
		t.Fatal("control: an ordinary open of the FIFO did not block; the test of ReadFile proves nothing")
	case <-ctx.Done():
	}
	// Unblock the control's open.
	w, err := os.OpenFile(filepath.Join(layer, "fifo"), os.O_WRONLY, 0)
	if err == nil {
		w.Close()
	}
	<-opened
}
