package cli

import (
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
	enumVar(f, &b.backend, "backend", "local", "where forks run: local (this machine's sandbox) or kubernetes (one pod per fork; kubeconfig from $KUBECONFIG or ~/.kube/config)", "local", "kubernetes")
	f.StringVar(&b.namespace, "namespace", "default", "kubernetes: the namespace of the forks' pods")
	f.StringVar(&b.runtimeClass, "runtime-class", "", "kubernetes: the pods' runtimeClassName (gvisor, kata, …; default: the node's runtime)")
	f.StringVar(&b.image, "image", defaultImage, "kubernetes: the forks' image (never pulled: imagePullPolicy Never; needs /bin/sh, tar, git, timeout, kill)")
	f.StringVar(&b.kubeContext, "kube-context", "", "kubernetes: the kubeconfig context (default: the current one)")
	enumVar(f, &b.sandboxCRD, "sandbox-crd", "auto", "kubernetes: make forks as agent-sandbox Sandboxes: auto (when the cluster serves agents.x-k8s.io), always or never", "auto", "always", "never")
}
