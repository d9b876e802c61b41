package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// podReadyTimeout bounds how long a fork waits for its pod to run (an
// image missing on the node, a cluster out of room).
const podReadyTimeout = 3 * time.Minute

// stream runs argv in the fork's pod over the API's exec and returns its
// exit code; a non-nil error means it could not be run or was cut off.
func (s *Store) stream(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	u, err := url.Parse(s.o.Config.Host)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", pod, err)
	}
	u.Path = path.Join(u.Path, s.o.Config.APIPath, "/api/v1/namespaces", s.o.Namespace, "pods", pod, "exec")
	q := url.Values{"container": {container}, "stdout": {"true"}, "stderr": {"true"}}
	if stdin != nil {
		q.Set("stdin", "true")
	}
	for _, a := range argv {
		q.Add("command", a)
	}
	u.RawQuery = q.Encode()
	cfg := rest.CopyConfig(s.o.Config)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", pod, err)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// client-go may return before its stdout and stderr copies have
	// finished: the gate orders every write before the return and drops
	// what comes after, so the caller owns its writers again once stream
	// returns (a fork's log is written next by the race).
	g := newGate()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: g.wrap(stdout), Stderr: g.wrap(stderr)})
	g.close()
	var ce exec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ce):
		return ce.Code, nil
	}
	return -1, fmt.Errorf("exec in %s: %w", pod, err)
}

// ready makes the fork's pod from its first command's policy, waits for
// it to run, and sends it the pid 1's tree.
func (s *Store) ready(ctx context.Context, name string, fs *forkState, p sandbox.Policy) error {
	fs.ready.Do(func() { fs.err = s.start(ctx, name, fs, p) })
	return fs.err
}

func (s *Store) start(ctx context.Context, name string, fs *forkState, p sandbox.Policy) error {
	deadline := s.o.Deadline
	if p.Timeout > 0 && p.Timeout+10*time.Minute < deadline {
		deadline = p.Timeout + 10*time.Minute // the agent's time, then the diff's
	}
	po := PodOptions{Name: fs.obj, Run: fs.pid1, Image: s.o.Image, RuntimeClass: s.o.RuntimeClass,
		DeadlineSeconds: int64(deadline / time.Second), Owner: fs.anchor}
	if p.Memory > 0 {
		po.Memory = p.Memory
	}
	if p.CPUs > 0 {
		po.CPUs = p.CPUs
	}
	var err error
	if s.crd {
		_, err = s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Create(ctx, sandboxObject(po), metav1.CreateOptions{})
	} else {
		_, err = s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Create(ctx, pod(po), metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create the pod of %s: %w", name, err)
	}
	if err := s.waitRunning(ctx, fs.obj); err != nil {
		return err
	}
	tree, err := s.o.Local.Snapshot(ctx, fs.pid1)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(ctx, pw, tree)) }()
	var errb limitedBuffer
	errb.max = 4 << 10
	code, err := s.stream(ctx, fs.obj, []string{"/bin/tar", "-x", "-f", "-", "-C", "/work"}, pr, nil, &errb)
	pr.Close()
	if err != nil {
		return fmt.Errorf("send the tree to %s: %w", name, err)
	}
	if code != 0 {
		return fmt.Errorf("send the tree to %s: tar exited %d: %s", name, code, errb.String())
	}
	if err := s.sendBin(ctx, fs); err != nil {
		return err
	}
	if fs.mode, err = s.probeWalls(ctx, fs.obj); err != nil {
		return fmt.Errorf("fork %s: %w", name, err)
	}
	fs.filesMu.Lock()
	defer fs.filesMu.Unlock()
	if err := s.replay(ctx, name, fs); err != nil {
		return err
	}
	fs.started.Store(true)
	return nil
}

// ErrNoWalls: forkbomb's sandbox works in none of its backends in a
// fork's pod, so the fork runs nothing there (never the pod's walls
// alone).
var ErrNoWalls = errors.New("forkbomb's sandbox cannot confine commands in this pod")

// probeWalls asks forkbomb's sandbox in the pod which backend confines
// there (sandbox.Probe, run by the pod's runner): namespaces where the
// pod's runtime lets its user make them, else Landlock and seccomp alone.
func (s *Store) probeWalls(ctx context.Context, pod string) (sandbox.Mode, error) {
	argv, err := podrun.Argv(podBin, podrun.Spec{Probe: true})
	if err != nil {
		return "", err
	}
	out, code, err := s.output(ctx, pod, shellLine(argv), nil, 1<<20)
	if err != nil {
		return "", fmt.Errorf("%w: its probe: exit %d: %v", ErrNoWalls, code, err)
	}
	var rep sandbox.ProbeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return "", fmt.Errorf("%w: its probe: %v", ErrNoWalls, err)
	}
	switch rep.Mode {
	case sandbox.ModeNamespaces, sandbox.ModeLandlock:
		return rep.Mode, nil
	}
	var why []string
	for _, l := range rep.Layers {
		if l.Status != "ok" {
			why = append(why, l.Name+": "+l.Detail)
		}
	}
	return "", fmt.Errorf("%w (%s)", ErrNoWalls, strings.Join(why, "; "))
}

