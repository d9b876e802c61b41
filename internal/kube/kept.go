package kube

// Kept warm pods (Options.KeepWarm): after a run that was not
// interrupted, Store.Keep leaves Options.Warm started pods of its kind for
// the next run, so that run's forks find pods already running instead of
// waiting for theirs to start. Not for a tree image's runs (Remove).
//
// A pool is one kind of pod — everything of the pod's spec but its name,
// its run and its deadline (keptKind) — in one namespace. It is anchored
// by a Lease of its own (forkbomb-pool-KIND), which each run that uses it
// renews for KeepWarm, and which a later forkbomb's Reap deletes once it
// lapses — and with it, through the garbage collector, its pods and its
// deny-all NetworkPolicy. A kept pod holds nothing of a run's: it was made
// by a run's end, never sent a tree, never ran a command; forkbomb's
// binary it holds only where its init container joined it (binmap.go),
// read-only.
//
// A run claims a kept pod with one patch that names the pod's
// resourceVersion: its labels become the run's (so the run's
// NetworkPolicy, not the pool's, selects it), its owner the run's anchor,
// its deadline the run's. Two runs that patch one pod: the API server
// applies one, and the other gets a conflict and tries the next pod. A
// claimed pod is then the fork's, deleted with it, never returned to the
// pool: a pod serves one fork of one run, as without a pool. Its start
// then checks that nobody was in it first (freshCheck, exec.go).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// LabelPool marks a kept pod, not yet claimed, with its pool's kind.
const LabelPool = "forkbomb.dev/pool"

// warmOptions are the run's warm pods' options, as far as they are known
// before a pod's name: its image (the tree image once made), its limits.
func (s *Store) warmOptions(rs *runState) PodOptions {
	po := PodOptions{Image: s.o.Image, RuntimeClass: s.o.RuntimeClass, Memory: s.o.WarmMemory, CPUs: s.o.WarmCPUs, bin: s.binParts}
	if rs.image.Ref != "" {
		po.Image, po.TreeInImage = rs.image.Ref, true
	}
	return po
}

