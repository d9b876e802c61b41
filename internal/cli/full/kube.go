package full

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/kube"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// cluster is the kubernetes backend (cli.Cluster).
type cluster struct{}

// Store puts a race's forks on the cluster; the judge stays on local.
func (cluster) Store(ctx context.Context, o *run.Options, local *workspace.Store, f cli.ClusterFlags) (func(), error) {
	// What a pod cannot do yet is refused, never run weaker: the model
	// proxy does not reach pods (so no claude-code, codex or api engine:
	// the api engine's editor also needs the fork's files here), nor does
	// --network allow.
	if _, ok := o.Engine.(engine.Command); !ok {
		return nil, fmt.Errorf("--backend kubernetes races the command engine only (--engine command --agent ...); %s is not supported on it yet", o.Engine.Info().Name)
	}
	if len(o.Allow) > 0 {
		return nil, fmt.Errorf("--backend kubernetes: --network allow is not supported (pods get a deny-all NetworkPolicy)")
	}
	cfg, err := kube.LoadConfig(f.Context)
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	ks, err := kube.Open(ctx, kube.Options{Local: local, Config: cfg, Namespace: f.Namespace, Image: f.Image,
		RuntimeClass: f.RuntimeClass, Deadline: timeout + 15*time.Minute, UseSandboxCRD: f.SandboxCRD})
	if err != nil {
		return nil, fmt.Errorf("--backend kubernetes: %w", err)
	}
	o.Store, o.JudgeStore = ks, local
	return func() { ks.Close() }, nil
}

// Probe reports what the cluster enforces.
func (cluster) Probe(ctx context.Context, f cli.ClusterFlags, out io.Writer, asJSON bool) error {
	cfg, err := kube.LoadConfig(f.Context)
	if err != nil {
		return err
	}
	rep, err := kube.Probe(ctx, kube.ProbeOptions{Config: cfg, Namespace: f.Namespace, RuntimeClass: f.RuntimeClass, Image: f.Image, Measure: true})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(out)
	return nil
}
