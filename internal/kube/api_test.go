package kube

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// fixture is a repository whose check fails until value holds 2.
func fixture(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "value"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte("[ \"$(cat value)\" = 2 ] && echo '1 passed, 0 failed' || { echo '0 passed, 1 failed'; exit 1; }\n"), 0o644)
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

func openStore(t *testing.T, cfg *rest.Config, o Options) *Store {
	t.Helper()
	local, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o.Local, o.Config = local, cfg
	if o.UseSandboxCRD == "" {
		// the test cluster serves agent-sandbox's Sandbox, whose runs
		// keep no pods for the next: a test asks for Sandboxes itself
		// (inEachTreeMode's "sandboxes", TestWarmPods, TestSandboxCRD)
		o.UseSandboxCRD = "never"
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newRun makes a pid 1 of the fixture and one fork of it.
func newRun(t *testing.T, s *Store, run string) string {
	t.Helper()
	ctx := context.Background()
	top, base, err := workspace.ResolveBase(ctx, fixture(t), "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.New(ctx, run, workspace.NewOptions{Repo: top, Rev: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, run, run+"-f0"); err != nil {
		t.Fatal(err)
	}
	return run + "-f0"
}

// execStored runs p in fork where no kubelet runs: the fork's pod is
// stored and never starts. It waits (a minute at most) until the pod is
// stored, then stops the Exec, and returns the pod and the Exec's error.
// (A fixed short context for the Exec would let a loaded API server's
// slow create end it before the pod was stored.)
func execStored(t *testing.T, s *Store, fork string, p sandbox.Policy) (*unstructured.Unstructured, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, fork, p, sandbox.Stdio{})
		done <- err
	}()
	name := "fb-" + fork
	for deadline := time.Now().Add(time.Minute); ; {
		pod, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			cancel()
			return pod, <-done
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the fork's pod %s was not stored: %v", name, err)
		}
		select {
		case err := <-done:
			// it may have stored the pod since the Get above
			pod, gerr := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(context.Background(), name, metav1.GetOptions{})
			if gerr != nil {
				t.Fatalf("Exec returned (%v) and the fork's pod %s was not stored: %v", err, name, gerr)
			}
			return pod, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func str(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil {
		t.Fatalf("%v: %v", path, err)
	}
	return toString(v)
}

// fieldCase is a field of u that must read want (str).
type fieldCase struct {
	name string
	u    *unstructured.Unstructured
	path []string
	want string
}

// checkFields checks each case in a subtest of its name.
func checkFields(t *testing.T, cases []fieldCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := str(t, tc.u, tc.path...); got != tc.want {
				t.Errorf("%v = %s, want %s", tc.path, got, tc.want)
			}
		})
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "<none>"
	case string:
		return x
	default:
		b, _ := jsonMarshal(x)
		return string(b)
	}
}

