package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// errNoStart: the init ended without a word — killed (by a timeout that
// fired during set-up, say) or not our init at all.
var errNoStart = fmt.Errorf("%w: the sandbox init exited before starting the command", ErrSetup)

// errNamespacesRefused marks a failure to build the namespaces before
// anything ran: ModeAuto then falls back to Landlock alone.
var errNamespacesRefused = errors.New("namespaces refused")

// runConfined builds the sandbox and runs the command in it. In ModeAuto it
// tries namespaces first and falls back to Landlock alone when the kernel
// refuses them (no user namespaces, or a security module that denies
// mounting in them) — found by trial, before the command has run.
func runConfined(ctx context.Context, r *resolved, stdio Stdio) (*Result, error) {
	mode := r.Mode
	if mode == ModeAuto || mode == ModeNamespaces {
		res, err := runWithMode(ctx, r, ModeNamespaces, stdio, false)
		if err == nil || mode == ModeNamespaces || !errors.Is(err, errNamespacesRefused) {
			return res, err
		}
		if r.Overlay != nil {
			return nil, fmt.Errorf("%w (an overlay workdir needs them)", err)
		}
		if r.Network == NetworkProxy {
			// Without a network namespace the proxy port would be the
			// host's loopback; refused, never approximated.
			return nil, fmt.Errorf("%w (%w)", err, ErrProxyNeedsNetns)
		}
		warning := fmt.Sprintf("namespaces unavailable (%v): confined by Landlock and seccomp only", err)
		res, err = runWithMode(ctx, r, ModeLandlock, stdio, false)
		if res != nil {
			res.Warnings = append([]string{warning}, res.Warnings...)
		}
		return res, err
	}
	return runWithMode(ctx, r, ModeLandlock, stdio, false)
}

// runProbe builds a sandbox with the given backend and returns what the
// init saw inside it.
func runProbe(ctx context.Context, r *resolved, mode Mode) (*ProbeReport, error) {
	res, err := runWithMode(ctx, r, mode, Stdio{Stdout: io.Discard, Stderr: io.Discard}, true)
	if err != nil {
		return nil, err
	}
	if res.probe == nil {
		return nil, fmt.Errorf("%w: the init sent no probe report", ErrSetup)
	}
	return res.probe, nil
}

func runWithMode(ctx context.Context, r *resolved, mode Mode, stdio Stdio, probe bool) (*Result, error) {
	return startWithFallback(lookupInit(r.Init), func(b *initBinary) (*Result, error) {
		return runWithInit(ctx, r, mode, stdio, probe, b)
	})
}

