package workspace

import (
	"errors"

	"github.com/forkbomb/forkbomb/internal/home"
)

var (
	// ErrBadName: a name that cannot become a path (home.ValidateID).
	ErrBadName     = home.ErrBadID
	ErrNotFound    = errors.New("no such workspace")
	ErrExists      = errors.New("workspace already exists")
	ErrBadRepo     = errors.New("not a usable repository")
	ErrStateInRepo = errors.New("the state directory is inside the repository")
	ErrInUse       = errors.New("workspace in use")
	ErrHasForks    = errors.New("workspace has forks")
	// ErrNotPid1: an operation that only a pid 1 supports was asked of a
	// fork.
	ErrNotPid1 = errors.New("not a pid 1")
	// ErrPatchRefused: a fork's changes could not be made into a patch
	// safely (a file over the size limit, too many files, a diff past its
	// deadline). The fork ships nothing; the error says why.
	ErrPatchRefused = errors.New("patch refused")
)
