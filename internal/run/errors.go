package run

import "errors"

var (
	// ErrNoEngine: a race was started without an engine (engine.New
	// makes one from its name).
	ErrNoEngine = errors.New("a race needs an engine")
	// ErrRecord: the run's record could not be written. The race stops
	// at the first such error — every fork killed, the run's status
	// "failed" — rather than go on with a record that has a hole in it.
	ErrRecord = errors.New("the run's record could not be written; the race was stopped")
)
