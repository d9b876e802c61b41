package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// podReadyTimeout bounds how long a fork waits for its pod to run (an
// image missing on the node, a cluster out of room); treeTimeout, the
// pod's start after that (the tree at ≥ 10 MB/s for a 9 GB repository).
const (
	podReadyTimeout = 3 * time.Minute
	treeTimeout     = 15 * time.Minute
)

// stream runs argv in the fork's pod over the API's exec and returns its
// exit code; a non-nil error means it could not be run or was cut off.
func (s *Store) stream(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	s.execs.Add(1)
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
	if wp := s.claim(ctx, fs, p); wp != nil {
		s.mu.Lock()
		fs.obj = wp.name() // Remove reads it under s.mu
		s.mu.Unlock()
		fs.mode, fs.scoped = wp.mode, wp.scoped
		if !s.owned(name, fs) { // removed while it claimed: the pod goes too
			s.deleteFork(context.WithoutCancel(ctx), fs.obj)
			return fmt.Errorf("fork %s was removed", name)
		}
		return s.started(ctx, name, fs)
	}
	deadline := s.o.Deadline
	if p.Timeout > 0 && p.Timeout+10*time.Minute < deadline {
		deadline = p.Timeout + 10*time.Minute // the agent's time, then the diff's
	}
	po := PodOptions{Name: fs.obj, Run: fs.pid1, Image: s.o.Image, RuntimeClass: s.o.RuntimeClass,
		DeadlineSeconds: int64(deadline / time.Second), Owner: fs.anchor, bin: s.binParts}
	if p.Memory > 0 {
		po.Memory = p.Memory
	}
	if p.CPUs > 0 {
		po.CPUs = p.CPUs
	}
	if fs.image != "" {
		po.Image, po.TreeInImage = fs.image, true
	}
	sandboxUID, err := s.makePod(ctx, po)
	if err != nil {
		return fmt.Errorf("create the pod of %s: %w", name, err)
	}
	if !s.owned(name, fs) { // removed while its pod was made: the pod goes too
		s.deleteFork(context.WithoutCancel(ctx), fs.obj)
		return fmt.Errorf("fork %s was removed", name)
	}
	node, err := s.waitOurs(ctx, po, sandboxUID)
	if err != nil {
		return fmt.Errorf("fork %s: %w", name, err)
	}
	if fs.mode, fs.scoped, err = s.sendTree(ctx, fs, node); err != nil {
		return fmt.Errorf("fork %s: %w", name, err)
	}
	return s.started(ctx, name, fs)
}

