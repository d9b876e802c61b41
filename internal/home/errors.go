package home

import "errors"

var (
	// ErrBadID: an id that becomes a path is empty, too long, or holds a
	// character outside [A-Za-z0-9_-] (a '/', a '.', a NUL...).
	ErrBadID = errors.New("invalid id")
	// ErrNoHome: neither $FORKBOMB_HOME nor the user's home directory is
	// known, so there is nowhere to keep state.
	ErrNoHome = errors.New("no state directory")
	// ErrInRepo: a state folder (the home, the runs dir) lies inside the
	// repository it is about, where a fork, a commit or `git clean` would
	// reach it.
	ErrInRepo = errors.New("state directory inside the repository")
)
