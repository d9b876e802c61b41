//go:build !nokube

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/forkbomb/forkbomb/internal/kube"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

const defaultImage = kube.DefaultImage

// store puts a race's forks on the chosen backend; the judge stays on
// local. The returned close removes what is left in the cluster.
func (b *backendFlags) store(ctx context.Context, o *run.Options, local *workspace.Store) (func(), error) {
	o.Store = local
	if b.backend != "kubernetes" {
		return func() {}, nil
	}
	if err := b.refuse(o.Engine.Info().Name); err != nil {
		return nil, err
	}
	cfg, err := kube.LoadConfig(b.kubeContext)
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	ks, err := kube.Open(ctx, kube.Options{Local: local, Config: cfg, Namespace: b.namespace, Image: b.image,
		RuntimeClass: b.runtimeClass, Deadline: timeout + 15*time.Minute, UseSandboxCRD: b.sandboxCRD})
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	o.Store, o.JudgeStore = ks, local
	return func() { ks.Close() }, nil
}

// probe reports what the cluster enforces (sandbox --probe --backend
// kubernetes).
func (b *backendFlags) probe(ctx context.Context, stdio IO, asJSON bool) error {
	cfg, err := kube.LoadConfig(b.kubeContext)
	if err != nil {
		return &exitError{code: ExitSetup, msg: "probe: " + err.Error(), err: err}
	}
	rep, err := kube.Probe(ctx, kube.ProbeOptions{Config: cfg, Namespace: b.namespace, RuntimeClass: b.runtimeClass, Image: b.image, Measure: true})
	if err != nil {
		return &exitError{code: ExitSetup, msg: "probe: " + err.Error(), err: err}
	}
	if asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(stdio.Out)
	return nil
}