// TestPodConfinement: a fork's pod, as the real API server stored it,
// carries the whole confinement — no service-account token, non-root, no
// capabilities, no privilege escalation, seccomp RuntimeDefault, a
// read-only root filesystem, the race's limits, a deadline, an image never
// pulled — and is owned by the run's anchor, with the run's deny-all
// NetworkPolicy; deleting a fork deletes its pod at once.
func TestPodConfinement(t *testing.T) {
	cfg := apiServer(t)
	// --runtime-class: the class must exist, or admission refuses the pod
	dyn, _ := dynamic.NewForConfig(cfg)
	rc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
		"metadata": map[string]any{"name": "gvisor"}, "handler": "runsc"}}
	if _, err := dyn.Resource(rcGVR).Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, cfg, Options{Namespace: "default", RuntimeClass: "gvisor"})
	fork := newRun(t, s, "run-conf")
	// No kubelet here: the pod is stored, never runs; Exec gives up.
	p, err := execStored(t, s, fork, sandbox.Policy{Command: []string{"true"}, Memory: 256 << 20, CPUs: 0.5, Timeout: time.Minute})
	if err == nil {
		t.Fatal("Exec ran with no kubelet")
	}
	bg := context.Background()
	l, err := s.dyn.Resource(leaseGVR).Namespace("default").Get(bg, "forkbomb-run-conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("containers: %v", cs)
	}
	ctr := &unstructured.Unstructured{Object: cs[0].(map[string]any)}
	checkFields(t, []fieldCase{
		{"no token", p, []string{"spec", "automountServiceAccountToken"}, "false"},
		{"no service links", p, []string{"spec", "enableServiceLinks"}, "false"},
		{"runtime class", p, []string{"spec", "runtimeClassName"}, "gvisor"},
		{"deadline", p, []string{"spec", "activeDeadlineSeconds"}, "660"},
		{"pod non-root", p, []string{"spec", "securityContext", "runAsNonRoot"}, "true"},
		{"pod uid", p, []string{"spec", "securityContext", "runAsUser"}, "65534"},
		{"pod seccomp", p, []string{"spec", "securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
		{"image never pulled", ctr, []string{"imagePullPolicy"}, "Never"},
		{"read-only root", ctr, []string{"securityContext", "readOnlyRootFilesystem"}, "true"},
		{"no escalation", ctr, []string{"securityContext", "allowPrivilegeEscalation"}, "false"},
		{"not privileged", ctr, []string{"securityContext", "privileged"}, "false"},
		{"caps dropped", ctr, []string{"securityContext", "capabilities", "drop"}, `["ALL"]`},
		{"caps added", ctr, []string{"securityContext", "capabilities", "add"}, "<none>"},
		{"memory limit", ctr, []string{"resources", "limits", "memory"}, "256Mi"},
		{"memory request", ctr, []string{"resources", "requests", "memory"}, "256Mi"},
		{"cpu limit", ctr, []string{"resources", "limits", "cpu"}, "500m"},
		{"env", ctr, []string{"env"}, `[{"name":"HOME","value":"/tmp/home"}]`},
		{"spread over the nodes", p, []string{"spec", "topologySpreadConstraints"},
			`[{"labelSelector":{"matchLabels":{"forkbomb.dev/run":"run-conf"}},"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]`},
	})
	for _, host := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if v := str(t, p, "spec", host); v == "true" {
			t.Errorf("spec.%s = %s", host, v)
		}
	}
	if refs := p.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != l.GetUID() || refs[0].Kind != "Lease" {
		t.Errorf("pod owners %+v, want the run's lease %s", refs, l.GetUID())
	}
	np, err := s.dyn.Resource(netpolGVR).Namespace("default").Get(bg, "forkbomb-run-conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := np.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != l.GetUID() {
		t.Errorf("network policy owners %+v, want the run's lease", refs)
	}
	if got := str(t, np, "spec", "policyTypes"); got != `["Ingress","Egress"]` {
		t.Errorf("policyTypes %s", got)
	}
	if got := str(t, np, "spec", "egress"); got != "<none>" && got != "[]" {
		t.Errorf("egress %s, want none (no model proxy given)", got)
	}

	if err := s.Remove(bg, fork); err != nil {
		t.Fatal(err)
	}
	if _, err := s.dyn.Resource(podGVR).Namespace("default").Get(bg, "fb-run-conf-f0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the fork's pod outlived Remove: %v", err)
	}
	if err := s.Remove(bg, "run-conf"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.dyn.Resource(leaseGVR).Namespace("default").Get(bg, "forkbomb-run-conf", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run's anchor outlived Remove: %v", err)
	}
}

// TestReapLapsedRun: a run whose forkbomb stopped renewing its anchor (a
// kill -9) is reaped by the next forkbomb to open the namespace; a live
// run is not.
func TestReapLapsedRun(t *testing.T) {
	cfg := apiServer(t)
	dead := openStore(t, cfg, Options{LeaseDuration: 2 * time.Second})
	newRun(t, dead, "run-dead")
	// The live run's lease is longer, renewed every 1.5 s: one slow
	// renewal on a loaded machine must not make it look lapsed. It is
	// watched for two of its leases, so only renewals keep it.
	const liveLease = 6 * time.Second
	live := openStore(t, cfg, Options{LeaseDuration: liveLease})
	newRun(t, live, "run-live")
	watchUntil := time.Now().Add(2 * liveLease)
	dead.mu.Lock()
	dead.runs["run-dead"].stop() // what a kill -9 does to the renewals
	dead.runs = map[string]*runState{}
	dead.forks = map[string]*forkState{}
	dead.mu.Unlock()
	bg := context.Background()
	var reaped []string
	deadline := time.Now().Add(time.Minute)
	for (len(reaped) == 0 || time.Now().Before(watchUntil)) && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		now, err := live.Reap(bg) // what the next forkbomb's Open does
		if err != nil {
			t.Fatal(err)
		}
		reaped = append(reaped, now...)
	}
	if len(reaped) != 1 || reaped[0] != "forkbomb-run-dead" {
		t.Fatalf("reaped %v, want only the dead run's anchor", reaped)
	}
	if _, err := live.dyn.Resource(leaseGVR).Namespace("default").Get(bg, "forkbomb-run-live", metav1.GetOptions{}); err != nil {
		t.Errorf("the live run's anchor was reaped: %v", err)
	}
	if _, err := live.dyn.Resource(leaseGVR).Namespace("default").Get(bg, "forkbomb-run-dead", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dead run's anchor is still there: %v", err)
	}
}