// makePod makes a pod of po's: a plain pod, or where forks are
// Sandboxes (s.crd) a Sandbox of it, whose uid it returns — the pod's
// owner once agent-sandbox's controller has made it.
func (s *Store) makePod(ctx context.Context, po PodOptions) (types.UID, error) {
	if !s.crd {
		_, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Create(ctx, pod(po), metav1.CreateOptions{})
		return "", err
	}
	made, err := s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Create(ctx, sandboxObject(po), metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return made.GetUID(), nil
}

// waitOurs waits for makePod's pod to run (waitRunning) and returns its
// node. A Sandbox's pod must be the one agent-sandbox's controller made
// for it from the template as forkbomb wrote it (sandboxPod).
func (s *Store) waitOurs(ctx context.Context, po PodOptions, sandbox types.UID) (string, error) {
	node, err := s.waitRunning(ctx, po.Name, sandbox)
	if err != nil || sandbox == "" {
		return node, err
	}
	if err := s.sandboxPod(ctx, po, sandbox); err != nil {
		return "", fmt.Errorf("its Sandbox's pod is not forkbomb's: %w", err)
	}
	return node, nil
}

// sandboxPod checks that the pod of po's Sandbox (of uid sandbox) is what
// agent-sandbox's controller makes of forkbomb's template (controllerMade:
// the annotations its maker set the controller's list of the labels it
// copied alone) and that its spec is forkbomb's (specIs; the template is
// the Sandbox's, which whoever may update Sandboxes could change
// meanwhile).
func (s *Store) sandboxPod(ctx context.Context, po PodOptions, sandbox types.UID) error {
	u, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, po.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sb, err := s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Get(ctx, po.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if sb.GetUID() != sandbox {
		return fmt.Errorf("the Sandbox %s was made again", po.Name)
	}
	if err := controllerMade(u, sb, templateLabels(po), nil, func(k, _ string) bool { return k == sandboxPropagatedLabels }); err != nil {
		return err
	}
	return specIs(u, podSpec(po))
}

// controllerMade checks that pod u is as agent-sandbox's controller makes
// it of Sandbox sb: controlled by sb (by uid), not made before it — the
// controller adopts a pod someone made first under the Sandbox's name if
// it carries the name hash —; its labels the template's, the name hash
// and extra (the extensions' own) alone, with the controller's list of the
// template's it copied; the annotations its maker set (makersAnnotations)
// each allowed, by key and value; no finalizer. A label could match
// another NetworkPolicy, an annotation give the pod a network or runtime
// option.
func controllerMade(u, sb *unstructured.Unstructured, template, extra map[string]string, allowed func(k, v string) bool) error {
	if err := ownedBy(u, sb.GetUID()); err != nil {
		return err
	}
	if made, sbMade := u.GetCreationTimestamp(), sb.GetCreationTimestamp(); made.Before(&sbMade) {
		return fmt.Errorf("pod %s was made before its Sandbox", u.GetName())
	}
	keys := slices.Sorted(maps.Keys(template))
	labels := maps.Clone(template)
	maps.Copy(labels, extra)
	labels[sandboxNameHashLabel] = sandboxNameHash(sb.GetName())
	if got := u.GetLabels(); !maps.Equal(got, labels) {
		return fmt.Errorf("pod %s: labels %v, not the template's and the controller's %v", u.GetName(), got, labels)
	}
	if got := u.GetAnnotations()[sandboxPropagatedLabels]; got != strings.Join(keys, ",") {
		return fmt.Errorf("pod %s: the controller's list of copied labels is %q", u.GetName(), got)
	}
	// annotations other components add as the pod runs (a CNI's record
	// of its address) are not asked of the pod by its maker
	made, err := makersAnnotations(u)
	if err != nil {
		return fmt.Errorf("pod %s: %w", u.GetName(), err)
	}
	for _, k := range made {
		if !allowed(k, u.GetAnnotations()[k]) {
			return fmt.Errorf("pod %s was made with annotations not the controller's: %q=%q", u.GetName(), k, u.GetAnnotations()[k])
		}
	}
	if len(u.GetFinalizers()) > 0 {
		return fmt.Errorf("pod %s has finalizers %v", u.GetName(), u.GetFinalizers())
	}
	return nil
}

// makersAnnotations are the keys of the annotations set by pod u's maker:
// the field manager that set its spec (no other sets a pod's spec), in the
// API server's record of which manager set which field (managedFields).
func makersAnnotations(u *unstructured.Unstructured) ([]string, error) {
	for _, mf := range u.GetManagedFields() {
		if mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
			Spec json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			return nil, err
		}
		if fields.Spec == nil {
			continue
		}
		var keys []string
		for k := range fields.Metadata.Annotations {
			if key, ok := strings.CutPrefix(k, "f:"); ok { // "." is the map itself
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		return keys, nil
	}
	return nil, errors.New("no record of its maker's fields")
}

// What agent-sandbox's controller (v1.0) puts on a Sandbox's pod: the
// FNV-1a hash of the Sandbox's name, and the keys of the labels it copied
// from the template.
const (
	sandboxNameHashLabel    = "agents.x-k8s.io/sandbox-name-hash"
	sandboxPropagatedLabels = "agents.x-k8s.io/propagated-labels"
)

func sandboxNameHash(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// started sends the pod what the editor wrote to the local fork before
// it, and marks the fork's pod as its tree's home from now on.
func (s *Store) started(ctx context.Context, name string, fs *forkState) error {
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

// Exit statuses of startScript besides the probe's.
const (
	stTarFailed = 20
	stNotEmpty  = 21 // /work or /tmp held something before the tree
	stNotAlone  = 22 // another process ran in the pod before the tree
)

// startScript unpacks the tree and forkbomb's binary in /work (stdin:
// writeTar's stream), checks the binary's SHA-256 ($1) and, with probe,
// runs its probe, whose report is the output (Store.outputWith): one exec
// for all. With inImage the pod's image holds both (a tree image): they
// are checked, not sent. freshCheck runs before it.
func startScript(probe, inImage, binInPod bool) string {
	sum := `[ "$(sha256sum <` + podBin + ` | cut -d' ' -f1)" = "$1" ] || exit ` + strconv.Itoa(stBadSum)
	var script string
	switch {
	case inImage:
		script = `[ -d ` + podRoot + `/.git ] || exit ` + strconv.Itoa(stTarFailed) + "\n" + sum
	case binInPod: // the stream holds the tree alone; the binary is checked
		script = `tar -x -f - -C /work || exit ` + strconv.Itoa(stTarFailed) + "\n" + sum
	default:
		script = `tar -x -f - -C /work || exit ` + strconv.Itoa(stTarFailed) + "\n" + sum + `
chmod 700 ` + podBin + ` || exit ` + strconv.Itoa(stTarFailed)
	}
	if probe {
		script += "\n" + shellLine(probeArgv)
	}
	return script
}

// freshCheck is shell text run first by a pod's start exec, in that
// exec's own shell (no process of its own): the pod must be as the
// runtime made it — no process but its sleeping pid 1 and this shell, its
// /tmp and /dev/shm empty, and /work empty unless the image holds the tree
// (inImage) but for the binary's read-only mount where the pod got the
// binary from its start (binInPod).
// Anything else was put there by someone other than forkbomb: a kept pod
// waits for its run (kept.go), and whoever may exec into the namespace's
// pods could have written to it meanwhile.
func freshCheck(inImage, binInPod bool) string {
	dirs := "/tmp /dev/shm"
	if !inImage {
		dirs += " /work"
	}
	skip, mount := "", ""
	if binInPod && !inImage {
		// the read-only mount of the binary's emptyDir (binmap.go), and
		// only that: a mount there, read-only
		skip = `[ "$f" = /work/.forkbomb ] && continue; `
		mount = `ro=; while read -r _ _ _ _ m o _; do [ "$m" = /work/.forkbomb ] && case "$o" in ro|ro,*) ro=1 ;; *) ro= ;; esac; done </proc/self/mountinfo; [ "$ro" = 1 ] || exit ` + strconv.Itoa(stNotEmpty) + `
`
	}
	return `for p in /proc/[0-9]*; do p=${p#/proc/}; if [ "$p" != 1 ] && [ "$p" != "$$" ]; then exit ` + strconv.Itoa(stNotAlone) + `; fi; done
for d in ` + dirs + `; do for f in "$d"/* "$d"/.[!.]* "$d"/..?*; do ` + skip + `if [ -e "$f" ] || [ -L "$f" ]; then exit ` + strconv.Itoa(stNotEmpty) + `; fi; done; done
` + mount
}

// probeArgv runs forkbomb's sandbox's probe in the pod.
var probeArgv = func() []string {
	argv, err := podrun.Argv(podBin, podrun.Spec{Probe: true})
	if err != nil {
		panic(err) // a constant spec
	}
	return argv
}()

// nodeProbe is the probe of forkbomb's sandbox on one node: the pods of
// a store share their spec, so one pod's answer is every pod's on that
// node (its kernel, its runtime). done is closed once mode or err is set.
type nodeProbe struct {
	once   sync.Once
	done   chan struct{}
	mode   sandbox.Mode
	scoped bool
	err    error
}

// resolveProbe gives np its answer, once, and wakes the pods waiting for
// it; a failed probe is forgotten, so that the node's next pod asks again.
func (s *Store) resolveProbe(node string, np *nodeProbe, mode sandbox.Mode, scoped bool, err error) {
	np.once.Do(func() {
		np.mode, np.scoped, np.err = mode, scoped, err
		close(np.done)
		if err != nil {
			s.mu.Lock()
			if s.probes[node] == np {
				delete(s.probes, node)
			}
			s.mu.Unlock()
		}
	})
}

// sendTree sends the pid 1's tree and forkbomb's binary into the fork's
// pod in one exec (or, in a pod of a tree image, checks they are there)
// and learns which backend of forkbomb's sandbox confines
// there (sandbox.Probe, run by the pod's runner, once per node):
// namespaces where the pod's runtime lets its user make them, else
// Landlock and seccomp alone.
func (s *Store) sendTree(ctx context.Context, fs *forkState, node string) (mode sandbox.Mode, scoped bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, treeTimeout) // an exec that stalls must not hold the fork
	defer cancel()
	bin, sum, err := s.podBinFile()
	if err != nil {
		return "", false, err
	}
	tree, err := s.o.Local.Snapshot(ctx, fs.pid1)
	if err != nil {
		return "", false, err
	}
	s.mu.Lock()
	np := s.probes[node]
	first := np == nil || node == ""
	if first {
		np = &nodeProbe{done: make(chan struct{})}
		if node != "" {
			s.probes[node] = np
		}
	}
	s.mu.Unlock()
	if first {
		// every way out of here answers the pods waiting for this probe,
		// if the probe's own answer has not (startInSession)
		defer func() { s.resolveProbe(node, np, mode, scoped, err) }()
	}
	if !s.noSessions {
		return s.startInSession(ctx, fs, tree, bin, sum, first, np, node)
	}
	inPod := s.binInPod(fs)
	script := startScript(first, fs.image != "", inPod)
	var out []byte
	var code int
	if fs.image != "" {
		out, code, err = s.outputFrom(ctx, fs.obj, freshCheck(true, false), script, []string{sum}, nil, 1<<20)
		switch code {
		case stBadSum:
			return "", false, fmt.Errorf("forkbomb's binary in the pod's image %s is not the one pushed", fs.image)
		case stTarFailed:
			return "", false, fmt.Errorf("the pod's image %s holds no tree at %s", fs.image, podRoot)
		}
	} else {
		pr, pw := io.Pipe()
		sent := bin
		if inPod {
			sent = ""
		}
		go func() { pw.CloseWithError(writeTar(ctx, pw, tree, sent)) }()
		out, code, err = s.outputFrom(ctx, fs.obj, freshCheck(false, inPod), script, []string{sum}, pr, 1<<20)
		pr.Close()
	}
	if code == stBadSum && inPod {
		return "", false, errors.New("forkbomb's binary in the pod is not the one its init container checked")
	}
	if code == stBadSum {
		// the binary's bytes were not those sent: again, alone
		if err := s.sendFile(ctx, fs.obj, bin, podBin); err != nil {
			return "", false, err
		}
		if first {
			out, code, err = s.probe(ctx, fs.obj)
		} else {
			code, err = 0, nil
		}
	}
	switch {
	case code == stNotEmpty:
		return "", false, errors.New("the pod's /work or /tmp was not empty before its tree: something other than forkbomb wrote to it")
	case code == stNotAlone:
		return "", false, errors.New("a process other than the pod's own ran in it before its tree: something other than forkbomb started it")
	case code == stTarFailed:
		return "", false, fmt.Errorf("send the tree: %v", err)
	case code < 0 && err != nil: // the exec itself failed: no word from the pod
		return "", false, fmt.Errorf("send the tree: %w", err)
	}
	if !first {
		if err != nil {
			return "", false, fmt.Errorf("send the tree: exit %d: %v", code, err)
		}
		select {
		case <-np.done:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
		if np.err == nil {
			return np.mode, np.scoped, nil
		}
		// that pod's probe failed: this one asks for itself
		out, code, err = s.probe(ctx, fs.obj)
	}
	return probeResult(out, code, err)
}

// probe runs forkbomb's sandbox's probe in the pod on its own.
func (s *Store) probe(ctx context.Context, pod string) ([]byte, int, error) {
	return s.output(ctx, pod, shellLine(probeArgv), nil, 1<<20)
}

// probeResult reads the probe's report: the backend that confines, or
// ErrNoWalls naming what failed.
//
// scoped says whether a command there can signal nothing outside its
// sandbox — its runner, its init, the tunnel's forwarder: a pid namespace
// (namespaces), or Landlock's signal scoping (ABI 6, Linux 6.12) — so
// that when the runner ends by itself nothing of the command's is left.
func probeResult(out []byte, code int, err error) (sandbox.Mode, bool, error) {
	if err != nil {
		return "", false, fmt.Errorf("%w: its probe: exit %d: %v", ErrNoWalls, code, err)
	}
	var rep sandbox.ProbeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return "", false, fmt.Errorf("%w: its probe: %v", ErrNoWalls, err)
	}
	switch rep.Mode {
	case sandbox.ModeNamespaces:
		return rep.Mode, true, nil
	case sandbox.ModeLandlock:
		abi := 0
		if l := rep.Layer("landlock"); l != nil && l.Status == "ok" {
			fmt.Sscanf(l.Detail, "ABI %d", &abi)
		}
		return rep.Mode, abi >= 6, nil
	}
	var why []string
	for _, l := range rep.Layers {
		if l.Status != "ok" {
			why = append(why, l.Name+": "+l.Detail)
		}
	}
	return "", false, fmt.Errorf("%w (%s)", ErrNoWalls, strings.Join(why, "; "))
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
	argv, err := podrun.Argv(podBin, podrun.Spec{Workdir: podRoot, Mode: mode, Network: sandbox.NetworkNone, Timeout: timeout, Hide: podHide},
		append([]string{"/bin/sh", "-c", script, "sh"}, args...)...)
	if err != nil {
		return "", err
	}
	return shellLine(argv), nil
}

// podHide is what a command in a pod does not see: the pod's /work,
// forkbomb's binary and whatever else is kept there, but for the tree
// (the workdir, granted on top).
var podHide = []string{"/work"}

// runnerSpec is the pod's half of a fork's policy: what the command may
// do inside forkbomb's sandbox in the pod. Its tree is the pod's copy;
// its network is none (no socket at all on the landlock backend, a
// loopback of its own on namespaces — whatever the cluster's CNI does).
// A command with the proxy network reaches the tunnel's forwarder, which
// listens on the pod's 127.0.0.1: on the landlock backend through TCP to
// that port alone (Landlock's network rules, seccomp: no other socket);
// on namespaces, and for the host network, through the pod's own network,
// where the run's NetworkPolicy decides what else it reaches. The program
// rules go as they are: their paths must name the pod's programs (the
// image's), or the command fails. The limits are the pod's cgroup's
// (podSpec): the sandbox in a pod has no cgroup of its own, and its
// stand-ins (RLIMIT_DATA per process, RLIMIT_NPROC per user, which counts
// the user's processes on the whole node) would be weaker and wrong.
func runnerSpec(mode sandbox.Mode, p sandbox.Policy) podrun.Spec {
	sp := podrun.Spec{Workdir: podRoot, Mode: mode, Network: sandbox.NetworkNone, Hide: podHide,
		SetEnv: p.SetEnv, Placeholders: p.Placeholders, Timeout: p.Timeout,
		AllowPrograms: p.AllowPrograms, DenyPrograms: p.DenyPrograms}
	switch {
	case p.Network == sandbox.NetworkProxy && mode == sandbox.ModeLandlock && p.Proxy != nil:
		sp.Network, sp.ProxyPort = sandbox.NetworkProxy, p.Proxy.Port
	case p.Network == sandbox.NetworkProxy, p.Network == sandbox.NetworkHost:
		sp.Network = sandbox.NetworkHost
	}
	return sp
}

// waitRunning waits until the pod runs, watching it (a poll would see
// the change up to its interval late); one that fails, or does not run in
// time, is an error naming why (its waiting reason).
func (s *Store) waitRunning(ctx context.Context, pod string, owner types.UID) (string, error) {
	t0 := time.Now()
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, podReadyTimeout)
	defer cancel()
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	why := "not made yet"
	var uid types.UID // the pod's, once seen
	for {
		// the pod as it is now, then its changes from that version on
		u, err := pods.Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			if err := ownedBy(u, owner); err != nil {
				return "", err
			}
			uid = u.GetUID()
			if done, err := podRunning(u); done || err != nil {
				return nodeName(u), err
			}
			why = waitingReason(u)
			w, werr := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod, ResourceVersion: u.GetResourceVersion()})
			if werr == nil {
				for ev := range w.ResultChan() {
					if o, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Error {
						if err := ownedBy(o, owner); err != nil {
							w.Stop()
							return "", err
						}
						if done, err := podRunning(o); done || err != nil {
							w.Stop()
							return nodeName(o), err
						}
						why = waitingReason(o)
					}
				}
				w.Stop() // the watch ended (a timeout, a lost connection): look again
			}
		}
		select {
		case <-ctx.Done():
			// a limit (its own or the caller's), not a cancel (a loser, a
			// Ctrl-C)
			if !errors.Is(caller.Err(), context.Canceled) && uid != "" {
				if ev := s.lastWarning(pod, uid); ev != "" {
					why += "; its warnings: " + ev
				}
			}
			return "", fmt.Errorf("pod %s did not run within %s (%s): %w", pod, time.Since(t0).Round(time.Second), why, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastWarning names the warnings recorded for pod, of uid (not another
// pod of its name): a volume that cannot be mounted — the binary's parts
// deleted under it, binmap.go —, a failed scheduling. The newest of each
// reason, newest first, at most three, each quoted and cut short; "" where
// there is none or they cannot be read. Whoever may make events in the
// namespace can add to them: they are words for the error, never acted on.
func (s *Store) lastWarning(pod string, uid types.UID) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := s.dyn.Resource(eventGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod + ",involvedObject.uid=" + string(uid) + ",type=Warning"})
	if err != nil {
		return ""
	}
	at := func(u *unstructured.Unstructured) string {
		t, _, _ := unstructured.NestedString(u.Object, "lastTimestamp")
		if t == "" {
			t, _, _ = unstructured.NestedString(u.Object, "eventTime")
		}
		return t // RFC 3339, UTC: ordered as text
	}
	items := l.Items
	sort.SliceStable(items, func(i, j int) bool { return at(&items[i]) > at(&items[j]) })
	seen := map[string]bool{}
	var out []string
	for i := range items {
		reason, _, _ := unstructured.NestedString(items[i].Object, "reason")
		if seen[reason] || len(out) == 3 {
			continue
		}
		seen[reason] = true
		msg, _, _ := unstructured.NestedString(items[i].Object, "message")
		out = append(out, fmt.Sprintf("%.200q", reason+": "+msg))
	}
	return strings.Join(out, ", ")
}

// ownedBy checks that a fork's pod is its Sandbox's (owner; "": a pod
// forkbomb made itself, by a create that fails where the name is taken).
// agent-sandbox's controller makes a Sandbox's pod under the Sandbox's
// name, and leaves alone a pod someone made first under that name unless
// it carries the Sandbox's name hash (sandboxPod): that pod is still there
// by the name, and forkbomb must not send it the tree or run the fork in
// it.
func ownedBy(u *unstructured.Unstructured, owner types.UID) error {
	if owner == "" {
		return nil
	}
	for _, r := range u.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.UID == owner && r.Kind == "Sandbox" {
			return nil
		}
	}
	return fmt.Errorf("pod %s is not its Sandbox's (made by someone else under its name): the fork does not use it", u.GetName())
}

func nodeName(u *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
	return n
}

// podRunning reports whether the pod runs, or why it never will.
func podRunning(u *unstructured.Unstructured) (bool, error) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch phase {
	case "Running":
		return true, nil
	case "Failed", "Succeeded":
		if why := initFailure(u); why != "" {
			return true, fmt.Errorf("pod %s ended before its agent started: %s", u.GetName(), why)
		}
		return true, fmt.Errorf("pod %s ended before its agent started (%s)", u.GetName(), phase)
	}
	// a wait that cannot end: the image is not on the node and may not be
	// pulled (a tag), or its name is not one
	if why := waitingReason(u); strings.HasPrefix(why, "ErrImageNeverPull") || strings.HasPrefix(why, "InvalidImageName") {
		return true, fmt.Errorf("pod %s cannot start: %s", u.GetName(), why)
	}
	return false, nil
}

// waitingReason is why the pod's containers wait: the init container's
// (binmap.go) first, then the agent's.
func waitingReason(u *unstructured.Unstructured) string {
	for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
		cs, _, _ := unstructured.NestedSlice(u.Object, "status", list)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if r, ok, _ := unstructured.NestedString(m, "state", "waiting", "reason"); ok && r != "PodInitializing" {
					msg, _, _ := unstructured.NestedString(m, "state", "waiting", "message")
					if msg == "" {
						return r
					}
					return fmt.Sprintf("%s %.300q", r, msg) // the pod's status: quoted, cut short
				}
			}
		}
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase
}

