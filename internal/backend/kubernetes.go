package backend

// The kubernetes backend's implementation links client-go, whose package
// initialisers cost every process that links it about 1.3 ms: only
// forkbomb-full links it (internal/cli/full, over internal/kube), and the
// core forkbomb, which starts every sandbox, knows only this declaration.

// DefaultImage is the forks' image unless --image says otherwise; the full
// build's test checks it is internal/kube's own default.
const DefaultImage = "forkbomb.local/agent:v2"

// Kube are the kubernetes backend's flags.
type Kube struct {
	Namespace, RuntimeClass, Image, Context string
	SandboxCRD                              string // auto, always or never
	WarmPods                                string // auto or a number
	KeepWarm                                string // a duration; "0": none kept (kube.Options.KeepWarm)
	Registry                                string // where tree images go (kube.Options.Registry); "": none
	// Pinned is Image by its digest, once an agent CLI was found in it
	// (kube.FindAgent): the forks' pods run it, so that the CLI they run
	// is the one found and the canary's result is for its version.
	Pinned string
}

// Kubernetes is the kubernetes backend: one pod per fork, the pid 1 and the
// judge here. open is its implementation, which reads k when it is used;
// nil declares it in a binary that does not link it.
func Kubernetes(open func(k *Kube) Config) *Backend {
	return &Backend{
		Name:          "kubernetes",
		ImagePrograms: true,
		Summary:       "one pod per fork; kubeconfig from $KUBECONFIG or ~/.kube/config",
		Doc: "each fork is a pod (its memory and CPUs the pod's limits); the pid 1 and the judge stay " +
			"here. Each command in a pod runs inside forkbomb's own sandbox there (forkbomb's binary, sent " +
			"into the pod, on the backend the pod allows; none: the fork fails). An agent program runs whole in the pod; forkbomb's own loop runs here, its key with it, " +
			"and sends each shell command and editor call to the pod. An agent CLI (claude-code, codex) is " +
			"the image's: found in a pod before the race (--agent-bin: its path in the image), its key " +
			"staying here. --network allow, and an agent CLI's model, reach a pod " +
			"through a tunnel over the Kubernetes API (forkbomb's binary, sent into the pod, forwards its " +
			"127.0.0.1 port), so the pod needs no route to this machine.",
		Flags: func() (Config, []Flag) {
			k := &Kube{Namespace: "default", Image: DefaultImage, SandboxCRD: "auto", WarmPods: "auto", KeepWarm: "0"}
			flags := []Flag{
				{Name: "namespace", Usage: "the namespace of the forks' pods", Value: &k.Namespace},
				{Name: "runtime-class", Usage: "the pods' runtimeClassName (gvisor, kata, …; default: the node's runtime)", Value: &k.RuntimeClass},
				{Name: "image", Usage: "the forks' image (a tag is never pulled: imagePullPolicy Never, the node's copy is run; one named by its digest, repo@sha256:…, is pulled if the node lacks it; with --registry it must be in a registry forkbomb reads; needs /bin/sh, tar, git, env, kill, sha256sum; it runs forkbomb's own binary, sent into each pod to confine each command there: a static forkbomb, or the image holds its libc; for claude-code or codex, their CLI on /usr/local/bin:/usr/bin:/bin — scripts/k8s-cluster makes forkbomb.local/agents:… with both)", Value: &k.Image},
				{Name: "kube-context", Usage: "the kubeconfig context (default: the current one)", Value: &k.Context},
				{Name: "warm-pods", Usage: "pods started with the run, beside its pid 1's snapshot, each sent the tree before a fork claims it: a number, or auto (one per fork running at once); 0: each fork starts its own when it first runs a command", Value: &k.WarmPods},
				{Name: "keep-warm", Usage: "keep --warm-pods started pods for the next run, for this long (10m, 1h; 0: none): the run's end leaves them starting in the namespace, and a later run with the same image and limits claims them (each pod once, deleted with its fork) instead of waiting for its own; the first forkbomb to open the namespace once that long has passed since the last run deletes those left, and a run of another image or limits deletes them at its start. Not with --registry. They hold their memory and CPU requests on the nodes meanwhile; whoever may exec into pods of the namespace could write to one before its claim (a kept pod whose /work is not empty is refused)", Value: &k.KeepWarm},
				{Name: "registry", Usage: "a repository prefix the nodes pull from and forkbomb pushes to (host[:port]/path; credentials from ~/.docker/config.json): each run's tree goes there once, as one image layer over --image, and each fork's pod starts from that image with the tree in place instead of being sent it, so a fork's start does not grow with the repository; the same commit's image is found, not pushed again. The tree is then in that registry, readable by whoever can pull from it", Value: &k.Registry},
				{Name: "sandbox-crd", Usage: "make forks as kubernetes-sigs/agent-sandbox Sandboxes, whose pods its controller makes from forkbomb's pod spec (a fork uses only the pod its Sandbox owns): auto (when the cluster serves agents.x-k8s.io/v1beta1, agent-sandbox v1.0 and later), always (fail where it does not) or never. A run of Sandboxes makes its warm pods as Sandboxes too; with --keep-warm it leaves agent-sandbox's SandboxWarmPool for the next run (where the cluster serves agent-sandbox's extensions), whose Sandboxes that run claims with SandboxClaims and checks before use", Values: []string{"auto", "always", "never"}, Value: &k.SandboxCRD},
			}
			if open == nil {
				return nil, flags
			}
			return open(k), flags
		},
	}
}
