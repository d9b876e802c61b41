package full

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/kube"
	"github.com/forkbomb/forkbomb/internal/run"
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
	ks, err := kube.Open(ctx, kube.Options{Local: local, Config: cfg, Namespace: f.Namespace, Image: f.Image,
		RuntimeClass: f.RuntimeClass, Deadline: timeout + 15*time.Minute, UseSandboxCRD: f.SandboxCRD,
		ForwarderBin: coreBeside()})
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	o.Store, o.JudgeStore = ks, local
	return func() { ks.Close() }, nil
}

// coreBeside is the core forkbomb beside this binary when there is one: it
// runs the pod's tunnel as well as forkbomb-full does, at a third of the
// bytes sent to each pod. Empty (kube's default: this binary) otherwise.
func coreBeside() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	core := filepath.Join(filepath.Dir(self), "forkbomb")
	if fi, err := os.Lstat(core); err != nil || !fi.Mode().IsRegular() || core == self {
		return ""
	}
	return core
}

// Probe reports what the cluster enforces.
func (c cluster) Probe(ctx context.Context, out io.Writer, asJSON bool) error {
	f := c.f
	cfg, err := kube.LoadConfig(f.Context)
	if err != nil {
		return err
	}
	rep, err := kube.Probe(ctx, kube.ProbeOptions{Config: cfg, Namespace: f.Namespace, RuntimeClass: f.RuntimeClass, Image: f.Image, Measure: true})
	if err != nil {
		return err
	}
	return backend.WriteProbe(out, rep, asJSON)
}
