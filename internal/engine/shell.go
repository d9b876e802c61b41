package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// shell is the api engine's shell tool for one agent: the model's
// commands, one at a time, in the fork's sandbox. Where the workspace
// offers sessions (Sessions) the sandbox is kept from one command to the
// next and each command is forked inside it — the same confinement, its
// own timeout and output cap, and nothing of it outliving it — so a
// command costs a fork, not a sandbox start. An editor write through
// track ends the session: the session's overlay would not reliably show
// a change made to its layers from outside, so the next command gets a
// sandbox built over the files as they are.
type shell struct {
	w Workspace
	t Task

	mu      sync.Mutex
	sess    Session
	noSess  bool        // the workspace cannot keep one: Exec each command
	written atomic.Bool // the editor wrote since the session started
}

// run runs one of the model's commands in the fork and words what
// happened for the model. Each command gets the fork's limits; the
// commands run one at a time and nothing of one outlives it, so they
// bound the fork's agent at every moment.
func (s *shell) run(ctx context.Context, command string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out bytes.Buffer
	p := sandbox.Policy{
		Command: []string{"/bin/sh", "-c", command}, Timeout: shellTimeout,
		MaxOutput: shellMaxOutput, Toolchains: true,
	}
	s.t.Confine(&p)
	stdio := sandbox.Stdio{Stdout: &out, Stderr: &out}
	var res *sandbox.Result
	var err error
	if sess := s.session(ctx, p); sess != nil {
		res, err = sess.Run(ctx, sandbox.Cmd{Argv: p.Command, Timeout: p.Timeout, MaxOutput: p.MaxOutput}, stdio)
		if errors.Is(err, sandbox.ErrSessionClosed) {
			// Its init died (a limit killed it): the next command gets a
			// new one; this one's result, if any, stands.
			s.drop()
			if res != nil {
				err = nil
			}
		}
	} else {
		res, err = s.w.Exec(ctx, p, stdio)
	}
	switch {
	case err != nil:
		return fmt.Sprintf("%s\n(could not run: %v)", out.String(), err)
	case res.TimedOut:
		return out.String() + "\n(timed out; every process of the command was killed)"
	case res.Limit == "output":
		return out.String() + "\n(output over 64 KiB; the command was killed)"
	case res.Limit != "":
		why := sandbox.LimitReason(res, p)
		s.t.Emit(event.LimitData{Reason: why, Command: command})
		return out.String() + "\n(" + why + "; every process of the command was killed)"
	}
	return fmt.Sprintf("%s\n(exit %d)", out.String(), res.ExitCode)
}

// session is the fork's session, started (again, after an editor write)
// when needed; nil where the workspace has none to give, and then Exec
// serves the command.
func (s *shell) session(ctx context.Context, p sandbox.Policy) Session {
	if s.written.Swap(false) {
		s.drop()
	}
	if s.sess != nil || s.noSess {
		return s.sess
	}
	ws, ok := s.w.(Sessions)
	if !ok {
		s.noSess = true
		return nil
	}
	sess, err := ws.Session(ctx, p)
	if err != nil {
		// Exec tells the model why, if the sandbox itself is the cause;
		// a workspace that cannot keep a session is not asked again.
		s.noSess = errors.Is(err, sandbox.ErrSessionUnsupported)
		return nil
	}
	s.sess = sess
	return sess
}

func (s *shell) drop() {
	if s.sess != nil {
		_ = s.sess.Close()
		s.sess = nil
	}
}

// close ends the session: nothing of the agent's commands outlives Run.
func (s *shell) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop()
}

// track wraps the editor's files so a write ends the session.
func (s *shell) track(f workspace.Files) workspace.Files {
	if f == nil {
		return nil
	}
	return trackedFiles{Files: f, written: &s.written}
}

type trackedFiles struct {
	workspace.Files
	written *atomic.Bool
}

func (f trackedFiles) Write(ctx context.Context, rel string, data []byte, mode fs.FileMode) error {
	// Set before and after: a command started while the write is under
	// way must not keep the old view either.
	f.written.Store(true)
	defer f.written.Store(true)
	return f.Files.Write(ctx, rel, data, mode)
}