// runWithInit is one confined start with the init b (initbin_linux.go).
func runWithInit(ctx context.Context, r *resolved, mode Mode, stdio Stdio, probe bool, b *initBinary) (*Result, error) {
	if mode == ModeLandlock && r.Network == NetworkProxy {
		return nil, fmt.Errorf("%w: %w (the landlock backend has none)", ErrSetup, ErrProxyNeedsNetns)
	}
	if mode == ModeLandlock && r.User != nil {
		return nil, fmt.Errorf("%w: Policy.User needs a user namespace (the landlock backend has none)", ErrSetup)
	}
	if mode == ModeLandlock && landlockABI() < 1 {
		return nil, fmt.Errorf("%w: neither user namespaces nor Landlock are available; refusing to run unconfined (--no-sandbox accepts that)", ErrSetup)
	}
	tr := tracer{stdio.Trace}
	tr.mark("parent.start")
	priv, err := MkdirTemp("sbx")
	if err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	privTmp, privHome := filepath.Join(priv, "tmp"), filepath.Join(priv, "home")
	// The two private dirs are made while the init starts (the kernel's
	// part of that keeps this thread busy): the init reads its config,
	// which names them, only after they are made (makeDirs). Every return joins
	// it before the removal, so nothing is made after it.
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
	makeDirs := sync.OnceValue(func() error { return <-made })
	// Once: the init's exited record may start it early (below).
	removePriv := sync.OnceFunc(func() { RemoveAll(priv) })
	defer func() {
		_ = makeDirs()
		removePriv()
		tr.mark("parent.cleaned-up")
	}()

	tr.mark("parent.tempdirs")
	res := &Result{Mode: mode, Init: initUsed(b)}
	cg, cgWarn := newCgroup(r.Memory, r.Pids, r.CPUs)
	if cgWarn != "" {
		res.Warnings = append(res.Warnings, cgWarn)
	}
	defer func() {
		cg.killAll()
		cg.remove()
	}()

	cfg := r.initConfig(mode, privTmp, privHome, cg == nil)
	cfg.Probe = probe
	cfg.Trace = stdio.Trace != nil
	// /proc/self/exe or the descriptor of a checked forkbomb-init, never a
	// path: the very file that was checked, even if the one at its path
	// was since replaced (perhaps by a command that could write there).
	// The other half of CVE-2019-5736, where a container overwrote runc
	// through /proc/PID/exe, runc answers with a sealed copy of itself;
	// here the init is not dumpable (initMain), so the command cannot open
	// its /proc/PID/exe at all.
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	cmd := initCommand(b, []*os.File{cfgR, statW})
	// The init's environment is already the command's: nothing else the
	// caller holds (an API key, a token) is ever in a process the command can
	// read.
	cmd.Env = initEnv(cfg.Env)
	cmd.Dir = "/"
	cmd.SysProcAttr = initSysProcAttr(cfg)

	var copies sync.WaitGroup
	var killFn atomic.Pointer[func()]
	limiter := &outputLimit{max: r.MaxOutput, onExceed: func() {
		if k := killFn.Load(); k != nil {
			(*k)()
		}
	}}
	var readEnds []*os.File
	closeAfterStart := []io.Closer{cfgR, statW}
	cmd.Stdin = stdio.Stdin
	if f, ok := stdio.Stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	for _, pair := range []struct {
		dst io.Writer
		set func(*os.File)
	}{
		{stdio.Stdout, func(f *os.File) { cmd.Stdout = f }},
		{stdio.Stderr, func(f *os.File) { cmd.Stderr = f }},
	} {
		if f, ok := pair.dst.(*os.File); ok && r.MaxOutput == 0 {
			pair.set(f)
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		pair.set(pw)
		closeAfterStart = append(closeAfterStart, pw)
		readEnds = append(readEnds, pr)
		copies.Add(1)
		go func(dst io.Writer, src *os.File) {
			defer copies.Done()
			limiter.copy(dst, src)
		}(pair.dst, pr)
	}

	tr.mark("parent.clone")
	if err := cmd.Start(); err != nil {
		for _, c := range closeAfterStart {
			c.Close()
		}
		cfgW.Close()
		statR.Close()
		copies.Wait()
		return nil, initStartError(mode, err)
	}
	for _, c := range closeAfterStart {
		c.Close()
	}
	tr.mark("parent.init-execed")
	init := cmd.Process
	kill := func() {
		if mode == ModeLandlock {
			// Without a pid namespace, killing the init would orphan the
			// command's descendants; the init kills them on SIGTERM and
			// cannot be signalled from inside its Landlock domain.
			// It is given time to finish: a SIGKILL in the middle would
			// orphan what it has not killed yet.
			_ = init.Signal(syscall.SIGTERM)
			time.AfterFunc(2*time.Minute, func() { _ = init.Kill() })
			return
		}
		_ = init.Kill()
	}
	killFn.Store(&kill)

	// While the init starts, find the .git entries it must protect.
	if mode == ModeNamespaces {
		cfg.GitDirs = r.GitDirs
		if cfg.GitDirs == nil {
			for _, w := range cfg.Writable {
				found, err := FindGitDirs(w)
				if err != nil {
					_ = init.Kill()
					_ = cmd.Wait()
					cfgW.Close()
					statR.Close()
					return nil, fmt.Errorf("%w: %v; forkbomb does not run a command in a tree it cannot check", ErrSetup, err)
				}
				cfg.GitDirs = append(cfg.GitDirs, found...)
			}
		}
	}
	if err := makeDirs(); err != nil {
		_ = init.Kill()
		_ = cmd.Wait()
		cfgW.Close()
		statR.Close()
		return nil, err
	}
	// The init waits for its configuration, so it is in its cgroup before it
	// does anything else.
	if err := cg.add(init.Pid); err != nil {
		_ = init.Kill()
		_ = cmd.Wait()
		cfgW.Close()
		statR.Close()
		return nil, fmt.Errorf("%w: cgroup: %v", ErrSetup, err)
	}
	// Started before the init reads its configuration: it reads the init's
	// pid namespace while the init is still dumpable.
	pw := watchPids(cg, init.Pid, r.Pids, mode, kill)
	tr.mark("parent.config-ready") // before the write: the init may read it at once
	if err := writeConfig(cfgW, b, cfg); err != nil {
		_ = init.Kill()
	}
	cfgW.Close()

	var timedOut, interrupted bool
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		var timer <-chan time.Time
		if r.Timeout > 0 {
			t := time.NewTimer(r.Timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-done:
		case <-timer:
			mu.Lock()
			timedOut = true
			mu.Unlock()
			kill()
		case <-ctx.Done():
			mu.Lock()
			interrupted = true
			mu.Unlock()
			kill()
		}
	}()

	status, statusErr := readStatus(statR)
	statR.Close()
	tr.mark("parent.status-read")
	if statusErr == nil && status.Exited && mode == ModeNamespaces {
		// Nothing but the exiting init is left in the sandbox (its pid
		// namespace): its private dirs go while the kernel unmounts.
		// removePriv's deferred call waits for this one to finish.
		go removePriv()
	}
	werr := cmd.Wait()
	tr.mark("parent.init-reaped")
	close(done)
	pidsHit := pw.end()
	// Every process that could hold the pipes is dead by now; should one
	// have escaped (it cannot in namespace mode), stop copying rather
	// than wait for it.
	waitCopies(&copies, readEnds)
	for _, f := range readEnds {
		f.Close()
	}

	mu.Lock()
	defer mu.Unlock()
	if errors.Is(statusErr, errNoStart) && (timedOut || interrupted || limiter.exceeded()) {
		statusErr, status = nil, &initStatus{} // we killed it: report why
	}
	if errors.Is(statusErr, errNoStart) && b != nil {
		statusErr = fmt.Errorf("%w: %w", errInitRefused, statusErr) // not our init, or a broken one
	}
	if statusErr != nil {
		return nil, statusErr
	}
	if status.Error != "" {
		return nil, status.err()
	}
	res.probe = status.Probe
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("%w: wait: %v", ErrSetup, werr)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.ExitCode = exitCodeOf(ws)
	switch {
	case interrupted:
		return res, ctx.Err()
	case timedOut:
		res.TimedOut, res.ExitCode = true, ExitTimeout
	case limiter.exceeded():
		res.Limit, res.ExitCode = "output", ExitKilledByLimit
	case cg.oomKilled():
		res.Limit, res.ExitCode = "memory", ExitKilledByLimit
	case pidsHit:
		res.Limit, res.ExitCode = "pids", ExitKilledByLimit
	}
	return res, nil
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

// initStatus is the one record the init writes on its status pipe (see the
// protocol in init_linux.go): Started once the command is forked, Probe
// when probing, else the error that kept the command from starting.
type initStatus struct {
	Started bool         `json:"started,omitempty"`
	Exited  bool         `json:"exited,omitempty"` // the second record (init_linux.go)
	Error   string       `json:"error,omitempty"`
	Kind    string       `json:"kind,omitempty"` // setup, ns, stale, notfound, notexec
	Probe   *ProbeReport `json:"probe,omitempty"`
}

func (s *initStatus) err() error {
	switch s.Kind {
	case "notfound":
		return fmt.Errorf("%w: %s", ErrCommandNotFound, s.Error)
	case "notexec":
		return fmt.Errorf("%w: %s", ErrCommandNotExecutable, s.Error)
	case "ns":
		return fmt.Errorf("%w: %w: %s", ErrSetup, errNamespacesRefused, s.Error)
	case "stale":
		return fmt.Errorf("%w: %w: %s", ErrSetup, errInitRefused, s.Error)
	}
	return fmt.Errorf("%w: %s", ErrSetup, s.Error)
}

func readStatus(r io.Reader) (*initStatus, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: read init status: %v", ErrSetup, err)
	}
	st := &initStatus{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errNoStart
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("%w: init status: %v", ErrSetup, err)
	}
	if st.Exited || (!st.Started && st.Error == "" && st.Probe == nil) {
		return nil, fmt.Errorf("%w: the init's status says neither that the command started nor why not", ErrSetup)
	}
	if dec.More() {
		// Only a started command's end may follow, and nothing after it.
		var end initStatus
		if err := dec.Decode(&end); err != nil || !st.Started || !end.Exited ||
			end.Started || end.Error != "" || end.Probe != nil || dec.More() {
			return nil, fmt.Errorf("%w: init status: a record that is not the command's end after the first", ErrSetup)
		}
		st.Exited = true
	}
	return st, nil
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

// waitCopies waits for the output copies to drain, but not for ever: every
// process that could hold the pipes' write ends should be dead, and should
// one have escaped (it cannot under a pid namespace), closing the read ends
// stops the copies rather than waiting for it.
func waitCopies(copies *sync.WaitGroup, readEnds []*os.File) {
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		for _, f := range readEnds {
			f.Close()
		}
		<-copied
	}
}
