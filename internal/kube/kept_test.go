package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestKeptKind: a pool is one kind of pod — the same options give the
// same kind, and a change of image, limits, tree image or namespace
// another; a pod's name, run, owner and deadline are not its kind.
func TestKeptKind(t *testing.T) {
	s := &Store{o: Options{Namespace: "a"}}
	base := PodOptions{Image: "img", Memory: 1 << 30, CPUs: 1}
	same := base
	same.Name, same.Run, same.DeadlineSeconds = "fb-x", "run-x", 99
	if s.keptKind(base) != s.keptKind(same) {
		t.Error("a pod's name, run or deadline changed its kind")
	}
	kinds := map[string]string{"base": s.keptKind(base)}
	for name, po := range map[string]PodOptions{
		"image":      {Image: "other", Memory: 1 << 30, CPUs: 1},
		"memory":     {Image: "img", Memory: 2 << 30, CPUs: 1},
		"cpus":       {Image: "img", Memory: 1 << 30, CPUs: 2},
		"tree image": {Image: "img", Memory: 1 << 30, CPUs: 1, TreeInImage: true},
		"runtime":    {Image: "img", Memory: 1 << 30, CPUs: 1, RuntimeClass: "gvisor"},
	} {
		kinds[name] = s.keptKind(po)
	}
	kinds["namespace"] = (&Store{o: Options{Namespace: "b"}}).keptKind(base)
	seen := map[string]string{}
	for name, k := range kinds {
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s are one kind (%s)", name, other, k)
		}
		seen[k] = name
	}
}

