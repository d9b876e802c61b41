package full

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/kube"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// cluster is the kubernetes backend's implementation (backend.Kubernetes),
// its flags read when it is used.
type cluster struct{ f *backend.Kube }

func openCluster(f *backend.Kube) backend.Config { return cluster{f} }

// Store puts a race's forks on the cluster; the judge stays on local.
// An engine a pod cannot run was refused (backend.Backend.Refuse) before
// anything started.
func (c cluster) Store(ctx context.Context, o *run.Options, local *workspace.Store) (func(), error) {
	f := c.f
	cfg, err := kube.LoadConfig(f.Context)
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	warm, err := warmPods(f.WarmPods, o)
	if err != nil {
		return nil, err
	}
	keep, err := keepWarm(f.KeepWarm)
	if err != nil {
		return nil, err
	}
	if keep > 0 && warm == 0 {
		return nil, errors.New("--keep-warm keeps --warm-pods' pods: give --warm-pods auto or a number above 0")
	}
	// A fork's default memory is its share of this machine; its pod must
	// also fit the cluster beside the others (a node's allocatable memory
	// is less than its machine's): the smaller of the two.
	if o.Limits.Memory == 0 {
		if mem, lowered := kube.DefaultMemory(ctx, cfg, run.ForksAtOnce(*o), run.ForkLimits(*o).Memory); lowered {
			o.Limits.Memory = mem
			fmt.Fprintf(os.Stderr, "forkbomb: each fork's pod asks for %s of memory, so that %d fit the cluster's nodes at once (--memory sets it)\n", sandbox.FormatBytes(mem), run.ForksAtOnce(*o))
		}
	}
	// the warm pods hold the limits each fork's commands will ask for
	var limits sandbox.Policy
	run.ForkLimits(*o).Apply(&limits)
	image := f.Image
	if f.Pinned != "" {
		image = f.Pinned
	}
	ks, err := kube.Open(ctx, kube.Options{Local: local, Config: cfg, Namespace: f.Namespace, Image: image,
		RuntimeClass: f.RuntimeClass, Deadline: timeout + 15*time.Minute, UseSandboxCRD: f.SandboxCRD,
		PodBin: podBeside(), Warm: warm, WarmMemory: limits.Memory, WarmCPUs: limits.CPUs, Registry: f.Registry, Progress: os.Stderr, KeepWarm: keep})
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	o.Store, o.JudgeStore = ks, local
	return func() {
		// kept pods (--keep-warm) only after a run that was not
		// interrupted: a Ctrl-C asks for nothing to be left
		if keep > 0 && ctx.Err() == nil {
			if err := ks.Keep(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(os.Stderr, "forkbomb: %v\n", err)
			}
		}
		ks.Close()
	}, nil
}

// warmPods reads --warm-pods: auto is one per fork running at once.
func warmPods(v string, o *run.Options) (int, error) {
	if v == "" || v == "auto" {
		if o.Parallel > 0 && o.Parallel < o.Forks {
			return o.Parallel, nil
		}
		return max(o.Forks, 1), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 256 {
		return 0, fmt.Errorf("--warm-pods %q: want auto or a number from 0 to 256", v)
	}
	return n, nil
}

// keepWarm reads --keep-warm: a duration, 0 for none.
func keepWarm(v string) (time.Duration, error) {
	if v == "" || v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute || d > 24*time.Hour {
		return 0, fmt.Errorf("--keep-warm %q: want 0 or a duration from 1m to 24h (10m, 1h)", v)
	}
	return d, nil
}

// podBeside is the binary sent into each fork's pod: forkbomb-pod beside
// this binary (a quarter of the core's bytes: only the runner, the
// sandbox and the tunnel), else the core forkbomb beside it (a third of
// this one's), else empty (kube's default: this binary). Each serves as
// well.
func podBeside() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	for _, name := range []string{"forkbomb-pod", "forkbomb"} {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && p != self {
			return p
		}
	}
	return ""
}

// image is the forks' image as a pod that is not a fork's runs it: with
// --registry, the registry's, by the digest it gives now (a node that
// lacks it pulls it); else --image as given.
func (c cluster) image(ctx context.Context) (string, error) {
	if c.f.Registry == "" {
		return c.f.Image, nil
	}
	return kube.PinImage(ctx, c.f.Image)
}

// Probe reports what the cluster enforces.
func (c cluster) Probe(ctx context.Context, out io.Writer, asJSON bool) error {
	f := c.f
	cfg, err := kube.LoadConfig(f.Context)
	if err != nil {
		return err
	}
	image, err := c.image(ctx)
	if err != nil {
		return err
	}
	rep, err := kube.Probe(ctx, kube.ProbeOptions{Config: cfg, Namespace: f.Namespace, RuntimeClass: f.RuntimeClass, Image: image, Measure: true, PodBin: podBeside(), Registry: f.Registry})
	if err != nil {
		return err
	}
	return backend.WriteProbe(out, rep, asJSON)
}

// FindAgent finds an agent CLI in the forks' image (a pod's start, or
// the state home's answer for that image's digest): backend.AgentFinder. A CLI the image does not hold is
// engine.ErrAgentNotInstalled, as one missing here is.
func (c cluster) FindAgent(ctx context.Context, name, given string) (string, string, error) {
	cfg, err := kube.LoadConfig(c.f.Context)
	if err != nil {
		return "", "", fmt.Errorf("--backend kubernetes: %w", err)
	}
	cache := "" // no state home: found anew each time
	if l, err := home.Default(); err == nil {
		cache = l.KubeAgents()
	}
	image, err := c.image(ctx)
	if err != nil {
		return "", "", fmt.Errorf("--backend kubernetes: %w", err)
	}
	bin, version, image, err := kube.FindAgent(ctx, kube.ProbeOptions{Config: cfg, Namespace: c.f.Namespace,
		RuntimeClass: c.f.RuntimeClass, Image: image, PodBin: podBeside(), AgentCache: cache}, name, given)
	if errors.Is(err, kube.ErrAgentNotInImage) {
		return "", "", fmt.Errorf("%w: %w", engine.ErrAgentNotInstalled, err)
	}
	if err == nil && image != c.f.Image {
		c.f.Pinned = image
	}
	return bin, version, err
}

// Where names where the forks run, as a canary's result is kept for it
// (backend.AgentFinder): the store's own word (canary.Remote).
func (c cluster) Where() string { return kube.Where(c.f.Image, c.f.RuntimeClass) }

var _ backend.AgentFinder = cluster{}
