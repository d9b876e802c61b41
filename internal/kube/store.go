package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Options say which cluster and how each fork's pod is made.
type Options struct {
	// Local holds the pid 1s and the judge's forks (see the package doc).
	Local *workspace.Store
	// Config is the cluster (LoadConfig reads the usual kubeconfig).
	Config    *rest.Config
	Namespace string // default "default"
	Image     string // default DefaultImage; imagePullPolicy is Never
	// RuntimeClass, when set, is each pod's runtimeClassName (gvisor,
	// kata, …): a stronger kernel boundary than the node's runc.
	RuntimeClass string
	// Deadline bounds each pod's life (activeDeadlineSeconds); default 2h.
	// Each pod's requests and limits are those of its first command's
	// policy (the race's sandbox.Limits).
	Deadline time.Duration
	// ProxyCIDR and ProxyPort, when set, are the one destination the
	// run's NetworkPolicy lets pods reach (forkbomb's model proxy).
	ProxyCIDR string
	ProxyPort int
	// UseSandboxCRD: "auto" (default: when the cluster serves
	// agents.x-k8s.io Sandbox), "always" or "never".
	UseSandboxCRD string
	// PodBin is the binary sent into each pod with its tree, to run
	// every command there inside forkbomb's sandbox (internal/podrun) and
	// the tunnel of a command with a proxy network (tunnel.go):
	// forkbomb-pod, or any forkbomb binary (default: os.Executable),
	// which must run in the image — statically linked, or the image
	// holds its libc.
	PodBin string
	// LeaseDuration is how long a run's anchor stays valid without a
	// renewal; a later forkbomb deletes a lapsed one. Default 60s.
	LeaseDuration time.Duration
	// Warm pods are started with each run, before its forks ask
	// (pool.go), with WarmMemory and WarmCPUs as their limits: a fork
	// whose first command asks for those limits claims one. 0: none.
	// Plain pods only (not with the Sandbox CRD).
	Warm       int
	WarmMemory int64
	WarmCPUs   float64
	// KeepWarm, when set, keeps Warm started pods of the run's kind
	// (image, limits) for the next run, for that long: Keep, after a run,
	// leaves them, a later run's warm pods claim them before making their
	// own, and a forkbomb that opens after that long deletes those
	// unclaimed (kept.go). They hold their limits' requests on the nodes
	// meanwhile. Not with a tree image (Registry).
	KeepWarm time.Duration
	// Registry, when set, is a repository prefix (host[:port]/path) the
	// nodes pull from and forkbomb pushes to: each run's pid 1 goes there
	// once as a tree image (treeimage.go) over Image, which must then be
	// in a registry too, and each fork's pod starts from it with the tree
	// in place instead of being sent it. "": each pod is sent the tree.
	Registry string
	// Progress, when set, is told what a run's start does that takes a
	// while (a tree image made and pushed, or found).
	Progress io.Writer
	// streamBin: forkbomb's binary is sent to each pod on its start even
	// where it could be kept in the namespace (binmap.go): a test's or a
	// benchmark's comparison
	streamBin bool
}

// DefaultImage is the image scripts/k8s-cluster imports (busybox and git).
const DefaultImage = "forkbomb.local/agent:v2"

