package event

import "errors"

var (
	// ErrClosed: an event was emitted after the sink was closed.
	ErrClosed = errors.New("event sink closed")
	// ErrSubscriber marks the error of a subscriber other than the
	// primary one; it was detached and got no later event.
	ErrSubscriber = errors.New("event subscriber failed")
)
