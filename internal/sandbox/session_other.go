//go:build !linux && !darwin

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// session has nothing to hold where there is no backend.
type session struct{}

// Start refuses, as Run does, where no backend exists.
func Start(ctx context.Context, p Policy) (*Session, error) {
	if p.NoSandbox {
		return nil, fmt.Errorf("%w: --no-sandbox", ErrSessionUnsupported)
	}
	return nil, fmt.Errorf("%w (%s): refusing to run unconfined; --no-sandbox accepts that", ErrUnsupported, runtime.GOOS)
}

// Mode is never reached: Start returns no session here.
func (s *Session) Mode() Mode { return ModeNone }

// Run is never reached: Start returns no session here.
func (s *Session) Run(ctx context.Context, c Cmd, stdio Stdio) (*Result, error) {
	return nil, ErrSessionClosed
}

// Close has nothing to close.
func (s *Session) Close() error { return nil }
