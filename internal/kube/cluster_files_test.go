package kube

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/layerfs"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestPodFiles: the editor's calls in a fork's pod keep the local
// backend's rules (workspace.Files, layerfs): no link followed on the way
// or at the end, only a regular file with one link read, sizes and counts
// bounded, a write never made through what is at the name, bytes
// round-tripped exactly. The fork's tree is made hostile by a command in
// the pod first.
func TestPodFiles(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns})
	fork := newRun(t, s, "run-files")
	setup := `mkdir -p d/e && echo hi > d/e/f && chmod 755 d/e/f && ln -s d sl && ln -s /etc/passwd abs &&
mkfifo fifo && echo x > h1 && ln h1 h2 && head -c 2000 /dev/zero > big && echo ok`
	ctx := t.Context()
	var out bytes.Buffer
	res, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", setup}, Timeout: time.Minute},
		sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("setup: %v %+v\n%s", err, res, out.String())
	}
	root, f, err := s.Files(ctx, fork)
	if err != nil || root != podRoot {
		t.Fatalf("Files: %q %v", root, err)
	}
	var limit *layerfs.LimitError
	isLimit := func(err error) bool { return errors.As(err, &limit) }
	is := func(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
	failed := func(err error) bool { return err != nil }
	for _, c := range []struct {
		name string
		call func() error
		want func(error) bool
	}{
		{"stat dir", func() error { return wantMode(f.Stat(ctx, "d/e")) }, nil},
		{"stat through link", func() error { _, err := f.Stat(ctx, "sl/e/f"); return err }, is(layerfs.ErrSymlink)},
		{"stat link", func() error { _, err := f.Stat(ctx, "abs"); return err }, is(layerfs.ErrSymlink)},
		{"stat missing", func() error { _, err := f.Stat(ctx, "nope"); return err }, is(fs.ErrNotExist)},
		{"stat under a file", func() error { _, err := f.Stat(ctx, "d/e/f/x"); return err }, is(fs.ErrNotExist)},
		{"read", func() error { return wantRead(ctx, f, "d/e/f", []byte("hi\n"), 0o755) }, nil},
		{"read fifo", func() error { _, _, err := f.Read(ctx, "fifo", 100); return err }, is(layerfs.ErrNotRegular)},
		{"read hard link", func() error { _, _, err := f.Read(ctx, "h1", 100); return err }, is(layerfs.ErrNotRegular)},
		{"read dir", func() error { _, _, err := f.Read(ctx, "d", 100); return err }, is(layerfs.ErrNotRegular)},
		{"read link", func() error { _, _, err := f.Read(ctx, "abs", 100); return err }, is(layerfs.ErrSymlink)},
		{"read over max", func() error { _, _, err := f.Read(ctx, "big", 1000); return err }, isLimit},
		{"list", func() error { return wantList(f.List(ctx, ".", 100)) }, nil},
		{"list over max", func() error { _, err := f.List(ctx, ".", 3); return err }, isLimit},
		{"list link", func() error { _, err := f.List(ctx, "sl", 10); return err }, is(layerfs.ErrSymlink)},
		{"write through link", func() error { return f.Write(ctx, "sl/new", []byte("x"), 0o644) }, is(layerfs.ErrSymlink)},
		{"write over link", func() error { return f.Write(ctx, "abs", []byte("x"), 0o644) }, is(layerfs.ErrSymlink)},
		{"write hard link", func() error { return f.Write(ctx, "h1", []byte("x"), 0o644) }, is(layerfs.ErrNotRegular)},
		{"write dir", func() error { return f.Write(ctx, "d", []byte("x"), 0o644) }, failed},
		{"write new", func() error {
			data := []byte("bin\x00ary\r\n\xff end\n\n")
			if err := f.Write(ctx, "n1/n2/file", data, 0o600); err != nil {
				return err
			}
			return wantRead(ctx, f, "n1/n2/file", data, 0o600)
		}, nil},
		{"write over fifo", func() error {
			if err := f.Write(ctx, "fifo", []byte("plain\n"), 0o644); err != nil {
				return err
			}
			return wantRead(ctx, f, "fifo", []byte("plain\n"), 0o644)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			switch {
			case c.want == nil && err != nil:
				t.Fatal(err)
			case c.want != nil && !c.want(err):
				t.Fatalf("got %v", err)
			}
		})
	}
	// the hard link's twin was not written through
	if b, _, err := s.output(context.Background(), "fb-run-files-f0", "cat /work/tree/h2", nil, 1<<10); err != nil || string(b) != "x\n" {
		t.Fatalf("h2 after the writes: %q %v", b, err)
	}
}

func wantMode(m fs.FileMode, err error) error {
	if err != nil {
		return err
	}
	if !m.IsDir() {
		return errors.New("d/e is not a folder: " + m.String())
	}
	return nil
}

func wantRead(ctx context.Context, f interface {
	Read(context.Context, string, int64) ([]byte, fs.FileMode, error)
}, rel string, data []byte, mode fs.FileMode) error {
	got, m, err := f.Read(ctx, rel, 1<<20)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) || m != mode {
		return errors.New("read back " + string(got) + " " + m.String())
	}
	return nil
}

func wantList(names []string, err error) error {
	if err != nil {
		return err
	}
	for _, want := range []string{"d/", "sl", "abs", "fifo", "h1", "big", "value", "check.sh"} {
		if !slices.Contains(names, want) {
			return errors.New("listing lacks " + want)
		}
	}
	if !slices.IsSorted(names) {
		return errors.New("listing not sorted")
	}
	return nil
}
