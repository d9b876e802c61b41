package worldrace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Store is the worlds backend of run.Race (run.Forks): a pid 1 is a copy of the trunk, a fork
// a world.Fork of it (O(1)), a command in a fork a script in the world's shell, a fork's patch
// its /work against its pid 1's as a git patch made here from both worlds decoded (world.Diff),
// and a patch is judged by the check in a fresh copy of the trunk with the patch applied
// (Judge). Its worlds live in a folder beside the trunk that Close removes; the trunk is only
// read.
type Store struct {
	trunk    string // absolute
	limits   world.Limits
	confined bool
	self     string
	dir      string

	mu     sync.Mutex
	worlds map[string]*branch
	checks int // names the judge's copies
}

// branch is one world of the store.
type branch struct {
	meta  workspace.Meta
	file  string
	base  string     // its pid 1's file: what its patch is against
	shell *Workspace // its commands (Exec), in a worker of its own
	agent engine.Workspace
	gone  bool // removed: forgotten, its file kept until Close (Keep)
}

var (
	_ run.Forks           = (*Store)(nil)
	_ run.Bases           = (*Store)(nil)
	_ run.AgentWorkspaces = (*Store)(nil)
)

// Open makes the store of a race of o.Trunk. Confined gives each fork's agent a Confined
// workspace (an agent CLI in forkbomb's sandbox, the world's MCP server its only tool) rather
// than the world's shell.
func Open(o Options) (*Store, error) {
	trunk, err := filepath.Abs(o.Trunk)
	if err != nil {
		return nil, fmt.Errorf("world race: %w", err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(trunk), "."+filepath.Base(trunk)+".race-*")
	if err != nil {
		return nil, fmt.Errorf("world race: %w", err)
	}
	return &Store{trunk: trunk, limits: o.Limits, confined: o.Confined, self: o.Self, dir: dir, worlds: map[string]*branch{}}, nil
}

// Close ends every world's worker and removes the store's folder.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.worlds {
		if !b.gone {
			b.close()
		}
	}
	os.RemoveAll(s.dir)
}

func (b *branch) close() {
	if b.shell != nil {
		b.shell.Close()
	}
	if c, ok := b.agent.(*Confined); ok {
		c.Close()
	}
}

// ResolveBase implements run.Bases: the trunk is the race's repository, and the SHA-256 of its
// bytes its base (a pid 1 is a copy with those bytes).
func (s *Store) ResolveBase(ctx context.Context, repo, rev string) (string, string, error) {
	if abs, err := filepath.Abs(repo); err != nil || abs != s.trunk {
		return "", "", fmt.Errorf("world race: this store races %s, not %s", s.trunk, repo)
	}
	b, err := readWorld(s.trunk)
	if err != nil {
		return "", "", err
	}
	if _, err := world.Decode(b, 0); err != nil {
		return "", "", fmt.Errorf("world race: %s: %w", s.trunk, err)
	}
	sum := sha256.Sum256(b)
	base := hex.EncodeToString(sum[:])
	if rev != "" && rev != base {
		return "", "", fmt.Errorf("world race: %s is not at %s", s.trunk, rev)
	}
	return s.trunk, base, nil
}

// readWorld reads a world file's bytes, bounded, through no link.
func readWorld(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("world race: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("world race: %s is not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxWorldFile+1))
	if err != nil {
		return nil, fmt.Errorf("world race: %w", err)
	}
	return b, nil
}

// copyTrunk makes file a copy of the trunk at base.
func (s *Store) copyTrunk(file, repo, base string) error {
	if abs, err := filepath.Abs(repo); err != nil || abs != s.trunk {
		return fmt.Errorf("world race: this store races %s, not %s", s.trunk, repo)
	}
	if err := world.Fork(s.trunk, file); err != nil {
		return err
	}
	b, err := readWorld(file)
	if err == nil {
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != base {
			err = fmt.Errorf("world race: %s changed since the race began", s.trunk)
		}
	}
	if err != nil {
		os.Remove(file)
	}
	return err
}

func (s *Store) file(name string) string { return filepath.Join(s.dir, name+".world") }

// get is a world not removed.
func (s *Store) get(name string) (*branch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.worlds[name]
	if !ok || b.gone {
		return nil, fmt.Errorf("%s: %w", name, workspace.ErrNotFound)
	}
	return b, nil
}

// add registers a new world, refusing a name in use (a removed one too: its file is kept).
func (s *Store) add(b *branch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.worlds[b.meta.Name]; ok {
		return fmt.Errorf("%s: %w", b.meta.Name, workspace.ErrExists)
	}
	s.worlds[b.meta.Name] = b
	return nil
}

// Get implements judge.Forks.
func (s *Store) Get(_ context.Context, name string) (*workspace.Meta, error) {
	b, err := s.get(name)
	if err != nil {
		return nil, err
	}
	m := b.meta
	return &m, nil
}