// keptKind names a pool: a hash of the pod's spec as its kind makes it —
// without its name, run, owner and deadline — and the namespace. A pod
// of one kind serves any run that asks for that kind; a change of image,
// limits, runtime class or of forkbomb's pod spec itself is another pool.
func (s *Store) keptKind(po PodOptions) string {
	po.Name, po.Run, po.Owner, po.DeadlineSeconds = "", "", nil, 0
	// maps marshal with their keys in order; of strings, numbers, maps
	// and lists it cannot fail (and a claim checks the spec itself anyway)
	b, _ := json.Marshal(podSpec(po))
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", s.o.Namespace)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func poolRun(kind string) string { return "pool-" + kind }

// poolLease names kind's pool's Lease, its anchor.
func poolLease(kind string) string { return "forkbomb-pool-" + kind }

// claimKept claims one kept pod of po's kind for the run (see the file's
// doc) and returns its name; "" when there is none to claim. A pod still
// starting is claimed too: the run waits for it as for its own. Only a
// pod forkbomb would have made is claimed: owned by the pool's Lease
// alone, its spec forkbomb's for the kind (keptSpec) — its label says
// nothing, since whoever may make pods in the namespace could set it.
func (s *Store) claimKept(ctx context.Context, run string, rs *runState, po PodOptions) string {
	kind := s.keptKind(po)
	pool, err := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Get(ctx, poolLease(kind), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
	if err != nil {
		return ""
	}
	// still in the pool, and forkbomb's
	ours := func(u *unstructured.Unstructured) bool {
		refs := u.GetOwnerReferences()
		return u.GetLabels()[LabelPool] == kind && s.claimable(u) && len(refs) == 1 && refs[0].UID == pool.GetUID() && s.keptSpec(u, po, kind) == nil
	}
	// running ones first, then the oldest
	cand := []unstructured.Unstructured{}
	for _, u := range list.Items {
		if ours(&u) {
			cand = append(cand, u)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool {
		if pi, pj := phaseOf(&cand[i]), phaseOf(&cand[j]); (pi == "Running") != (pj == "Running") {
			return pi == "Running"
		}
		ti, tj := cand[i].GetCreationTimestamp(), cand[j].GetCreationTimestamp()
		return ti.Before(&tj)
	})
	// The run's warm pods claim at once: each begins at a pod of its
	// own among the running ones (claimTurn), not all at the first,
	// where all but one would lose a conflict and read it again.
	running := 0
	for running < len(cand) && phaseOf(&cand[running]) == "Running" {
		running++
	}
	turn := s.claimTurn.Add(1) - 1
	for k := range cand {
		i := k
		if k < running {
			i = int((uint64(k) + turn) % uint64(running))
		}
		u := &cand[i]
		// A conflict is another claim, or the pod's own changes while it
		// starts (scheduled, its status written): read again, and claimed
		// only if still in the pool and forkbomb's.
		for try := 0; try < 5; try++ {
			patch, err := s.claimPatch(u, run, rs)
			if err != nil {
				break
			}
			_, err = pods.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
			if err == nil {
				return u.GetName()
			}
			if !apierrors.IsConflict(err) {
				if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
					break // gone, or past its deadline: the next
				}
				return "" // the API server refuses: the run makes its own
			}
			if u, err = pods.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil || !ours(u) {
				break
			}
		}
	}
	return ""
}

func phaseOf(u *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return p
}

// claimDeadline is the deadline a claim gives kept pod u: the run's from
// now on (activeDeadlineSeconds counts from the pod's start); !ok when u
// has not that long left (the deadline may only be lowered).
func (s *Store) claimDeadline(u *unstructured.Unstructured) (int64, bool) {
	have, _, _ := unstructured.NestedInt64(u.Object, "spec", "activeDeadlineSeconds")
	age := 0.0
	if st, ok, _ := unstructured.NestedString(u.Object, "status", "startTime"); ok {
		if t, err := time.Parse(time.RFC3339, st); err == nil {
			age = time.Since(t).Seconds()
		}
	}
	want := int64(math.Ceil(age)) + 1 + int64(s.o.Deadline/time.Second)
	return want, have <= 0 || want <= have
}

// claimable: kept pod u is neither going nor gone, and has the run's
// deadline left.
func (s *Store) claimable(u *unstructured.Unstructured) bool {
	phase := phaseOf(u)
	_, ok := s.claimDeadline(u)
	return u.GetDeletionTimestamp() == nil && (phase == "Running" || phase == "Pending") && ok
}

// claimPatch is the patch that makes kept pod u the run's, conditional on
// u's resourceVersion.
func (s *Store) claimPatch(u *unstructured.Unstructured, run string, rs *runState) ([]byte, error) {
	want, ok := s.claimDeadline(u)
	if !ok {
		return nil, fmt.Errorf("kept pod %s has less than the run's deadline left", u.GetName())
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": u.GetResourceVersion(),
			"labels":          map[string]any{LabelRun: run, LabelPool: nil},
			"ownerReferences": objectMeta("", run, "", rs.anchor)["ownerReferences"],
		},
		"spec": map[string]any{"activeDeadlineSeconds": want},
	})
}

// podDefaults are the fields of a stored pod spec that forkbomb does not
// set, each with the values the API server's defaults and the scheduler
// give it. Any other field forkbomb did not set — a second container, an
// init or ephemeral container, a probe or a lifecycle hook, another volume,
// a shared process namespace, a host path — or one of these with another
// value (a termination message file mounted over a binary, another service
// account, a toleration of the control plane's taints) is not a kept pod's.
// A cluster whose admission adds anything else (a LimitRange's defaults, a
// RuntimeClass's overhead, a priority class) gets no kept pods: its runs
// make their own.
var podDefaults = map[string]func(v any) bool{
	"spec.dnsPolicy":                             equals("ClusterFirst"),
	"spec.schedulerName":                         equals("default-scheduler"),
	"spec.serviceAccountName":                    equals("default"),
	"spec.serviceAccount":                        equals("default"),
	"spec.nodeName":                              func(v any) bool { _, ok := v.(string); return ok },
	"spec.priority":                              equals(float64(0)),
	"spec.preemptionPolicy":                      equals("PreemptLowerPriority"),
	"spec.tolerations":                           defaultTolerations,
	"spec.containers[].terminationMessagePath":   equals("/dev/termination-log"),
	"spec.containers[].terminationMessagePolicy": equals("File"),
	// the binary's init container (binmap.go)
	"spec.initContainers[].terminationMessagePath":   equals("/dev/termination-log"),
	"spec.initContainers[].terminationMessagePolicy": equals("File"),
}

func equals(want any) func(any) bool { return func(v any) bool { return v == want } }

