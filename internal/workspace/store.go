package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Method is how a workspace holds its tree.
type Method string

const (
	MethodSnapshot Method = "snapshot" // a pid 1: a checkout of its own
	MethodOverlay  Method = "overlay"  // an upper layer over frozen lower layers
	MethodReflink  Method = "reflink"  // a copy sharing blocks with its source
	MethodCopy     Method = "copy"     // a plain copy
)

// Kind is what a workspace is: a pid 1 or a fork of one.
type Kind string

const (
	KindPid1 Kind = "pid1" // a snapshot of a commit, never written
	KindFork Kind = "fork" // a writable fork of a pid 1 (or of another fork)
)

// Meta describes one workspace; it is written once, atomically.
type Meta struct {
	Name    string   `json:"name"`
	Kind    Kind     `json:"kind"`
	Method  Method   `json:"method"`
	Source  string   `json:"source,omitempty"` // what a fork was forked from
	Pid1    string   `json:"pid1"`             // the pid 1 at the root of its chain
	Repo    string   `json:"repo,omitempty"`   // a pid 1's repository (never written)
	Rev     string   `json:"rev,omitempty"`
	Base    string   `json:"base"`              // the commit its patch is against
	Layers  []string `json:"layers,omitempty"`  // overlay: read-only layers, topmost first
	Ignores []string `json:"ignores,omitempty"` // a pid 1's .gitignore files
	// Seed is set on a pid 1 whose objects are all its base's history,
	// whole: made by a fetch that followed no grafts, with no depth and no
	// uncommitted changes. Only such a pid 1 seeds another (seed.go);
	// one made by an older forkbomb has it unset.
	Seed bool `json:"seed,omitempty"`
	// Temp is set on a workspace its maker removes when done, leased to
	// that process (lease.go): Prune removes it once the process is gone.
	Temp    bool      `json:"temp,omitempty"`
	Created time.Time `json:"created"`
}

// Store is a directory of workspaces.
type Store struct {
	Root string
	// ForkMethod, when set, forces how forks are made (for diagnosis and
	// for testing the fallbacks on a machine that has overlayfs).
	ForkMethod Method
	// DiffLimits bound what a diff reads from a fork (zero: defaults).
	DiffLimits DiffLimits

	capsMu sync.Mutex // held while the machine's fork capabilities are read or probed
	caps   *capabilities
}

// DefaultRoot is $FORKBOMB_HOME/workspaces, FORKBOMB_HOME defaulting to
// ~/.forkbomb (home.Layout.Workspaces).
func DefaultRoot() (string, error) {
	l, err := home.Default()
	if err != nil {
		return "", err
	}
	return l.Workspaces(), nil
}

// Open makes the store's root (0700) if needed and reclaims what a killed
// forkbomb left behind.
func Open(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if c, err := filepath.EvalSymlinks(abs); err == nil {
		abs = c
	}
	s := &Store{Root: abs}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.reclaim()
	sandbox.ReclaimStale()
	return s, nil
}

func (s *Store) dir(name string) string      { return filepath.Join(s.Root, name) }
func (s *Store) tree(name string) string     { return filepath.Join(s.Root, name, "tree") }
func (s *Store) metaPath(name string) string { return filepath.Join(s.Root, name, "meta.json") }

// lock takes the store's exclusive lock: every change to the set of
// workspaces happens under it, so two forkbomb processes never race.
func (s *Store) lock() (func(), error) {
	return flock(filepath.Join(s.Root, ".lock"), syscall.LOCK_EX)
}

func flock(path string, how int) (func(), error) {
	f, err := openLock(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// openLock opens (making it if need be) a lock file of the store: never
// through a symlink, and only a regular file.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// useLock is held (shared) by every command running in a workspace and
// taken exclusively by rm, so a workspace is never removed under a command.
func (s *Store) useLock(name string, exclusive bool) (func(), error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX | syscall.LOCK_NB
	}
	unlock, err := flock(s.useLockPath(name), how)
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("%w: a command is running in %s", ErrInUse, name)
	}
	return unlock, err
}

func (s *Store) useLockPath(name string) string { return filepath.Join(s.dir(name), "lock") }

// reclaim removes what an interrupted operation left: .tmp-* directories
// (a creation that never reached its rename) and .trash-* ones (a removal
// cut short). It runs under the store lock, which their creator held —
// but for a pid 1 being built, whose creator holds its building lock
// instead (createAlone): that one is left to its creator.
func (s *Store) reclaim() {
	entries, _ := os.ReadDir(s.Root)
	for _, e := range entries {
		dir := filepath.Join(s.Root, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-"):
			// A folder is removed only once its lock is taken: any
			// error may be a build under way. Anything else (a stray
			// file or link) is removed as it is, never followed.
			if e.IsDir() {
				release, err := flock(filepath.Join(dir, buildingLock), syscall.LOCK_EX|syscall.LOCK_NB)
				if err != nil {
					continue
				}
				release()
			}
			removeTree(dir)
		case strings.HasPrefix(e.Name(), ".trash-"):
			removeTree(dir)
		}
	}
}

// buildingLock is the file in a .tmp-* directory whose lock its creator
// holds while it builds there without the store lock.
const buildingLock = ".building"

// tmpSeq tells apart the temporary directories of one process's creations.
var tmpSeq atomic.Uint64

// Get reads a workspace's metadata (from the local disk: ctx is not
// waited on).
func (s *Store) Get(_ context.Context, name string) (*Meta, error) { return s.meta(name) }

func (s *Store) meta(name string) (*Meta, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.metaPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	m := &Meta{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("workspace %s: corrupt metadata: %w", name, err)
	}
	return m, nil
}

