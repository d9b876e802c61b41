package kube

// Kept Sandboxes: Options.KeepWarm where forks are agent-sandbox
// Sandboxes and the cluster serves agent-sandbox's extensions
// (SandboxTemplate, SandboxWarmPool, SandboxClaim). A run's end leaves,
// under the pool's Lease (kept.go), a SandboxTemplate of the run's kind of
// pod and a SandboxWarmPool of Options.Warm replicas of it; agent-sandbox's
// controller makes the pool's Sandboxes and keeps it topped up. The next
// run's warm pods each claim one with a SandboxClaim owned by the run's
// Lease: the claim controller hands the claim one of the pool's Sandboxes,
// whose owner becomes the claim. Deleting the run's Lease deletes its
// claims, and through them their Sandboxes and pods; a fork that ends
// deletes its claim, not its Sandbox (for a claim whose Sandbox is gone
// the controller would find it another).
//
// The controller's choice is not trusted: it hands a claim whatever
// Sandbox is queued for the pool by the pool's name, and its Sandbox
// controller adopts a pod someone made first under a Sandbox's name. So
// before a warm pod is used, keptSandbox checks the chain itself — the
// Sandbox is the claim's alone, the pod its Sandbox's and made after it,
// the pod's labels and its maker's annotations the template's and the
// controller's, its spec forkbomb's for the kind — and lowers the pod's
// deadline to the run's, as a kept pod's claim does. One that fails is
// given back (its claim deleted) and the warm pod is made as without a
// pool.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// agent-sandbox's extensions, as its v1 releases serve them.
var (
	sandboxTemplateGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	sandboxPoolGVR     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	sandboxClaimGVR    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
)

// What agent-sandbox's controllers (v1.0) put on a claimed pool
// Sandbox's pod besides its name hash: the claim's uid, and the hash of
// the template's name.
const (
	sandboxClaimUIDLabel       = "agents.x-k8s.io/claim-uid"
	sandboxTemplateRefLabel    = "agents.x-k8s.io/sandbox-template-ref-hash"
	sandboxPropagatedAnnots    = "agents.x-k8s.io/propagated-annotations"
	sandboxPodNameAnnotation   = "agents.x-k8s.io/pod-name"
	autoscalerSafeToEvictAnnot = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// keptClaimTimeout bounds a warm pod's wait for its claim to be bound to
// a pool Sandbox whose pod passes keptSandbox; then it makes its own.
const keptClaimTimeout = 15 * time.Second

// sandboxPoolName names a kind's SandboxTemplate and SandboxWarmPool: by
// the pool's Lease's uid too, so a pool made again after a reap never
// finds the old one's, which the garbage collector is deleting.
func sandboxPoolName(kind string, anchor *unstructured.Unstructured) string {
	return poolLease(kind) + "-" + string(anchor.GetUID())[:8]
}

// LabelSandboxPool marks a pool of Sandboxes' objects and pods with its
// kind: not LabelPool, which names forkbomb's own kept pods (kept.go),
// whose top-up, reap and memory fit must leave these alone — a claimed
// pool Sandbox's pod keeps its labels while its fork runs.
const LabelSandboxPool = "forkbomb.dev/sandbox-pool"

// keptSandboxLabels are the labels of a pool's pod template: those of a
// kept pod but its fork's name, which the template cannot know.
func keptSandboxLabels(kind string) map[string]string {
	return map[string]string{LabelManaged: Managed, LabelRun: poolRun(kind), LabelSandboxPool: kind}
}

// keptSandboxOptions are po's, a pool's pod: no name, the pool's run, its
// deadline counted from each pod's start (KeepWarm, then a run's).
func (s *Store) keptSandboxOptions(po PodOptions, kind string) PodOptions {
	po.Name, po.Run, po.Owner = "", poolRun(kind), nil
	po.DeadlineSeconds = int64((s.o.KeepWarm + s.o.Deadline) / time.Second)
	return po
}

// keepSandboxes makes (or renews) kind's pool of Sandboxes for the next
// run: its Lease, the SandboxTemplate and the SandboxWarmPool of
// Options.Warm replicas, both owned by the Lease.
func (s *Store) keepSandboxes(ctx context.Context, po PodOptions, kind string) error {
	anchor, err := s.poolAnchor(ctx, kind)
	if err != nil {
		return err
	}
	name := sandboxPoolName(kind, anchor)
	p := s.keptSandboxOptions(po, kind)
	// the template's and the pool's own: the pool's Lease's, the kind's
	meta := func() map[string]any {
		m := objectMeta(name, poolRun(kind), "", anchor)
		m["labels"].(map[string]any)[LabelSandboxPool] = kind
		return m
	}
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxTemplateGVR.GroupVersion().String(),
		"kind":       "SandboxTemplate",
		"metadata":   meta(),
		"spec": map[string]any{
			"podTemplate": map[string]any{
				"metadata": map[string]any{"labels": anyLabels(keptSandboxLabels(kind))},
				"spec":     podSpec(p),
			},
			// forkbomb's own deny-all NetworkPolicy (poolAnchor) selects
			// the pods; the controller's would let them reach the Internet
			// and set their DNS
			"networkPolicyManagement": "Unmanaged",
		},
	}}
	// the deadline as this run's options make it (the kind leaves it out);
	// a pool of Recreate makes its Sandboxes again if it changed
	tpatch := fmt.Appendf(nil, `{"spec":{"podTemplate":{"spec":{"activeDeadlineSeconds":%d}}}}`, p.DeadlineSeconds)
	if err := s.ensurePoolObject(ctx, sandboxTemplateGVR, tmpl, anchor, tpatch); err != nil {
		return err
	}
	replicas := int64(s.o.Warm)
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxPoolGVR.GroupVersion().String(),
		"kind":       "SandboxWarmPool",
		"metadata":   meta(),
		"spec": map[string]any{
			"replicas":           replicas,
			"sandboxTemplateRef": map[string]any{"name": name},
			// a changed template's pool Sandboxes are deleted, not handed
			// out (claims check the pod's spec anyway)
			"updateStrategy": map[string]any{"type": "Recreate"},
		},
	}}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if err := s.ensurePoolObject(ctx, sandboxPoolGVR, pool, anchor, patch); err != nil {
		return err
	}
	if s.o.Progress != nil {
		fmt.Fprintf(s.o.Progress, "forkbomb: a pool of %d warm Sandboxes (agent-sandbox's SandboxWarmPool %s) kept for the next run in namespace %s, until %s unless a run renews it; --keep-warm 0 keeps none\n",
			s.o.Warm, name, s.o.Namespace, time.Now().Add(s.o.KeepWarm).Format("15:04"))
	}
	return nil
}

