package kube

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// raceOptions is a race of the fixture on the cluster: the forks in ns,
// the judge here.
func raceOptions(t testing.TB, s *Store, repo, agent string, forks int) run.Options {
	o := run.Options{RunsDir: filepath.Join(t.TempDir(), "runs"), CacheDir: filepath.Join(t.TempDir(), "cache"),
		Repo: repo, Task: "make the check pass", Forks: forks, Engine: engine.Command{Argv: []string{"/bin/sh", "-c", agent}},
		Test: "/bin/sh check.sh", Timeout: 2 * time.Minute}
	if s != nil {
		o.Store, o.JudgeStore = s, s.o.Local
	}
	return o
}

// TestClusterRace: a race whose forks are real pods — one fixes the
// value, one crashes, one would work for five minutes — has the honest
// fork win, its patch (made in its pod, sent back as text, judged here)
// applies to the repository, and nothing of the run is left in the
// cluster afterwards — with the tree sent into each pod, with the run's
// tree image (Options.Registry), and with each fork an agent-sandbox
// Sandbox whose pod the real agent-sandbox controller makes.
func TestClusterRace(t *testing.T) {
	t.Parallel() // a namespace of its own (each subtest one); its waits are the cluster's
	inEachTreeMode(t, clusterRace, true)
}

// inEachTreeMode runs a cluster test's body in parallel subtests, each in
// a namespace of its own: the pid 1's tree sent into each pod at its
// start, and a tree image pushed to a registry on loopback; withSandboxes,
// also with the tree sent into each fork's pod made as an agent-sandbox
// Sandbox (Options.UseSandboxCRD always; the test cluster runs
// agent-sandbox's controller).
func inEachTreeMode(t *testing.T, body func(t *testing.T, cfg *rest.Config, ns string, o Options), withSandboxes bool) {
	modes := []string{"tree sent", "tree image"}
	if withSandboxes {
		modes = append(modes, "sandboxes")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cfg, ns := cluster(t)
			o := Options{Namespace: ns}
			switch mode {
			case "tree image":
				o.Registry, o.Image = testRegistry(t)
			case "sandboxes":
				o.UseSandboxCRD = "always"
			}
			body(t, cfg, ns, o)
		})
	}
}

func clusterRace(t *testing.T, cfg *rest.Config, ns string, o Options) {
	s := openStore(t, cfg, o)
	repo := fixture(t)
	agent := `case $FORKBOMB_FORK in
0) echo 2 > value; echo "fixed in $(hostname)" ;;
1) echo "giving up" >&2; exit 3 ;;
2) sleep 300 ;;
esac`
	r, dir, err := run.Race(context.Background(), raceOptions(t, s, repo, agent, 3))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 {
		t.Fatalf("status %s, winner %v; forks %+v", r.Status, r.Winner, r.Fork)
	}
	// fork 1 crashes unless fork 0 has already won (the pods start in
	// no set order; nothing here orders them): either way it is not judged
	// a winner, and fork 2 is killed
	if s1 := r.Fork[1].State; (s1 != event.ForkCrashed && s1 != event.ForkKilled) || r.Fork[2].State != event.ForkKilled {
		t.Errorf("fork states %s, %s; want crashed or killed, killed", s1, r.Fork[2].State)
	}
	patch, err := os.ReadFile(filepath.Join(dir, "winner.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(patch, []byte("+2")) {
		t.Fatalf("winner.patch:\n%s", patch)
	}
	cmd := exec.Command("git", "apply", "--check", "-")
	cmd.Dir, cmd.Stdin = repo, bytes.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the winner's patch does not apply: %v\n%s", err, out)
	}
	waitNothingLeft(t, cfg, ns, time.Minute)
}

// TestClusterAttack: a fork's agent tries to write the pod's root
// filesystem, read a service-account token and take more memory than the
// race allows; forkbomb checks each from its own side — a fresh exec in
// the pod, the API's stored pod, the runtime's exit status — and each has
// a control that proves the check sees the thing when it is there. With a
// tree image the pod's root is not read-only: forkbomb's sandbox in the
// pod still keeps the agent's writes in its tree.
func TestClusterAttack(t *testing.T) {
	t.Parallel() // a namespace of its own (each subtest one); its waits are the cluster's
	inEachTreeMode(t, clusterAttack, true)
}

