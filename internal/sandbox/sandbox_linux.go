package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// errNamespacesRefused marks a failure to build the namespaces before
// anything ran: ModeAuto then falls back to Landlock alone.
var errNamespacesRefused = errors.New("namespaces refused")

// runConfined builds the sandbox and runs the command in it, on the best
// backend the machine allows (confine).
func runConfined(ctx context.Context, r *resolved, stdio Stdio) (*Result, error) {
	return confine(r, func(a attempt) (*Result, error) { return runOnce(ctx, r, a, stdio, false) })
}

// runProbe builds a sandbox with r's backend and returns what the init saw
// inside it.
func runProbe(ctx context.Context, r *resolved) (*ProbeReport, error) {
	res, err := confine(r, func(a attempt) (*Result, error) {
		return runOnce(ctx, r, a, Stdio{Stdout: io.Discard, Stderr: io.Discard}, true)
	})
	if err != nil {
		return nil, err
	}
	if res.probe == nil {
		return nil, fmt.Errorf("%w: the init sent no probe report", ErrSetup)
	}
	return res.probe, nil
}

// runOnce runs r.Command in a sandbox of its own, started for the attempt
// a (startInit): the init's streams are the command's, and its status
// pipe carries the command's start and end (the protocol in init_linux.go).
func runOnce(ctx context.Context, r *resolved, a attempt, stdio Stdio, probe bool) (*Result, error) {
	tr := tracer{stdio.Trace}
	var proc atomic.Pointer[initProc]
	limiter := &outputLimit{max: r.MaxOutput, onExceed: func() {
		if p := proc.Load(); p != nil {
			p.kill()
		}
	}}
	l := launch{stdin: stdio.Stdin, probe: probe, trace: stdio.Trace}
	var copies sync.WaitGroup
	var readEnds, writeEnds []*os.File
	// Closed once the init holds its own copies (or failed to start):
	// ours would keep the pipes open after the command.
	closeWriteEnds := func() {
		for _, f := range writeEnds {
			f.Close()
		}
		writeEnds = nil
	}
	for _, s := range []struct {
		dst io.Writer
		set **os.File
	}{{stdio.Stdout, &l.stdout}, {stdio.Stderr, &l.stderr}} {
		if f, ok := s.dst.(*os.File); ok && r.MaxOutput == 0 {
			*s.set = f
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			closeWriteEnds()
			copies.Wait()
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		*s.set = pw
		writeEnds, readEnds = append(writeEnds, pw), append(readEnds, pr)
		copies.Add(1)
		go func(dst io.Writer, src *os.File) {
			defer copies.Done()
			limiter.copy(dst, src)
		}(s.dst, pr)
	}
	defer func() {
		for _, f := range readEnds {
			f.Close()
		}
	}()

	p, err := startInit(r, a, l)
	closeWriteEnds()
	if err != nil {
		copies.Wait()
		return nil, err
	}
	proc.Store(p)
	// The cap may have been passed before the init was stored, its kill
	// then finding nothing to kill (a fast writer on a loaded machine):
	// kill it now.
	if limiter.exceeded() {
		p.kill()
	}
	defer func() {
		p.close()
		tr.mark("parent.cleaned-up")
	}()
	stop := p.watch(ctx, r.Timeout)
	pw := watchPids(p.cg, p.pidsNS, r.Pids, 0, p.kill)

	status, statusErr := readStatus(p.status)
	p.status.Close()
	tr.mark("parent.status-read")
	if statusErr == nil && status.Exited && p.mode == ModeNamespaces {
		// Nothing but the exiting init is left in the sandbox (its pid
		// namespace): its private folders go while the kernel unmounts.
		// close waits for this removal to finish.
		go p.removePriv()
	}
	<-p.exited
	tr.mark("parent.init-reaped")
	timedOut, interrupted := stop()
	pidsHit := pw.end()
	// Every process that could hold the pipes is dead by now; should one
	// have escaped (it cannot in namespace mode), stop copying rather
	// than wait for it.
	waitCopies(&copies, readEnds)

	if errors.Is(statusErr, errNoStart) && (timedOut || interrupted || limiter.exceeded() || pidsHit || p.cg.oomKills() > 0) {
		// we killed it, or its limits did (an init that cannot make a
		// thread under the pids limit dies too): report why — no fault of
		// the init's
		statusErr, status = nil, &initStatus{}
	}
	if err := p.refusal(status, statusErr); err != nil {
		return nil, err
	}
	res := &Result{Mode: p.mode, Init: initUsed(p.b), Warnings: p.warn, probe: status.Probe}
	if p.cmd.ProcessState == nil {
		return nil, fmt.Errorf("%w: wait: %v", ErrSetup, p.waitErr)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.ExitCode = exitCodeOf(ws)
	res.CPU = p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	switch {
	case interrupted:
		return res, ctx.Err()
	case timedOut:
		res.TimedOut, res.ExitCode = true, ExitTimeout
	case limiter.exceeded():
		res.Limit, res.ExitCode = "output", ExitKilledByLimit
	case p.cg.oomKills() > 0:
		res.Limit, res.ExitCode = "memory", ExitKilledByLimit
	case pidsHit:
		res.Limit, res.ExitCode = "pids", ExitKilledByLimit
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
	case "ns":
		return fmt.Errorf("%w: %w: %s", ErrSetup, errNamespacesRefused, s.Error)
	case "stale":
		return fmt.Errorf("%w: %w: %s", ErrSetup, errInitRefused, s.Error)
	}
	return fmt.Errorf("%w: %s", ErrSetup, s.Error)
}

// backends are the Modes a Policy may ask for on Linux.
var backends = []Mode{ModeAuto, ModeNamespaces, ModeLandlock}
