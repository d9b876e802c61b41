package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Fork makes dst, a fork of src. Where overlayfs works in the sandbox, the
// fork is an empty upper layer over src's frozen layers: O(1) for a fork of
// a pid 1, O(what src changed) for a fork of a fork (src's upper layer is
// copied — reflinked where possible — and frozen, since overlayfs forbids a
// lower layer that still changes). Elsewhere it is a reflink (clonefile on
// macOS) or plain copy of src's whole tree.
func (s *Store) Fork(ctx context.Context, src, dst string) (*Meta, error) {
	return s.fork(ctx, src, dst, false)
}

func (s *Store) fork(ctx context.Context, src, dst string, temp bool) (*Meta, error) {
	sm, err := s.meta(src)
	if err != nil {
		return nil, err
	}
	if err := ValidateName(dst); err != nil {
		return nil, err
	}
	method := s.forkMethod(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err // the probe was cut short: no second one below
	}
	if sm.Method == MethodReflink || sm.Method == MethodCopy {
		method = s.copyMethod()
	}
	if s.ForkMethod != "" {
		method = s.ForkMethod
	}
	// A fork of a fork reads the source's changes: keep commands out of
	// the source while they are copied. A pid 1 never changes.
	if sm.Kind == KindFork {
		release, err := s.useLock(src, true)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	return s.create(dst, temp, func(tmp, final string) (*Meta, error) {
		// Under the store's lock now: src is the one read above, not
		// removed (or made anew under its name) meanwhile. Once dst
		// exists, a pid 1 src is not removed before it (ErrHasForks).
		now, err := s.meta(src)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if err != nil || !now.Created.Equal(sm.Created) || now.Kind != sm.Kind {
			return nil, fmt.Errorf("%w: %s was removed or replaced while it was forked", ErrNotFound, src)
		}
		m := &Meta{Kind: KindFork, Method: method, Source: src, Pid1: sm.Pid1, Base: sm.Base}
		tree := filepath.Join(tmp, "tree")
		switch method {
		case MethodOverlay:
			for _, d := range []string{"tree", "upper", "work"} {
				if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
					return nil, err
				}
			}
			switch sm.Method {
			case MethodSnapshot:
				m.Layers = []string{s.tree(src)}
			case MethodOverlay:
				if _, err := copyTree(filepath.Join(s.dir(src), "upper"), filepath.Join(tmp, "layer"), reflink); err != nil {
					return nil, fmt.Errorf("freeze %s's changes: %w", src, err)
				}
				m.Layers = append([]string{filepath.Join(final, "layer")}, sm.Layers...)
			}
		default:
			if sm.Method == MethodOverlay {
				return nil, fmt.Errorf("%s is an overlay fork but overlayfs does not work here any more", src)
			}
			var clone cloner
			if method == MethodReflink {
				clone = reflink
			}
			cloned, err := copyTree(s.tree(src), tree, clone)
			if err != nil {
				return nil, fmt.Errorf("copy %s: %w", src, err)
			}
			if method == MethodReflink && !cloned {
				m.Method = MethodCopy
			}
		}
		return m, nil
	})
}

// capabilities caches what the machine can do for forks, per kernel and
// user, so that a fork does not pay for a probe.
type capabilities struct {
	Kernel  string `json:"kernel"`
	UID     int    `json:"uid"`
	Overlay bool   `json:"overlay"`
	Reflink bool   `json:"reflink"`
}

func (s *Store) forkMethod(ctx context.Context) Method {
	if s.capabilities(ctx).Overlay {
		return MethodOverlay
	}
	return s.copyMethod()
}

func (s *Store) copyMethod() Method {
	if s.capabilities(context.Background()).Reflink {
		return MethodReflink
	}
	return MethodCopy
}

// PrepareForks finds out, once, how this machine makes forks (a probe of
// the sandbox's layers, a few hundred milliseconds when no earlier run
// left its answer), so that a caller can do it while it makes a pid 1
// rather than in its first forks.
func (s *Store) PrepareForks(ctx context.Context) { s.capabilities(ctx) }

// capabilities probes at most once per store: concurrent first forks wait
// for one probe rather than each running its own.
func (s *Store) capabilities(ctx context.Context) capabilities {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	if s.caps != nil {
		return *s.caps
	}
	c, ok := s.readCapabilities(ctx)
	if ok {
		s.caps = &c
	}
	return c
}

// readCapabilities reads the answer an earlier run left, or probes. ok is
// false when ctx ended during the probe: its answer is then not kept, so a
// cancelled first fork cannot leave overlayfs off for every later one.
func (s *Store) readCapabilities(ctx context.Context) (c capabilities, ok bool) {
	var u unix.Utsname
	unix.Uname(&u)
	want := capabilities{Kernel: unix.ByteSliceToString(u.Release[:]), UID: os.Getuid()}
	path := filepath.Join(s.Root, ".capabilities.json")
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &c) == nil && c.Kernel == want.Kernel && c.UID == want.UID {
		return c, true
	}
	c = want
	if rep, err := sandbox.Probe(ctx); err == nil {
		if l := rep.Layer("overlayfs"); l != nil && l.Status == "ok" {
			c.Overlay = true
		}
	}
	c.Reflink = cloneWorks(s.Root, reflink)
	if ctx.Err() != nil {
		return c, false
	}
	writeJSON(path, c)
	return c, true
}
