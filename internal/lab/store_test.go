package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/home"
)

func TestStore(t *testing.T) {
	t.Parallel()
	s := &Store{Dir: filepath.Join(t.TempDir(), "lab")}
	strict := []byte("network = \"none\"\ndenied_programs = [\"/usr/bin/curl\"]\n")
	if err := s.Add(KindPolicy, "strict", strict); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		do   func() error
	}{
		{"exists", ErrExists, func() error { return s.Add(KindPolicy, "strict", strict) }},
		{"default is built in", ErrBuiltin, func() error { return s.Add(KindPolicy, DefaultPolicy, strict) }},
		{"default cannot go", ErrBuiltin, func() error { return s.Remove(KindPolicy, DefaultPolicy) }},
		{"missing", ErrNotFound, func() error { return s.Remove(KindTask, "nope") }},
		{"bad id", home.ErrBadID, func() error { return s.Add(KindPolicy, "../x", strict) }},
		{"bad id on load", home.ErrBadID, func() error { _, err := s.LoadTask("a b"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
	var fe *FileError
	if err := s.Add(KindPolicy, "bad", []byte("nope = 1\n")); !errors.As(err, &fe) {
		t.Fatalf("a bad file was stored: %v", err)
	}
	ids, err := s.List(KindPolicy)
	if err != nil || !slices.Equal(ids, []string{DefaultPolicy, "strict"}) {
		t.Fatalf("List = %v, %v", ids, err)
	}
	p, err := s.LoadPolicy("strict")
	if err != nil || p.Network != "none" || len(p.DeniedPrograms) != 1 {
		t.Fatalf("LoadPolicy = %+v, %v", p, err)
	}
	if p, err := s.LoadPolicy(DefaultPolicy); err != nil || p.Network != "" {
		t.Fatalf("default = %+v, %v", p, err)
	}
	// A file reference reads the file, wherever it is.
	f := filepath.Join(t.TempDir(), "mine.toml")
	if err := os.WriteFile(f, []byte("pids = 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := s.LoadPolicy(f); err != nil || p.Pids != 7 {
		t.Fatalf("file = %+v, %v", p, err)
	}
	if err := s.Remove(KindPolicy, "strict"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadPolicy("strict"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after remove: %v", err)
	}
}

// TestStoreNeverFollows: a stored name that is a symlink (or a FIFO) is
// not read through; the target's content never comes back.
func TestStoreNeverFollows(t *testing.T) {
	t.Parallel()
	s := &Store{Dir: filepath.Join(t.TempDir(), "lab")}
	dir := filepath.Join(s.Dir, "policies")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "secret.toml")
	if err := os.WriteFile(target, []byte("pids = 99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link.toml")); err != nil {
		t.Fatal(err)
	}
	// Control: the same path read following links gets the target.
	if p, err := (&Store{}).LoadPolicy(filepath.Join(dir, "link.toml")); err != nil || p.Pids != 99 {
		t.Fatalf("control: %+v %v", p, err)
	}
	if p, err := s.LoadPolicy("link"); err == nil {
		t.Fatalf("a stored symlink was followed: %+v", p)
	}
}

// TestStoreAtomicLocked: many adds and removes at once from separate
// stores on one folder (as separate processes would) never leave a torn
// file, a temp file or two winners of one name.
func TestStoreAtomicLocked(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "lab")
	data := []byte(fmt.Sprintf("prompt = %q\ntest = \"true\"\n", string(make([]byte, 0))+"fix it "+string(slices.Repeat([]byte("x"), 64<<10))))
	var wg sync.WaitGroup
	wins := make(chan int, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := &Store{Dir: dir}
			if err := s.Add(KindTask, "same", data); err == nil {
				wins <- i
			} else if !errors.Is(err, ErrExists) {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Fatalf("%d adds of one name succeeded, want 1", n)
	}
	got, err := os.ReadFile(filepath.Join(dir, "tasks", "same.toml"))
	if err != nil || string(got) != string(data) {
		t.Fatalf("stored file torn: %d bytes, %v", len(got), err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tasks"))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}
