package bisect

import "errors"

var (
	// ErrAborted: a test ended in a way that is neither good, bad nor
	// untestable (status 128 and up, a timeout, a limit), as `git bisect
	// run` aborts on it.
	ErrAborted = errors.New("bisect aborted")
	// ErrApply: a commit's diff did not apply to the snapshot's fork.
	ErrApply = errors.New("the commit's diff does not apply to the snapshot")
	// ErrEmptyRange: good and bad are the same commit.
	ErrEmptyRange = errors.New("no commit between good and bad")
)
