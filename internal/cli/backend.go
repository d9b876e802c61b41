package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// The kubernetes backend links client-go, whose package initialisers cost
// every forkbomb process about 1.3 ms — twice per sandbox start (forkbomb
// and its re-executed init). It is in the default build
// (backend_kube.go); -tags nokube leaves it out (backend_nokube.go) for
// the leanest start.

// backendFlags pick where forks run: this machine (local), or a
// Kubernetes cluster (kubeconfig from the usual places).
type backendFlags struct {
	backend      string
	namespace    string
	runtimeClass string
	image        string
	kubeContext  string
	sandboxCRD   string
}

func (b *backendFlags) add(f *pflag.FlagSet) {
	enumVar(f, &b.backend, "backend", "local", "where forks run: local (this machine's sandbox) or kubernetes (one pod per fork; engines command, api and hosted; kubeconfig from $KUBECONFIG or ~/.kube/config)", "local", "kubernetes")
	f.StringVar(&b.namespace, "namespace", "default", "kubernetes: the namespace of the forks' pods")
	f.StringVar(&b.runtimeClass, "runtime-class", "", "kubernetes: the pods' runtimeClassName (gvisor, kata, …; default: the node's runtime)")
	f.StringVar(&b.image, "image", defaultImage, "kubernetes: the forks' image (never pulled: imagePullPolicy Never; needs /bin/sh, tar, git, timeout, kill, sha256sum; with --network allow it runs forkbomb's own binary, sent into the pod: a static forkbomb, or the image holds its libc)")
	f.StringVar(&b.kubeContext, "kube-context", "", "kubernetes: the kubeconfig context (default: the current one)")
	enumVar(f, &b.sandboxCRD, "sandbox-crd", "auto", "kubernetes: make forks as agent-sandbox Sandboxes: auto (when the cluster serves agents.x-k8s.io), always or never", "auto", "always", "never")
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
