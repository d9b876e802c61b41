package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// The kubernetes backend links client-go, whose package initialisers cost
// every process that links it about 1.3 ms: only forkbomb-full does
// (Options.Cluster, from internal/cli/full); the core hands a command line
// that needs it to forkbomb-full before doing anything (ready).

// defaultImage is the forks' image unless --image says otherwise; the full
// build's test checks it is the kubernetes backend's own default.
const defaultImage = "forkbomb.local/agent:v2"

// backendFlags pick where forks run: this machine (local), or a
// Kubernetes cluster (kubeconfig from the usual places).
type backendFlags struct {
	backend string
	cluster ClusterFlags
	b       build
}

func (b *backendFlags) add(f *pflag.FlagSet) {
	enumVar(f, &b.backend, "backend", "local", "where forks run: local (this machine's sandbox) or kubernetes (one pod per fork; engines command, api and hosted; kubeconfig from $KUBECONFIG or ~/.kube/config)", "local", "kubernetes")
	f.StringVar(&b.cluster.Namespace, "namespace", "default", "kubernetes: the namespace of the forks' pods")
	f.StringVar(&b.cluster.RuntimeClass, "runtime-class", "", "kubernetes: the pods' runtimeClassName (gvisor, kata, …; default: the node's runtime)")
	f.StringVar(&b.cluster.Image, "image", defaultImage, "kubernetes: the forks' image (never pulled: imagePullPolicy Never; needs /bin/sh, tar, git, timeout, kill, sha256sum; with --network allow it runs forkbomb's own binary, sent into the pod: a static forkbomb, or the image holds its libc)")
	f.StringVar(&b.cluster.Context, "kube-context", "", "kubernetes: the kubeconfig context (default: the current one)")
	enumVar(f, &b.cluster.SandboxCRD, "sandbox-crd", "auto", "kubernetes: make forks as agent-sandbox Sandboxes: auto (when the cluster serves agents.x-k8s.io), always or never", "auto", "always", "never")
}

// ready hands the whole command line to forkbomb-full when the cluster is
// asked for and this build does not link it; code is the verb's status
// when that cannot be done. Call it before the command does anything.
func (b *backendFlags) ready(code int) error {
	if b.backend != "kubernetes" || b.b.Cluster != nil {
		return nil
	}
	return b.b.handoff("--backend kubernetes", code)
}

// store puts a race's forks on the chosen backend; the judge stays on
// local. The returned close removes what is left in the cluster.
func (b *backendFlags) store(ctx context.Context, o *run.Options, local *workspace.Store) (func(), error) {
	o.Store = local
	if b.backend != "kubernetes" {
		return func() {}, nil
	}
	// run's RunE has handed on (ready) and raceFromFlags has refused the
	// engine (refuse) before any proxy or canary: this is the guard
	// against a nil Cluster only.
	if err := b.ready(ExitCouldNotRun); err != nil {
		return nil, err
	}
	return b.b.Cluster.Store(ctx, o, local, b.cluster)
}

// probe reports what the cluster enforces (sandbox --probe --backend
// kubernetes).
func (b *backendFlags) probe(ctx context.Context, stdio IO, asJSON bool) error {
	if err := b.ready(ExitSetup); err != nil {
		return err
	}
	if err := b.b.Cluster.Probe(ctx, b.cluster, stdio.Out, asJSON); err != nil {
		return &exitError{code: ExitSetup, msg: "probe: " + err.Error(), err: err}
	}
	return nil
}

// kubeEngines are the engines a pod can run: the command engine's agent
// runs whole in the pod; the api and hosted engines' loops run here (the
// key with them) and send each shell command and each editor call to the
// pod. claude-code and codex need their CLI in the fork's image (codex
// also node), which the default one lacks (their model proxy would reach
// the pod through the same tunnel as --network allow).
var kubeEngines = []string{"command", "api", "hosted"}

// refuse says what the chosen backend cannot do, before anything runs:
// never run weaker.
func (b *backendFlags) refuse(eng string) error {
	if b.backend == "kubernetes" && !slices.Contains(kubeEngines, eng) {
		return fmt.Errorf("--backend kubernetes races the command, api and hosted engines; %s is not supported on it yet (its CLI is not in the pod's image)", eng)
	}
	return nil
}