// Store is the Kubernetes fork store; it implements run.Forks.
type Store struct {
	o      Options
	dyn    dynamic.Interface
	md     metadata.Interface // names and labels alone (binmap.go, Reap)
	holder string
	crd    bool // forks are agent-sandbox Sandboxes (sandboxGVR)
	// pools: kept warm pods are agent-sandbox's pools of Sandboxes
	// (kept_sandbox.go); crd and the cluster serves its extensions
	pools bool
	// claimOf is the claim of each pool Sandbox a run took, by the
	// Sandbox's name: the fork ends by deleting it (s.mu)
	claimOf map[string]*keptClaim
	mu      sync.Mutex
	runs    map[string]*runState  // pid 1 name → its anchor
	forks   map[string]*forkState // fork name → its pod
	probes  map[string]*nodeProbe // node name → forkbomb's sandbox's probe there
	// sessions are the started pods' sessions (session.go), by pod name
	sessions map[string]*sessionSlot
	// noSessions: no pod gets a session (a benchmark's comparison)
	noSessions bool
	// opener, if set, opens a pod's session in place of openSession (tests)
	opener func(ctx context.Context, pod string) (*session, error)
	// execs counts the execs made (stream), sessions' included
	execs   atomic.Int64
	stopped chan struct{}
	wg      sync.WaitGroup
	// the binary sent into each pod (podBinFile)
	binOnce     sync.Once
	bin, binSum string
	binErr      error
	binData     []byte // the binary's bytes, where small enough for ConfigMaps
	// binParts: the binary is in the namespace as ConfigMaps, and every
	// pod gets it from its start (binmap.go); unset: sent by the stream
	binParts binParts
	binAt    time.Time     // when the parts were last listed (s.mu)
	binStale time.Duration // binStaleAfter, but in tests
	// besidePort, when set, is ListenBeside's port (a test's script names
	// it); 0: a random one
	besidePort int
	// loosen, when set, changes every command's spec in its pod: a test's
	// control that weakens the walls to see a check catch it
	loosen func(*podrun.Spec)
	// claimTurn counts the store's claims of kept pods (claimKept)
	claimTurn atomic.Uint64
	// toKeep are the kinds of the runs ended, whose pools Keep tops up
	toKeep []PodOptions
}

type runState struct {
	anchor *unstructured.Unstructured
	stop   context.CancelFunc
	pool   chan *warmPod // the run's warm pods not yet claimed (pool.go)
	// keptClaims counts the run's claims of pool Sandboxes (kept_sandbox.go)
	keptClaims atomic.Int64
	ctx        context.Context // ended with the run (stop)
	// image is the run's tree image by its digest (Options.Registry),
	// set before the pid 1 is returned; "": the tree is sent to each pod
	image TreeImage
}

type forkState struct {
	pid1   string
	obj    string // the pod's name
	image  string // the run's tree image; "": the tree is sent at the pod's start
	anchor *unstructured.Unstructured
	ready  sync.Once
	err    error
	// started: the pod runs and holds the tree (no command, no patch)
	started atomic.Bool
	// filesMu orders the editor's calls (files.go) with the pod's start:
	// pending are the paths it wrote to the local fork before then, sent
	// to the pod after the tree.
	filesMu sync.Mutex
	pending []string
	// mode is the backend forkbomb's sandbox has in the pod (its probe at
	// the pod's start): namespaces, or landlock where the pod's runtime
	// refuses them
	mode sandbox.Mode
	// scoped: a command there can signal nothing outside its sandbox
	// (probeResult)
	scoped bool
}

// apiQPS and apiBurst are the requests a second forkbomb's client makes
// to the API server, and its burst, where its config sets none.
const apiQPS, apiBurst = 50, 300