// TestSandboxCRD: where the cluster serves agent-sandbox's Sandbox, a
// fork is a Sandbox whose pod template carries the same confinement,
// owned by the run's anchor.
func TestSandboxCRD(t *testing.T) {
	cfg := apiServer(t)
	installSandboxCRD(t, cfg)
	s := openStore(t, cfg, Options{UseSandboxCRD: "auto"})
	if !s.UsesSandboxCRD() {
		t.Fatal("the Sandbox CRD is served but the store makes plain pods")
	}
	fork := newRun(t, s, "run-crd")
	// no controller here: the test plays its part (playController)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec := func(fork string) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"true"}, Memory: 128 << 20}, sandbox.Stdio{})
			errc <- err
		}()
		return errc
	}
	errc := exec(fork)
	sb := waitSandbox(t, s, "fb-run-crd-f0")
	for path, want := range map[string]string{
		"automountServiceAccountToken": "false",
		"securityContext.runAsNonRoot": "true",
	} {
		if got := str(t, sb, append([]string{"spec", "podTemplate", "spec"}, splitDots(path)...)...); got != want {
			t.Errorf("podTemplate.spec.%s = %s, want %s", path, got, want)
		}
	}
	if refs := sb.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Lease" {
		t.Errorf("sandbox owners %+v", refs)
	}
	if _, err := s.dyn.Resource(podGVR).Namespace("default").Get(context.Background(), "fb-run-crd-f0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a plain pod was made besides the Sandbox: %v", err)
	}
	// the pod made from a template someone changed meanwhile (a root
	// filesystem made writable): the fork refuses it
	playController(t, s, sb, func(p *unstructured.Unstructured) {
		p.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)["readOnlyRootFilesystem"] = false
	}, nil)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "is not forkbomb's") || !strings.Contains(err.Error(), "readOnlyRootFilesystem") {
		t.Errorf("a Sandbox's pod with a writable root: %v", err)
	}
	// the next forks: one whose pod has a label more (another
	// NetworkPolicy could select it) and one made with an annotation
	// more, refused; the control, its pod as the controller makes it of
	// the template and then annotated by another component, passes the
	// check (its start then fails: there is no kubelet here)
	for _, tc := range []struct {
		fork   string
		change func(p *unstructured.Unstructured)
		want   string
	}{
		{"run-crd-f1", func(p *unstructured.Unstructured) {
			l := p.GetLabels()
			l["team"] = "egress-allowed"
			p.SetLabels(l)
		}, "labels"},
		// made with an annotation more (a CNI could read it as the pod
		// starts): refused
		{"run-crd-f2", func(p *unstructured.Unstructured) {
			a := p.GetAnnotations()
			a["k8s.v1.cni.cncf.io/networks"] = "wide-open"
			p.SetAnnotations(a)
		}, "made with annotations"},
		// the control: as made, then annotated by another of the
		// cluster's components (a CNI's record of the pod's address)
		{"run-crd-f3", nil, ""},
	} {
		if _, err := s.Fork(context.Background(), "run-crd", tc.fork); err != nil {
			t.Fatal(err)
		}
		errc = exec(tc.fork)
		var later func()
		if tc.want == "" {
			later = func() {
				patch := []byte(`{"metadata":{"annotations":{"cni.projectcalico.org/podIP":"10.0.0.9/32"}}}`)
				if _, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Patch(context.Background(), "fb-"+tc.fork, types.MergePatchType, patch,
					metav1.PatchOptions{FieldManager: "calico"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		playController(t, s, waitSandbox(t, s, "fb-"+tc.fork), tc.change, later)
		err := <-errc
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), "is not forkbomb's") || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: a Sandbox's pod with %s changed: %v", tc.fork, tc.want, err)
		}
		if tc.want == "" && (err == nil || strings.Contains(err.Error(), "not forkbomb's")) {
			t.Errorf("control: the Sandbox's own pod: %v", err)
		}
	}
	// the control: told never, the same store makes a plain pod
	s2 := openStore(t, cfg, Options{UseSandboxCRD: "never"})
	if s2.UsesSandboxCRD() {
		t.Error("UseSandboxCRD never, still Sandboxes")
	}
}

