package sandbox

import (
	"errors"
	"time"
)

// A Session is one sandbox kept for many commands: Start builds it (the
// init, its namespaces, mounts, overlay, limits) once, and each Run starts
// one command inside it, confined exactly as sandbox.Run confines its
// command — same Landlock and seccomp, applied on the same thread of the
// init before the fork — at the cost of a fork and exec instead of a
// sandbox start. Every per-command guarantee of Run holds per Run: its
// timeout, its output cap, its own session and process group, and nothing
// it started outlives it. Resource limits (memory, pids, CPU) are the
// session's, shared by its commands over time.
//
// A session runs one command at a time (Run waits for the one before):
// between two commands the init is the sandbox's only process, which is
// what lets it kill everything a command left however it hid. It is safe
// for concurrent use. Close ends it.
type Session struct {
	s *session // the platform's
}

// Cmd is one command of a session.
type Cmd struct {
	Argv      []string      // Argv[0] is looked up in the sandbox's PATH
	Timeout   time.Duration // 0: none but ctx's
	MaxOutput int64         // cap on stdout+stderr bytes; 0: none
}

// ErrSessionClosed means the session was closed, or ended on its own (its
// init died: the memory limit, say); nothing runs in it any more.
var ErrSessionClosed = errors.New("sandbox session closed")

// ErrSessionUnsupported means a policy cannot be served by a session
// (--no-sandbox has no init to keep).
var ErrSessionUnsupported = errors.New("no sandbox session for this policy")