// shellLine quotes argv as one line of sh.
func shellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// confined is the line of sh that runs script (sh -c, with args as $1…)
// in the fork's tree inside forkbomb's sandbox in the pod, offline: for
// what forkbomb itself runs there over the fork's files (its git diff),
// which a planted git config or attributes file could otherwise turn into
// a command with the pod's walls alone.
func confined(mode sandbox.Mode, timeout time.Duration, script string, args ...string) (string, error) {
	argv, err := podrun.Argv(podBin, podrun.Spec{Workdir: podRoot, Mode: mode, Network: sandbox.NetworkNone, Timeout: timeout},
		append([]string{"/bin/sh", "-c", script, "sh"}, args...)...)
	if err != nil {
		return "", err
	}
	return shellLine(argv), nil
}

// runnerSpec is the pod's half of a fork's policy: what the command may
// do inside forkbomb's sandbox in the pod. Its tree is the pod's copy;
// its network is none (no socket at all on the landlock backend, a
// loopback of its own on namespaces — whatever the cluster's CNI does),
// or, for a command with the proxy network, the pod's own, where the
// tunnel's forwarder listens on 127.0.0.1 (the run's NetworkPolicy then
// decides what else it reaches). The limits are the pod's cgroup's
// (podSpec): the sandbox in a pod has no cgroup of its own, and its
// stand-ins (RLIMIT_DATA per process, RLIMIT_NPROC per user, which counts
// the user's processes on the whole node) would be weaker and wrong.
func runnerSpec(mode sandbox.Mode, p sandbox.Policy) podrun.Spec {
	sp := podrun.Spec{Workdir: podRoot, Mode: mode, Network: sandbox.NetworkNone,
		SetEnv: p.SetEnv, Placeholders: p.Placeholders, Timeout: p.Timeout}
	switch p.Network {
	case sandbox.NetworkProxy, sandbox.NetworkHost:
		sp.Network = sandbox.NetworkHost
	}
	return sp
}

// waitRunning polls the pod until it runs; one that fails, or does not
// run in time, is an error naming why (its waiting reason).
func (s *Store) waitRunning(ctx context.Context, pod string) error {
	ctx, cancel := context.WithTimeout(ctx, podReadyTimeout)
	defer cancel()
	delay := 50 * time.Millisecond
	var why string
	for {
		u, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			switch phase {
			case "Running":
				return nil
			case "Failed", "Succeeded":
				return fmt.Errorf("pod %s ended before its agent started (%s)", pod, phase)
			}
			why = waitingReason(u)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s did not run within %s (%s): %w", pod, podReadyTimeout, why, ctx.Err())
		case <-time.After(delay):
		}
		if delay < time.Second {
			delay *= 2
		}
	}
}

func waitingReason(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "containerStatuses")
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			if r, ok, _ := unstructured.NestedString(m, "state", "waiting", "reason"); ok {
				msg, _, _ := unstructured.NestedString(m, "state", "waiting", "message")
				return strings.TrimSpace(r + " " + msg)
			}
		}
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase
}

