package sandbox

// The one start path.
//
// Every sandbox — one command's (Run), a session's (Start), a probe's — is
// started by startInit, under the ladder of confine; what differs between
// them is data, a launch: the streams the init inherits, a session's
// control socket, the probe. What follows the start is the caller's:
// runOnce waits for its command's end on the status pipe (init_linux.go),
// a session serves its commands over the control socket
// (session_init_linux.go). runc keeps its two starts (a container's init,
// a process joining one) behind one parentProcess interface with an
// implementation each; here there is one implementation, since the two
// protocols differ only after the start.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// attempt is one rung of the start ladder (confine): the backend, the
// init (nil: the running binary, initbin_linux.go) and the warnings of
// the rungs before it.
type attempt struct {
	mode Mode
	b    *initBinary
	warn []string
}

// confine starts a sandbox for r on the best backend the machine allows
// and returns what start made of it. In ModeAuto it tries namespaces
// first and falls back to Landlock alone when the kernel refuses them (no
// user namespaces, or a security module that denies mounting in them) —
// found by trial, before anything has run; on each backend, a start that
// fails because of the standalone init is made again with the running
// binary (startWithFallback).
func confine[T any](r *resolved, start func(attempt) (T, error)) (T, error) {
	b := lookupInit(r.Init)
	try := func(mode Mode, warn []string) (T, error) {
		return startWithFallback(b, func(b *initBinary) (T, error) { return start(attempt{mode, b, warn}) })
	}
	if r.Mode != ModeAuto && r.Mode != ModeNamespaces {
		return try(ModeLandlock, nil)
	}
	v, err := try(ModeNamespaces, nil)
	if err == nil || r.Mode == ModeNamespaces || !errors.Is(err, errNamespacesRefused) {
		return v, err
	}
	var none T
	if r.Overlay != nil {
		return none, fmt.Errorf("%w (an overlay workdir needs them)", err)
	}
	if r.Network == NetworkProxy {
		// Without a network namespace the proxy port would be the host's
		// loopback; refused, never approximated.
		return none, fmt.Errorf("%w (%w)", err, ErrProxyNeedsNetns)
	}
	return try(ModeLandlock, []string{fmt.Sprintf("namespaces unavailable (%v): confined by Landlock and seccomp only", err)})
}

// launch is what one start needs beyond the policy and the attempt.
type launch struct {
	// The init's streams, and so a one-command init's command's: nil is
	// /dev/null. stdin may be any reader (exec copies it through a pipe).
	stdin          io.Reader
	stdout, stderr *os.File
	// ctrl, when set, is the init's end of a session's control socket: the
	// init serves Session.Run on it (fd 5) instead of running r.Command.
	ctrl  *os.File
	probe bool      // report what the init sees instead of running anything
	trace io.Writer // the parent's start-up phases (trace.go)
}

// initProc is a started init, as its parent keeps it.
type initProc struct {
	mode    Mode
	b       *initBinary // the init that runs (nil: the running binary)
	cmd     *exec.Cmd
	status  *os.File // the status pipe's read end: the caller reads and closes it
	exited  chan struct{}
	waitErr error // cmd.Wait's, once exited is closed
	cg      *cgroup
	// pidsNS is the init's pid namespace, read for the pids watch where
	// there is no cgroup to count refused forks (watch_linux.go).
	pidsNS string
	warn   []string // the ladder's, then the cgroup's
	// dirsMade waits for the private folders; removePriv removes them,
	// once, whoever asks first.
	dirsMade   func() error
	removePriv func()
}