// Open connects to the cluster, reaps what killed forkbombs left (lapsed
// anchors), and returns the store.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Local == nil || o.Config == nil {
		return nil, errors.New("kube.Open: Local and Config are required")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Deadline <= 0 {
		o.Deadline = 2 * time.Hour
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = 60 * time.Second
	}
	cfg := rest.CopyConfig(o.Config)
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second // every API call is bounded; exec streams are not API calls
	}
	// client-go's own default, 5 requests a second after a burst of 10,
	// queued a race's pods one behind another (a claim, a create, a wait
	// and an exec each per pod): a larger budget instead, unless the
	// caller's config sets one. The API server's own fairness (priority
	// and fairness) still applies.
	o.Config = rest.CopyConfig(o.Config)
	for _, c := range []*rest.Config{cfg, o.Config} {
		if c.QPS == 0 && c.RateLimiter == nil {
			c.QPS, c.Burst = apiQPS, apiBurst
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	host, _ := os.Hostname()
	s := &Store{o: o, dyn: dyn, holder: fmt.Sprintf("forkbomb@%s/%d", host, os.Getpid()),
		runs: map[string]*runState{}, forks: map[string]*forkState{}, probes: map[string]*nodeProbe{},
		sessions: map[string]*sessionSlot{}, claimOf: map[string]*keptClaim{}, stopped: make(chan struct{}), binStale: binStaleAfter}
	if o.UseSandboxCRD != "never" {
		var err error
		s.crd, err = hasSandboxCRD(ctx, cfg)
		switch {
		case err != nil && o.UseSandboxCRD == "always":
			return nil, fmt.Errorf("forks as agent-sandbox Sandboxes (--sandbox-crd always): cannot tell whether the cluster serves them: %w", err)
		case err != nil && o.Progress != nil:
			fmt.Fprintf(o.Progress, "forkbomb: cannot tell whether the cluster serves agent-sandbox's Sandbox (%v): forks are plain pods (--sandbox-crd always insists)\n", err)
		case !s.crd && o.UseSandboxCRD == "always":
			return nil, fmt.Errorf("forks as agent-sandbox Sandboxes (--sandbox-crd always): the cluster serves no %s %s", sandboxGVR.GroupVersion(), sandboxGVR.Resource)
		}
		if s.crd && o.KeepWarm > 0 {
			s.pools, err = hasSandboxPools(ctx, cfg)
			if !s.pools && o.Progress != nil {
				why := fmt.Sprintf("the cluster serves no %s SandboxWarmPool and SandboxClaim", sandboxPoolGVR.GroupVersion())
				if err != nil {
					why = err.Error()
				}
				fmt.Fprintf(o.Progress, "forkbomb: forks are agent-sandbox Sandboxes in namespace %s, and no warm pods are kept for the next run (%s; --sandbox-crd never: plain pods, kept)\n", o.Namespace, why)
			}
		}
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	s.md = md
	if _, err := s.Reap(ctx); err != nil {
		return nil, err
	}
	if !o.streamBin {
		b, err := s.storeBin(ctx, md)
		switch {
		case err == nil:
			s.binParts, s.binAt = b, time.Now()
		case o.Progress != nil:
			fmt.Fprintf(o.Progress, "forkbomb: each pod is sent forkbomb's binary on its start: it cannot be kept in namespace %s as ConfigMaps: %v\n", o.Namespace, err)
		}
	}
	return s, nil
}

// init stops client-go's klog lines ("Copying stdout failed" when a
// loser's pod is deleted under its exec) reaching forkbomb's terminal:
// forkbomb reports what matters itself, and klog would print the fork's
// words unredacted. klog is client-go's alone in this process. Set
// before any client exists: klog's logger is read unlocked by every
// request, so setting it later races with a client already in use.
func init() { klog.SetLogger(logr.Discard()) }

// UsesSandboxCRD reports whether forks are agent-sandbox Sandboxes.
func (s *Store) UsesSandboxCRD() bool { return s.crd }

// Get, List and Snapshot are the local store's: pid 1s live here.
func (s *Store) Get(ctx context.Context, name string) (*workspace.Meta, error) {
	return s.o.Local.Get(ctx, name)
}
func (s *Store) List(ctx context.Context) ([]*workspace.Meta, error) { return s.o.Local.List(ctx) }
func (s *Store) Snapshot(ctx context.Context, name string) (string, error) {
	return s.o.Local.Snapshot(ctx, name)
}

// New makes the run's anchor, renewed until Remove, starts the run's
// warm pods (Options.Warm), and makes the pid 1 locally meanwhile — then,
// with Options.Registry, its tree image (found or pushed).
func (s *Store) New(ctx context.Context, name string, o workspace.NewOptions) (*workspace.Meta, error) {
	rs, err := s.anchor(ctx, name)
	if err != nil {
		return nil, err
	}
	s.keepBin(ctx)
	tree := make(chan struct{})
	if !s.crd || s.pools {
		kind := "" // a tree image's run keeps nothing and claims nothing
		if s.o.Registry == "" {
			kind = s.keptKind(s.warmOptions(rs))
		}
		if s.crd {
			s.dropOtherSandboxPools(ctx, kind)
		} else {
			s.dropOtherPools(ctx, kind)
		}
	}
	if s.o.Warm > 0 {
		s.startPool(rs.ctx, name, rs, tree)
	}
	m, err := s.o.Local.New(ctx, name, o)
	if err == nil && s.o.Registry != "" {
		t0 := time.Now()
		if s.o.Progress != nil {
			fmt.Fprintf(s.o.Progress, "forkbomb: the forks' tree image: looking for it in %s, else making it there…\n", s.o.Registry)
		}
		ictx, cancel := context.WithTimeout(ctx, treeImageTimeout) // a registry that stalls must not hold the run
		rs.image, err = s.treeImage(ictx, name)
		cancel()
		if errors.Is(err, errWhiteoutName) { // the tree cannot be a layer: sent to each pod, as without a registry
			if s.o.Progress != nil {
				fmt.Fprintf(s.o.Progress, "forkbomb: no tree image: %v; the tree is sent to each pod\n", err)
			}
			rs.image, err = TreeImage{}, nil
		} else if err != nil {
			s.o.Local.Remove(context.WithoutCancel(ctx), name)
		} else if s.o.Progress != nil {
			how := "found in the registry"
			if rs.image.Pushed {
				how = fmt.Sprintf("made and pushed in %.1fs", time.Since(t0).Seconds())
			}
			fmt.Fprintf(s.o.Progress, "forkbomb: the forks' tree image %s: %s\n", rs.image.Ref, how)
		}
	}
	if err != nil {
		s.mu.Lock()
		delete(s.runs, name)
		s.mu.Unlock()
		rs.stop()
		s.deleteAnchor(context.WithoutCancel(ctx), rs.anchor.GetName())
		return nil, err
	}
	close(tree)
	return m, nil
}

func (s *Store) anchor(ctx context.Context, run string) (*runState, error) {
	now := metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro)
	secs := int64(s.o.LeaseDuration / time.Second)
	l, err := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Create(ctx, lease(objectName("forkbomb-", run), run, s.holder, secs, now), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the run's anchor: %w", err)
	}
	np := networkPolicy(objectName("forkbomb-", run), run, l, s.o.ProxyCIDR, s.o.ProxyPort)
	if _, err := s.dyn.Resource(netpolGVR).Namespace(s.o.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		s.deleteAnchor(context.WithoutCancel(ctx), l.GetName())
		return nil, fmt.Errorf("create the run's network policy: %w", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	rs := &runState{anchor: l, stop: stop, ctx: rctx}
	s.mu.Lock()
	s.runs[run] = rs
	s.mu.Unlock()
	s.wg.Add(1)
	go s.renew(rctx, l.GetName())
	return rs, nil
}

// renew keeps the anchor's lease current; a forkbomb killed stops
// renewing, and the next one to Open reaps the run.
func (s *Store) renew(ctx context.Context, name string) {
	defer s.wg.Done()
	t := time.NewTicker(s.o.LeaseDuration / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		patch := fmt.Sprintf(`{"spec":{"renewTime":%q}}`, metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Patch(pctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
		cancel()
	}
}

// Fork makes the fork locally (the judge's view of the race stays
// whole); its pod is made on the fork's first command, which carries the
// limits and the deadline, so N forks' pods start at once.
func (s *Store) Fork(ctx context.Context, src, dst string) (*workspace.Meta, error) {
	return s.makeFork(ctx, src, dst, false)
}

// ForkTemp is Fork for a temporary fork: its local part is leased to this
// process (workspace.Store.ForkTemp), so one a killed forkbomb left is
// pruned.
func (s *Store) ForkTemp(ctx context.Context, src, dst string) (*workspace.Meta, error) {
	return s.makeFork(ctx, src, dst, true)
}

func (s *Store) makeFork(ctx context.Context, src, dst string, temp bool) (*workspace.Meta, error) {
	s.mu.Lock()
	rs := s.runs[src]
	s.mu.Unlock()
	if rs == nil {
		return nil, fmt.Errorf("fork %s: %s is not a pid 1 of this store's runs", dst, src)
	}
	fork := s.o.Local.Fork
	if temp {
		fork = s.o.Local.ForkTemp
	}
	m, err := fork(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.forks[dst] = &forkState{pid1: src, obj: objectName("fb-", dst), anchor: rs.anchor, image: rs.image.Ref}
	s.mu.Unlock()
	return m, nil
}

// owned reports whether fs is still the fork name's (not removed).
func (s *Store) owned(name string, fs *forkState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forks[name] == fs
}

// Remove deletes a fork's pod at once (a loser dies the moment a fork
// wins), or a run's anchor — and with it, through the garbage collector,
// everything the run still has in the cluster. Each API call is bounded
// by the client's timeout (Open); ctx stops it sooner.
func (s *Store) Remove(ctx context.Context, name string) error {
	s.mu.Lock()
	fs, rs := s.forks[name], s.runs[name]
	delete(s.forks, name)
	delete(s.runs, name)
	var obj string
	if fs != nil {
		obj = fs.obj
	}
	s.mu.Unlock()
	if fs != nil {
		s.deleteFork(ctx, obj)
	}
	if rs != nil {
		rs.stop()
		// kept pods of the run's kind, made by Keep (not with a tree
		// image: its /work is the image's, writable by the pod's user, and
		// what someone wrote there while the pod waited is not seen)
		if po := s.warmOptions(rs); s.o.KeepWarm > 0 && s.o.Warm > 0 && (!s.crd || s.pools) && !po.TreeInImage {
			s.mu.Lock()
			s.toKeep = append(s.toKeep, po)
			s.mu.Unlock()
		}
		s.deleteAnchor(ctx, rs.anchor.GetName())
	}
	return s.o.Local.Remove(ctx, name)
}

func (s *Store) deleteFork(ctx context.Context, obj string) {
	s.endSession(obj)
	s.mu.Lock()
	kc := s.claimOf[obj]
	delete(s.claimOf, obj)
	s.mu.Unlock()
	if kc != nil { // a pool Sandbox's: its claim, or the controller finds it another
		s.deleteClaim(ctx, kc.claim.GetName())
		return
	}
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}
	gvr := podGVR
	if s.crd {
		gvr = sandboxGVR
	}
	if err := s.dyn.Resource(gvr).Namespace(s.o.Namespace).Delete(ctx, obj, opts); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "forkbomb: delete %s: %v\n", obj, err)
	}
}

func (s *Store) deleteAnchor(ctx context.Context, name string) {
	bg := metav1.DeletePropagationBackground
	if err := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "forkbomb: delete %s: %v\n", name, err)
	}
}

// Close removes what is left of every run of this store and stops the
// renewals.
func (s *Store) Close() error {
	s.mu.Lock()
	var names []string
	for n := range s.forks {
		names = append(names, n)
	}
	for n := range s.runs {
		names = append(names, n)
	}
	s.mu.Unlock()
	for _, n := range names {
		s.Remove(context.Background(), n)
	}
	s.closeSessions() // warm pods' too
	s.wg.Wait()
	return nil
}

// Reap deletes the anchors of runs whose forkbomb stopped renewing them
// (killed), so the garbage collector deletes their pods and policies; it
// returns their names. It also deletes other binaries' parts that no pod
// names (reapBins).
func (s *Store) Reap(ctx context.Context) ([]string, error) {
	list, err := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed})
	if err != nil {
		return nil, fmt.Errorf("list forkbomb's runs in the cluster: %w", err)
	}
	var out []string
	for _, l := range list.Items {
		renew, _, _ := unstructured.NestedString(l.Object, "spec", "renewTime")
		secs, _, _ := unstructured.NestedInt64(l.Object, "spec", "leaseDurationSeconds")
		t, err := time.Parse(metav1.RFC3339Micro, renew)
		if err == nil && time.Since(t) < time.Duration(secs)*time.Second {
			continue
		}
		// only the version read lapsed: one renewed since (a pool a run
		// is keeping) is not deleted
		rv := l.GetResourceVersion()
		bg := metav1.DeletePropagationBackground
		err = s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Delete(ctx, l.GetName(),
			metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		switch {
		case err == nil:
			out = append(out, l.GetName())
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			fmt.Fprintf(os.Stderr, "forkbomb: delete %s: %v\n", l.GetName(), err)
		}
	}
	s.reapBins(ctx)
	return out, nil
}