// List returns every workspace, by name (from the local disk: ctx is not
// waited on).
func (s *Store) List(_ context.Context) ([]*Meta, error) { return s.list() }

func (s *Store) list() ([]*Meta, error) {
	entries, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, err
	}
	var out []*Meta
	for _, e := range entries {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		if m, err := s.meta(e.Name()); err == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// create builds a workspace in a temporary directory and renames it into
// place once whole, all under the store lock. build gets the temporary
// directory and the final one (for paths recorded in the metadata).
func (s *Store) create(name string, temp bool, build func(tmp, final string) (*Meta, error)) (*Meta, error) {
	return s.creating(name, false, temp, build)
}

// createAlone is create for a workspace whose build reads no other
// workspace (a pid 1: a checkout of the user's repository). The build, the
// long part, runs without the store lock, so that pid 1s are made at once
// and forks and removals of other workspaces do not wait for them; its
// directory is kept from reclaim by a lock of its own, which a killed
// creator lets go. The name is checked again before the rename.
func (s *Store) createAlone(name string, temp bool, build func(tmp, final string) (*Meta, error)) (*Meta, error) {
	return s.creating(name, true, temp, build)
}

// creating is create and createAlone; a temporary workspace's lease is
// taken before it appears under its name.
func (s *Store) creating(name string, alone, temp bool, build func(tmp, final string) (*Meta, error)) (*Meta, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	s.reclaim()
	final := s.dir(name)
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, name)
	}
	tmp := filepath.Join(s.Root, fmt.Sprintf(".tmp-%s-%d-%d", name, os.Getpid(), tmpSeq.Add(1)))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	var held *os.File // a temporary workspace's lease, kept once it is in place
	if temp {
		if held, err = takeLease(tmp); err != nil {
			removeTree(tmp)
			return nil, err
		}
		defer func() {
			if held != nil {
				held.Close()
			}
		}()
	}
	if alone {
		building, err := flock(filepath.Join(tmp, buildingLock), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			removeTree(tmp)
			return nil, err
		}
		defer building() // after the rename: the lock goes with the process
		unlock()
		unlock = nil
	}
	m, err := build(tmp, final)
	if alone {
		var lerr error
		if unlock, lerr = s.lock(); lerr != nil {
			unlock = nil
			removeTree(tmp)
			return nil, lerr
		}
		os.Remove(filepath.Join(tmp, buildingLock))
		if _, lerr := os.Lstat(final); lerr == nil && err == nil {
			err = fmt.Errorf("%w: %s", ErrExists, name)
		}
	}
	if err == nil {
		m.Name, m.Temp, m.Created = name, temp, time.Now().UTC()
		err = writeJSON(filepath.Join(tmp, "meta.json"), m)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		removeTree(tmp)
		return nil, err
	}
	if held != nil {
		keepLease(final, held)
		held = nil
	}
	return m, nil
}

// Remove deletes workspaces. A pid 1 with forks, or a workspace a command
// is running in, is refused. A caller cleaning up after a cancelled run
// passes a context that outlives it (context.WithoutCancel): ctx ends the
// wait for a command's lock.
func (s *Store) Remove(ctx context.Context, name string) error {
	return s.remove(ctx, name, true)
}

// remove is Remove; without wait, a workspace a command is running in is
// refused at once.
func (s *Store) remove(ctx context.Context, name string, wait bool) error {
	m, err := s.meta(name)
	if errors.Is(err, ErrNotFound) {
		unlease(s.dir(name)) // removed by another process: this one's lease, if any, is stale
	}
	if err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if !m.Temp && !mine(s.dir(name)) {
		// a kept workspace another forkbomb holds (Hold: a race or judge of
		// its base, between its forks) is refused as Prune refuses it; the
		// lease is kept through the removal, so no Hold comes meanwhile
		release, err := s.claim(m)
		if errors.Is(err, ErrInUse) {
			return fmt.Errorf("%w: a running forkbomb uses %s (a race or judgement of its base); remove it once that ends", ErrInUse, name)
		}
		if err == nil {
			defer release()
		}
	}
	return s.removeLocked(ctx, m, wait)
}

// removeLocked removes m, under the store lock.
func (s *Store) removeLocked(ctx context.Context, m *Meta, wait bool) error {
	name := m.Name
	if m.Kind == KindPid1 {
		all, _ := s.list()
		var forks []string
		left := 0
		for _, o := range all {
			if o.Pid1 == name && o.Name != name {
				forks = append(forks, o.Name)
				if s.orphaned(o) {
					left++
				}
			}
		}
		if len(forks) > 0 {
			hint := ""
			if left > 0 {
				hint = fmt.Sprintf(" (%d of them left by a forkbomb that was killed: 'forkbomb workspace prune' removes those)", left)
			}
			return fmt.Errorf("%w: %s is the pid 1 of %s; remove them first%s", ErrHasForks, name, strings.Join(forks, ", "), hint)
		}
	}
	// The lock can be held for a moment after a command ended: a process
	// another goroutine is starting holds a copy of every descriptor
	// between its fork and its exec. "In use" is retried briefly.
	release, err := s.useLock(name, true)
	for i := 0; wait && errors.Is(err, ErrInUse) && i < 40; i++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove %s: %w", name, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
		release, err = s.useLock(name, true)
	}
	if err != nil {
		return err
	}
	trash := filepath.Join(s.Root, fmt.Sprintf(".trash-%s-%d", name, os.Getpid()))
	err = os.Rename(s.dir(name), trash)
	release()
	if err != nil {
		return err
	}
	unlease(s.dir(name))
	removeTree(trash)
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// removeTree removes a directory even where a command left folders
// without write permission in it.
func removeTree(dir string) { sandbox.RemoveAll(dir) }
