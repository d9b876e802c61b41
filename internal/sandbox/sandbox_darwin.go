package sandbox

// The seatbelt backend: macOS has no namespaces, so a command is confined
// by a Seatbelt profile written from its Policy (seatbelt.go) and applied
// by /usr/bin/sandbox-exec, which execs forkbomb itself as the sandbox's
// init (seatbelt_init_darwin.go) inside the profile:
//
//	forkbomb ── sandbox-exec -f PROFILE -- FORKBOMB INIT PARENT run ARGV…
//	              └─ (exec, confined) init ── the command and its descendants
//
// The init tells forkbomb on a status pipe (fd 3, the records of
// status.go) that the command started or why not, and, once it has ended
// every other process of the sandbox, that it is done. forkbomb keeps the
// rest, as on Linux: the environment allowlist, the private temp dir and
// home, the timeout, the output cap, and — when the init is gone — a kill
// of its process group from outside.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Notice is said once by forkbomb sandbox and its probe on macOS.
const Notice = "macOS support is untested on real hardware until a macOS runner passes its attack tests (docs/SECURITY.md, the macOS column)"

// backends are the Modes a Policy may ask for on macOS.
var backends = []Mode{ModeAuto, ModeSeatbelt}

// sandboxExec applies a profile and execs a program under it. Only this
// path is used, never one from $PATH.
const sandboxExec = "/usr/bin/sandbox-exec"

// seatbeltGrace is how long the init has to end the sandbox after forkbomb
// asks (a timeout, the output cap, Ctrl-C) before forkbomb kills it and
// its process group.
const seatbeltGrace = 10 * time.Second

// Loaders: dyld is not a program a profile's exec rules see, so there is
// none to allow with an allow-list.
func Loaders() []string { return nil }

func runConfined(ctx context.Context, r *resolved, stdio Stdio) (*Result, error) {
	return runSeatbelt(ctx, r, stdio, nil)
}

// seatbeltRefusals refuses what the seatbelt backend cannot do rather
// than do it weaker.
func (r *resolved) seatbeltRefusals() error {
	if r.Overlay != nil {
		return policyErr("Overlay", "", "an overlay workdir needs Linux's namespaces backend; macOS forks are copies")
	}
	if r.User != nil && os.Getuid() == 0 {
		// Elsewhere the ids are what the command sees of itself only, and
		// it is not root either way; as root it would stay root.
		return policyErr("User", fmt.Sprintf("%d:%d", r.User.UID, r.User.GID), "another uid inside needs a user namespace, which macOS has not; run forkbomb as an ordinary user")
	}
	return nil
}

// seatbeltWarnings name the limits macOS cannot enforce.
func (r *resolved) seatbeltWarnings() []string {
	var w []string
	for _, l := range []struct {
		set  bool
		what string
	}{{r.Memory > 0, "--memory"}, {r.Pids > 0, "--pids"}, {r.CPUs > 0, "--cpus"}} {
		if l.set {
			w = append(w, l.what+" is not enforced on macOS (no cgroups, and its rlimits count per user or not at all)")
		}
	}
	return w
}

// seatbeltSpec gathers what r's profile says from the filesystem: the git
// metadata of the writable trees, the toolchains, forkbomb's own program.
func (r *resolved) seatbeltSpec(privTmp, privHome string) (seatbeltSpec, error) {
	s := seatbeltSpec{resolved: r, PrivTmp: privTmp, PrivHome: privHome, ToolchainPaths: r.toolchainDirs()}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return s, fmt.Errorf("%w: forkbomb's own program: %v", ErrSetup, err)
	}
	s.Init = exe
	writable := append([]string{r.Workdir}, r.ReadWrite...)
	gitDirs := r.GitDirs
	if gitDirs == nil {
		for _, w := range writable {
			found, err := FindGitDirs(w)
			if err != nil {
				return s, fmt.Errorf("%w: %v; forkbomb does not run a command in a tree it cannot check", ErrSetup, err)
			}
			gitDirs = append(gitDirs, found...)
		}
	}
	for _, g := range gitDirs {
		t, err := gitTargets(g, writable)
		if err != nil {
			return s, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		s.GitTargets = append(s.GitTargets, t...)
	}
	if len(s.GitTargets) > maxGitTargets {
		return s, fmt.Errorf("%w: more than %d git metadata paths to protect; refusing to run in this tree", ErrSetup, maxGitTargets)
	}
	return s, nil
}

// probeCheck is what a probe's init is given to look at: a file of the
// host it must not write, the caller's home it must not list.
type probeCheck struct {
	outside, home string
}