// startInit starts the init for r with the attempt's backend and init,
// and sends it its configuration. On success the init is building the
// sandbox and will report on p.status; the caller ends with p.close.
func startInit(r *resolved, a attempt, l launch) (_ *initProc, err error) {
	mode := a.mode
	if mode == ModeLandlock && r.Network == NetworkProxy && !r.Proxy.Listening {
		return nil, fmt.Errorf("%w: %w (the landlock backend has none)", ErrSetup, ErrProxyNeedsNetns)
	}
	if mode != ModeLandlock && r.Proxy != nil && r.Proxy.Listening {
		return nil, fmt.Errorf("%w: a listening proxy needs the landlock backend", ErrSetup)
	}
	if mode == ModeLandlock && r.User != nil {
		return nil, fmt.Errorf("%w: Policy.User needs a user namespace (the landlock backend has none)", ErrSetup)
	}
	if mode == ModeLandlock && landlockABI() < 1 {
		return nil, fmt.Errorf("%w: neither user namespaces nor Landlock are available; refusing to run unconfined (--no-sandbox accepts that)", ErrSetup)
	}
	tr := tracer{l.trace}
	tr.mark("parent.start")
	priv, err := MkdirTemp("sbx")
	if err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	privTmp, privHome := filepath.Join(priv, "tmp"), filepath.Join(priv, "home")
	// The two private folders are made while the init starts, which takes
	// the kernel a while: the init reads its config, which names them,
	// only after they are made. close waits for them before the removal,
	// so nothing is made after it.
	made := make(chan error, 1)
	go func() {
		for _, d := range []string{privTmp, privHome} {
			if err := os.Mkdir(d, 0o700); err != nil {
				made <- fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
				return
			}
		}
		made <- nil
	}()
	p := &initProc{mode: mode, b: a.b, warn: append([]string(nil), a.warn...),
		dirsMade:   sync.OnceValue(func() error { return <-made }),
		removePriv: sync.OnceFunc(func() { RemoveAll(priv) }),
	}
	defer func() {
		if err != nil {
			if p.status != nil {
				p.status.Close()
			}
			p.close()
		}
	}()
	tr.mark("parent.tempdirs")

	var cgWarn string
	// Under a Yield the weight starts at the caller's and is lowered
	// while the Yield is held.
	startNice := r.Nice
	if r.Yield != nil {
		startNice = 0
	}
	p.cg, cgWarn = newCgroup(r.Memory, r.Pids, r.CPUs, r.Nice > 0, startNice)
	if cgWarn != "" {
		p.warn = append(p.warn, cgWarn)
	}
	session := l.ctrl != nil
	if session && p.cg == nil && mode == ModeLandlock && (r.Memory > 0 || r.Pids > 0) {
		// Without a cgroup, --memory and --pids are rlimits on the init
		// itself, which a bomb can leave unable to grow or make a thread:
		// a one-command init dies at the end of its command anyway, but
		// a session's would die in the middle, and without a pid
		// namespace its command's processes would be orphaned beyond
		// anyone's reach. sandbox.Run serves these policies.
		return nil, fmt.Errorf("%w: the landlock backend without a cgroup (memory and process limits would be rlimits on the session's init)", ErrSessionUnsupported)
	}
	cfg := r.initConfig(mode, privTmp, privHome, p.cg == nil)
	cfg.Probe, cfg.Trace = l.probe, l.trace != nil
	if session {
		cfg.Argv, cfg.Session = nil, true
	}

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
	p.status = statR
	extra := []*os.File{cfgR, statW}
	if session {
		extra = append(extra, l.ctrl)
	}
	// /proc/self/exe or the descriptor of a checked forkbomb-init, never a
	// path: the very file that was checked, even if the one at its path
	// was since replaced (perhaps by a command that could write there).
	// The other half of CVE-2019-5736, where a container overwrote runc
	// through /proc/PID/exe, runc answers with a sealed copy of itself;
	// here the init is not dumpable (initMain), so the command cannot open
	// its /proc/PID/exe at all.
	cmd := initCommand(a.b, extra)
	// The init's environment is already the command's: nothing else the
	// caller holds (an API key, a token) is ever in a process the command
	// can read.
	cmd.Env, cmd.Dir = initEnv(cfg.Env), "/"
	cmd.SysProcAttr = initSysProcAttr(cfg)
	cmd.Stdin = l.stdin
	if l.stdout != nil {
		cmd.Stdout = l.stdout
	}
	if l.stderr != nil {
		cmd.Stderr = l.stderr
	}

	tr.mark("parent.clone")
	err = p.start(cmd, startNice)
	cfgR.Close()
	statW.Close()
	if err != nil {
		return nil, initStartError(mode, err)
	}
	tr.mark("parent.init-execed")
	init := cmd.Process
	defer func() {
		if err != nil {
			// It has read no configuration yet, so it has started nothing
			// that could outlive it.
			_ = init.Kill()
		}
	}()

	// While the init starts, find the .git entries it must protect.
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
	if err := p.dirsMade(); err != nil {
		return nil, err
	}
	// The init waits for its configuration, so it is in its cgroup before
	// it does anything else.
	if err := p.cg.add(init.Pid); err != nil {
		return nil, fmt.Errorf("%w: cgroup: %v", ErrSetup, err)
	}
	// The group the kernel schedules the sandbox by — its cgroup where it
	// carries a weight, else its session's (autogroup), opened while the
	// init is still dumpable, so that its owner may open the file — is
	// lowered while the Yield is held; Policy.Nice alone holds a Yield of
	// its own for good.
	if r.Nice > 0 {
		y := r.Yield
		if y == nil {
			y = &Yield{held: 1}
		}
		var m yielder
		if p.cg.isWeighted() {
			file, v1 := p.cg.weightFile()
			m = &cgroupYielder{file: file, v1: v1, nice: r.Nice, cur: startNice}
		} else if a := newAutogroupYielder(init.Pid, r.Nice); a != nil {
			m = a
		}
		if m != nil {
			leave := y.join(m)
			go func() { <-p.exited; leave() }()
		}
	}
	if p.cg == nil && mode == ModeNamespaces && r.Pids > 0 {
		// Read while the init is still dumpable: it has not read its
		// configuration yet.
		p.pidsNS, _ = os.Readlink("/proc/" + strconv.Itoa(init.Pid) + "/ns/pid")
	}
	tr.mark("parent.config-ready") // before the write: the init may read it at once
	if err := writeConfig(cfgW, a.b, cfg); err != nil {
		// The init is gone or going without its configuration: its status
		// says why, or, empty, that it died without a word.
		_ = init.Kill()
	}
	return p, nil
}