// TestKeptPods, against the real API server (no kubelet: pods stay
// Pending): a run's end leaves Warm pods of its kind in a pool with an
// anchor and a deny-all policy of its own; a later run claims them —
// labels, owner and deadline changed in one patch that names the pod's
// resourceVersion, so that of two runs patching one pod one gets it and
// the other a conflict; many claims at once take each pod once; the pool
// is topped up at the next run's end; a lapsed pool is reaped.
func TestKeptPods(t *testing.T) {
	cfg := apiServer(t)
	bg := context.Background()
	o := Options{Namespace: "default", Warm: 3, WarmMemory: 256 << 20, WarmCPUs: 0.5, KeepWarm: time.Minute, Deadline: time.Hour}
	a := openStore(t, cfg, o)
	if err := a.Remove(bg, newRun(t, a, "run-a")); err != nil {
		t.Fatal(err)
	}
	if err := a.Remove(bg, "run-a"); err != nil {
		t.Fatal(err)
	}
	if err := a.Keep(bg); err != nil {
		t.Fatal(err)
	}
	kind := a.keptKind(a.warmOptions(&runState{}))
	pods := a.dyn.Resource(podGVR).Namespace("default")
	list, err := pods.List(bg, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d pods kept, want 3", len(list.Items))
	}
	pool, err := a.dyn.Resource(leaseGVR).Namespace("default").Get(bg, "forkbomb-pool-"+kind, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := str(t, pool, "spec", "leaseDurationSeconds"); got != "60" {
		t.Errorf("the pool's lease lasts %s s, want 60 (KeepWarm)", got)
	}
	nps, err := a.dyn.Resource(netpolGVR).Namespace("default").List(bg, metav1.ListOptions{LabelSelector: LabelRun + "=" + poolRun(kind)})
	if err != nil || len(nps.Items) != 1 {
		t.Fatalf("the pool's network policies: %v %v", nps, err)
	}
	if got := str(t, &nps.Items[0], "spec", "egress"); got != "[]" && got != "<none>" {
		t.Errorf("the pool's policy lets out %s", got)
	}
	for _, p := range list.Items {
		if err := a.keptSpec(&p, a.warmOptions(&runState{}), kind); err != nil {
			t.Errorf("forkbomb's own kept pod as stored: %v", err)
		}
		if refs := p.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != pool.GetUID() {
			t.Errorf("kept pod %s owned by %+v, want the pool's lease", p.GetName(), refs)
		}
		if got := str(t, &p, "spec", "activeDeadlineSeconds"); got != "3660" {
			t.Errorf("kept pod %s: deadline %s, want KeepWarm + Deadline = 3660", p.GetName(), got)
		}
		if p.GetLabels()[LabelRun] != poolRun(kind) {
			t.Errorf("kept pod %s: labels %v", p.GetName(), p.GetLabels())
		}
		cs := str(t, &p, "spec", "containers")
		for _, want := range []string{`"readOnlyRootFilesystem":true`, `"memory":"256Mi"`, `"cpu":"500m"`} {
			if !strings.Contains(cs, want) {
				t.Errorf("kept pod %s lacks %s: %s", p.GetName(), want, cs)
			}
		}
	}

	// two runs patch one pod from the same version: one gets it
	b := openStore(t, cfg, o)
	c := openStore(t, cfg, o)
	rb, err := b.anchor(bg, "run-b")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.anchor(bg, "run-c")
	if err != nil {
		t.Fatal(err)
	}
	stale := list.Items[0]
	pb, err := b.claimPatch(&stale, "run-b", rb)
	must(t, err)
	pc, err := c.claimPatch(&stale, "run-c", rc)
	must(t, err)
	if _, err := pods.Patch(bg, stale.GetName(), types.MergePatchType, pb, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(bg, stale.GetName(), types.MergePatchType, pc, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("a second claim of one version: %v, want a conflict", err)
	}
	got, err := pods.Get(bg, stale.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetLabels()[LabelRun] != "run-b" || got.GetLabels()[LabelPool] != "" {
		t.Errorf("claimed pod's labels %v, want run-b's and no pool", got.GetLabels())
	}
	if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != rb.anchor.GetUID() {
		t.Errorf("claimed pod owned by %+v, want run-b's anchor", refs)
	}
	if d := str(t, got, "spec", "activeDeadlineSeconds"); d != "3601" {
		t.Errorf("claimed pod's deadline %s, want the run's from now (3601)", d)
	}
	po := b.warmOptions(rb)
	// another kind's run finds none, with two of this kind there
	other := po
	other.Memory = 512 << 20
	if name := b.claimKept(bg, "run-b", rb, other); name != "" {
		t.Errorf("a run of another kind claimed %s", name)
	}
	// pods that carry the pool's label but are not forkbomb's kept pods:
	// owned by another, or with a field forkbomb does not set
	spoof := func(name string, owner *unstructured.Unstructured, change func(spec map[string]any), meta ...func(u *unstructured.Unstructured)) {
		p := po
		p.Name, p.Run, p.Owner, p.DeadlineSeconds = name, poolRun(kind), owner, 3660
		u := pod(p)
		labels := u.GetLabels()
		labels[LabelPool] = kind
		u.SetLabels(labels)
		if change != nil {
			change(u.Object["spec"].(map[string]any))
		}
		for _, m := range meta {
			m(u)
		}
		if _, err := pods.Create(bg, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctr := func(spec map[string]any) map[string]any { return spec["containers"].([]any)[0].(map[string]any) }
	spoof("spoof-owner", rb.anchor, nil)
	spoof("spoof-unowned", nil, nil)
	spoof("spoof-probe", pool, func(spec map[string]any) {
		ctr(spec)["livenessProbe"] = map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", "echo x > /work/x"}}}
	})
	spoof("spoof-sidecar", pool, func(spec map[string]any) {
		side := map[string]any{}
		for k, v := range ctr(spec) {
			side[k] = v
		}
		side["name"] = "side"
		spec["containers"] = append(spec["containers"].([]any), side)
	})
	spoof("spoof-hostpath", pool, func(spec map[string]any) {
		spec["volumes"].([]any)[0] = map[string]any{"name": "work", "hostPath": map[string]any{"path": "/srv"}}
	})
	spoof("spoof-shared-pids", pool, func(spec map[string]any) { spec["shareProcessNamespace"] = true })
	spoof("spoof-image", pool, func(spec map[string]any) { ctr(spec)["image"] = "evil:v1" })
	spoof("spoof-escalation", pool, func(spec map[string]any) { // left out, it means allowed
		delete(ctr(spec)["securityContext"].(map[string]any), "allowPrivilegeEscalation")
	})
	spoof("spoof-termpath", pool, func(spec map[string]any) { ctr(spec)["terminationMessagePath"] = "/bin/sh" })
	spoof("spoof-account", pool, func(spec map[string]any) { spec["serviceAccountName"] = "builder" })
	spoof("spoof-label", pool, nil, func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		l["egress"] = "open" // another NetworkPolicy may select it
		u.SetLabels(l)
	})
	spoof("spoof-annotation", pool, nil, func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"k8s.v1.cni.cncf.io/networks": "outside"})
	})

	// the two left, claimed by six at once from two runs: each once —
	// and none of the pods that are not forkbomb's
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		s, rs, run := b, rb, "run-b"
		if i%2 == 1 {
			s, rs, run = c, rc, "run-c"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if name := s.claimKept(bg, run, rs, po); name != "" {
				mu.Lock()
				claimed[name]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != 2 {
		t.Errorf("claimed %v, want the two pods left", claimed)
	}
	for name, n := range claimed {
		if n != 1 || name == stale.GetName() {
			t.Errorf("pod %s claimed %d times", name, n)
		}
	}
	if name := b.claimKept(bg, "run-b", rb, po); name != "" {
		t.Errorf("claimed %s from a pool of none of forkbomb's", name)
	}
	for _, name := range []string{"spoof-owner", "spoof-unowned", "spoof-probe", "spoof-sidecar", "spoof-hostpath", "spoof-shared-pids", "spoof-image", "spoof-escalation", "spoof-termpath", "spoof-account", "spoof-label", "spoof-annotation"} {
		must(t, pods.Delete(bg, name, metav1.DeleteOptions{}))
	}

	// the next run's end tops the pool up again, and deletes a kept pod
	// that ended (its status as a kubelet would write it)
	// keepAgain is another run's end on b: Keep tops the pool up; it
	// returns the pool's pods then
	keepAgain := func() []unstructured.Unstructured {
		t.Helper()
		b.mu.Lock()
		b.toKeep = []PodOptions{po}
		b.mu.Unlock()
		must(t, b.Keep(bg))
		l, err := pods.List(bg, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
		must(t, err)
		return l.Items
	}
	list.Items = keepAgain()
	if len(list.Items) != 3 {
		t.Fatalf("%d pods in the pool after a top-up, want 3", len(list.Items))
	}
	ended := list.Items[0].GetName()
	if _, err := pods.Patch(bg, ended, types.MergePatchType, []byte(`{"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	list.Items = keepAgain()
	n := 0
	for _, p := range list.Items {
		if p.GetName() == ended && p.GetDeletionTimestamp() == nil {
			t.Errorf("the ended kept pod %s is still in the pool", ended)
		}
		if p.GetName() != ended {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d live pods in the pool after an ended one, want 3", n)
	}
	// a run of a tree image keeps nothing: its /work is the image's
	rt, err := b.anchor(bg, "run-tree")
	must(t, err)
	rt.image.Ref = "registry.test/forkbomb-tree@sha256:" + strings.Repeat("a", 64)
	b.Remove(bg, "run-tree")
	b.mu.Lock()
	if len(b.toKeep) != 0 {
		t.Errorf("a tree image's run asked to keep %+v", b.toKeep)
	}
	b.mu.Unlock()

	// a run of another kind drops the pool's pods: they would hold the
	// memory its own pods need
	e := openStore(t, cfg, Options{Namespace: "default", WarmMemory: 512 << 20, WarmCPUs: 0.5})
	newRun(t, e, "run-e")
	list, err = pods.List(bg, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
	must(t, err)
	for _, p := range list.Items {
		if p.GetDeletionTimestamp() == nil {
			t.Errorf("kept pod %s of another kind outlived a run's start", p.GetName())
		}
	}
	keepAgain()

	// a pool no run renews is reaped
	short := o
	short.KeepWarm = time.Second
	d := openStore(t, cfg, short)
	rd, err := d.anchor(bg, "run-d")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.keep(bg, d.warmOptions(rd), kind); err != nil { // renews the pool for 1 s
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	reaped, err := b.Reap(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(reaped, "forkbomb-pool-"+kind) {
		t.Errorf("reaped %v, want the lapsed pool", reaped)
	}
}

// TestClaimDeadline: a claim gives a kept pod the run's deadline from
// now — counted from the pod's start — and no claim where the pod has
// not that long left.
func TestClaimDeadline(t *testing.T) {
	s := &Store{o: Options{Deadline: time.Hour}}
	started := time.Now().Add(-100 * time.Second).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		have  int64
		start string
		want  int64
		ok    bool
	}{
		{3800, started, 3701, true}, // 100 s old: 100 + 1 + 3600
		{3700, started, 3701, false},
		{3700, "", 3601, true}, // not started: its deadline has not begun
		{0, started, 3701, true},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if c.have > 0 {
			u.Object["spec"].(map[string]any)["activeDeadlineSeconds"] = c.have
		}
		if c.start != "" {
			u.Object["status"] = map[string]any{"startTime": c.start}
		}
		got, ok := s.claimDeadline(u)
		if ok != c.ok || (got != c.want && got != c.want+1) { // a second may pass
			t.Errorf("deadline %d, started %q: %d %v, want %d %v", c.have, c.start, got, ok, c.want, c.ok)
		}
	}
}

// TestClusterKeptPods, on the real cluster: a run's end keeps a warm pod
// that starts after it; the next run (another store: another forkbomb)
// claims it and its fork runs there — the tree sent then, the fork's
// writes its own, its patch made — and the pod is the run's (labels,
// owner); a kept pod someone was in before its claim — a file in /work
// or /tmp, a process — is refused and the fork starts its own; nothing is
// left once the pool is deleted.
func TestClusterKeptPods(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	ctx := t.Context()
	o := Options{Namespace: ns, Warm: 1, KeepWarm: 10 * time.Minute}
	repo := fixture(t)
	top, base, err := workspace.ResolveBase(ctx, repo, "HEAD")
	must(t, err)
	// race runs one fork of a run on s: its pod the run's by labels and
	// owner
	race := func(s *Store, run string) string {
		t.Helper()
		return keptRace(t, s, top, base, run, func(f, obj string) {
			p, err := s.dyn.Resource(podGVR).Namespace(ns).Get(ctx, obj, metav1.GetOptions{})
			must(t, err)
			s.mu.Lock()
			anchor := s.runs[run].anchor
			s.mu.Unlock()
			if p.GetLabels()[LabelRun] != run || p.GetLabels()[LabelPool] != "" {
				t.Errorf("%s's pod %s: labels %v", f, obj, p.GetLabels())
			}
			if refs := p.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != anchor.GetUID() {
				t.Errorf("%s's pod %s: owners %+v, want the run's anchor", f, obj, refs)
			}
		})
	}

	a := openStore(t, cfg, o)
	if obj := race(a, "kept1"); strings.HasPrefix(obj, "fb-pool-") {
		t.Fatalf("the first run claimed %s from an empty pool", obj)
	}
	kept := keptRunning(t, a)
	b := openStore(t, cfg, o)
	if obj := race(b, "kept2"); obj != kept {
		t.Errorf("the second run's fork ran in %s, want the kept pod %s", obj, kept)
	}
	// someone with exec in the namespace leaves something in the next
	// kept pods: a file in /work, a file in /tmp, a process
	for i, plant := range []string{"echo x > /work/planted", "mkdir /tmp/home", "nohup sleep 600 >/dev/null 2>&1 &"} {
		planted := keptRunning(t, b)
		var serr bytes.Buffer
		if code, err := b.stream(ctx, planted, []string{"/bin/sh", "-c", plant}, nil, io.Discard, &serr); err != nil || code != 0 {
			t.Fatalf("plant in %s: %d %v %s", planted, code, err, serr.String())
		}
		run := fmt.Sprintf("kept%d", 3+i)
		if obj := race(b, run); obj == planted {
			t.Errorf("%q: the fork ran in %s, where someone else had been first", plant, planted)
		}
		if p, err := b.dyn.Resource(podGVR).Namespace(ns).Get(ctx, planted, metav1.GetOptions{}); err == nil && p.GetDeletionTimestamp() == nil {
			t.Errorf("%q: the refused kept pod %s is still there", plant, planted)
		}
	}
	c := openStore(t, cfg, o)
	a.Close()
	b.Close()
	c.Close()
	bg := metav1.DeletePropagationBackground
	must(t, c.dyn.Resource(leaseGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed}))
	waitNothingLeft(t, cfg, ns, 2*time.Minute)
}

// keptRunning waits for the pool's one pod in s's namespace to run and
// returns its name.
func keptRunning(t *testing.T, s *Store) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		l, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: LabelPool})
		must(t, err)
		if len(l.Items) == 1 {
			if ok, err := podRunning(&l.Items[0]); ok && err == nil {
				return l.Items[0].GetName()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kept pod does not run: %d in the pool", len(l.Items))
		}
	}
}

// keptRace runs one fork of a run on s — its command reads the fixture's
// value, 1, and writes the run's name, which its patch must hold —, calls
// check (if set) with the fork's name and its pod's before the fork ends,
// then ends the fork and the run and keeps the run's pool (Keep); it
// returns the pod's name.
func keptRace(t *testing.T, s *Store, top, base, run string, check func(f, obj string)) string {
	t.Helper()
	ctx := t.Context()
	_, err := s.New(ctx, run, workspace.NewOptions{Repo: top, Rev: base})
	must(t, err)
	f := run + "-f"
	_, err = s.Fork(ctx, run, f)
	must(t, err)
	var out bytes.Buffer
	res, err := s.Exec(ctx, f, sandbox.Policy{Command: []string{"/bin/sh", "-c", "cat value && echo " + run + " > value"}, Timeout: time.Minute},
		sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "1\n" {
		t.Fatalf("%s: %v %+v: %q, want %q", f, err, res, out.String(), "1\n")
	}
	d, err := s.Diff(ctx, f, false)
	must(t, err)
	if !strings.Contains(string(d.Patch), "-1\n+"+run+"\n") {
		t.Errorf("%s: patch:\n%s", f, d.Patch)
	}
	s.mu.Lock()
	obj := s.forks[f].obj
	s.mu.Unlock()
	if check != nil {
		check(f, obj)
	}
	must(t, s.Remove(ctx, f))
	must(t, s.Remove(ctx, run))
	must(t, s.Keep(ctx))
	return obj
}
