package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Exec runs a command confined in a workspace: its tree is the workdir (the
// command's cwd and only writable tree), its .git read-only. A pid 1 is
// pristine: a command in it runs over a throwaway upper layer (a throwaway
// copy where there is no overlayfs), so nothing it writes stays. p holds the caller's other sandbox settings; its Command
// must be set.
//
// For a fork (an overlay), two of p's fields are requests: a Workdir is a
// folder of the caller's (the judge's: the repository's own) the fork's
// tree is mounted over instead of its own path — inside the sandbox only,
// so many commands can see different forks at one path at once (the judge:
// a Go build cache keys on a package's folder) — and Overlay.Volatile skips the flush on unmount
// for a fork the caller throws away afterwards even where
// sandbox.ReadyVolatile, which every fork's command goes through, cannot
// tell a restart of the machine (its diff can still be read). Other
// stores ignore both.
func (s *Store) Exec(ctx context.Context, name string, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	p, done, err := s.confine(name, p)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := sandbox.Run(ctx, p, stdio)
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// confine makes p a policy for a command in the workspace, holding the
// workspace's lock until done is called.
func (s *Store) confine(name string, p sandbox.Policy) (_ sandbox.Policy, done func(), err error) {
	m, err := s.meta(name)
	if err != nil {
		return p, nil, err
	}
	release, err := s.useLock(name, false)
	if err != nil {
		return p, nil, err
	}
	var cleanups []func()
	undo := func() {
		for _, c := range cleanups {
			c()
		}
		release()
	}
	done = undo
	defer func() {
		if err != nil { // every error return gives a nil done: undo here
			undo()
		}
	}()
	tree := s.tree(name)
	at, volatile := p.Workdir, p.Overlay != nil && p.Overlay.Volatile
	p.Workdir, p.Overlay = tree, nil
	// A copy: callers share one Hide slice among concurrent forks.
	p.Hide = append(append([]string(nil), p.Hide...), s.hidden(m)...)
	switch m.Method {
	case MethodSnapshot:
		scratch, err := sandbox.MkdirTemp("pid1")
		if err != nil {
			return p, nil, err
		}
		cleanups = append(cleanups, func() { removeTree(scratch) })
		mnt := filepath.Join(scratch, "tree")
		p.GitDirs = []string{mnt + "/.git"}
		if !snapshotOverlay {
			// No overlayfs: the command gets a clone of the pid 1 to
			// write, thrown away with the scratch folder.
			if _, err := copyTree(tree, mnt, reflink); err != nil {
				return p, nil, fmt.Errorf("copy %s: %w", name, err)
			}
			p.Workdir = mnt
			break
		}
		for _, d := range []string{"tree", "upper", "work"} {
			os.Mkdir(filepath.Join(scratch, d), 0o700)
		}
		p.Workdir = mnt
		p.Overlay = &sandbox.Overlay{Lower: []string{tree}, Upper: filepath.Join(scratch, "upper"), Work: filepath.Join(scratch, "work"), Volatile: true}
	case MethodOverlay:
		dir := s.dir(name)
		if at != "" {
			tree = at
			p.Workdir = at
		}
		// No flush of the host's whole filesystem at the command's end
		// (sandbox.ReadyVolatile).
		work := filepath.Join(dir, "work")
		keep, err := sandbox.ReadyVolatile(work)
		if err != nil {
			return p, nil, fmt.Errorf("fork %s: %w; remove it and fork again", name, err)
		}
		if keep {
			cleanups = append(cleanups, func() { sandbox.EndVolatile(work) }) // the command has ended; what stays is checked at the next
		}
		volatile = volatile || keep
		p.Overlay = &sandbox.Overlay{Lower: m.Layers, Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work"), Volatile: volatile}
		// The pid 1's .git, plus any a command created in this fork or
		// the forks it came from: a walk of the upper layers only.
		p.GitDirs = []string{tree + "/.git"}
		for _, layer := range append([]string{filepath.Join(dir, "upper")}, m.Layers[:len(m.Layers)-1]...) {
			// A folder the fork's own command made unreadable (a test of
			// permissions, say) must not stop every later command in
			// the fork: metadata made in a fork never leaves it (patches
			// drop .git), so here what the scan could read suffices.
			found, _ := sandbox.FindGitDirs(layer)
			for _, g := range found {
				p.GitDirs = append(p.GitDirs, tree+strings.TrimPrefix(g, layer))
			}
		}
	}
	return p, done, nil
}

// Session is a sandbox kept for many commands in one workspace
// (sandbox.Session); it holds the workspace's lock until Close.
type Session struct {
	*sandbox.Session
	done func()
	once sync.Once
}

// Session starts a sandbox.Session confined in a workspace as Exec
// confines one command; p.Command, p.Timeout and p.MaxOutput are each
// command's (sandbox.Cmd). The session's overlay is mounted once: a
// change made to the workspace's layers from outside it meanwhile (an
// in-process editor's write) is not reliably seen inside — overlayfs
// keeps what it looked up — so such a writer starts a new session.
func (s *Store) Session(ctx context.Context, name string, p sandbox.Policy) (*Session, error) {
	p, done, err := s.confine(name, p)
	if err != nil {
		return nil, err
	}
	ss, err := sandbox.Start(ctx, p)
	if err != nil {
		done()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Session{Session: ss, done: done}, nil
}

// Close ends the session and releases the workspace.
func (s *Session) Close() error {
	err := s.Session.Close()
	s.once.Do(s.done)
	return err
}

// hidden lists what a command in a workspace must not see besides its own
// tree, wherever it lies: the store (every other workspace, its upper
// layer included), the state home around it (runs, judge caches, worlds)
// when the store is the usual $FORKBOMB_HOME/workspaces, and the user's
// repository the pid 1 was made from. The sandbox keeps the workspace's
// own tree, and the layers it is built from, in view inside them.
func (s *Store) hidden(m *Meta) []string {
	out := []string{s.Root}
	if filepath.Base(s.Root) == "workspaces" {
		// A FORKBOMB_HOME that cannot be hidden (/opt, say) still has
		// its workspaces hidden, and the race hides its runs and caches.
		if home := filepath.Dir(s.Root); sandbox.CheckHide(home) == nil {
			out = append(out, home)
		}
	}
	repo := m.Repo
	if repo == "" && m.Pid1 != "" {
		if p1, err := s.meta(m.Pid1); err == nil {
			repo = p1.Repo
		}
	}
	// A repository that is itself a system folder (/etc) is visible
	// read-only anyway; one anywhere else is hidden.
	if repo != "" && sandbox.CheckHide(repo) == nil {
		out = append(out, repo)
	}
	return out
}

// Files returns what an in-process editor needs of a workspace: the path
// a command inside sees as its root, and its files (the layers holding
// them, the writable one first). A pid 1 has none: it is never written.
func (s *Store) Files(_ context.Context, name string) (root string, files Files, err error) {
	m, err := s.meta(name)
	if err != nil {
		return "", nil, err
	}
	switch m.Method {
	case MethodOverlay:
		return s.tree(name), LayerFiles{Layers: append([]string{filepath.Join(s.dir(name), "upper")}, m.Layers...)}, nil
	case MethodSnapshot:
		return "", nil, fmt.Errorf("%s is a pid 1, which never changes; fork it", name)
	}
	return s.tree(name), LayerFiles{Layers: []string{s.tree(name)}}, nil
}

// Snapshot returns the folder holding a pid 1's files, for the judge to
// read the base from (which tests exist, which files the test command
// names). It is the user's commit, checked out by forkbomb, never written
// by a fork; only a pid 1 has one.
func (s *Store) Snapshot(_ context.Context, name string) (string, error) {
	m, err := s.meta(name)
	if err != nil {
		return "", err
	}
	if m.Method != MethodSnapshot {
		return "", fmt.Errorf("%s is a fork, not a pid 1: %w", name, ErrNotPid1)
	}
	return s.tree(name), nil
}

// IndexWithoutStat writes to dst the index of pid 1 name's HEAD as git
// read-tree makes it: its entries with no stat data, which is what two
// checkouts of one commit agree on (their own indexes differ in it).
func (s *Store) IndexWithoutStat(ctx context.Context, name, dst string) error {
	tree, err := s.Snapshot(ctx, name)
	if err != nil {
		return err
	}
	_, err = gitCmd{dir: tree, env: []string{"GIT_INDEX_FILE=" + dst}}.run(ctx, nil, "read-tree", "HEAD")
	return err
}
