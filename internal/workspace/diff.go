package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

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

// Diff computes a workspace's patch, and with stat its summary.
func (s *Store) Diff(ctx context.Context, name string, stat bool) (*Diff, error) {
	m, err := s.Get(name)
	if err != nil {
		return nil, err
	}
	release, err := s.useLock(name, false)
	if err != nil {
		return nil, err
	}
	defer release()
	tmp, err := sandbox.MkdirTemp("diff")
	if err != nil {
		return nil, err
	}
	defer removeTree(tmp)
	gitDir := filepath.Join(s.tree(m.Pid1), ".git")
	// Objects go to a scratch store on top of pid 1's, so a diff never
	// changes a pid 1 that other forks are reading.
	g := gitCmd{gitDir: gitDir, env: []string{
		"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"),
		"GIT_OBJECT_DIRECTORY=" + filepath.Join(tmp, "objects"),
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(gitDir, "objects"),
		"GIT_LITERAL_PATHSPECS=1",
	}}
	if err := os.MkdirAll(filepath.Join(tmp, "objects", "pack"), 0o700); err != nil {
		return nil, err
	}
	if _, err := g.run(ctx, nil, "read-tree", m.Base); err != nil {
		return nil, err
	}
	pid1, err := s.Get(m.Pid1)
	if err != nil {
		return nil, err
	}
	d := &Diff{}
	switch m.Method {
	case MethodSnapshot:
	case MethodOverlay:
		layers := []string{}
		for i := len(m.Layers) - 2; i >= 0; i-- { // frozen layers, oldest first
			layers = append(layers, m.Layers[i])
		}
		layers = append(layers, filepath.Join(s.dir(name), "upper"))
		if err := s.stage(ctx, g, m.Base, pid1, layers, false, tmp, d); err != nil {
			return nil, err
		}
	default:
		// A copy holds the whole tree: every file is written, every base
		// file it lacks is deleted. O(tree), but only where overlayfs is
		// unavailable.
		if err := s.stage(ctx, g, m.Base, pid1, []string{s.tree(name)}, true, tmp, d); err != nil {
			return nil, err
		}
	}
	tree, err := g.text(ctx, "write-tree")
	if err != nil {
		return nil, err
	}
	args := []string{"--no-ext-diff", "--no-textconv", "--no-color", "-M", m.Base, tree}
	if d.Patch, err = g.run(ctx, nil, append([]string{"diff-tree", "-p", "--binary", "--full-index"}, args...)...); err != nil {
		return nil, err
	}
	if stat {
		out, err := g.run(ctx, nil, append([]string{"diff-tree", "--stat", "--summary"}, args...)...)
		if err != nil {
			return nil, err
		}
		d.Stat = string(out)
	}
	return d, nil
}

