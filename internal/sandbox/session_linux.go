package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	mode   Mode
	r      *resolved
	init   *exec.Cmd
	ctrl   *os.File // the parent's end of the control socket
	msgs   chan sessionMsg
	cg     *cgroup
	priv   string
	pidsNS string // the init's pid namespace, for the pids watch without a cgroup
	warn   []string
	closed bool
	done   chan struct{}  // closed by teardown: stops the reader
	exited chan struct{}  // the init was reaped
	unpin  chan struct{}  // releases the thread that started the init
	kill   func()         // ends the init (and so the session) from outside
	wait   sync.WaitGroup // the reader of ctrl
	// initPath is the init serving the session (Result.Init).
	initPath string
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
	mode := r.Mode
	b := lookupInit(r.Init)
	startSession := func(ctx context.Context, r *resolved, mode Mode) (*session, error) {
		return startWithFallback(b, func(b *initBinary) (*session, error) { return startSessionWith(ctx, r, mode, b) })
	}
	if mode == ModeAuto || mode == ModeNamespaces {
		s, err := startSession(ctx, r, ModeNamespaces)
		if err == nil || mode == ModeNamespaces || !errors.Is(err, errNamespacesRefused) {
			return wrapSession(s, err)
		}
		if r.Overlay != nil {
			return nil, fmt.Errorf("%w (an overlay workdir needs them)", err)
		}
		if r.Network == NetworkProxy {
			return nil, fmt.Errorf("%w (%w)", err, ErrProxyNeedsNetns)
		}
		s, err = startSession(ctx, r, ModeLandlock)
		if s != nil {
			s.warn = append([]string{fmt.Sprintf("namespaces unavailable (%v): confined by Landlock and seccomp only", err)}, s.warn...)
		}
		return wrapSession(s, err)
	}
	return wrapSession(startSession(ctx, r, ModeLandlock))
}

func wrapSession(s *session, err error) (*Session, error) {
	if err != nil {
		return nil, err
	}
	return &Session{s: s}, nil
}

// Mode is the backend that confines the session's commands.
func (s *Session) Mode() Mode { return s.s.mode }