// defaultTolerations: those the DefaultTolerationSeconds admission adds
// to every pod (a node not ready or unreachable, for at most 300 s).
func defaultTolerations(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, t := range list {
		m, _ := t.(map[string]any)
		key, _ := m["key"].(string)
		if len(m) != 4 || (key != "node.kubernetes.io/not-ready" && key != "node.kubernetes.io/unreachable") ||
			m["operator"] != "Exists" || m["effect"] != "NoExecute" || m["tolerationSeconds"] != float64(300) {
			return false
		}
	}
	return true
}

// omittedFalse are the fields forkbomb sets false that the API server
// leaves out (plain booleans, where a missing field is false). Every other
// field forkbomb sets must be stored as set: a missing
// allowPrivilegeEscalation, say, would mean true.
var omittedFalse = map[string]bool{"spec.hostNetwork": true, "spec.hostPID": true, "spec.hostIPC": true}

// keptSpec checks that kept pod u is one forkbomb makes for po's kind: its
// labels forkbomb's alone, no annotation and no finalizer (another label
// could match another NetworkPolicy; an annotation could give the pod a
// network or runtime option), and its spec forkbomb's — every field
// forkbomb sets has its value, and any other is a default (podDefaults).
func (s *Store) keptSpec(u *unstructured.Unstructured, po PodOptions, kind string) error {
	wantLabels := map[string]string{LabelManaged: Managed, LabelRun: poolRun(kind), LabelFork: u.GetName(), LabelPool: kind}
	if got := u.GetLabels(); !maps.Equal(got, wantLabels) {
		return fmt.Errorf("kept pod %s: labels %v are not forkbomb's", u.GetName(), got)
	}
	if len(u.GetAnnotations()) > 0 || len(u.GetFinalizers()) > 0 {
		return fmt.Errorf("kept pod %s has annotations or finalizers", u.GetName())
	}
	po.Name, po.Run, po.Owner = "", poolRun(kind), nil
	want := podSpec(po)
	have, _, _ := unstructured.NestedMap(u.Object, "spec")
	want["activeDeadlineSeconds"] = have["activeDeadlineSeconds"] // lowered by design
	if err := specIs(u, want); err != nil {
		return fmt.Errorf("kept pod %s: %w", u.GetName(), err)
	}
	return nil
}

// specIs checks that pod u's stored spec is want, forkbomb's: every field
// forkbomb sets has its value, and any other is a default (podDefaults).
func specIs(u *unstructured.Unstructured, want map[string]any) error {
	have, _, _ := unstructured.NestedMap(u.Object, "spec")
	if have == nil {
		return errors.New("no spec")
	}
	var w, h any
	if err := roundTrip(want, &w); err != nil {
		return err
	}
	if err := roundTrip(have, &h); err != nil {
		return err
	}
	return sameFields("spec", w, h)
}