// ensurePoolObject creates u, or finds it made by an earlier run's Keep
// (owned by the pool's Lease alone) and applies patch to it.
func (s *Store) ensurePoolObject(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured, anchor *unstructured.Unstructured, patch []byte) error {
	r := s.dyn.Resource(gvr).Namespace(s.o.Namespace)
	_, err := r.Create(ctx, u, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("make the warm Sandboxes' %s: %w", u.GetKind(), err)
	}
	have, err := r.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the warm Sandboxes' %s: %w", u.GetKind(), err)
	}
	if refs := have.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != anchor.GetUID() {
		return fmt.Errorf("%s %s is not forkbomb's pool's", u.GetKind(), u.GetName())
	}
	if patch != nil {
		if _, err := r.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("renew the warm Sandboxes' %s: %w", u.GetKind(), err)
		}
	}
	return nil
}

// keptClaim is a pool Sandbox one of the run's warm pods claimed: its
// claim, its pool, and the Sandbox and pod that passed keptSandbox.
type keptClaim struct {
	claim      *unstructured.Unstructured
	pool, kind string
	po         PodOptions // keptSandboxOptions
	sb         string
	sbUID      types.UID
	podUID     types.UID
}

// errKeptRefused: a pool Sandbox refused for what waiting will not change
// (its spec, its deadline, another pod): its claim is given back at once.
var errKeptRefused = errors.New("refused")

