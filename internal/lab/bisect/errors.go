package bisect

import "errors"

var (
	// ErrAborted: a test ended in a way that is neither good, bad nor
	// untestable (status 128 and up, a timeout, a limit), as `git bisect
	// run` aborts on it.
	ErrAborted = errors.New("bisect aborted")
	// ErrTree: a commit's tree could not be made in a fork of the
	// snapshot.
	ErrTree = errors.New("the commit's tree could not be made in a fork of the snapshot")
	// ErrEmptyRange: good and bad are the same commit.
	ErrEmptyRange = errors.New("no commit between good and bad")
)