// roundTrip gives v's JSON form (numbers as float64), so that forkbomb's
// values and the API server's compare alike.
func roundTrip(v any, out *any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// isEmpty: an empty object or list, which the API server may leave out.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// sameFields compares want (forkbomb's) with have (stored) at path.
func sameFields(path string, want, have any) error {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", path)
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok && (omittedFalse[path+"."+k] && wv == false || isEmpty(wv)) {
				continue // left out by the API server, meaning the same
			}
			if !ok {
				return fmt.Errorf("%s.%s is missing", path, k)
			}
			if err := sameFields(path+"."+k, wv, hv); err != nil {
				return err
			}
		}
		for k := range h {
			if _, ok := w[k]; !ok {
				if def := podDefaults[path+"."+k]; def == nil || !def(h[k]) {
					return fmt.Errorf("%s.%s is not forkbomb's", path, k)
				}
			}
		}
		return nil
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return fmt.Errorf("%s differs", path)
		}
		for i := range w {
			if err := sameFields(path+"[]", w[i], h[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		if want != have {
			return fmt.Errorf("%s is %v, not %v", path, have, want)
		}
		return nil
	}
}

// Keep tops up the pools of the runs this store ended (Options.KeepWarm),
// each to Options.Warm pods for the next run, renewing (or making) the
// pool's anchor and its deny-all NetworkPolicy; kept pods that can no
// longer serve a run (ended, or short of its deadline) are deleted. The
// pods are only asked for: the node starts them after forkbomb has gone.
// Call it after runs that ended as they should — not after an interrupt,
// which asked for nothing to be left — before Close. It says what it left
// on Options.Progress.
func (s *Store) Keep(ctx context.Context) error {
	s.mu.Lock()
	kinds := s.toKeep
	s.toKeep = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, keepTimeout)
	defer cancel()
	seen := map[string]bool{}
	var errs []error
	for _, po := range kinds {
		if kind := s.keptKind(po); !seen[kind] {
			seen[kind] = true
			keep := s.keep
			if s.crd {
				keep = s.keepSandboxes
			}
			if err := keep(ctx, po, kind); err != nil {
				errs = append(errs, fmt.Errorf("keep warm pods: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// keepTimeout bounds Keep: a cluster that stalls must not hold forkbomb's
// exit.
const keepTimeout = 20 * time.Second

func (s *Store) keep(ctx context.Context, po PodOptions, kind string) error {
	anchor, err := s.poolAnchor(ctx, kind)
	if err != nil {
		return err
	}
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
	if err != nil {
		return err
	}
	have := 0
	for _, u := range list.Items {
		switch {
		case u.GetDeletionTimestamp() != nil:
		case s.claimable(&u):
			have++
		default:
			// only as listed: one a run claimed meanwhile is that run's
			rv := u.GetResourceVersion()
			zero := int64(0)
			pods.Delete(ctx, u.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		}
	}
	made := 0
	for ; have+made < s.o.Warm; made++ {
		p := po
		p.Name = objectName("fb-pool-", kind[:8]+"-"+randHex(4))
		p.Run, p.Owner = poolRun(kind), anchor
		p.DeadlineSeconds = int64((s.o.KeepWarm + s.o.Deadline) / time.Second)
		u := pod(p)
		labels := u.GetLabels()
		labels[LabelPool] = kind
		u.SetLabels(labels)
		if _, err := pods.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("make a kept pod: %w", err)
		}
	}
	if s.o.Progress != nil {
		fmt.Fprintf(s.o.Progress, "forkbomb: %d warm pods kept for the next run in namespace %s (pool %s, until %s unless a run renews it; --keep-warm 0 keeps none)\n",
			have+made, s.o.Namespace, kind, time.Now().Add(s.o.KeepWarm).Format("15:04"))
	}
	return nil
}

// dropOtherPools deletes the namespace's kept pods of kinds other than
// kind ("": every kind), not yet claimed: a pool is a cache of started
// pods, and its requests would hold the memory a run of another kind
// needs for its own pods, which would wait for the pool to lapse. Each is
// deleted only as it was listed (its resourceVersion): one a run claimed
// meanwhile is that run's.
func (s *Store) dropOtherPools(ctx context.Context, kind string) {
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelPool})
	if err != nil {
		return
	}
	zero := int64(0)
	for _, u := range list.Items {
		if k := u.GetLabels()[LabelPool]; k == kind || u.GetDeletionTimestamp() != nil {
			continue
		}
		rv := u.GetResourceVersion()
		pods.Delete(ctx, u.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	}
}

// poolAnchor makes the pool's Lease, or renews it for KeepWarm from now,
// and its deny-all NetworkPolicy.
func (s *Store) poolAnchor(ctx context.Context, kind string) (*unstructured.Unstructured, error) {
	name := poolLease(kind)
	leases := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace)
	secs := int64(s.o.KeepWarm / time.Second)
	var l *unstructured.Unstructured
	for try := 0; ; try++ {
		now := metav1.NewMicroTime(time.Now()).UTC().Format(metav1.RFC3339Micro)
		var err error
		l, err = leases.Create(ctx, lease(name, poolRun(kind), s.holder, secs, now), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("make the warm pods' pool: %w", err)
		}
		patch := fmt.Sprintf(`{"spec":{"renewTime":%q,"leaseDurationSeconds":%d}}`, now, secs)
		l, err = leases.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || try > 0 { // reaped between the two: made again
			return nil, fmt.Errorf("renew the warm pods' pool: %w", err)
		}
	}
	// named by the anchor's uid: a pool made again after a reap never
	// finds the old one's policy, which the garbage collector is deleting
	np := networkPolicy(name+"-"+string(l.GetUID())[:8], poolRun(kind), l, "", 0)
	if _, err := s.dyn.Resource(netpolGVR).Namespace(s.o.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("make the warm pods' pool's network policy: %w", err)
	}
	return l, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