func clusterAttack(t *testing.T, cfg *rest.Config, ns string, o Options) {
	s := openStore(t, cfg, o)
	fork := newRun(t, s, "run-attack")
	ctx := context.Background()
	attack := `echo pwned >> /etc/passwd; echo pwned > /bin/escaped; touch /escaped /var/tmp/escaped
cat /var/run/secrets/kubernetes.io/serviceaccount/token > /work/tree/token-read
echo written > /work/tree/control-write
id -u`
	var out bytes.Buffer
	res, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", attack}, Memory: 128 << 20, Timeout: time.Minute},
		sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attack (exit %d):\n%s", res.ExitCode, out.String())
	// checks read the pod through output(): whole, or an error
	check := func(script string) (int, string) {
		b, code, err := s.output(ctx, "fb-run-attack-f0", script, nil, 1<<20)
		if err != nil && code <= 0 {
			t.Fatal(err)
		}
		return code, string(b)
	}
	t.Run("root filesystem", func(t *testing.T) {
		if _, got := check("cat /etc/passwd"); strings.Contains(got, "pwned") {
			t.Errorf("/etc/passwd was written: %s", got)
		}
		// /var/tmp is world-writable in the image: the read-only root
		// filesystem keeps the agent's file out of it, and forkbomb's
		// sandbox in the pod (with a tree image, it alone)
		if _, got := check("for f in /bin/escaped /escaped /var/tmp/escaped; do test -e $f && echo $f; done; true"); got != "" {
			t.Errorf("files made on the root filesystem: %s", got)
		}
		if _, got := check("cat /work/tree/control-write"); strings.TrimSpace(got) != "written" {
			t.Errorf("control: the tree's write is not seen (%q)", got)
		}
		if o.Registry != "" {
			// control: the pod's user, outside forkbomb's sandbox, can
			// write there — the sandbox is what held
			if _, got := check("touch /var/tmp/control && echo made"); strings.TrimSpace(got) != "made" {
				t.Errorf("control: /var/tmp is not writable outside the sandbox with a tree image (%q): the check proves nothing", got)
			}
		}
	})
	t.Run("memory", func(t *testing.T) {
		bomb := sandbox.Policy{Command: []string{"/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=300M", "count=1"}, Memory: 128 << 20, Timeout: time.Minute}
		res, err := s.Exec(ctx, fork, bomb, sandbox.Stdio{})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 137 {
			t.Errorf("a 300 MB allocation under a 128 MiB limit exited %d, want 137 (killed by the pod's cgroup)", res.ExitCode)
		}
		// control: the same allocation in a pod without a memory limit
		free := newRun(t, s, "run-free")
		bomb.Memory = 0
		res, err = s.Exec(ctx, free, bomb, sandbox.Stdio{})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 {
			t.Errorf("control: the allocation without a limit exited %d", res.ExitCode)
		}
	})
	t.Run("service account token", func(t *testing.T) {
		if code, got := check("test -s /work/tree/token-read && cat /work/tree/token-read"); code == 0 {
			t.Errorf("the agent read a service-account token (%d bytes)", len(got))
		}
		p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(ctx, "fb-run-attack-f0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedSlice(p.Object, "spec", "volumes"); strings.Contains(toString(v), "serviceAccountToken") {
			t.Errorf("the fork's pod mounts a token: %s", toString(v))
		}
		// control: a pod that does not refuse the token gets one from
		// the cluster's admission, and the check sees it
		ctl := pod(PodOptions{Name: "token-control", Run: "control", Image: DefaultImage, DeadlineSeconds: 60})
		unstructured.RemoveNestedField(ctl.Object, "spec", "automountServiceAccountToken")
		got, err := s.dyn.Resource(podGVR).Namespace(ns).Create(ctx, ctl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		defer s.dyn.Resource(podGVR).Namespace(ns).Delete(context.Background(), "token-control", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if v, _, _ := unstructured.NestedSlice(got.Object, "spec", "volumes"); !strings.Contains(toString(v), "serviceAccountToken") {
			t.Errorf("control: no token volume on a pod that allows one: %s", toString(v))
		}
	})
	if o.UseSandboxCRD == "always" {
		// the pod the attack ran in is the one agent-sandbox's controller
		// made for the fork's Sandbox, which the run's anchor owns
		t.Run("sandbox", func(t *testing.T) { sandboxOwns(t, s, "fb-run-attack-f0") })
	}
	s.Close()
	waitNothingLeft(t, cfg, ns, time.Minute)
}

// TestClusterDeadline: a pod outlives neither its deadline, whatever the
// agent does and whether forkbomb is there to stop it (the kubelet
// enforces activeDeadlineSeconds).
func TestClusterDeadline(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns, Deadline: 3 * time.Second})
	fork := newRun(t, s, "run-deadline")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sleep", "600"}}, sandbox.Stdio{})
	if ctx.Err() != nil {
		t.Fatal("the agent outlived the pod's deadline by minutes")
	}
	// the kubelet's status update follows the kill
	var reason string
	for end := time.Now().Add(time.Minute); reason != "DeadlineExceeded" && time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(context.Background(), "fb-run-deadline-f0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reason, _, _ = unstructured.NestedString(p.Object, "status", "reason")
	}
	if reason != "DeadlineExceeded" {
		t.Errorf("pod status reason %q, want DeadlineExceeded", reason)
	}
}

