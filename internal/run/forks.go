package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Forks is what a race needs of a fork store: what the judge needs
// (judge.Forks: a pid 1, forks of it, a command in one, removal) and, for
// the race itself, each fork's patch, its files for an in-process editor,
// and the list of workspaces (to reclaim an interrupted run's). It is
// declared here, where it is used, and not in workspace: each consumer
// states what it needs, judge.Forks is a part of it, and a backend (a
// cluster, a world) implements the methods without importing the race.
// *workspace.Store is the local one.
type Forks interface {
	judge.Forks
	// Diff returns a fork's changes as a patch against its base
	// (workspace.ErrPatchRefused when it cannot be made safely).
	Diff(ctx context.Context, name string, stat bool) (*workspace.Diff, error)
	// Files returns the path a command in the fork sees as its root, and
	// the fork's files.
	Files(ctx context.Context, name string) (root string, files workspace.Files, err error)
	// List returns every workspace of the store.
	List(ctx context.Context) ([]*workspace.Meta, error)
}

var _ Forks = (*workspace.Store)(nil)

// Judger judges patches against the race's base: *judge.Judger, or a
// stand-in.
type Judger interface {
	Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error)
}

// PrepareJudge readies the race's Judger; judge.Prepare is the default.
type PrepareJudge func(ctx context.Context, o judge.Options) (Judger, error)

func prepareJudge(ctx context.Context, o judge.Options) (Judger, error) {
	j, err := judge.Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// ForkWorkspace is the fork name of store as its agent gets it: an
// engine.Workspace, and engine.Sessions where the store keeps sandboxes
// for many commands — or the store's own workspace for the fork where it
// hands one out (AgentWorkspaces). The race drives every agent through it;
// so does the canary.
func ForkWorkspace(store Forks, name string) engine.Workspace {
	if a, ok := store.(AgentWorkspaces); ok {
		return a.AgentWorkspace(name)
	}
	return forkWorkspace{store: store, name: name}
}

// AgentWorkspaces is a fork store that gives each fork's agent a
// workspace of its own rather than its Exec and Files: a world store
// (internal/worldrace), where an agent CLI runs in forkbomb's sandbox on a
// copy of the world with the world's MCP server as its only tool.
type AgentWorkspaces interface {
	AgentWorkspace(name string) engine.Workspace
}

// Bases is a fork store whose pid 1 is not a commit of a git repository
// (a world file): it says what the race's repository and base are, in
// place of workspace.ResolveBase. top is recorded as the run's repository
// and hidden from the forks; base is the pid 1's version (New gets both).
type Bases interface {
	ResolveBase(ctx context.Context, repo, rev string) (top, base string, err error)
}

// resolveBase is the race's repository and base: the store's word where it
// has one, else git's.
func resolveBase(ctx context.Context, store Forks, repo, rev string) (string, string, error) {
	if b, ok := store.(Bases); ok {
		return b.ResolveBase(ctx, repo, rev)
	}
	return workspace.ResolveBase(ctx, repo, rev)
}

// ForkName is the workspace of fork n of the run id (its pid 1 is the
// kept one of the base on this machine's store, else "run-ID"): a backend
// that keeps something of a fork after the race (a world store, the
// winner's world) finds it by this name.
func ForkName(id string, n int) string { return fmt.Sprintf("run-%s-f%d", id, n) }

// runOf names the run a workspace is of: its own pid 1 ("run-ID") or one
// of its forks (ForkName), whichever pid 1 that fork was made from.
func runOf(m *workspace.Meta) (string, bool) {
	rest, ok := strings.CutPrefix(m.Name, "run-")
	if !ok {
		return "", false
	}
	if m.Kind == workspace.KindPid1 {
		return rest, true
	}
	i := strings.LastIndex(rest, "-f")
	if i < 0 {
		return "", false
	}
	return rest[:i], true
}

// forkWorkspace is one fork of the store as its agent gets it
// (engine.Workspace).
type forkWorkspace struct {
	store Forks
	name  string
}

func (w forkWorkspace) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	return w.store.Exec(ctx, w.name, p, stdio)
}

func (w forkWorkspace) Files(ctx context.Context) (string, workspace.Files, error) {
	return w.store.Files(ctx, w.name)
}

// sessionStore is a fork store that keeps sandboxes for many commands
// (*workspace.Store does).
type sessionStore interface {
	Session(ctx context.Context, name string, p sandbox.Policy) (*workspace.Session, error)
}

// Session implements engine.Sessions when the store can.
func (w forkWorkspace) Session(ctx context.Context, p sandbox.Policy) (engine.Session, error) {
	ss, ok := w.store.(sessionStore)
	if !ok {
		return nil, sandbox.ErrSessionUnsupported
	}
	s, err := ss.Session(ctx, w.name, p)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// sharesBase says whether a race with o makes its forks from the judge's
// kept pid 1 of the base (judge.BasePid1): where the forks live on this
// machine's store and the judge works in that same store.
func sharesBase(o Options) bool {
	s, local := o.Store.(*workspace.Store)
	return local && (o.JudgeStore == nil || o.JudgeStore == judge.Forks(s))
}
