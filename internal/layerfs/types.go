package layerfs

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// Kind is what an entry of an overlay layer means.
type Kind int

const (
	KindOther    Kind = iota // a FIFO, socket or device: never part of a tree
	KindFile                 // a regular file
	KindDir                  // a directory
	KindSymlink              // a symbolic link (read with Readlink, never followed)
	KindWhiteout             // overlayfs's mark that the name is deleted
)

// Overlay metadata. forkbomb mounts with userxattr (user.overlay.*); the
// trusted.* names are those of a mount made with real privilege.
var (
	whiteoutXattrs = []string{"user.overlay.whiteout", "trusted.overlay.whiteout"}
	opaqueXattrs   = []string{"user.overlay.opaque", "trusted.overlay.opaque"}
)

// OpaqueXattr is the attribute forkbomb sets to make a folder opaque.
const OpaqueXattr = "user.overlay.opaque"

// WalkLimits bound a walk of a tree a fork made.
type WalkLimits struct {
	Depth   int // folders deep; default 256
	Entries int // names in all; default 1,000,000
}

// WalkEntry is one name found by Walk.
type WalkEntry struct {
	Rel    string // slash-separated, relative to the walked directory
	Kind   Kind
	Stat   unix.Stat_t
	Opaque bool // a directory that hides lower layers
}

// SkipDir, returned by a Walk callback for a directory, skips its contents.
// It is fs.SkipDir, so the idiom of filepath.WalkDir carries over.
var SkipDir = fs.SkipDir

// Entry is one name in a directory, with its own status (never a link's
// target's).
type Entry struct {
	Name string
	Stat unix.Stat_t
}
