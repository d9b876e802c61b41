package engine

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/layerfs"
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

// MaxEditFile is the largest file the editor reads: a view of a sparse
// terabyte must not take forkbomb (and every fork) down with it.
const MaxEditFile = 8 << 20

// open opens the layers for one call: descriptors are held only while the
// call runs.
func (t Tree) open() (*layerfs.Layers, error) { return layerfs.OpenLayers(t.Layers) }

// refusal words a layerfs error for the model.
func refusal(rel string, err error) error {
	var le *layerfs.LimitError
	switch {
	case errors.Is(err, layerfs.ErrSymlink):
		return errSymlink
	case errors.As(err, &le):
		return fmt.Errorf("refused: %s is %s, over the editor's limit of %s; read parts of it with the shell (head, sed -n)",
			rel, layerfs.HumanBytes(le.Size), layerfs.HumanBytes(le.Limit))
	case errors.Is(err, layerfs.ErrNotRegular):
		var ke *layerfs.KindError
		if errors.As(err, &ke) && strings.Contains(ke.Kind, "hard link") {
			return errLink
		}
		return fmt.Errorf("refused: %s is not a regular file", rel)
	case errors.Is(err, os.ErrNotExist):
		return errNoFile
	}
	return err
}

// isDir reports whether rel is a folder of the merged view.
func (t Tree) isDir(rel string) bool {
	l, err := t.open()
	if err != nil {
		return false
	}
	defer l.Close()
	_, st, err := l.Lookup(rel)
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// Read returns a file's content and mode. Only a regular file of at most
// MaxEditFile bytes is read, and no link is followed on the way.
func (t Tree) Read(rel string) ([]byte, os.FileMode, error) {
	l, err := t.open()
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()
	data, mode, err := l.ReadFile(rel, MaxEditFile)
	if err != nil {
		return nil, 0, refusal(rel, err)
	}
	return data, mode.Perm(), nil
}

// List returns a directory's merged entries (dirs end in "/").
func (t Tree) List(rel string) ([]string, error) {
	l, err := t.open()
	if err != nil {
		return nil, err
	}
	defer l.Close()
	names, err := l.List(rel, 100_000)
	if err != nil {
		return nil, refusal(rel, err)
	}
	return names, nil
}

// Write replaces or creates a file in the upper layer, making its parent
// folders there as overlayfs would (a folder over a whiteout is opaque).
// The new content goes to a fresh file renamed into place, so nothing at
// the name — a link, a FIFO, a hard link — is written through; an existing
// upper file with other hard links is refused all the same, as the model
// would expect the other names to change.
func (t Tree) Write(rel string, data []byte, mode os.FileMode) error {
	l, err := t.open()
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.WriteFile(rel, data, mode); err != nil {
		return refusal(rel, err)
	}
	return nil
}