// TestClusterKill9: a forkbomb killed with SIGKILL mid-race cleans up
// nothing; the next forkbomb to open the namespace deletes the run's
// lapsed anchor, and the cluster's garbage collector deletes the pods and
// the policy it owned.
func TestClusterKill9(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "FORKBOMB_KUBE_CHILD="+strings.Join([]string{kubeconfig(), ns, filepath.Join(t.TempDir(), "state"), filepath.Join(t.TempDir(), "runs"), fixture(t)}, "\n"))
	var log bytes.Buffer
	child.Stdout, child.Stderr = &log, &log
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	s := openStore(t, cfg, Options{Namespace: ns, UseSandboxCRD: "never"})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := s.dyn.Resource(podGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range l.Items {
			if ph, _, _ := unstructured.NestedString(p.Object, "status", "phase"); ph == "Running" {
				running++
			}
		}
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's pods never ran:\n%s", log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	// control: the killed forkbomb removed nothing
	if left := leftovers(t, cfg, ns); len(left) < 4 {
		t.Fatalf("after kill -9, only %v: the check would not see a leak", left)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		reaped, err := s.Reap(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(reaped) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed run's anchor never lapsed")
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitNothingLeft(t, cfg, ns, 2*time.Minute)
}

// kubeChild is the forkbomb TestClusterKill9 kills: a race of two forks
// whose agents sleep, with a lease that lapses in seconds.
func kubeChild(args string) int {
	a := strings.Split(args, "\n")
	cfg, err := clientcmd.BuildConfigFromFlags("", a[0])
	if err != nil {
		return 1
	}
	local, err := workspace.Open(a[2])
	if err != nil {
		return 1
	}
	s, err := Open(context.Background(), Options{Local: local, Config: cfg, Namespace: a[1], LeaseDuration: 3 * time.Second, UseSandboxCRD: "never"})
	if err != nil {
		return 1
	}
	_, _, err = run.Race(context.Background(), run.Options{Store: s, JudgeStore: local, RunsDir: a[3], Repo: a[4], Task: "t", Forks: 2,
		Engine: engine.Command{Argv: []string{"/bin/sleep", "300"}}, Test: "true", Timeout: 10 * time.Minute})
	if err != nil {
		return 1
	}
	return 0
}

// TestClusterProbe: the probe measures NetworkPolicy on the test cluster
// — whose bridge CNI does not enforce it, so the row in docs/SECURITY.md
// says "requested" — after its control reached the listener, and leaves
// nothing behind.
func TestClusterProbe(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	r, err := Probe(context.Background(), ProbeOptions{Config: cfg, Namespace: ns, Measure: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "v1.37.2" || r.NetworkPolicy != "not enforced" {
		t.Errorf("probe %+v", r)
	}
	// the test cluster's runtime refuses user namespaces: Landlock and
	// seccomp alone confine there, as its forks' commands find
	if r.Walls != string(sandbox.ModeLandlock) || len(r.WallLayers) == 0 {
		t.Errorf("forkbomb's sandbox in a pod: %q %+v (notes %v)", r.Walls, r.WallLayers, r.Notes)
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "forkbomb's sandbox in each pod: landlock") {
		t.Errorf("the probe's text lacks the pod's walls:\n%s", text.String())
	}
	waitNothingLeft(t, cfg, ns, time.Minute)
}

// TestWarmPods: a run's warm pods start with the run, and its forks'
// commands run in them — each fork in a pod of the pool (its hostname is
// the pod's name), with the tree there, a patch that wins — and the pod
// no fork claimed is deleted with the run; with forks as agent-sandbox
// Sandboxes too, each warm pod then a Sandbox's. The control: a fork of a
// run without a pool runs in a pod named after itself.
func TestWarmPods(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	repo := fixture(t)
	agent := `echo "pod $(hostname)"; cat value; echo 2 > value`
	for _, tc := range []struct {
		warm int
		crd  string
	}{{3, "never"}, {0, "never"}, {3, "always"}} {
		warm := tc.warm
		o := raceOptions(t, nil, repo, agent, 2)
		o.All = true
		var limits sandbox.Policy
		run.ForkLimits(o).Apply(&limits)
		s := openStore(t, cfg, Options{Namespace: ns, Warm: warm, WarmMemory: limits.Memory, WarmCPUs: limits.CPUs, UseSandboxCRD: tc.crd})
		o.Store, o.JudgeStore = s, s.o.Local
		// the Sandboxes the run makes, as the API server saw them, and those
		// of them the watch has not yet seen deleted
		var mu sync.Mutex
		var sandboxes []string
		live := map[string]bool{}
		stop := func() {}
		if tc.crd == "always" {
			// A watch the API server ends early (a loaded one may) is
			// started again from the last version it sent, so no event
			// is lost: once, under load, one saw no deletion at all.
			// Each is asked to end after a few seconds, so the resume
			// runs in every run of the test.
			res := s.dyn.Resource(sandboxGVR).Namespace(ns)
			list, err := res.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rv := list.GetResourceVersion()
			var watches atomic.Int32
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: new(int64(3))})
					if err != nil {
						t.Logf("the Sandboxes' watch from version %s: %v", rv, err)
						time.Sleep(time.Second)
						continue
					}
					watches.Add(1)
					for ev := range w.ResultChan() {
						u, ok := ev.Object.(*unstructured.Unstructured)
						if !ok {
							if ctx.Err() == nil {
								t.Logf("the Sandboxes' watch: %s %v", ev.Type, ev.Object)
							}
							continue
						}
						rv = u.GetResourceVersion()
						mu.Lock()
						switch ev.Type {
						case watch.Added:
							sandboxes = append(sandboxes, u.GetName())
							live[u.GetName()] = true
						case watch.Deleted:
							delete(live, u.GetName())
						}
						mu.Unlock()
					}
					w.Stop()
				}
			}()
			stop = func() { cancel(); <-done }
			t.Cleanup(stop) // before the test ends, however it ends
			defer func() {
				if !t.Failed() && watches.Load() < 2 {
					t.Errorf("the Sandboxes' watch never ended and was resumed (%d watches)", watches.Load())
				}
			}()
		}
		r, dir, err := run.Race(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != event.RunWon {
			t.Fatalf("warm %d: status %s: %+v", warm, r.Status, r.Fork)
		}
		for n := range 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "forks", strconv.Itoa(n), "agent.log"))
			fromPool := regexp.MustCompile(`pod fb-run-\S+-w[0-9]+\n1\n`).Match(log)
			if fromPool != (warm > 0) {
				t.Errorf("warm %d: fork %d ran in a pod of the pool: %v, want %v:\n%s", warm, n, fromPool, warm > 0, log)
			}
		}
		waitNothingLeft(t, cfg, ns, time.Minute)
		if tc.crd == "always" {
			// Nothing is left in the API: once the watch has seen every
			// Sandbox it saw made deleted, it has seen every one made
			// before those deletions (a watch sends in order).
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				mu.Lock()
				n := len(live)
				mu.Unlock()
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after nothing was left, the watch has not seen %d Sandboxes deleted", n)
				}
			}
			stop()
			if n := len(regexp.MustCompile(`fb-run-\S+-w[0-9]+`).FindAllString(strings.Join(sandboxes, " "), -1)); n != warm {
				t.Errorf("the warm pods' Sandboxes: %v, want %d", sandboxes, warm)
			}
		}
	}
}

