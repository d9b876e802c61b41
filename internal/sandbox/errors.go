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
	// ErrProxyNeedsNetns means a policy asked for NetworkProxy where the
	// backend has no network namespace of its own to confine it in (the
	// landlock backend): forkbomb refuses rather than open the host's
	// loopback.
	ErrProxyNeedsNetns = errors.New("a proxy network needs a network namespace")
	// ErrNotPlaceholder means a Policy.Placeholders value is not one
	// forkbomb generated (NewPlaceholder), or is a credential forkbomb
	// holds: real credentials never enter a sandbox.
	ErrNotPlaceholder = errors.New("not a forkbomb placeholder credential")
)
