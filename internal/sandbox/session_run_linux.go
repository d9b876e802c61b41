package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Run runs one command in the session and returns when it and every
// process it started are dead. Its errors are Run's (ErrCommandNotFound,
// ErrCommandNotExecutable, ctx's error), plus ErrSessionClosed once the
// session is gone; the command's own failure is a non-zero ExitCode, and
// Result.Limit names a session limit (memory, pids) or the command's
// output cap that killed it.
func (s *Session) Run(ctx context.Context, c Cmd, stdio Stdio) (*Result, error) {
	return s.s.run(ctx, c, stdio)
}

func (s *session) run(ctx context.Context, c Cmd, stdio Stdio) (*Result, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, fmt.Errorf("%w: a command is required", ErrInvalidPolicy)
	}
	if stdio.Stdout == nil {
		stdio.Stdout = io.Discard
	}
	if stdio.Stderr == nil {
		stdio.Stderr = io.Discard
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{Mode: s.p.mode, Init: initUsed(s.p.b), Warnings: append([]string(nil), s.p.warn...)}

	// The command's three streams: files handed over as they are, as Run
	// does, else pipes this side copies (through the output cap).
	var (
		childFDs []*os.File // sent to the init, closed here after
		readEnds []*os.File
		copies   sync.WaitGroup
		once     sync.Once
	)
	killed := make(chan struct{})
	killCmd := func() { once.Do(func() { close(killed) }) }
	limiter := &outputLimit{max: c.MaxOutput, onExceed: killCmd}
	defer func() {
		for _, f := range childFDs {
			f.Close()
		}
	}()
	stdin, closeIn, err := s.stdinFor(stdio.Stdin)
	if err != nil {
		return nil, err
	}
	defer closeIn()
	childFDs = append(childFDs, stdin)
	for _, dst := range []io.Writer{stdio.Stdout, stdio.Stderr} {
		if f, ok := dst.(*os.File); ok && c.MaxOutput == 0 {
			dup, err := dupFile(f)
			if err != nil {
				return nil, err
			}
			childFDs = append(childFDs, dup)
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		childFDs = append(childFDs, pw)
		readEnds = append(readEnds, pr)
		copies.Add(1)
		go func(dst io.Writer, src *os.File) {
			defer copies.Done()
			limiter.copy(dst, src)
		}(dst, pr)
	}
	defer func() {
		for _, f := range readEnds {
			f.Close()
		}
	}()
	oomBase := s.p.cg.oomKills()
	pidsBase := counter(s.p.cg.pidsEvents(), "max")

	fds := make([]int, len(childFDs))
	for i, f := range childFDs {
		fds[i] = int(f.Fd())
	}
	serr := s.send(sessionMsg{Argv: c.Argv}, fds...)
	// The init has its own copies now (or none): ours would keep the
	// pipes open after the command.
	for _, f := range childFDs {
		f.Close()
	}
	childFDs = nil
	if serr != nil {
		return nil, s.broken(fmt.Errorf("send command: %w", serr))
	}
	m, ok := <-s.msgs
	if !ok {
		return nil, s.broken(fmt.Errorf("the init ended"))
	}
	if !m.Started {
		copies.Wait()
		st := initStatus{Error: m.Error, Kind: m.Kind}
		if st.Error == "" {
			st.Error = "the init neither started the command nor said why"
		}
		return nil, st.err()
	}

	pw := watchPids(s.p.cg, s.p.pidsNS, s.r.Pids, pidsBase, killCmd)
	var timer <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var timedOut, interrupted, gone bool
	var code int
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for waiting := true; waiting; {
		select {
		case m, ok := <-s.msgs:
			switch {
			case !ok:
				gone, waiting = true, false
			case m.Exit != nil:
				code, waiting = *m.Exit, false
			}
		case <-timer:
			timer, timedOut = nil, true
			killCmd()
		case <-ctxDone:
			ctxDone, interrupted = nil, true
			killCmd()
		case <-killed:
			killed = nil
			if s.send(sessionMsg{Kill: true}) != nil {
				s.end()
			}
			grace = time.After(sessionKillGrace)
		case <-grace:
			// The init would not end the command: end the session.
			s.end()
			grace = nil
		}
	}
	pidsHit := pw.end()
	// Every process that held the pipes is dead (the init said so, or it
	// died and took the pid namespace with it); the guard is for the
	// landlock backend's init dying without a word.
	waitCopies(&copies, readEnds)
	res.ExitCode = code
	switch {
	case interrupted:
		if gone {
			s.teardown()
		}
		return res, ctx.Err()
	case timedOut:
		res.TimedOut, res.ExitCode = true, ExitTimeout
	case limiter.exceeded():
		res.Limit, res.ExitCode = "output", ExitKilledByLimit
	case s.p.cg.oomKills() > oomBase:
		res.Limit, res.ExitCode = "memory", ExitKilledByLimit
	case pidsHit:
		res.Limit, res.ExitCode = "pids", ExitKilledByLimit
	case gone:
		s.teardown()
		why := ""
		if s.p.cg == nil && (s.r.Memory > 0 || s.r.Pids > 0) {
			// The rlimit stand-ins bound the init too (see Start); its pid
			// namespace took the command's processes with it.
			why = " (a memory or process limit, likely: without a cgroup they bind the init as well)"
		}
		return nil, fmt.Errorf("%w: the sandbox's init ended during the command%s", ErrSessionClosed, why)
	}
	if gone {
		// A limit killed the init itself: the result stands, the session
		// does not.
		s.teardown()
	}
	return res, nil
}

// broken ends a session whose control socket failed; with s.mu held.
func (s *session) broken(err error) error {
	s.end()
	s.teardown()
	return fmt.Errorf("%w: %w", ErrSessionClosed, err)
}

// stdinFor is the command's stdin: the file itself, /dev/null, or a pipe
// fed from r until the command ends.
func (s *session) stdinFor(r io.Reader) (*os.File, func(), error) {
	switch f := r.(type) {
	case nil:
		n, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		return n, func() {}, nil
	case *os.File:
		d, err := dupFile(f)
		return d, func() {}, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	go func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}()
	// Closing the write end when the command is done stops a copy that
	// is blocked writing to a command that no longer reads.
	return pr, func() { pw.Close() }, nil
}

// dupFile duplicates f, so the caller's file is never closed here.
func dupFile(f *os.File) (*os.File, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	var nfd int
	var derr error
	if err := raw.Control(func(fd uintptr) { nfd, derr = dupCloexec(int(fd)) }); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	if derr != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, derr)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}