// New implements judge.Forks: a pid 1 is a copy of the trunk (o.Repo) whose bytes are o.Rev's.
func (s *Store) New(ctx context.Context, name string, o workspace.NewOptions) (*workspace.Meta, error) {
	if err := workspace.ValidateName(name); err != nil {
		return nil, err
	}
	file := s.file(name)
	b := &branch{meta: workspace.Meta{Name: name, Kind: "pid1", Pid1: name, Repo: s.trunk, Rev: o.Rev, Base: o.Rev, Created: time.Now().UTC()},
		file: file, base: file}
	if err := s.add(b); err != nil {
		return nil, err
	}
	if err := s.copyTrunk(file, o.Repo, o.Rev); err != nil {
		s.forget(name)
		return nil, err
	}
	b.shell = &Workspace{File: file, Limits: s.limits}
	b.agent = b.shell
	m := b.meta
	return &m, nil
}

func (s *Store) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.worlds, name)
}

// Fork implements judge.Forks: dst is a world.Fork of src, with a worker of its own for its
// commands and, when the store is confined, a Confined workspace for its agent.
func (s *Store) Fork(ctx context.Context, src, dst string) (*workspace.Meta, error) {
	if err := workspace.ValidateName(dst); err != nil {
		return nil, err
	}
	from, err := s.get(src)
	if err != nil {
		return nil, err
	}
	file := s.file(dst)
	b := &branch{meta: workspace.Meta{Name: dst, Kind: "fork", Source: src, Pid1: from.meta.Pid1, Base: from.meta.Base, Created: time.Now().UTC()},
		file: file, base: from.base}
	if err := s.add(b); err != nil {
		return nil, err
	}
	if err := world.Fork(from.file, file); err != nil {
		s.forget(dst)
		return nil, err
	}
	b.shell = &Workspace{File: file, Limits: s.limits}
	b.agent = b.shell
	if s.confined {
		c, err := NewConfined(file, s.limits, s.self)
		if err != nil {
			s.forget(dst)
			os.Remove(file)
			return nil, err
		}
		b.agent = c
	}
	m := b.meta
	return &m, nil
}

// Exec implements judge.Forks: the policy's "/bin/sh -c SCRIPT" in the world's shell.
func (s *Store) Exec(ctx context.Context, name string, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	b, err := s.get(name)
	if err != nil {
		return nil, err
	}
	return b.shell.Exec(ctx, p, stdio)
}

// AgentWorkspace implements run.AgentWorkspaces: the world's shell, or its Confined workspace.
func (s *Store) AgentWorkspace(name string) engine.Workspace {
	b, err := s.get(name)
	if err != nil {
		return gone{err}
	}
	return b.agent
}

// gone is the workspace of a name the store does not have.
type gone struct{ err error }

func (g gone) Exec(context.Context, sandbox.Policy, sandbox.Stdio) (*sandbox.Result, error) {
	return nil, g.err
}
func (g gone) Files(context.Context) (string, workspace.Files, error) { return "", nil, g.err }

// Remove implements judge.Forks: the world is forgotten and its workers end; its file stays in
// the store's folder until Close, so that the race's winner can be kept (Keep).
func (s *Store) Remove(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.worlds[name]
	if !ok || b.gone {
		return fmt.Errorf("%s: %w", name, workspace.ErrNotFound)
	}
	b.gone = true
	b.close()
	return nil
}

// Keep makes dst a fork of the world name, removed or not (the winner of a race is removed
// with the other forks before the race returns).
func (s *Store) Keep(name, dst string) error {
	s.mu.Lock()
	b, ok := s.worlds[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %w", name, workspace.ErrNotFound)
	}
	return world.Fork(b.file, dst)
}

// Snapshot implements judge.Forks: the pid 1's /work exported to a host folder (world.Export:
// no link followed, no set-id bit written).
func (s *Store) Snapshot(_ context.Context, name string) (string, error) {
	b, err := s.get(name)
	if err != nil {
		return "", err
	}
	w, err := world.Load(b.file, s.limits.MaxSize)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(s.dir, name+".tree-*")
	if err != nil {
		return "", err
	}
	if err := w.Export(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// Diff implements run.Forks: the fork's /work against its pid 1's as a git patch, both worlds
// decoded here as hostile data. A fork that does not decode, or whose patch is over
// world.Diff's bound, is workspace.ErrPatchRefused. No Stat is made (stat is ignored): only
// `forkbomb workspace diff` asks for one, of the local store.
func (s *Store) Diff(ctx context.Context, name string, _ bool) (*workspace.Diff, error) {
	b, err := s.get(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	base, err := world.Load(b.base, s.limits.MaxSize)
	if err != nil {
		return nil, err
	}
	cur, err := world.Load(b.file, s.limits.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", workspace.ErrPatchRefused, err)
	}
	patch, err := world.Diff(base, cur)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", workspace.ErrPatchRefused, err)
	}
	return &workspace.Diff{Patch: patch}, nil
}

// Files implements run.Forks: a world has no files for the editor; its shell is the tool.
func (s *Store) Files(_ context.Context, name string) (string, workspace.Files, error) {
	if _, err := s.get(name); err != nil {
		return "", nil, err
	}
	return "/work", noFiles{}, nil
}

// List implements run.Forks: the worlds not removed, by name.
func (s *Store) List(context.Context) ([]*workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*workspace.Meta
	for _, b := range s.worlds {
		if !b.gone {
			m := b.meta
			out = append(out, &m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