// stage stages into g's index the changes recorded in overlay upper layers
// (oldest first): files present in a layer are written, whiteouts delete,
// opaque directories replace what was below them. It reads only the
// layers, so its cost follows the size of the change, not of the tree.
// With full, the one layer is a whole tree, and base files it lacks are
// deleted.
func (s *Store) stage(ctx context.Context, g gitCmd, base string, pid1 *Meta, layers []string, full bool, tmp string, d *Diff) error {
	writes := map[string]string{} // path → file in a layer
	var gone []string             // paths whose base entries (and below) are gone unless rewritten
	for _, layer := range layers {
		err := filepath.WalkDir(layer, func(p string, e os.DirEntry, err error) error {
			if err != nil || p == layer {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(p, layer+"/"))
			if full && rel == ".git" {
				return filepath.SkipDir // the copy's own repository
			}
			if isGitPath(rel) {
				d.Excluded = append(d.Excluded, rel)
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			switch {
			case isWhiteout(p, fi):
				dropUnder(writes, rel)
				gone = append(gone, rel)
			case fi.IsDir():
				delete(writes, rel) // a folder where a lower layer had a file
				if isOpaque(p) {
					dropUnder(writes, rel+"/")
					gone = append(gone, rel)
				}
			case fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0:
				dropUnder(writes, rel+"/") // a file where a lower layer had a folder
				writes[rel] = p
				gone = append(gone, rel) // a file where the base had a folder
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
	}

	// Deletions: base files under a gone path, not written again; and base
	// files standing where a written path needs a folder.
	var deletes []string
	if full {
		gone = []string{""}
	}
	if len(gone) > 0 || len(writes) > 0 {
		specs := append([]string{}, gone...)
		if full {
			specs = nil // every base file
		}
		for w := range writes {
			for dir := filepath.Dir(w); dir != "."; dir = filepath.Dir(dir) {
				specs = append(specs, dir)
			}
		}
		inBase, err := lsTree(ctx, g, base, specs, full)
		if err != nil {
			return err
		}
		for path := range inBase {
			if _, ok := writes[path]; ok {
				continue
			}
			if coveredBy(path, gone) || isAncestorOfAny(path, writes) {
				deletes = append(deletes, path)
			}
		}
	}

	// New files that .gitignore excludes are not part of the patch.
	var newPaths []string
	if len(writes) > 0 {
		paths := make([]string, 0, len(writes))
		for w := range writes {
			paths = append(paths, w)
		}
		inBase, err := lsTree(ctx, g, base, paths, false)
		if err != nil {
			return err
		}
		for _, w := range paths {
			if !inBase[w] {
				newPaths = append(newPaths, w)
			}
		}
		ignored, err := s.ignored(ctx, g, pid1, writes, deletes, newPaths, tmp)
		if err != nil {
			return err
		}
		for w := range ignored {
			delete(writes, w)
		}
	}

	// Hash the written files into the scratch object store, then update
	// the index: deletions first, so a file can become a folder.
	var info bytes.Buffer
	zero := strings.Repeat("0", len(base))
	sort.Strings(deletes)
	for _, p := range deletes {
		fmt.Fprintf(&info, "0 %s\t%s\x00", zero, p)
	}
	paths := make([]string, 0, len(writes))
	for w := range writes {
		paths = append(paths, w)
	}
	sort.Strings(paths)
	if len(paths) > 0 {
		var list bytes.Buffer
		modes := make([]string, len(paths))
		for i, p := range paths {
			src := writes[p]
			fi, err := os.Lstat(src)
			if err != nil {
				return err
			}
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				modes[i] = "120000"
				target, err := os.Readlink(src)
				if err != nil {
					return err
				}
				src = filepath.Join(tmp, fmt.Sprintf("blob-%d", i))
				if err := os.WriteFile(src, []byte(target), 0o600); err != nil {
					return err
				}
			case fi.Mode()&0o111 != 0:
				modes[i] = "100755"
			default:
				modes[i] = "100644"
			}
			if strings.ContainsAny(src, "\n") {
				data, err := os.ReadFile(src)
				if err != nil {
					return err
				}
				src = filepath.Join(tmp, fmt.Sprintf("blob-%d", i))
				if err := os.WriteFile(src, data, 0o600); err != nil {
					return err
				}
			}
			list.WriteString(src + "\n")
		}
		out, err := g.run(ctx, list.Bytes(), "hash-object", "-w", "--no-filters", "--stdin-paths")
		if err != nil {
			return err
		}
		shas := strings.Fields(string(out))
		if len(shas) != len(paths) {
			return fmt.Errorf("hash-object: %d hashes for %d files", len(shas), len(paths))
		}
		for i, p := range paths {
			fmt.Fprintf(&info, "%s %s\t%s\x00", modes[i], shas[i], p)
		}
	}
	if info.Len() > 0 {
		if _, err := g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
			return err
		}
	}
	return nil
}

// ignored returns the new paths that the workspace's .gitignore files
// (as they are in the workspace) exclude. check-ignore reads ignore files
// from a work tree, so one is built holding just those files.
func (s *Store) ignored(ctx context.Context, g gitCmd, m *Meta, writes map[string]string, deletes, newPaths []string, tmp string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(newPaths) == 0 {
		return out, nil
	}
	wt := filepath.Join(tmp, "ignores")
	deleted := map[string]bool{}
	for _, p := range deletes {
		deleted[p] = true
	}
	files := map[string]string{}
	for _, p := range m.Ignores {
		if !deleted[p] {
			files[p] = filepath.Join(s.tree(m.Pid1), p)
		}
	}
	for p, src := range writes {
		if p == ".gitignore" || strings.HasSuffix(p, "/.gitignore") {
			files[p] = src
		}
	}
	for p, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			continue
		}
		dst := filepath.Join(wt, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return nil, err
		}
	}
	os.MkdirAll(wt, 0o700)
	ci := g
	ci.workTree = wt
	ci.env = nil // check-ignore takes paths, not pathspecs
	for _, e := range g.env {
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

// lsTree reports which of paths (and what lies below them) exist in rev;
// with all, every file of rev.
func lsTree(ctx context.Context, g gitCmd, rev string, paths []string, all bool) (map[string]bool, error) {
	found := map[string]bool{}
	if all {
		paths = []string{"."}
	}
	for start := 0; start < len(paths); start += 2000 {
		end := min(start+2000, len(paths))
		out, err := g.run(ctx, nil, append([]string{"ls-tree", "-r", "-z", "--name-only", rev, "--"}, paths[start:end]...)...)
		if err != nil {
			return nil, err
		}
		for _, p := range bytes.Split(out, []byte{0}) {
			if len(p) > 0 {
				found[string(p)] = true
			}
		}
	}
	return found, nil
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

func isWhiteout(p string, fi os.FileInfo) bool {
	if fi.Mode()&os.ModeCharDevice != 0 {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return ok && st.Rdev == 0
	}
	if fi.Mode().IsRegular() && fi.Size() == 0 {
		_, err := unix.Lgetxattr(p, "user.overlay.whiteout", nil)
		return err == nil
	}
	return false
}

func isOpaque(dir string) bool {
	for _, name := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		buf := make([]byte, 8)
		if n, err := unix.Lgetxattr(dir, name, buf); err == nil && n > 0 && (buf[0] == 'y' || buf[0] == 'x') {
			return true
		}
	}
	return false
}

func dropUnder(m map[string]string, prefix string) {
	for k := range m {
		if k == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(k, strings.TrimSuffix(prefix, "/")+"/") {
			delete(m, k)
		}
	}
}

func coveredBy(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if p == "" || path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func isAncestorOfAny(path string, writes map[string]string) bool {
	for w := range writes {
		if strings.HasPrefix(w, path+"/") {
			return true
		}
	}
	return false
}
