package workspace

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// History reads a pid 1's history on the trusted side, for the lab's
// bisect: the pid 1 is forkbomb's own snapshot (no fork ever writes it), so
// git may read it; it runs with gitCmd's settings, so nothing of the
// repository's config, attributes or hooks runs.
type History struct {
	g gitCmd
}

// historyMaxOut bounds what one history read returns (a rev-list of a
// very long range, a diff between two distant commits).
const historyMaxOut = 256 << 20

// History returns the history reader of a pid 1.
func (s *Store) History(name string) (*History, error) {
	m, err := s.meta(name)
	if err != nil {
		return nil, err
	}
	if m.Method != MethodSnapshot {
		return nil, fmt.Errorf("%s is a fork: %w", name, ErrNotPid1)
	}
	return &History{g: gitCmd{dir: s.tree(name), maxOut: historyMaxOut}}, nil
}

// RepoHistory reads the history of the user's repository at top (as
// ResolveBase returns it), which is only read: with gitCmd's settings (no
// optional locks, neither replacement objects nor grafts, as for the
// snapshot's fetch), so what it lists is the history a snapshot holds.
func RepoHistory(top string) *History {
	return &History{g: gitCmd{dir: top, maxOut: historyMaxOut}}
}

// Resolve names the commit rev is in the pid 1's history.
func (h *History) Resolve(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%w: revision %q", ErrBadRepo, rev)
	}
	return h.g.text(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// FirstParents lists the commits after good up to bad (bad included) along
// bad's first parents, oldest first. It fails unless good is an ancestor
// of bad. (The check and the list are read at once; a failed check stops
// the list, which would otherwise run down the whole of bad's history.)
func (h *History) FirstParents(ctx context.Context, good, bad string) ([]string, error) {
	listCtx, stopList := context.WithCancel(ctx)
	defer stopList()
	var ancestry error
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, ancestry = h.g.run(ctx, nil, "merge-base", "--is-ancestor", good, bad); ancestry != nil {
			stopList()
		}
	})
	out, err := h.g.text(listCtx, "rev-list", "--first-parent", "--reverse", good+".."+bad, "--")
	wg.Wait()
	if ancestry != nil {
		return nil, fmt.Errorf("%s is not an ancestor of %s: %w", good, bad, ancestry)
	}
	if err != nil {
		return nil, err
	}
	var list []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			list = append(list, l)
		}
	}
	return list, nil
}

// Diff is the binary patch that turns from's tree into to's, with no
// external diff or textconv a repository could name.
func (h *History) Diff(ctx context.Context, from, to string) ([]byte, error) {
	return h.g.run(ctx, nil, "diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", from, to, "--")
}

// Subject is a commit's one-line subject.
func (h *History) Subject(ctx context.Context, rev string) (string, error) {
	return h.g.text(ctx, "log", "-1", "--format=%s", rev, "--")
}

// Parents are a commit's parents, first parent first.
func (h *History) Parents(ctx context.Context, rev string) ([]string, error) {
	out, err := h.g.text(ctx, "rev-list", "--no-walk", "--parents", rev, "--")
	if err != nil {
		return nil, err
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return nil, fmt.Errorf("%w: revision %q", ErrBadRepo, rev)
	}
	return f[1:], nil
}

// Message is a commit's whole message.
func (h *History) Message(ctx context.Context, rev string) (string, error) {
	return h.g.text(ctx, "log", "-1", "--format=%B", rev, "--")
}

// Change is one file a commit changed, as git's raw diff says: Status is
// A, M, D or T (renames are read as a delete and an add); Mode the new
// mode ("000000" when deleted).
type Change struct {
	Path   string
	Status string
	Mode   string
}

// Changed lists the files that differ between two commits, read
// NUL-separated so no name is misparsed.
func (h *History) Changed(ctx context.Context, from, to string) ([]Change, error) {
	out, err := h.g.run(ctx, nil, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff", from, to, "--")
	if err != nil {
		return nil, err
	}
	var list []Change
	parts := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		// ":oldmode newmode oldsha newsha status", then the path
		f := strings.Fields(strings.TrimPrefix(parts[i], ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("git diff-tree: unexpected line %q", parts[i])
		}
		list = append(list, Change{Path: parts[i+1], Status: f[4][:1], Mode: f[1]})
	}
	return list, nil
}

// Blob is a file's content at a commit.
func (h *History) Blob(ctx context.Context, rev, path string) ([]byte, error) {
	return h.g.run(ctx, nil, "cat-file", "blob", rev+":"+path)
}