// runSeatbelt runs r's command in a sandbox of its own; with probe, the
// init inspects the sandbox instead and the result carries its report.
func runSeatbelt(ctx context.Context, r *resolved, stdio Stdio, probe *probeCheck) (*Result, error) {
	if err := r.seatbeltRefusals(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(sandboxExec); err != nil {
		return nil, fmt.Errorf("%w: %v; refusing to run unconfined (--no-sandbox accepts that)", ErrSetup, err)
	}
	priv, err := MkdirTemp("sbx")
	if err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	defer RemoveAll(priv)
	// Seatbelt judges resolved paths: $TMPDIR is under /var, a link.
	if priv, err = filepath.EvalSymlinks(priv); err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	privTmp, privHome := filepath.Join(priv, "tmp"), filepath.Join(priv, "home")
	for _, d := range []string{privTmp, privHome} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
		}
	}
	spec, err := r.seatbeltSpec(privTmp, privHome)
	if err != nil {
		return nil, err
	}
	profile, err := writeSeatbelt(spec)
	if err != nil {
		return nil, err
	}
	profilePath := filepath.Join(priv, "profile.sb")
	if err := os.WriteFile(profilePath, []byte(profile), 0o600); err != nil {
		return nil, fmt.Errorf("%w: profile: %v", ErrSetup, err)
	}
	if r.Proxy != nil {
		// No loopback of its own here: the forwarder takes the port on
		// the host's, which the profile lets the command reach alone.
		ln, err := listenProxyLoopback(r.Proxy.Port)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		defer ln.Close()
		sock := r.Proxy.Socket
		go serveProxy(ln, func() (net.Conn, error) { return net.DialTimeout("unix", sock, proxyDialTimeout) })
	}

	args := []string{"-f", profilePath, "--", spec.Init, seatbeltInitArg, strconv.Itoa(os.Getpid())}
	if probe != nil {
		args = append(args, "probe", probe.outside, probe.home)
	} else {
		args = append(append(args, "run"), r.Command...)
	}
	cmd := exec.Command(sandboxExec, args...)
	cmd.Dir = r.Workdir
	cmd.Env = buildEnv(r.Env, r.SetEnv, privHome, privTmp)
	// Its own session: no controlling terminal, and one process group
	// forkbomb can end from outside.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if stdio.Stdin != nil {
		// Copied through a pipe: a terminal of the caller's never reaches
		// the command (TIOCSTI needs one).
		cmd.Stdin = struct{ io.Reader }{stdio.Stdin}
		cmd.WaitDelay = 500 * time.Millisecond
	}
	var p atomic.Pointer[os.Process]
	var stopOnce sync.Once
	// stop asks the init to end the sandbox, then ends it from outside.
	// Before the start there is nothing to stop, and the call is no stop.
	stop := func() {
		proc := p.Load()
		if proc == nil {
			return
		}
		stopOnce.Do(func() {
			_ = proc.Signal(syscall.SIGTERM)
			time.AfterFunc(seatbeltGrace, func() { _ = proc.Kill() })
		})
	}
	limiter := &outputLimit{max: r.MaxOutput, onExceed: stop}
	// The output always crosses a pipe, so that the cap holds and no
	// terminal of the caller's reaches the command.
	var copies sync.WaitGroup
	var readEnds, writeEnds []*os.File
	defer func() {
		for _, f := range append(readEnds, writeEnds...) {
			f.Close()
		}
	}()
	for _, dst := range []io.Writer{stdio.Stdout, stdio.Stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		readEnds, writeEnds = append(readEnds, pr), append(writeEnds, pw)
		copies.Add(1)
		go func() {
			defer copies.Done()
			limiter.copy(dst, pr)
		}()
	}
	cmd.Stdout, cmd.Stderr = writeEnds[0], writeEnds[1]
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer statusR.Close()
	cmd.ExtraFiles = []*os.File{statusW}
	err = cmd.Start()
	// The init holds its own copies now; ours would keep the pipes open.
	for _, f := range append(writeEnds, statusW) {
		f.Close()
	}
	writeEnds = nil
	if err != nil {
		waitCopies(&copies, readEnds)
		return nil, fmt.Errorf("%w: %s: %v", ErrSetup, sandboxExec, err)
	}
	p.Store(cmd.Process)
	if limiter.exceeded() { // passed before the start was stored
		stop()
	}
	if r.Nice > 0 && r.Yield == nil {
		// Policy.Nice: macOS's priority is the process's, and what it
		// starts afterwards inherits it. It is set just after the start,
		// so anything started before then keeps the caller's: a request
		// here, not a guarantee. Under a Yield nothing is lowered: no
		// unprivileged caller could raise it back.
		if own, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, min(own+r.Nice, 20))
		}
	}
	var timedOut, interrupted atomic.Bool
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
			timedOut.Store(true)
			stop()
		case <-ctx.Done():
			interrupted.Store(true)
			stop()
		}
	}()

	status, statusErr := readStatus(statusR) // ends when the init does
	// What is left of its process group dies now, while the init is not
	// yet reaped, so its pid (the group's id) cannot be anyone else's.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	close(done)
	waitErr := cmd.Wait()
	waitCopies(&copies, readEnds)

	ours := timedOut.Load() || interrupted.Load() || limiter.exceeded()
	if errors.Is(statusErr, errNoStart) && ours {
		statusErr, status = nil, &initStatus{Started: true, Exited: true} // we ended it: report why
	}
	switch {
	case errors.Is(statusErr, errNoStart):
		return nil, fmt.Errorf("%w: sandbox-exec ended before the sandbox's init started (%v; its message, if any, is on stderr)", ErrSetup, waitErr)
	case statusErr != nil:
		return nil, statusErr
	case status.Error != "":
		return nil, status.err()
	case probe != nil && status.Probe == nil:
		return nil, fmt.Errorf("%w: the init sent no probe report", ErrSetup)
	case probe == nil && !status.Exited && !ours:
		return nil, fmt.Errorf("%w: the sandbox's init ended before the command's end (killed from inside the sandbox?); its process group was killed, and a process that left it may still run", ErrSetup)
	}
	res := &Result{Mode: ModeSeatbelt, Init: spec.Init, Warnings: r.seatbeltWarnings(), probe: status.Probe}
	if status.Warning != "" {
		res.Warnings = append(res.Warnings, status.Warning)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		res.ExitCode = exitCodeOf(ws)
	}
	res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	switch {
	case interrupted.Load():
		return res, ctx.Err()
	case timedOut.Load():
		res.TimedOut, res.ExitCode = true, ExitTimeout
	case limiter.exceeded():
		res.Limit, res.ExitCode = "output", ExitKilledByLimit
	}
	return res, nil
}

