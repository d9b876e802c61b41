package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Tree is a fork's files as the editor sees them: an overlay's layers
// (upper first, writes go to the upper) read as overlayfs would, without
// mounting anything on the host. Layers that are plain trees (a copy fork)
// are a Tree of one layer.
type Tree struct {
	Layers []string // Layers[0] is written
}

var (
	errGit     = errors.New("refused: paths under .git (in any letter case) are not editable")
	errSymlink = errors.New("refused: the path goes through a symlink")
	errLink    = errors.New("refused: the file has other hard links")
	errNoFile  = errors.New("no such file or directory")
)

// clean checks a model-given path and returns it relative to the root.
// root is the path the model sees as the fork's root (its cwd).
func clean(root, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("refused: NUL in path")
	}
	if path.IsAbs(p) {
		rel, ok := strings.CutPrefix(p, root)
		if !ok || (rel != "" && rel[0] != '/') {
			return "", fmt.Errorf("refused: %s is outside the workspace %s", p, root)
		}
		p = strings.TrimPrefix(rel, "/")
		if p == "" {
			p = "."
		}
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", errors.New(`refused: ".." in path`)
		}
		if strings.EqualFold(c, ".git") {
			return "", errGit
		}
	}
	return path.Clean(p), nil
}

// lookup finds rel in the merged view: the layer holding it and its
// lstat, or errNoFile. A symlink on the way is refused.
func (t Tree) lookup(rel string) (int, os.FileInfo, error) {
	parts := strings.Split(rel, "/")
	if rel == "." {
		parts = nil
	}
	for i, layer := range t.Layers {
		p := layer
		opaque := false
		present := true
		for j, c := range parts {
			p = filepath.Join(p, c)
			fi, err := os.Lstat(p)
			if err != nil {
				present = false
				break
			}
			if isWhiteout(fi) {
				return 0, nil, errNoFile
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return 0, nil, errSymlink
			}
			if j < len(parts)-1 && !fi.IsDir() {
				return 0, nil, errNoFile
			}
			if fi.IsDir() && isOpaque(p) && j < len(parts)-1 {
				opaque = true
			}
		}
		if present {
			fi, err := os.Lstat(p)
			if err != nil {
				return 0, nil, err
			}
			return i, fi, nil
		}
		if opaque {
			return 0, nil, errNoFile
		}
	}
	return 0, nil, errNoFile
}

// Read returns a file's content and mode.
func (t Tree) Read(rel string) ([]byte, os.FileMode, error) {
	i, fi, err := t.lookup(rel)
	if err != nil {
		return nil, 0, err
	}
	if fi.IsDir() {
		return nil, 0, fmt.Errorf("%s is a directory", rel)
	}
	root, err := os.OpenRoot(t.Layers[i])
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	return data, fi.Mode().Perm(), err
}

// List returns a directory's merged entries (dirs end in "/").
func (t Tree) List(rel string) ([]string, error) {
	if _, fi, err := t.lookup(rel); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", rel)
	}
	seen := map[string]bool{}
	gone := map[string]bool{}
	var out []string
	for _, layer := range t.Layers {
		dir := filepath.Join(layer, rel)
		entries, err := os.ReadDir(dir)
		if err == nil {
			for _, e := range entries {
				n := e.Name()
				if seen[n] || gone[n] {
					continue
				}
				fi, _ := e.Info()
				if fi != nil && isWhiteout(fi) {
					gone[n] = true
					continue
				}
				seen[n] = true
				if e.IsDir() {
					n += "/"
				}
				out = append(out, n)
			}
		}
		if isOpaque(dir) {
			break
		}
	}
	sort.Strings(out)
	return out, nil
}

// Write replaces or creates a file in the upper layer, making its parent
// folders there as overlayfs would (a folder over a whiteout is opaque).
// An existing upper file with other hard links is refused: writing it
// would change the other names too.
func (t Tree) Write(rel string, data []byte, mode os.FileMode) error {
	if rel == "." {
		return errors.New("cannot write the root")
	}
	// Neither the file nor a folder on its way may be a symlink: a write
	// would replace a link the model could take for its target.
	if _, _, err := t.lookup(rel); err != nil && !errors.Is(err, errNoFile) {
		return err
	}
	upper := t.Layers[0]
	p := upper
	for _, c := range strings.Split(path.Dir(rel), "/") {
		if c == "." {
			continue
		}
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
		case err == nil && isWhiteout(fi):
			if err := os.Remove(p); err != nil {
				return err
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := unix.Lsetxattr(p, "user.overlay.opaque", []byte("y"), 0); err != nil {
				return fmt.Errorf("mark %s opaque: %w", c, err)
			}
		case err == nil:
			return fmt.Errorf("%s is not a directory", c)
		default:
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
		}
	}
	target := filepath.Join(upper, rel)
	if fi, err := os.Lstat(target); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			return errLink
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", rel)
		}
	}
	root, err := os.OpenRoot(upper)
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := rel + ".forkbomb-edit"
	if err := root.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return root.Rename(tmp, rel)
}

func isWhiteout(fi os.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

func isOpaque(dir string) bool {
	buf := make([]byte, 4)
	for _, n := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if k, err := unix.Lgetxattr(dir, n, buf); err == nil && k > 0 && (buf[0] == 'y' || buf[0] == 'x') {
			return true
		}
	}
	return false
}
