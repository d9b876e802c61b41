package run

import "errors"

var (
	// ErrNoEngine: a race was started without an engine (engine.New
	// makes one from its name).
	ErrNoEngine = errors.New("a race needs an engine")
	// ErrMinStrength: MinStrength is outside 0..1, or set with the
	// verifier off.
	ErrMinStrength = errors.New("--min-strength takes a share from 0 to 1 and needs the verifier (--verify auto or N)")
	// ErrRecord: the run's record could not be written. The race stops
	// at the first such error — every fork killed, the run's status
	// "failed" — rather than go on with a record that has a hole in it.
	ErrRecord = errors.New("the run's record could not be written; the race was stopped")
)
