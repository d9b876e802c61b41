package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// stager builds, in a scratch index, the tree a fork's layers make. Every
// name, link and byte in the layers is the fork's: they are read through
// layerfs (no link followed, no non-regular file opened, every read
// bounded), blobs are written by forkbomb itself, and git is handed
// nothing of the fork's but NUL-separated names and whole argv elements.
type stager struct {
	s         *Store
	g         gitCmd
	base      string
	pid1      *Meta
	tmp       string
	lim       DiffLimits
	d         *Diff
	te        *treeEditor // the tree being built
	fromEmpty bool        // te starts empty (a copy fork)
	base0     *treeEditor // with fromEmpty: the base's tree, for lookups
}

// source is where a changed path's content is: a file or symlink in one
// layer.
type source struct {
	layer *layerfs.Dir
	kind  layerfs.Kind
}

// stage stages the changes recorded in overlay upper layers (oldest
// first): files present in a layer are written, whiteouts delete, opaque
// directories replace what was below them. It reads only the layers, so
// its cost follows the size of the change, not of the tree. With full,
// the one layer is a whole tree, and base files it lacks are deleted.
func (st *stager) stage(ctx context.Context, layers []string, full bool) error {
	writes := map[string]source{} // path → where its content is
	gone := map[string]bool{}     // paths whose base entries (and below) are gone unless rewritten
	seen := 0
	for _, lp := range layers {
		layer, err := layerfs.Open(lp)
		if err != nil {
			return err
		}
		defer layer.Close()
		// What this layer does to the layers below it.
		dropExact := map[string]bool{} // a folder here replaces a file below
		dropTree := map[string]bool{}  // a file, whiteout or opaque folder here replaces all below
		added := map[string]source{}
		err = layer.Walk(layerfs.WalkLimits{Entries: st.lim.Entries - seen}, func(e layerfs.WalkEntry) error {
			seen++
			if err := ctx.Err(); err != nil {
				return err
			}
			rel := e.Rel
			if full && rel == ".git" {
				return layerfs.SkipDir // the copy's own repository
			}
			if isGitPath(rel) {
				st.d.Excluded = append(st.d.Excluded, rel)
				if e.Kind == layerfs.KindDir {
					return layerfs.SkipDir
				}
				return nil
			}
			switch e.Kind {
			case layerfs.KindWhiteout:
				dropTree[rel] = true
				gone[rel] = true
			case layerfs.KindDir:
				dropExact[rel] = true
				if e.Opaque {
					dropTree[rel] = true
					gone[rel] = true
				}
			case layerfs.KindFile, layerfs.KindSymlink:
				dropTree[rel] = true
				added[rel] = source{layer: layer, kind: e.Kind}
				gone[rel] = true // a file where the base had a folder
			default:
				// FIFOs, sockets, devices are no part of a tree; they
				// are reported, never opened.
				st.d.Excluded = append(st.d.Excluded, rel)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		for p := range writes {
			if dropExact[p] || underAny(p, dropTree) {
				delete(writes, p)
			}
		}
		for p, src := range added {
			writes[p] = src
		}
	}

	// Every folder a written path needs: a base file standing there goes.
	needDir := map[string]bool{}
	for w := range writes {
		for dir := path.Dir(w); dir != "."; dir = path.Dir(dir) {
			needDir[dir] = true
		}
	}
	deleted := func(p string) bool {
		_, rewritten := writes[p]
		return !rewritten && (full || underAny(p, gone) || needDir[p])
	}

	// New files that .gitignore excludes are not part of the patch.
	paths := make([]string, 0, len(writes))
	for w := range writes {
		paths = append(paths, w)
	}
	sort.Strings(paths)
	if len(paths) > 0 {
		// "New" is relative to the base, which a copy fork's editor
		// (starting from nothing) does not hold: it asks a second one.
		base := st.te
		if st.fromEmpty {
			base = st.base0
		}
		var newPaths []string
		for _, w := range paths {
			e, err := base.lookup(w)
			if err != nil {
				return err
			}
			if e == nil || e.isTree() {
				newPaths = append(newPaths, w)
			}
		}
		ignored, err := st.ignored(ctx, writes, deleted, newPaths)
		if err != nil {
			return err
		}
		kept := paths[:0]
		for _, w := range paths {
			if !ignored[w] {
				kept = append(kept, w)
			}
		}
		paths = kept
	}

	// Deletions first, so a file can become a folder and back; then the
	// written files, whose blobs forkbomb writes itself.
	if !full {
		gones := make([]string, 0, len(gone))
		for p := range gone {
			gones = append(gones, p)
		}
		sort.Strings(gones)
		for _, p := range gones {
			if err := st.te.remove(p); err != nil {
				return err
			}
		}
	}
	var total int64
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		src := writes[p]
		var data []byte
		mode := "100644"
		if src.kind == layerfs.KindSymlink {
			target, err := src.layer.Readlink(p)
			if err != nil {
				return err
			}
			data, mode = []byte(target), "120000"
		} else {
			d, fm, err := src.layer.ReadFile(p, st.lim.File)
			if err != nil {
				return err
			}
			data = d
			if fm&0o111 != 0 {
				mode = "100755"
			}
		}
		if total += int64(len(data)); total > st.lim.Total {
			return &layerfs.LimitError{Path: p, What: "bytes", Limit: st.lim.Total}
		}
		sha, err := st.te.bw.writeObject("blob", data)
		if err != nil {
			return err
		}
		if err := st.te.set(p, mode, sha); err != nil {
			return err
		}
	}
	return nil
}

// ignored returns the new paths that the workspace's .gitignore files (as
// they are in the workspace) exclude. check-ignore reads ignore files from
// a work tree, so one is built holding copies of just those files, each
// read through layerfs: a .gitignore that is a symlink or a FIFO is not
// read (git itself does not follow a symlinked .gitignore either).
func (st *stager) ignored(ctx context.Context, writes map[string]source, deleted func(string) bool, newPaths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(newPaths) == 0 {
		return out, nil
	}
	const maxIgnore = 1 << 20
	wt := filepath.Join(st.tmp, "ignores")
	files := map[string][]byte{}
	if len(st.pid1.Ignores) > 0 {
		tree, err := layerfs.Open(st.s.tree(st.pid1.Pid1))
		if err != nil {
			return nil, err
		}
		defer tree.Close()
		for _, p := range st.pid1.Ignores {
			if deleted(p) {
				continue
			}
			if data, _, err := tree.ReadFile(p, maxIgnore); err == nil {
				files[p] = data
			}
		}
	}
	for p, src := range writes {
		if (p == ".gitignore" || strings.HasSuffix(p, "/.gitignore")) && src.kind == layerfs.KindFile {
			if data, _, err := src.layer.ReadFile(p, maxIgnore); err == nil {
				files[p] = data
			} else {
				delete(files, p)
			}
		}
	}
	if err := writeFiles(wt, files); err != nil {
		return nil, err
	}
	ci := st.g
	ci.workTree = wt
	ci.env = nil // check-ignore takes paths, not pathspecs
	for _, e := range st.g.env {
		if !strings.HasPrefix(e, "GIT_LITERAL_PATHSPECS=") {
			ci.env = append(ci.env, e)
		}
	}
	var in bytes.Buffer
	for _, p := range newPaths {
		in.WriteString(p + "\x00")
	}
	res, err := ci.run(ctx, in.Bytes(), "check-ignore", "--no-index", "-z", "--stdin")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return nil, err
	}
	for _, p := range bytes.Split(res, []byte{0}) {
		if len(p) > 0 {
			out[string(p)] = true
		}
	}
	return out, nil
}

// underAny reports whether p or one of its parent folders is in set.
func underAny(p string, set map[string]bool) bool {
	if len(set) == 0 {
		return false
	}
	for ; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if set[p] {
			return true
		}
	}
	return false
}
