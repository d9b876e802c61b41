package world

import "errors"

var (
	// ErrFormat is a world file that is not one this version can read, or that is malformed.
	ErrFormat = errors.New("not a valid world file")
	// ErrLimit is an exec or a world that went past one of its limits.
	ErrLimit = errors.New("world limit exceeded")
	// ErrOutside is a path outside the persisted workspace where writes are refused.
	ErrOutside = errors.New("read-only outside /work and /tmp")
	// ErrUnsafeImport is a directory that cannot be imported as it is (a link out of it, a device).
	ErrUnsafeImport = errors.New("cannot import")
	// ErrPatch is a patch that does not apply to a world (ApplyPatch).
	ErrPatch = errors.New("the patch does not apply")
)
