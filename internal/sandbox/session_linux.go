package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// sessionKillGrace is how long the init has to report a killed command's
// end before the whole session is torn down instead.
const sessionKillGrace = 30 * time.Second

// session is the Linux side of a Session: the init (see the protocol in
// session_init_linux.go) and what the parent keeps for it.
type session struct {
	mu     sync.Mutex // one Run at a time; guards the fields below
	r      *resolved
	p      *initProc
	ctrl   *os.File // the parent's end of the control socket
	msgs   chan sessionMsg
	closed bool
	done   chan struct{}  // closed by teardown: stops the reader
	wait   sync.WaitGroup // the reader of ctrl
}

// Start builds a sandbox for p and keeps it for Session.Run. p.Command,
// p.Timeout and p.MaxOutput are per command (Cmd) and ignored here; the
// rest of p confines every command of the session. In ModeAuto a session
// falls back to the landlock backend where namespaces are refused, as Run
// does; both backends serve sessions.
func Start(ctx context.Context, p Policy) (*Session, error) {
	if p.NoSandbox {
		return nil, fmt.Errorf("%w: --no-sandbox", ErrSessionUnsupported)
	}
	p.Command = []string{"/session"} // resolve wants one; never run
	p.Timeout, p.MaxOutput = 0, 0
	r, err := p.resolve()
	if err != nil {
		return nil, err
	}
	s, err := confine(r, func(a attempt) (*session, error) { return startSession(ctx, r, a) })
	if err != nil {
		return nil, err
	}
	return &Session{s: s}, nil
}

// Mode is the backend that confines the session's commands.
func (s *Session) Mode() Mode { return s.s.p.mode }

// startSession starts a session's init for the attempt a (startInit),
// handing it its end of the control socket, and waits for it to serve.
func startSession(ctx context.Context, r *resolved, a attempt) (*session, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: control socket: %v", ErrSetup, err)
	}
	// Room for one whole request: a seqpacket message larger than the send
	// buffer is refused, not split.
	_ = unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 2*sessionMaxMsg)
	_ = unix.SetsockoptInt(pair[1], unix.SOL_SOCKET, unix.SO_RCVBUF, 2*sessionMaxMsg)
	ctrl := os.NewFile(uintptr(pair[0]), "session")
	child := os.NewFile(uintptr(pair[1]), "session-init")
	p, err := startInit(r, a, launch{ctrl: child})
	child.Close()
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	s := &session{r: r, p: p, ctrl: ctrl, done: make(chan struct{}), msgs: make(chan sessionMsg)}
	stop := p.watch(ctx, 0)
	status, err := readStatus(p.status)
	p.status.Close()
	stop()
	if ctx.Err() != nil {
		s.teardown()
		return nil, ctx.Err()
	}
	if err := p.refusal(status, err); err != nil {
		s.teardown()
		return nil, err
	}
	s.wait.Add(1)
	go s.read()
	return s, nil
}

// read feeds the init's messages to s.msgs; it closes it when the init
// is gone or says something it should not.
func (s *session) read() {
	defer s.wait.Done()
	defer close(s.msgs)
	buf := make([]byte, 4096)
	for {
		n, err := s.ctrl.Read(buf)
		if err != nil || n == 0 {
			return
		}
		var m sessionMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			return
		}
		select {
		case s.msgs <- m:
		case <-s.done:
			return
		}
	}
}

// send writes one message, with fds as SCM_RIGHTS.
func (s *session) send(m sessionMsg, fds ...int) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(data) > sessionMaxMsg {
		return fmt.Errorf("%w: the command is %d bytes, over a session's %d", ErrInvalidPolicy, len(data), sessionMaxMsg)
	}
	raw, err := s.ctrl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		serr = unix.Sendmsg(int(fd), data, oob, nil, 0)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// Close kills every process of the session and removes its sandbox. It
// is safe to call more than once, and while a Run is under way (which
// then returns ErrSessionClosed).
func (s *Session) Close() error {
	s.s.end()
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	s.s.teardown()
	return nil
}

// end stops the init without waiting for a Run in progress.
func (s *session) end() { s.p.kill() }

// teardown waits for the init and removes what the session made; with
// s.mu held (or before the session is shared).
func (s *session) teardown() {
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	// EOF on the control socket makes the init kill everything and exit;
	// the kill is for an init that would not.
	s.ctrl.Close()
	select {
	case <-s.p.exited:
	case <-time.After(time.Second):
		s.end()
		<-s.p.exited
	}
	s.wait.Wait()
	s.p.close()
}

var _ io.Closer = (*Session)(nil)