// err is the error a refusal record stands for.
func (s *initStatus) err() error {
	switch s.Kind {
	case "notfound":
		return fmt.Errorf("%w: %s", ErrCommandNotFound, s.Error)
	case "notexec":
		return fmt.Errorf("%w: %s", ErrCommandNotExecutable, s.Error)
	}
	return fmt.Errorf("%w: %s", ErrSetup, s.Error)
}

// Probe reports what the seatbelt backend enforces here, by running its
// init in a real sandbox that looks at itself from inside.
func Probe(ctx context.Context) (*ProbeReport, error) { return ProbeWith(ctx, ProbeOptions{}) }

// ProbeWith is Probe; ProbeOptions.Init names Linux's standalone init,
// which macOS has not.
func ProbeWith(ctx context.Context, o ProbeOptions) (*ProbeReport, error) {
	rep := &ProbeReport{Mode: ModeNone, UID: os.Getuid(), Notice: Notice}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		rep.Kernel = "Darwin " + unix.ByteSliceToString(u.Release[:])
	}
	if v, err := unix.Sysctl("kern.osproductversion"); err == nil {
		rep.Kernel = "macOS " + v + ", " + rep.Kernel
	}
	dir, err := MkdirTemp("probe")
	if err != nil {
		return nil, err
	}
	defer RemoveAll(dir)
	work, outside := filepath.Join(dir, "work"), filepath.Join(dir, "outside")
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, err
	}
	r, err := Policy{Command: []string{"true"}, Workdir: work}.resolve()
	if err != nil {
		return nil, err
	}
	res, err := runSeatbelt(ctx, r, Stdio{}, &probeCheck{outside: outside, home: r.Home})
	if err != nil {
		rep.add("seatbelt", false, err.Error())
		return rep, nil
	}
	rep.Mode = ModeSeatbelt
	rep.Layers = append(rep.Layers, res.probe.Layers...)
	rep.addTier("resource limits", false, "none", "macOS has no cgroups: --memory, --pids and --cpus are not enforced; core dumps are off")
	rep.addTier("timeout, output cap", true, "forkbomb", "forkbomb's timer and its copy of the output; the init then ends the sandbox")
	rep.Init = &InitReport{Path: res.Init, Reason: "forkbomb itself, run by sandbox-exec inside the profile (macOS has no separate init)"}
	return rep, nil
}

// landlockNetABI: no Landlock here.
func landlockNetABI() int { return 0 }
