package workspace

import (
	"context"
	"fmt"
	"strings"
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

// Resolve names the commit rev is in the pid 1's history.
func (h *History) Resolve(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%w: revision %q", ErrBadRepo, rev)
	}
	return h.g.text(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// FirstParents lists the commits after good up to bad (bad included) along
// bad's first parents, oldest first. It fails unless good is an ancestor
// of bad.
func (h *History) FirstParents(ctx context.Context, good, bad string) ([]string, error) {
	if _, err := h.g.run(ctx, nil, "merge-base", "--is-ancestor", good, bad); err != nil {
		return nil, fmt.Errorf("%s is not an ancestor of %s: %w", good, bad, err)
	}
	out, err := h.g.text(ctx, "rev-list", "--first-parent", "--reverse", good+".."+bad, "--")
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
