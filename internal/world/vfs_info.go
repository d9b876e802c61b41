package world

import (
	"io/fs"
	"time"
)

// fileInfo is what Stat and ReadDir report.
type fileInfo struct {
	name string
	n    *inode
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64 {
	switch i.n.kind {
	case kindFile:
		return int64(len(i.n.data))
	case kindSymlink:
		return int64(len(i.n.target))
	}
	return 4096
}
func (i fileInfo) Mode() fs.FileMode {
	switch i.n.kind {
	case kindDir:
		return i.n.mode | fs.ModeDir
	case kindSymlink:
		return 0o777 | fs.ModeSymlink
	}
	return i.n.mode
}
func (i fileInfo) ModTime() time.Time         { return i.n.mtime }
func (i fileInfo) IsDir() bool                { return i.n.kind == kindDir }
func (i fileInfo) Sys() any                   { return i.n }
func (i fileInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }
