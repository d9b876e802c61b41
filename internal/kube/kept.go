package kube

// Kept warm pods (Options.KeepWarm): a run's end leaves Options.Warm
// started pods of its kind for the next run, so that run's forks find pods
// already running instead of waiting for theirs to start.
//
// A pool is one kind of pod — everything of the pod's spec but its name,
// its run and its deadline (keptKind) — in one namespace. It is anchored
// by a Lease of its own (forkbomb-pool-KIND), which each run that uses it
// renews for KeepWarm, and which a later forkbomb's Reap deletes once it
// lapses — and with it, through the garbage collector, its pods and its
// deny-all NetworkPolicy. A kept pod holds nothing: it was made by a run's
// end, never sent a tree or forkbomb's binary, never ran a command.
//
// A run claims a kept pod with one patch that names the pod's
// resourceVersion: its labels become the run's (so the run's
// NetworkPolicy, not the pool's, selects it), its owner the run's anchor,
// its deadline the run's. Two runs that patch one pod: the API server
// applies one, and the other gets a conflict and tries the next pod. A
// claimed pod is then the fork's, deleted with it, never returned to the
// pool: a pod serves one fork of one run, as without a pool.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	po := PodOptions{Image: s.o.Image, RuntimeClass: s.o.RuntimeClass, Memory: s.o.WarmMemory, CPUs: s.o.WarmCPUs}
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
	b, err := json.Marshal(podSpec(po)) // maps: keys in order
	if err != nil {
		panic(err) // only strings, numbers, maps and lists
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", s.o.Namespace)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func poolRun(kind string) string { return "pool-" + kind }

// claimKept claims one kept pod of po's kind for the run (see the file's
// doc) and returns its name; "" when there is none to claim. A pod still
// starting is claimed too: the run waits for it as for its own.
func (s *Store) claimKept(ctx context.Context, run string, rs *runState, po PodOptions) string {
	kind := s.keptKind(po)
	pods := s.dyn.Resource(podGVR).Namespace(s.o.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelPool + "=" + kind})
	if err != nil {
		return ""
	}
	// running ones first, then the oldest
	cand := []unstructured.Unstructured{}
	for _, u := range list.Items {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if u.GetDeletionTimestamp() == nil && (phase == "Running" || phase == "Pending") {
			cand = append(cand, u)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool {
		pi, _, _ := unstructured.NestedString(cand[i].Object, "status", "phase")
		pj, _, _ := unstructured.NestedString(cand[j].Object, "status", "phase")
		if (pi == "Running") != (pj == "Running") {
			return pi == "Running"
		}
		ti, tj := cand[i].GetCreationTimestamp(), cand[j].GetCreationTimestamp()
		return ti.Before(&tj)
	})
	for _, u := range cand {
		patch, ok := s.claimPatch(&u, run, rs)
		if !ok {
			continue
		}
		if _, err := pods.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
			return u.GetName()
		} else if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			return "" // the API server refuses: the run makes its own
		}
		// another run's, gone, or past its deadline: the next
	}
	return ""
}

// claimPatch is the patch that makes kept pod u the run's, conditional on
// u's resourceVersion; !ok when u cannot serve the run for its deadline.
func (s *Store) claimPatch(u *unstructured.Unstructured, run string, rs *runState) ([]byte, bool) {
	// activeDeadlineSeconds counts from the pod's start and may only be
	// lowered: the run's deadline from now on, if the pod has that long
	// left
	have, _, _ := unstructured.NestedInt64(u.Object, "spec", "activeDeadlineSeconds")
	age := 0.0
	if st, ok, _ := unstructured.NestedString(u.Object, "status", "startTime"); ok {
		if t, err := time.Parse(time.RFC3339, st); err == nil {
			age = time.Since(t).Seconds()
		}
	}
	want := int64(math.Ceil(age)) + 1 + int64(s.o.Deadline/time.Second)
	if have > 0 && want > have {
		return nil, false
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": u.GetResourceVersion(),
			"labels":          map[string]any{LabelRun: run, LabelPool: nil},
			"ownerReferences": objectMeta("", run, "", rs.anchor)["ownerReferences"],
		},
		"spec": map[string]any{"activeDeadlineSeconds": want},
	}
	b, err := json.Marshal(patch)
	return b, err == nil
}

// keep tops the pool of the run's warm pods' kind up to Options.Warm pods
// for the next run, renewing (or making) its anchor and its deny-all
// NetworkPolicy. The pods are only asked for: the node starts them after
// forkbomb has gone. It says what it left on Options.Progress.
func (s *Store) keep(ctx context.Context, rs *runState) error {
	po := s.warmOptions(rs)
	kind := s.keptKind(po)
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
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if u.GetDeletionTimestamp() == nil && (phase == "Running" || phase == "Pending") {
			have++
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
			return fmt.Errorf("keep a warm pod: %w", err)
		}
	}
	if s.o.Progress != nil {
		fmt.Fprintf(s.o.Progress, "forkbomb: %d warm pods kept for the next run in namespace %s (pool %s, until %s unless a run renews it; --keep-warm 0 keeps none)\n",
			have+made, s.o.Namespace, kind, time.Now().Add(s.o.KeepWarm).Format("15:04"))
	}
	return nil
}

// poolAnchor makes the pool's Lease, or renews it for KeepWarm from now,
// and its deny-all NetworkPolicy.
func (s *Store) poolAnchor(ctx context.Context, kind string) (*unstructured.Unstructured, error) {
	name := "forkbomb-pool-" + kind
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
