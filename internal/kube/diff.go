package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Patch limits: what a fork's pod may send back as its patch.
const (
	maxPatch   = 128 << 20
	maxStat    = 1 << 20
	diffTimout = 2 * time.Minute
)

// gitDiff is run in the pod, inside forkbomb's sandbox there, offline
// (confined): everything in the tree against the base commit, untracked
// files included, in `git apply` form. The pod's git runs with no hooks,
// no external diff or textconv and no fsmonitor, and whatever the fork's
// .git config still starts (a clean filter) runs with the fork's own
// walls; what it prints is the fork's word and is handled as such —
// bounded here, refused when it names a .git path, and judged like any
// fork's patch.
const gitDiff = `export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null &&
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.external= "$@"; } &&
g add -A . >/dev/null 2>&1 && g diff --cached --no-ext-diff --no-textconv --no-color -M --binary --full-index "$1"`

const gitStat = `export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null &&
git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.external= diff --cached --no-ext-diff --no-textconv --no-color -M --stat --summary "$1"`

// Diff returns the fork's patch, made in its pod and sent back as text.
func (s *Store) Diff(ctx context.Context, name string, stat bool) (*workspace.Diff, error) {
	s.mu.Lock()
	fs := s.forks[name]
	s.mu.Unlock()
	if fs == nil {
		return nil, fmt.Errorf("diff %s: %w", name, workspace.ErrNotFound)
	}
	if !fs.started.Load() {
		// No command ever ran in it: its changes, if any, are the
		// editor's, made in the local fork (files.go).
		fs.filesMu.Lock()
		edited := len(fs.pending) > 0
		fs.filesMu.Unlock()
		if edited {
			return s.o.Local.Diff(ctx, name, stat)
		}
		return &workspace.Diff{}, nil
	}
	pid1, err := s.o.Local.Get(ctx, fs.pid1)
	if err != nil {
		return nil, err
	}
	if !workspace.IsObjectName(pid1.Base) {
		return nil, fmt.Errorf("diff %s: base %q is not a commit id", name, pid1.Base)
	}
	ctx, cancel := context.WithTimeout(ctx, diffTimout)
	defer cancel()
	d := &workspace.Diff{}
	script, err := confined(fs.mode, diffTimout, gitDiff, pid1.Base)
	if err != nil {
		return nil, err
	}
	patch, code, err := s.output(ctx, fs.obj, script, nil, maxPatch)
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%w: the diff of %s took longer than %s", workspace.ErrPatchRefused, name, diffTimout)
	case errors.Is(err, errTooBig):
		return nil, fmt.Errorf("%w: the patch of %s is over %d bytes", workspace.ErrPatchRefused, name, maxPatch)
	case err != nil && code > 0:
		return nil, fmt.Errorf("%w: git diff in the pod of %s: %v", workspace.ErrPatchRefused, name, err)
	case err != nil:
		return nil, fmt.Errorf("diff %s: %w", name, err)
	}
	if bad := gitPaths(patch); bad != "" {
		return nil, fmt.Errorf("%w: the patch of %s touches %s", workspace.ErrPatchRefused, name, bad)
	}
	d.Patch = patch
	if stat {
		if script, err := confined(fs.mode, diffTimout, gitStat, pid1.Base); err == nil {
			if st, _, err := s.output(ctx, fs.obj, script, nil, maxStat); err == nil {
				d.Stat = string(st)
			}
		}
	}
	return d, nil
}

// gitPaths returns the first .git path (any letter case, any depth) a
// patch's headers name: a local diff never ships one, nor does this.
func gitPaths(patch []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 64<<10), maxPatch)
	for sc.Scan() {
		line := sc.Text()
		var names []string
		switch {
		case strings.HasPrefix(line, "diff --git "):
			names = strings.Fields(strings.TrimPrefix(line, "diff --git "))
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			names = []string{line[4:]}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "),
			strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
			_, n, _ := strings.Cut(line, " ")
			_, n, _ = strings.Cut(n, " ")
			names = []string{n}
		}
		for _, n := range names {
			for _, part := range strings.Split(strings.Trim(n, `"`), "/") {
				if strings.EqualFold(part, ".git") {
					return n
				}
			}
		}
	}
	return ""
}