// start starts the init's process from a goroutine locked to its thread
// until the init is reaped: the init's parent-death signal fires when the
// THREAD that forked it exits, not the process (golang/go#27505), and Go
// ends a thread whose goroutine exits locked to it — and a session's init
// outlives the call that started it.
//
// With nice, the thread's priority is lowered first (Policy.Nice), so that
// the init and everything it starts begin lowered; that thread then ends
// with the goroutine instead of going back to the caller's other work. Go's
// main thread cannot end (it would be parked for good, the process showing
// its priority): there the goroutine holds it and hands the start to
// another, which then runs on a thread of its own.
func (p *initProc) start(cmd *exec.Cmd, nice int) error {
	p.cmd, p.exited = cmd, make(chan struct{})
	started := make(chan error, 1)
	var run func()
	run = func() {
		runtime.LockOSThread()
		if nice > 0 && syscall.Gettid() == syscall.Getpid() {
			done := make(chan struct{})
			go func() { run(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		if nice == 0 {
			defer runtime.UnlockOSThread()
		} else if err := lowerThread(nice); err != nil {
			// not an errno: a refused setpriority is no refusal of
			// namespaces (initStartError)
			started <- fmt.Errorf("Policy.Nice: %v", err)
			close(p.exited)
			return
		}
		err := cmd.Start()
		started <- err
		if err == nil {
			p.waitErr = cmd.Wait()
		}
		close(p.exited)
	}
	go run()
	return <-started
}

// kill ends the init, and with it everything in its sandbox. In namespace
// mode SIGKILL does: the kernel kills the rest of the init's pid
// namespace. Without a pid namespace that would orphan the command's
// descendants; the init kills them on SIGTERM and cannot be signalled
// from inside its Landlock domain. It is given time to finish: a SIGKILL
// in the middle would orphan what it has not killed yet.
func (p *initProc) kill() {
	init := p.cmd.Process
	if p.mode == ModeLandlock {
		_ = init.Signal(syscall.SIGTERM)
		time.AfterFunc(2*time.Minute, func() { _ = init.Kill() })
		return
	}
	_ = init.Kill()
}

// watch kills the init when ctx is done or, with a timeout, when that
// expires, until stop; stop reports which of the two it was, if either.
func (p *initProc) watch(ctx context.Context, timeout time.Duration) (stop func() (timedOut, interrupted bool)) {
	done := make(chan struct{})
	why := make(chan [2]bool, 1)
	go func() {
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-done:
			why <- [2]bool{}
		case <-timer:
			p.kill()
			why <- [2]bool{true, false}
		case <-ctx.Done():
			p.kill()
			why <- [2]bool{false, true}
		}
	}()
	return func() (bool, bool) {
		close(done)
		w := <-why
		return w[0], w[1]
	}
}

// refusal is why the init did not start, from its first status record
// (readStatus), or nil.
func (p *initProc) refusal(st *initStatus, err error) error {
	if errors.Is(err, errNoStart) && p.b != nil && !p.signalled() {
		return fmt.Errorf("%w: %w", errInitRefused, err) // not our init, or a broken one
	}
	if err != nil {
		return err
	}
	if st.Error != "" {
		return st.err()
	}
	return nil
}

// signalled reports whether the init, which ended without a word, was
// killed by a signal — a watcher's kill, the machine's OOM killer — rather
// than exiting as an init of another build or a broken one does: no fault
// of the init binary's, so not held against it (startWithFallback). It
// waits a little for the init to be reaped.
func (p *initProc) signalled() bool {
	if p.exited == nil {
		return false
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return false
	}
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return false
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// close waits for the init, which must be ended or ending, and removes
// what the start made: the cgroup, with anything left in it, and the
// private folders.
func (p *initProc) close() {
	if p.exited != nil {
		<-p.exited
	}
	p.cg.killAll()
	p.cg.remove()
	_ = p.dirsMade()
	p.removePriv()
}

// initSysProcAttr is how the init is started: in a new session always, and
// in new namespaces in namespace mode. The caller's uid and gid are mapped to
// themselves (or to Policy.User's), and the init keeps, as ambient capabilities, only what it needs
// to build the mount tree; it drops all of them before the command runs.
func initSysProcAttr(cfg *initConfig) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if cfg.Mode == ModeLandlock {
		a.Pdeathsig = syscall.SIGTERM
		return a
	}
	uid, gid := idMaps(os.Getuid(), os.Getgid(), cfg.User)
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP
	if cfg.NewNet {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = initCaps
	return a
}

// initStartError words a failure to start the init process: a refusal of
// the namespaces (which lets ModeAuto fall back), or another.
func initStartError(mode Mode, err error) error {
	if mode == ModeNamespaces && isUsernsRefusal(err) {
		return fmt.Errorf("%w: %w: %w: cannot create namespaces: %v", ErrSetup, errInitStart, errNamespacesRefused, err)
	}
	return fmt.Errorf("%w: %w: %v", ErrSetup, errInitStart, err)
}

func isUsernsRefusal(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOSYS)
}