// claimKeptSandbox claims one of kind's pool Sandboxes for one of the
// run's warm pods (po) and returns its name and uid once keptSandbox
// passes and the pod's own NetworkPolicy is made; "" when the pool has
// none ready for this warm pod, or the one the controller handed over is
// not forkbomb's (then its claim is deleted, which deletes it, and that is
// said on Options.Progress).
func (s *Store) claimKeptSandbox(ctx context.Context, run string, rs *runState, po PodOptions) (string, types.UID) {
	kind := s.keptKind(po)
	anchor, err := s.dyn.Resource(leaseGVR).Namespace(s.o.Namespace).Get(ctx, poolLease(kind), metav1.GetOptions{})
	if err != nil {
		return "", ""
	}
	name := sandboxPoolName(kind, anchor)
	pool, err := s.dyn.Resource(sandboxPoolGVR).Namespace(s.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", ""
	}
	// as many claims as the pool has ready: a claim the pool cannot serve
	// would have the controller make a Sandbox for it, a hop slower than
	// the warm pod's own
	ready, _, _ := unstructured.NestedInt64(pool.Object, "status", "readyReplicas")
	if rs.keptClaims.Add(1) > ready {
		return "", ""
	}
	// not the warm pod's name, which its own Sandbox takes if this one is
	// refused (a claim the pool cannot serve gets a Sandbox of its name)
	claim, err := s.dyn.Resource(sandboxClaimGVR).Namespace(s.o.Namespace).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxClaimGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   objectMeta(objectName("", po.Name+"-c"), run, "", rs.anchor),
		"spec":       map[string]any{"warmPoolRef": map[string]any{"name": name}},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", ""
	}
	kc := &keptClaim{claim: claim, pool: name, kind: kind, po: s.keptSandboxOptions(po, kind)}
	wctx, cancel := context.WithTimeout(ctx, keptClaimTimeout)
	defer cancel()
	for {
		why := s.keptSandbox(wctx, kc, true)
		if why == nil {
			// the pod's deny-all NetworkPolicy, the run's: it keeps the
			// pool's labels, and the pool's policy lapses with the pool
			why = s.claimPolicy(wctx, kc, rs)
		}
		if why == nil {
			s.mu.Lock()
			s.claimOf[kc.sb] = kc
			s.mu.Unlock()
			return kc.sb, kc.sbUID
		}
		wait := time.After(100 * time.Millisecond)
		if errors.Is(why, errKeptRefused) {
			wait = nil
			cancel()
		}
		select {
		case <-wctx.Done():
			s.deleteClaim(ctx, claim.GetName())
			if s.o.Progress != nil && ctx.Err() == nil {
				fmt.Fprintf(s.o.Progress, "forkbomb: warm Sandbox claim %s given back (%v): the warm pod is made anew\n", claim.GetName(), why)
			}
			return "", ""
		case <-wait:
		}
	}
}

// claimPolicy makes the claimed pod's own deny-all NetworkPolicy, owned
// by the run's anchor and as the run's (the model proxy where the run's
// lets its pods reach it), selecting the pod by the controller's hash of
// its Sandbox's name — a label no template can set or take off, where the
// template's labels are whatever whoever may update it makes them.
func (s *Store) claimPolicy(ctx context.Context, kc *keptClaim, rs *runState) error {
	np := networkPolicySelecting(objectName("forkbomb-", kc.claim.GetName()), rs.anchor.GetLabels()[LabelRun], rs.anchor,
		map[string]any{sandboxNameHashLabel: sandboxNameHash(kc.sb)}, s.o.ProxyCIDR, s.o.ProxyPort)
	if _, err := s.dyn.Resource(netpolGVR).Namespace(s.o.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("make the claimed pod's network policy: %w", err)
	}
	return nil
}

// recheckKept checks a claimed pool Sandbox's pod again (keptSandbox),
// now that it runs and just before it is sent the tree: the same pod, by
// uid, still forkbomb's. nil for a pod that is no pool Sandbox's.
func (s *Store) recheckKept(ctx context.Context, pod string) error {
	s.mu.Lock()
	kc := s.claimOf[pod]
	s.mu.Unlock()
	if kc == nil {
		return nil
	}
	if err := s.keptSandbox(ctx, kc, false); err != nil {
		return fmt.Errorf("the pool Sandbox %s is no longer as claimed: %w", pod, err)
	}
	return nil
}

