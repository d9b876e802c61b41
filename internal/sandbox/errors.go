package sandbox

import "errors"

var (
	// ErrInvalidPolicy means the policy itself is wrong (a missing workdir,
	// a path that would expose credentials, an unknown option).
	ErrInvalidPolicy = errors.New("invalid sandbox policy")
	// ErrSetup means the sandbox could not be built on this machine; the
	// command did not run.
	ErrSetup = errors.New("sandbox set-up failed")
	// ErrUnsupported means no confining backend exists on this platform.
	ErrUnsupported = errors.New("no sandbox backend on this platform")
	// ErrCommandNotFound and ErrCommandNotExecutable mean the sandbox was
	// built but the command could not be started inside it.
	ErrCommandNotFound      = errors.New("command not found")
	ErrCommandNotExecutable = errors.New("command not executable")
)