// startSessionWith starts a session's init, b (initbin_linux.go).
func startSessionWith(ctx context.Context, r *resolved, mode Mode, b *initBinary) (_ *session, err error) {
	if mode == ModeLandlock && r.Network == NetworkProxy {
		return nil, fmt.Errorf("%w: %w (the landlock backend has none)", ErrSetup, ErrProxyNeedsNetns)
	}
	if mode == ModeLandlock && r.User != nil {
		return nil, fmt.Errorf("%w: Policy.User needs a user namespace (the landlock backend has none)", ErrSetup)
	}
	if mode == ModeLandlock && landlockABI() < 1 {
		return nil, fmt.Errorf("%w: neither user namespaces nor Landlock are available; refusing to run unconfined (--no-sandbox accepts that)", ErrSetup)
	}
	s := &session{mode: mode, r: r, initPath: initUsed(b), exited: make(chan struct{}), done: make(chan struct{}), unpin: make(chan struct{}), msgs: make(chan sessionMsg)}
	defer func() {
		if err != nil {
			s.teardown()
		}
	}()
	if s.priv, err = MkdirTemp("sbx"); err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	privTmp, privHome := filepath.Join(s.priv, "tmp"), filepath.Join(s.priv, "home")
	for _, d := range []string{privTmp, privHome} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
		}
	}
	var cgWarn string
	s.cg, cgWarn = newCgroup(r.Memory, r.Pids, r.CPUs)
	if cgWarn != "" {
		s.warn = append(s.warn, cgWarn)
	}
	if s.cg == nil && mode == ModeLandlock && (r.Memory > 0 || r.Pids > 0) {
		// Without a cgroup, --memory and --pids are rlimits on the init
		// itself, which a bomb can leave unable to grow or make a thread:
		// a one-command init dies at the end of its command anyway, but
		// a session's would die in the middle, and without a pid
		// namespace its command's processes would be orphaned beyond
		// anyone's reach. sandbox.Run serves these policies.
		return nil, fmt.Errorf("%w: the landlock backend without a cgroup (memory and process limits would be rlimits on the session's init)", ErrSessionUnsupported)
	}
	cfg := r.initConfig(mode, privTmp, privHome, s.cg == nil)
	cfg.Argv, cfg.Session = nil, true

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: control socket: %v", ErrSetup, err)
	}
	// Room for one whole request: a seqpacket message larger than the send
	// buffer is refused, not split.
	_ = unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 2*sessionMaxMsg)
	_ = unix.SetsockoptInt(pair[1], unix.SOL_SOCKET, unix.SO_RCVBUF, 2*sessionMaxMsg)
	s.ctrl = os.NewFile(uintptr(pair[0]), "session")
	child := os.NewFile(uintptr(pair[1]), "session-init")
	defer child.Close()
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer cfgW.Close()
	statR, statW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer statR.Close()

	// As in runWithMode: the checked forkbomb-init or the running binary
	// itself, the command's environment only, stdio /dev/null (each
	// command gets its own).
	cmd := initCommand(b, []*os.File{cfgR, statW, child})
	cmd.Env, cmd.Dir = initEnv(cfg.Env), "/"
	cmd.SysProcAttr = initSysProcAttr(cfg)
	s.init = cmd
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the THREAD that forked the init exits, not
		// the process (golang/go#27505), and Go ends a thread whose
		// goroutine exits locked to it. A session outlives any one call,
		// so the init is started from a thread pinned until Close.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-s.unpin
		}
	}()
	err = <-started
	cfgR.Close()
	statW.Close()
	if err != nil {
		return nil, initStartError(mode, err)
	}
	initProc := cmd.Process
	s.kill = func() {
		if mode == ModeLandlock {
			// As in runWithMode: SIGTERM lets the init kill its
			// descendants, which a SIGKILL would orphan.
			_ = initProc.Signal(syscall.SIGTERM)
			time.AfterFunc(2*time.Minute, func() { _ = initProc.Kill() })
			return
		}
		_ = initProc.Kill()
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()

	if mode == ModeNamespaces {
		cfg.GitDirs = r.GitDirs
		if cfg.GitDirs == nil {
			for _, w := range cfg.Writable {
				found, err := FindGitDirs(w)
				if err != nil {
					return nil, fmt.Errorf("%w: %v; forkbomb does not run a command in a tree it cannot check", ErrSetup, err)
				}
				cfg.GitDirs = append(cfg.GitDirs, found...)
			}
		}
	}
	if err := s.cg.add(initProc.Pid); err != nil {
		return nil, fmt.Errorf("%w: cgroup: %v", ErrSetup, err)
	}
	if s.cg == nil && mode == ModeNamespaces && r.Pids > 0 {
		// Read while the init is still dumpable (it has not read its
		// config yet), for the per-command pids watch.
		s.pidsNS, _ = os.Readlink("/proc/" + strconv.Itoa(initProc.Pid) + "/ns/pid")
	}
	if err := writeConfig(cfgW, b, cfg); err != nil {
		return nil, fmt.Errorf("%w: send config: %v", ErrSetup, err)
	}
	cfgW.Close()

	stop := context.AfterFunc(ctx, s.kill)
	status, err := readStatus(statR)
	stop()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, errNoStart) && b != nil {
		err = fmt.Errorf("%w: %w", errInitRefused, err) // not our init, or a broken one
	}
	if err != nil {
		return nil, err
	}
	if status.Error != "" {
		return nil, status.err()
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
func (s *session) end() {
	if s.kill != nil {
		s.kill()
	}
}

// teardown waits for the init and removes what the session made; with
// s.mu held (or before the session is shared).
func (s *session) teardown() {
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	if s.kill != nil {
		// EOF on the control socket makes the init kill everything and
		// exit; the kill is for an init that would not.
		if s.ctrl != nil {
			s.ctrl.Close()
		}
		select {
		case <-s.exited:
		case <-time.After(time.Second):
			s.kill()
			<-s.exited
		}
		close(s.unpin)
	} else if s.ctrl != nil {
		s.ctrl.Close()
	}
	s.wait.Wait()
	s.cg.killAll()
	s.cg.remove()
	if s.priv != "" {
		RemoveAll(s.priv)
	}
}

// counter reads "key N" from a cgroup events file; 0 if absent.
func counter(file, key string) int64 {
	if file == "" {
		return 0
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// memoryEvents is the file that counts the cgroup's OOM kills, or "".
func (cg *cgroup) memoryEvents() string {
	switch {
	case cg == nil:
		return ""
	case cg.v2 != "":
		return filepath.Join(cg.v2, "memory.events")
	}
	if d, ok := cg.v1["memory"]; ok {
		return filepath.Join(d, "memory.oom_control")
	}
	return ""
}

var _ io.Closer = (*Session)(nil)