// waitSandbox waits for the store to have made Sandbox name.
func waitSandbox(t *testing.T, s *Store, name string) *unstructured.Unstructured {
	t.Helper()
	// the first object of a new CRD can take seconds on a loaded machine
	deadline := time.Now().Add(time.Minute)
	for {
		sb, err := s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			return sb
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("Sandbox %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// playController does what agent-sandbox's controller and a kubelet
// would for Sandbox sb, on an API server that has neither: its pod, of
// its template (labels, spec) with the controller's name hash and list
// of copied labels, owned by it, changed by change if given, then later
// run if given, and marked running.
func playController(t *testing.T, s *Store, sb *unstructured.Unstructured, change func(p *unstructured.Unstructured), later func()) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(sb.Object, "spec", "podTemplate", "spec")
	labels, _, _ := unstructured.NestedStringMap(sb.Object, "spec", "podTemplate", "metadata", "labels")
	keys := slices.Sorted(maps.Keys(labels))
	labels[sandboxNameHashLabel] = sandboxNameHash(sb.GetName())
	p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{}, "spec": spec}}
	p.SetName(sb.GetName())
	p.SetLabels(labels)
	p.SetAnnotations(map[string]string{sandboxPropagatedLabels: strings.Join(keys, ",")})
	yes := true
	p.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: sandboxGVR.GroupVersion().String(), Kind: "Sandbox",
		Name: sb.GetName(), UID: sb.GetUID(), Controller: &yes}})
	if change != nil {
		change(p)
	}
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	made, err := pods.Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if later != nil {
		later()
		if made, err = pods.Get(context.Background(), p.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedField(made.Object, "Running", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.UpdateStatus(context.Background(), made, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestProbeAPI: the probe names the server's version, the runtime
// classes, the Sandbox CRD's absence, and a missing runtime class.
func TestProbeAPI(t *testing.T) {
	cfg := apiServer(t)
	dyn, _ := dynamic.NewForConfig(cfg)
	rc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
		"metadata": map[string]any{"name": "gvisor"}, "handler": "runsc"}}
	if _, err := dyn.Resource(rcGVR).Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		class string
		found bool
	}{{"gvisor", true}, {"kata", false}} {
		t.Run(tc.class, func(t *testing.T) {
			r, err := Probe(context.Background(), ProbeOptions{Config: cfg, RuntimeClass: tc.class})
			if err != nil {
				t.Fatal(err)
			}
			if r.Version != "v1.37.2" || r.RuntimeFound != tc.found || !contains(r.Runtimes, "gvisor") || r.SandboxCRD || r.NetworkPolicy != "unknown" {
				t.Errorf("report %+v", r)
			}
		})
	}
	// Sandboxes asked for where none are served: refused at the start,
	// not a failed create per fork
	local, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Options{Local: local, Config: cfg, UseSandboxCRD: "always"}); err == nil || !strings.Contains(err.Error(), "serves no agents.x-k8s.io/v1beta1") {
		t.Errorf("--sandbox-crd always without the CRD: %v", err)
	}
}

// TestSandboxNameHash: the name hash agent-sandbox's controller labels a
// Sandbox's pod with is FNV-1a 32 in 8 hex digits (its NameHash).
func TestSandboxNameHash(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a": "e40c292c", "": "811c9dc5"} {
		if got := sandboxNameHash(in); got != want {
			t.Errorf("sandboxNameHash(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestGitPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		patch, want string
	}{
		{"diff --git a/x b/x\n--- a/x\n+++ b/x\n", ""},
		{"diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\n", "a/.git/hooks/pre-commit"},
		{"diff --git a/sub/.GIT/config b/sub/.GIT/config\n", "a/sub/.GIT/config"},
		{"diff --git a/x b/y\nrename from x\nrename to .git/x\n", ".git/x"},
		{"+++ b/.Git/HEAD\n", "b/.Git/HEAD"},
		{"diff --git a/.gitignore b/.gitignore\n", ""},
	} {
		if got := gitPaths([]byte(tc.patch)); got != tc.want {
			t.Errorf("gitPaths(%q) = %q, want %q", tc.patch, got, tc.want)
		}
	}
}