// initFailure is why the pod's init container (binmap.go) failed, if it
// did: its exit status and its message, which the pod's user wrote and
// is quoted, cut short.
func initFailure(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "initContainerStatuses")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		code, ok, _ := unstructured.NestedInt64(m, "state", "terminated", "exitCode")
		if !ok || code == 0 {
			continue
		}
		msg, _, _ := unstructured.NestedString(m, "state", "terminated", "message")
		return fmt.Sprintf("its init container, which joins forkbomb's binary, exited %d: %q", code, truncate(strings.TrimSpace(msg), 300))
	}
	return ""
}

// Exec runs a command in the fork's pod inside forkbomb's sandbox there
// (runnerSpec): in its tree, with only the policy's own variables,
// bounded by its timeout (in the pod, and again here) and its output cap.
// When it ends the sandbox kills every process it left; when the exec is
// cut off first, every process of the agent's user in the pod is killed
// (killAll).
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
	spec := runnerSpec(fs.mode, p)
	if s.loosen != nil {
		s.loosen(&spec)
	}
	run, err := podrun.Argv(podBin, spec, p.Command...)
	if err != nil {
		return nil, err
	}
	argv := append(runnerEnv(), run...)
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
	code, err := s.run(cctx, fs.obj, argv, stdio.Stdin, capw.wrap(out), capw.wrap(errw))
	if tun != nil {
		if lost := tun.stop(); lost != nil && ctx.Err() == nil { // a caller's cancel is a kill, below
			s.killAll(ctx, fs.obj)
			return nil, fmt.Errorf("exec in %s: %w", name, lost)
		}
	}
	if err != nil || capw.over || !fs.scoped || code >= podrun.ExitSetup {
		// The exec was cut before the runner ended (a cancel, a timeout
		// here, the output cap, a lost stream), or the runner may not
		// have ended by itself (killed: by the pod's cgroup, or by the
		// command where its signals are not scoped): the command's
		// processes may still run in the pod. Only when the runner ends
		// by itself, unkillable by the command, has its sandbox killed
		// every process the command left — then no second exec.
		s.killAll(ctx, fs.obj)
	}
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

// runnerEnv starts the runner with its own environment alone: the sandbox
// passes on only its allowlist and the spec's variables.
func runnerEnv() []string {
	return []string{"/bin/env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp/home", "TMPDIR=/tmp", "LANG=C.UTF-8"}
}

// killAll ends every process of the agent's user in the pod but its
// sleeping init (kill -1 spares pid 1 and the caller: the pod's session
// server, else an exec of its own). It runs after the caller's cancel too
// (that cancel is what asked for the kill), so it outlives ctx, bounded.
func (s *Store) killAll(ctx context.Context, pod string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if se := s.session(ctx, pod); se != nil {
		if code, err, sent := se.kill(ctx); sent && err == nil && code == 0 {
			return
		}
	}
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

// close reports whether it found no write under way (false: one is
// stuck in its writer, left to finish on its own).
func (g *gate) close() bool {
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case g.sem <- struct{}{}:
		g.closed.Store(true)
		<-g.sem
		return true
	case <-t.C:
		g.closed.Store(true)
		return false
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
