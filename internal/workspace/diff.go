package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/layerfs"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Diff is the patch a workspace would ship: every change from its base —
// modified, added (untracked, but not ignored), deleted, renamed files,
// mode changes, symlinks, binary files — in `git apply` form. It is
// computed on the trusted side from the workspace's layers; nothing runs
// in the workspace. Changes under any .git (in any letter case) are never
// part of it; they are returned as excluded.
type Diff struct {
	Patch    []byte
	Stat     string
	Excluded []string
}

// DiffLimits bound what a diff reads from a fork, which made every byte
// of it. Zero fields take the defaults.
type DiffLimits struct {
	File    int64         // one changed file; default 32 MiB
	Total   int64         // all changed files together; default 256 MiB
	Patch   int64         // the patch text; default 128 MiB
	Entries int           // files and folders in a fork's layers; default 1,000,000
	Timeout time.Duration // the whole diff; default 2 minutes
}

func (l DiffLimits) withDefaults() DiffLimits {
	if l.File <= 0 {
		l.File = 32 << 20
	}
	if l.Total <= 0 {
		l.Total = 256 << 20
	}
	if l.Patch <= 0 {
		l.Patch = 128 << 20
	}
	if l.Entries <= 0 {
		l.Entries = 1_000_000
	}
	if l.Timeout <= 0 {
		l.Timeout = 2 * time.Minute
	}
	return l
}

// Diff computes a workspace's patch, and with stat its summary. A fork
// whose changes cannot be read safely and within the limits gets no patch:
// the error wraps ErrPatchRefused and says why.
func (s *Store) Diff(ctx context.Context, name string, stat bool) (*Diff, error) {
	m, err := s.meta(name)
	if err != nil {
		return nil, err
	}
	release, err := s.useLock(name, false)
	if err != nil {
		return nil, err
	}
	defer release()
	lim := s.DiffLimits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	d, err := s.diff(ctx, name, m, stat, lim)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w: the diff of %s took longer than %s", ErrPatchRefused, name, lim.Timeout)
	}
	var le *layerfs.LimitError
	var ke *layerfs.KindError
	if errors.As(err, &le) || errors.As(err, &ke) {
		return nil, fmt.Errorf("%w: %v", ErrPatchRefused, err)
	}
	return d, err
}

func (s *Store) diff(ctx context.Context, name string, m *Meta, stat bool, lim DiffLimits) (*Diff, error) {
	tmp, err := sandbox.MkdirTemp("diff")
	if err != nil {
		return nil, err
	}
	defer removeTree(tmp)
	gitDir := filepath.Join(s.tree(m.Pid1), ".git")
	// Objects go to a scratch store on top of pid 1's, so a diff never
	// changes a pid 1 that other forks are reading.
	g := gitCmd{gitDir: gitDir, env: []string{
		"GIT_OBJECT_DIRECTORY=" + filepath.Join(tmp, "objects"),
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(gitDir, "objects"),
		"GIT_LITERAL_PATHSPECS=1",
	}}
	if err := os.MkdirAll(filepath.Join(tmp, "objects", "pack"), 0o700); err != nil {
		return nil, err
	}
	pid1, err := s.meta(m.Pid1)
	if err != nil {
		return nil, err
	}
	bw := blobWriter{dir: filepath.Join(tmp, "objects"), sha256: len(m.Base) == 64}
	obj := &objects{ctx: ctx, g: g, cache: filepath.Join(s.dir(m.Pid1), objCacheName), sha256: bw.sha256}
	defer obj.close()
	full := m.Method != MethodSnapshot && m.Method != MethodOverlay
	te := newTreeEditor(obj, bw, m.Base, full)
	st := &stager{s: s, g: g, base: m.Base, pid1: pid1, tmp: tmp, lim: lim, d: &Diff{}, te: te, fromEmpty: full}
	switch m.Method {
	case MethodSnapshot:
	case MethodOverlay:
		layers := []string{}
		for i := len(m.Layers) - 2; i >= 0; i-- { // frozen layers, oldest first
			layers = append(layers, m.Layers[i])
		}
		layers = append(layers, filepath.Join(s.dir(name), "upper"))
		if err := st.stage(ctx, layers, false); err != nil {
			return nil, err
		}
	default:
		// A copy holds the whole tree: its files make the new tree from
		// nothing, and every base file it lacks is deleted. O(tree), but
		// only where overlayfs is unavailable.
		st.base0 = newTreeEditor(obj, bw, m.Base, false)
		if err := st.stage(ctx, []string{s.tree(name)}, true); err != nil {
			return nil, err
		}
	}
	d := st.d
	if !st.te.root.dirty && !full {
		// The fork's tree is the base's: no patch, and no git to say so.
		return d, nil
	}
	tree, err := st.te.write()
	if err != nil {
		return nil, err
	}
	args := append(diffArgs[:len(diffArgs):len(diffArgs)], "--binary", "--full-index", m.Base, tree)
	pg := g
	pg.maxOut = lim.Patch
	if stat {
		// One git process for both, the stat and summary then the patch,
		// where the two fit a little over the patch's limit; else (a
		// stat larger than an eighth of the patch: mode changes, say)
		// one for each, as the patch alone is bounded.
		both := g
		both.maxOut = lim.Patch + lim.Patch/8 + 1<<20
		out, err := both.run(ctx, nil, append([]string{"diff-tree", "--patch-with-stat", "--summary"}, args...)...)
		var le *layerfs.LimitError
		switch {
		case err == nil:
			if d.Stat, d.Patch, err = splitStat(out); err != nil {
				return nil, err
			}
			if int64(len(d.Patch)) > lim.Patch {
				return nil, &layerfs.LimitError{Path: "the patch", What: "bytes", Limit: lim.Patch}
			}
			return d, nil
		case !errors.As(err, &le):
			return nil, err
		}
	}
	if d.Patch, err = pg.run(ctx, nil, append([]string{"diff-tree", "-p"}, args...)...); err != nil {
		return nil, err
	}
	if stat {
		// --binary would imply -p: the stat's own arguments without it
		out, err := pg.run(ctx, nil, append(append([]string{"diff-tree", "--stat", "--summary"}, diffArgs...), m.Base, tree)...)
		if err != nil {
			return nil, err
		}
		d.Stat = string(out)
	}
	return d, nil
}

// diffArgs are the diff's arguments to git diff-tree, the patch's and the
// stat's alike: no external diff or text conversion, no colour, renames.
var diffArgs = []string{"--no-ext-diff", "--no-textconv", "--no-color", "-M"}

// splitStat splits diff-tree's --patch-with-stat output into its stat (and
// summary) and its patch, which begins at the first "diff --git " line:
// the stat's lines all begin with a space, and the names in them are
// quoted where they hold a newline, so none of them can pass for it.
func splitStat(out []byte) (stat string, patch []byte, err error) {
	if len(out) == 0 {
		return "", nil, nil
	}
	i := bytes.Index(out, []byte("\ndiff --git "))
	if i < 0 || !bytes.HasSuffix(out[:i+1], []byte("\n\n")) {
		return "", nil, fmt.Errorf("git diff-tree --patch-with-stat: no patch after the stat")
	}
	return string(out[:i]), out[i+1:], nil
}

// isGitPath reports whether a path has a .git component in any letter
// case: such a path is git metadata on a case-insensitive filesystem.
func isGitPath(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}