// keptSandbox checks, once, that kc's claim is bound to a Sandbox of its
// pool whose pod is forkbomb's for the kind (keptSandboxChain, specIs);
// claiming, it lowers the pod's deadline to the run's and notes the
// Sandbox and pod, else (recheckKept) they must be those noted. Until the
// controllers are done with a new claim, some of this does not hold yet:
// the caller asks again, unless the error is errKeptRefused.
func (s *Store) keptSandbox(ctx context.Context, kc *keptClaim, claiming bool) error {
	c, err := s.dyn.Resource(sandboxClaimGVR).Namespace(s.o.Namespace).Get(ctx, kc.claim.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if c.GetUID() != kc.claim.GetUID() {
		return fmt.Errorf("claim %s was made again: %w", c.GetName(), errKeptRefused)
	}
	name, _, _ := unstructured.NestedString(c.Object, "status", "sandbox", "name")
	if name == "" {
		return errors.New("not bound to a Sandbox yet")
	}
	if !claiming && name != kc.sb {
		return fmt.Errorf("claim %s is bound to %s now: %w", c.GetName(), name, errKeptRefused)
	}
	sb, err := s.dyn.Resource(sandboxGVR).Namespace(s.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	u, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := keptSandboxChain(c, sb, u, kc.pool, kc.kind); err != nil {
		return err
	}
	if u.GetDeletionTimestamp() != nil {
		return fmt.Errorf("pod %s is being deleted: %w", name, errKeptRefused)
	}
	want := podSpec(kc.po)
	have, _, _ := unstructured.NestedMap(u.Object, "spec")
	want["activeDeadlineSeconds"] = have["activeDeadlineSeconds"] // lowered below
	if err := specIs(u, want); err != nil {
		return fmt.Errorf("pod %s: %w: %w", name, err, errKeptRefused)
	}
	if !claiming {
		if u.GetUID() != kc.podUID || sb.GetUID() != kc.sbUID {
			return fmt.Errorf("pod %s was made again: %w", name, errKeptRefused)
		}
		return nil
	}
	deadline, ok := s.claimDeadline(u)
	if !ok {
		return fmt.Errorf("pod %s has less than the run's deadline left: %w", name, errKeptRefused)
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": u.GetResourceVersion()},
		"spec":     map[string]any{"activeDeadlineSeconds": deadline},
	})
	if _, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("lower pod %s's deadline: %w", name, err) // a conflict: read again
	}
	kc.sb, kc.sbUID, kc.podUID = name, sb.GetUID(), u.GetUID()
	return nil
}

// keptSandboxChain checks claim c's Sandbox sb and its pod u as read
// (keptSandbox), all but the pod's spec. The Sandbox must be the claim's
// alone and not going, name no other pod; its pod controlled by it and
// made after it, with the template's labels and the controllers' (its
// name hash, the claim's uid, the template's name hash) alone, its
// maker's annotations the controller's lists and the pool's eviction mark
// alone, no finalizer.
func keptSandboxChain(c, sb, u *unstructured.Unstructured, poolName, kind string) error {
	refs := sb.GetOwnerReferences()
	if len(refs) != 1 || refs[0].Controller == nil || !*refs[0].Controller || refs[0].Kind != "SandboxClaim" || refs[0].UID != c.GetUID() {
		return fmt.Errorf("the Sandbox %s is not its claim's alone", sb.GetName())
	}
	if sb.GetDeletionTimestamp() != nil {
		return fmt.Errorf("the Sandbox %s is being deleted", sb.GetName())
	}
	if _, ok := sb.GetAnnotations()[sandboxPodNameAnnotation]; ok {
		return fmt.Errorf("the Sandbox %s names another pod", sb.GetName())
	}
	extra := map[string]string{sandboxClaimUIDLabel: string(c.GetUID()), sandboxTemplateRefLabel: sandboxNameHash(poolName)}
	return controllerMade(u, sb, keptSandboxLabels(kind), extra, func(k, v string) bool {
		switch k {
		case sandboxPropagatedLabels, sandboxPropagatedAnnots:
			return true
		case autoscalerSafeToEvictAnnot: // the pool's mark, taken off by the claim
			return v == "true"
		}
		return false
	})
}

// deleteClaim deletes a warm pod's claim, and through it its Sandbox and
// pod.
func (s *Store) deleteClaim(ctx context.Context, name string) {
	// not the caller's end: a loser's or a Ctrl-C's; a cluster that
	// stalls must not hold forkbomb
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	if err := s.dyn.Resource(sandboxClaimGVR).Namespace(s.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) && s.o.Progress != nil {
		fmt.Fprintf(s.o.Progress, "forkbomb: delete claim %s: %v\n", name, err)
	}
}

// dropOtherSandboxPools deletes the namespace's SandboxWarmPools of kinds
// other than kind, and with them their Sandboxes not yet claimed (see
// dropOtherPools).
func (s *Store) dropOtherSandboxPools(ctx context.Context, kind string) {
	r := s.dyn.Resource(sandboxPoolGVR).Namespace(s.o.Namespace)
	list, err := r.List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed + "," + LabelSandboxPool})
	if err != nil {
		return
	}
	bg := metav1.DeletePropagationBackground
	for _, u := range list.Items {
		if u.GetLabels()[LabelSandboxPool] == kind || u.GetDeletionTimestamp() != nil {
			continue
		}
		r.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
	}
}