// sandboxOwns checks that pod name is its Sandbox's — the controller's
// owner reference, the Sandbox's uid — and the Sandbox the run's: owned
// by its anchor, a Lease.
func sandboxOwns(t *testing.T, s *Store, name string) {
	t.Helper()
	ctx := context.Background()
	p, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the fork's Sandbox: %v", err)
	}
	if err := ownedBy(p, sb.GetUID()); err != nil {
		t.Errorf("%v (owners %+v)", err, p.GetOwnerReferences())
	}
	if refs := sb.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Lease" {
		t.Errorf("the Sandbox's owners %+v, want the run's Lease", refs)
	}
	// control: the check refuses the pod for another uid
	if ownedBy(p, "not-the-sandbox") == nil {
		t.Error("control: ownedBy accepts the pod for another uid")
	}
}

// TestClusterSandboxImpostor: a pod someone made first under the name a
// fork's Sandbox gives its pod — one agent-sandbox's controller refuses to
// adopt but which is there by that name, and one it adopts — is refused
// by the fork, which sends it nothing: its /work holds no tree.
func TestClusterSandboxImpostor(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	// forkbomb-pod, small enough to be kept as ConfigMaps: the pods get
	// it from their start
	s := openStore(t, cfg, Options{Namespace: ns, UseSandboxCRD: "always", PodBin: podBinary(t)})
	if s.binParts.n == 0 {
		t.Fatal("forkbomb-pod is not kept as ConfigMaps")
	}
	ctx := context.Background()
	newRun(t, s, "run-imp")
	ectx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		fork, why string
		adoptable bool
	}{
		// a plain pod of the very spec forkbomb asks its Sandbox for (the
		// deadline a one-minute command's fork gets, the binary's parts),
		// its labels forkbomb's, in the Sandbox's pod's name: the
		// controller does not adopt it, and its owner tells it apart
		{"run-imp-f0", "not its Sandbox's", false},
		// the same with the controller's name hash and its list of copied
		// labels, made a second before the Sandbox: the controller adopts
		// it, so once adopted its owner is the Sandbox and its creation
		// time tells it apart (seen before the adoption, its owner does)
		{"run-imp-f1", "made before its Sandbox|not its Sandbox's", true},
	} {
		name := "fb-" + tc.fork
		imp := pod(PodOptions{Name: name, Run: "run-imp", Image: DefaultImage, DeadlineSeconds: int64((time.Minute + 10*time.Minute) / time.Second), bin: s.binParts})
		if tc.adoptable {
			l := imp.GetLabels()
			keys := slices.Sorted(maps.Keys(l))
			l[sandboxNameHashLabel] = sandboxNameHash(name)
			imp.SetLabels(l)
			imp.SetAnnotations(map[string]string{sandboxPropagatedLabels: strings.Join(keys, ",")})
		}
		if _, err := s.dyn.Resource(podGVR).Namespace(ns).Create(ctx, imp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		defer s.dyn.Resource(podGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		time.Sleep(1100 * time.Millisecond) // creation times are in seconds
		if tc.fork != "run-imp-f0" {
			if _, err := s.Fork(ctx, "run-imp", tc.fork); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Exec(ectx, tc.fork, sandbox.Policy{Command: []string{"true"}, Timeout: time.Minute}, sandbox.Stdio{})
		if err == nil || !regexp.MustCompile(tc.why).MatchString(err.Error()) {
			t.Fatalf("%s: the fork ran in a pod the controller did not make for its Sandbox: %v", tc.fork, err)
		}
		t.Logf("%s: %v", tc.fork, err)
		if tc.adoptable { // control: the controller adopts it
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.GetOwnerReferences()) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("control: the controller did not adopt %s: the case proves nothing", name)
				}
			}
			// adopted, its owner is the Sandbox: the fork's check now
			// refuses it by its creation time alone
			sb, err := s.dyn.Resource(sandboxGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			po := PodOptions{Name: name, Run: "run-imp", Image: DefaultImage, DeadlineSeconds: int64((time.Minute + 10*time.Minute) / time.Second), bin: s.binParts}
			if err := s.sandboxPod(ctx, po, sb.GetUID()); err == nil || !strings.Contains(err.Error(), "made before its Sandbox") {
				t.Errorf("the adopted impostor: %v", err)
			}
		}
		if _, err := s.waitRunning(ectx, name, ""); err != nil {
			t.Fatal(err)
		}
		// nothing but the binary's read-only mount, which the pod has
		// from its start
		out, _, err := s.output(ectx, name, "ls -A /work", nil, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(out)) != ".forkbomb" {
			t.Errorf("%s: the impostor's /work holds %q: the fork sent it its tree", tc.fork, out)
		}
	}
	// control: the same store's next fork, whose name nobody took, runs
	if _, err := s.Fork(ctx, "run-imp", "run-imp-f2"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(ectx, "run-imp-f2", sandbox.Policy{Command: []string{"true"}, Timeout: time.Minute}, sandbox.Stdio{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("control: a fork with its own Sandbox's pod: %v, %+v", err, res)
	}
	sandboxOwns(t, s, "fb-run-imp-f2")
}
