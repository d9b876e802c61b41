package layerfs

import (
	"errors"
	"fmt"
	"io/fs"
)

var (
	// ErrSymlink: a path goes through, or names, a symbolic link.
	ErrSymlink = errors.New("the path goes through a symlink")
	// ErrNotRegular: the file is not a regular file (a FIFO, a socket, a device).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: a file or a walk is over its limit.
	ErrTooLarge = errors.New("over the size limit")
	// ErrNotExist is fs.ErrNotExist, for errors.Is.
	ErrNotExist = fs.ErrNotExist
	// ErrUnsupported: this platform has no safe way to read a fork's files.
	ErrUnsupported = errors.New("reading fork files safely is supported on Linux and macOS only")
)

// LimitError says which limit a path went over.
type LimitError struct {
	Path  string
	What  string // "file", "files", "bytes", "depth"
	Size  int64
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "file":
		return fmt.Sprintf("%q is %s, over the limit of %s", e.Path, HumanBytes(e.Size), HumanBytes(e.Limit))
	case "bytes":
		return fmt.Sprintf("the changed files hold more than %s (at %q)", HumanBytes(e.Limit), e.Path)
	case "depth":
		return fmt.Sprintf("%q is nested deeper than %d folders", e.Path, e.Limit)
	}
	return fmt.Sprintf("more than %d %s (at %q)", e.Limit, e.What, e.Path)
}

func (e *LimitError) Unwrap() error { return ErrTooLarge }

// KindError says a path is not of the kind an operation needs.
type KindError struct {
	Path string
	Kind string // "symlink", "fifo", "socket", "device", "directory", …
	Err  error  // ErrSymlink or ErrNotRegular
}

func (e *KindError) Error() string { return fmt.Sprintf("%q is a %s: %v", e.Path, e.Kind, e.Err) }
func (e *KindError) Unwrap() error { return e.Err }

// HumanBytes prints a byte count the way a person reads it.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
