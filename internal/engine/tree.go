package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/forkbomb/forkbomb/internal/layerfs"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// The editor's view of a fork's files (workspace.Files): a model-given
// path is checked here before any implementation sees it, and what an
// implementation refuses is worded here for the model.

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

// isDir reports whether rel is a folder of the fork's files.
func isDir(ctx context.Context, f workspace.Files, rel string) bool {
	mode, err := f.Stat(ctx, rel)
	return err == nil && mode.IsDir()
}

// read returns a file's content and permissions: a regular file of at most
// MaxEditFile bytes, reached without following a link.
func read(ctx context.Context, f workspace.Files, rel string) ([]byte, os.FileMode, error) {
	data, mode, err := f.Read(ctx, rel, MaxEditFile)
	if err != nil {
		return nil, 0, refusal(rel, err)
	}
	return data, mode.Perm(), nil
}

// list returns a folder's names (folders end in "/").
func list(ctx context.Context, f workspace.Files, rel string) ([]string, error) {
	names, err := f.List(ctx, rel, 100_000)
	if err != nil {
		return nil, refusal(rel, err)
	}
	return names, nil
}

// write replaces or creates a file (workspace.Files.Write says how safely).
func write(ctx context.Context, f workspace.Files, rel string, data []byte, mode os.FileMode) error {
	if err := f.Write(ctx, rel, data, mode); err != nil {
		return refusal(rel, err)
	}
	return nil
}
