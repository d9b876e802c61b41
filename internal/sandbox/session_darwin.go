package sandbox

import (
	"context"
	"fmt"
)

// session has nothing to hold on macOS.
type session struct{}

// Start: the seatbelt backend keeps no sandbox for many commands — its
// init ends every process of the sandbox when its one command ends — so
// a caller runs each command with Run (the api engine does, on this
// error).
func Start(ctx context.Context, p Policy) (*Session, error) {
	if p.NoSandbox {
		return nil, fmt.Errorf("%w: --no-sandbox", ErrSessionUnsupported)
	}
	return nil, fmt.Errorf("%w: the seatbelt backend runs each command in a sandbox of its own", ErrSessionUnsupported)
}

// Mode is never reached: Start returns no session here.
func (s *Session) Mode() Mode { return ModeNone }

// Run is never reached: Start returns no session here.
func (s *Session) Run(ctx context.Context, c Cmd, stdio Stdio) (*Result, error) {
	return nil, ErrSessionClosed
}

// Close has nothing to close.
func (s *Session) Close() error { return nil }