// Exec runs a command in the fork's pod: in its tree, with only the
// policy's own variables, bounded by its timeout (in the pod, and again
// here) and its output cap. When it ends every other process of the
// agent's user in the pod is killed, as the local sandbox's init does.
func (s *Store) Exec(ctx context.Context, name string, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	s.mu.Lock()
	fs := s.forks[name]
	s.mu.Unlock()
	if fs == nil {
		return nil, fmt.Errorf("exec in %s: not a fork of this store", name)
	}
	if len(p.Command) == 0 {
		return nil, fmt.Errorf("exec in %s: %w: no command", name, sandbox.ErrInvalidPolicy)
	}
	if err := s.ready(ctx, name, fs, p); err != nil {
		return nil, err
	}
	var tun *podTunnel
	if p.Network == sandbox.NetworkProxy {
		var err error
		if tun, err = s.openTunnel(ctx, name, fs, p.Proxy); err != nil {
			return nil, err
		}
		defer tun.stop()
	}
	for _, kv := range p.SetEnv {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("exec in %s: %w: %q is not NAME=VALUE", name, sandbox.ErrInvalidPolicy, kv)
		}
	}
	run, err := podrun.Argv(podBin, runnerSpec(fs.mode, p), p.Command...)
	if err != nil {
		return nil, err
	}
	// The runner's own environment: the sandbox passes on only its
	// allowlist and the spec's variables.
	argv := append([]string{"/bin/env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp/home", "TMPDIR=/tmp", "LANG=C.UTF-8"}, run...)
	cctx := ctx
	if p.Timeout > 0 {
		// the sandbox's timeout ends the command in the pod; this one
		// ends the exec if the pod does not answer
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, p.Timeout+30*time.Second)
		defer cancel()
	}
	res := &sandbox.Result{Mode: fs.mode}
	out, errw := stdio.Stdout, stdio.Stderr
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	cctx, cancelOut := context.WithCancel(cctx)
	defer cancelOut()
	if tun != nil {
		var cancelTun context.CancelFunc
		cctx, cancelTun = tun.bind(cctx) // a lost tunnel stops the command
		defer cancelTun()
	}
	capw := &capWriter{max: p.MaxOutput, cancel: cancelOut}
	start := time.Now()
	code, err := s.stream(cctx, fs.obj, argv, stdio.Stdin, capw.wrap(out), capw.wrap(errw))
	if tun != nil {
		if lost := tun.stop(); lost != nil && ctx.Err() == nil { // a caller's cancel is a kill, below
			s.killAll(ctx, fs.obj)
			return nil, fmt.Errorf("exec in %s: %w", name, lost)
		}
	}
	s.killAll(ctx, fs.obj)
	switch {
	case capw.over:
		res.Limit, res.ExitCode = "output", -1
	case p.Timeout > 0 && time.Since(start) >= p.Timeout && (err != nil || code == podrun.ExitTimeout):
		// killed by the sandbox's timeout in the pod, or cut off here
		res.TimedOut, res.ExitCode = true, -1
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	default:
		res.ExitCode = code
		if code == 137 && p.Memory > 0 && s.oomKilled(ctx, fs.obj) {
			res.Limit = "memory"
		}
	}
	return res, nil
}

// killAll ends every process of the agent's user in the pod but its
// sleeping init (kill -1 spares pid 1 and itself). It runs after the
// caller's cancel too (that cancel is what asked for the kill), so it
// outlives ctx, bounded.
func (s *Store) killAll(ctx context.Context, pod string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	s.stream(ctx, pod, []string{"/bin/kill", "-9", "-1"}, nil, nil, nil)
}

// oomKilled reports whether the pod's cgroup killed a process for memory
// (the container's last OOM, as the kubelet saw it).
func (s *Store) oomKilled(ctx context.Context, pod string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return strings.Contains(fmt.Sprint(u.Object["status"]), "OOMKilled")
}

// gate passes writes to its writers until it is closed, one at a time,
// and drops them after. close waits for a write under way, so every write
// happens before it returns; a write stuck longer than gateWait (a pipe
// nobody reads) is left to finish on its own, bounded like every wait.
type gate struct {
	sem    chan struct{} // one write at a time; close takes it too
	closed atomic.Bool
}

const gateWait = 5 * time.Second

var errGateClosed = errors.New("exec output after the exec returned")

func newGate() *gate { return &gate{sem: make(chan struct{}, 1)} }

func (g *gate) wrap(w io.Writer) io.Writer { return gated{g, w} }

func (g *gate) close() {
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case g.sem <- struct{}{}:
		g.closed.Store(true)
		<-g.sem
	case <-t.C:
		g.closed.Store(true)
	}
}

type gated struct {
	g *gate
	w io.Writer
}

func (x gated) Write(p []byte) (int, error) {
	x.g.sem <- struct{}{}
	defer func() { <-x.g.sem }()
	if x.g.closed.Load() {
		return 0, errGateClosed
	}
	return x.w.Write(p)
}

// capWriter cuts a command's output at max bytes (0: none) and stops it;
// it also serialises the stdout and stderr copies, which client-go runs in
// goroutines of their own, onto writers that may be one (a fork's log).
type capWriter struct {
	mu     sync.Mutex // stdout and stderr are copied by goroutines of their own
	max    int64
	n      int64
	over   bool
	cancel context.CancelFunc
}

func (c *capWriter) wrap(w io.Writer) io.Writer { return capped{c, w} }

type capped struct {
	c *capWriter
	w io.Writer
}

func (c capped) Write(p []byte) (int, error) {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	if c.c.over {
		return 0, errors.New("output limit reached")
	}
	if c.c.max > 0 && c.c.n+int64(len(p)) > c.c.max {
		c.c.over = true
		c.c.cancel()
		p = p[:c.c.max-c.c.n]
	}
	c.c.n += int64(len(p))
	return c.w.Write(p)
}

// limitedBuffer keeps at most max bytes and reports whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return n, nil
	}
	b.Buffer.Write(p)
	return n, nil
}
