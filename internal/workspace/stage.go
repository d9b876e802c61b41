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
	s    *Store
	g    gitCmd
	base string
	pid1 *Meta
	tmp  string
	lim  DiffLimits
	d    *Diff
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

	// Deletions: base files under a gone path, not written again; and base
	// files standing where a written path needs a folder.
	var deletes []string
	needDir := map[string]bool{} // every folder a written path needs
	for w := range writes {
		for dir := path.Dir(w); dir != "."; dir = path.Dir(dir) {
			needDir[dir] = true
		}
	}
	if len(gone) > 0 || len(writes) > 0 || full {
		var specs []string
		if !full {
			for p := range gone {
				specs = append(specs, p)
			}
			for p := range needDir {
				specs = append(specs, p)
			}
			sort.Strings(specs)
		}
		inBase, err := lsTree(ctx, st.g, st.base, specs, full)
		if err != nil {
			return err
		}
		for p := range inBase {
			if _, ok := writes[p]; ok {
				continue
			}
			if full || underAny(p, gone) || needDir[p] {
				deletes = append(deletes, p)
			}
		}
	}

	// New files that .gitignore excludes are not part of the patch.
	paths := make([]string, 0, len(writes))
	for w := range writes {
		paths = append(paths, w)
	}
	sort.Strings(paths)
	if len(paths) > 0 {
		inBase, err := lsTree(ctx, st.g, st.base, paths, false)
		if err != nil {
			return err
		}
		var newPaths []string
		for _, w := range paths {
			if !inBase[w] {
				newPaths = append(newPaths, w)
			}
		}
		ignored, err := st.ignored(ctx, writes, deletes, newPaths)
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

	// Write the blobs, then update the index: deletions first, so a file
	// can become a folder.
	var info bytes.Buffer
	zero := strings.Repeat("0", len(st.base))
	sort.Strings(deletes)
	for _, p := range deletes {
		fmt.Fprintf(&info, "0 %s\t%s\x00", zero, p)
	}
	bw := blobWriter{dir: filepath.Join(st.tmp, "objects"), sha256: len(st.base) == 64}
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
			var perm = uint32(0)
			d, fm, err := src.layer.ReadFile(p, st.lim.File)
			if err != nil {
				return err
			}
			data, perm = d, uint32(fm)
			if perm&0o111 != 0 {
				mode = "100755"
			}
		}
		if total += int64(len(data)); total > st.lim.Total {
			return &layerfs.LimitError{Path: p, What: "bytes", Limit: st.lim.Total}
		}
		sha, err := bw.write(data)
		if err != nil {
			return err
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", mode, sha, p)
	}
	if info.Len() > 0 {
		if _, err := st.g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
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
func (st *stager) ignored(ctx context.Context, writes map[string]source, deletes, newPaths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(newPaths) == 0 {
		return out, nil
	}
	const maxIgnore = 1 << 20
	wt := filepath.Join(st.tmp, "ignores")
	deleted := map[string]bool{}
	for _, p := range deletes {
		deleted[p] = true
	}
	files := map[string][]byte{}
	if len(st.pid1.Ignores) > 0 {
		tree, err := layerfs.Open(st.s.tree(st.pid1.Pid1))
		if err != nil {
			return nil, err
		}
		defer tree.Close()
		for _, p := range st.pid1.Ignores {
			if deleted[p] {
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
