package workspace

import (
	"context"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// Files are a workspace's files as a tool in forkbomb's own process (the
// api engine's editor) reads and writes them, by slash-separated paths
// relative to the workspace's root. The caller has already refused ".."
// and .git; an implementation refuses the rest of what it cannot do
// safely.
//
// On disk (LayerFiles) that is an overlay's layers read as the kernel
// would; a world keeps them in memory. Errors an implementation returns
// for the editor to word: fs.ErrNotExist (no such name),
// layerfs.ErrSymlink (the path goes through a link), *layerfs.LimitError
// (over max), layerfs.ErrNotRegular (not a plain file, or one with other
// hard links: a *layerfs.KindError says which). Every call takes the
// caller's context: a backend whose files live elsewhere (a pod) waits on
// the network, and the caller's cancellation stops it.
type Files interface {
	// Stat returns the type bits and permissions of rel, without
	// following a link.
	Stat(ctx context.Context, rel string) (fs.FileMode, error)
	// Read returns a regular file's content, if it is at most max bytes,
	// and its permissions.
	Read(ctx context.Context, rel string, max int64) ([]byte, fs.FileMode, error)
	// List returns the names in a directory (folders end in "/"), at
	// most max of them.
	List(ctx context.Context, rel string, max int) ([]string, error)
	// Write replaces or creates a file, making its parent folders; it
	// never writes through whatever is at the name.
	Write(ctx context.Context, rel string, data []byte, mode fs.FileMode) error
}

// LayerFiles are the files of an overlay's layers (upper first, writes
// go to the upper) read as overlayfs would, without mounting anything on
// the host: internal/layerfs holds those semantics (whiteouts in both
// forms, opaque folders) and resolves every name without following a link.
// A copy fork is a LayerFiles of one layer. Its calls wait on nothing but
// the local disk, so they ignore their context.
type LayerFiles struct {
	Layers []string // Layers[0] is written
}

var _ Files = LayerFiles{}

// open opens the layers for one call: descriptors are held only while the
// call runs.
func (t LayerFiles) open() (*layerfs.Layers, error) { return layerfs.OpenLayers(t.Layers) }

// Stat implements Files.
func (t LayerFiles) Stat(_ context.Context, rel string) (fs.FileMode, error) {
	l, err := t.open()
	if err != nil {
		return 0, err
	}
	defer l.Close()
	_, st, err := l.Lookup(rel)
	if err != nil {
		return 0, err
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	return mode, nil
}

// Read implements Files: only a regular file is read, and no link is
// followed on the way.
func (t LayerFiles) Read(_ context.Context, rel string, max int64) ([]byte, fs.FileMode, error) {
	l, err := t.open()
	if err != nil {
		return nil, 0, err
	}
	defer l.Close()
	data, mode, err := l.ReadFile(rel, max)
	if err != nil {
		return nil, 0, err
	}
	return data, mode.Perm(), nil
}

// List implements Files: the merged entries of every layer.
func (t LayerFiles) List(_ context.Context, rel string, max int) ([]string, error) {
	l, err := t.open()
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.List(rel, max)
}

// Write implements Files in the upper layer, making its parent folders
// there as overlayfs would (a folder over a whiteout is opaque). The new
// content goes to a fresh file renamed into place, so nothing at the name
// — a link, a FIFO, a hard link — is written through; an existing upper
// file with other hard links is refused all the same, as the model would
// expect the other names to change.
func (t LayerFiles) Write(_ context.Context, rel string, data []byte, mode fs.FileMode) error {
	l, err := t.open()
	if err != nil {
		return err
	}
	defer l.Close()
	return l.WriteFile(rel, data, mode)
}
