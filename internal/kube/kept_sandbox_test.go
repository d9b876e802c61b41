package kube

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestClusterKeptSandboxes: where forks are Sandboxes, a run's end keeps
// agent-sandbox's SandboxTemplate and SandboxWarmPool under the pool's
// Lease, the real controller fills the pool, the next run's fork runs in
// one of its Sandboxes by a claim the run owns, after the chain of
// owners, labels and spec was checked (and each check refuses the
// objects as read when one link is changed); a pool Sandbox someone was
// in first is refused by the fresh check; the fork's end deletes its
// claim, and the pool is topped up again by the controller.
func TestClusterKeptSandboxes(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	ctx := t.Context()
	o := Options{Namespace: ns, Warm: 1, KeepWarm: 10 * time.Minute, UseSandboxCRD: "always"}
	repo := fixture(t)
	top, base, err := workspace.ResolveBase(ctx, repo, "HEAD")
	must(t, err)
	race := func(s *Store, run string, during func(obj string)) string {
		t.Helper()
		return keptRace(t, s, top, base, run, func(_, obj string) {
			if during != nil {
				during(obj)
			}
		})
	}
	a := openStore(t, cfg, o)
	if !a.pools {
		t.Fatal("the test cluster serves agent-sandbox's extensions, but the store found none")
	}
	if obj := race(a, "ks1", nil); strings.HasPrefix(obj, "forkbomb-pool-") {
		t.Fatalf("the first run ran in %s from an empty pool", obj)
	}
	kept := keptSandboxRunning(t, a, "")
	var said testutil.Buffer // what b says on Options.Progress
	ob := o
	ob.Progress = &said
	b := openStore(t, cfg, ob)
	var claimName string
	obj := race(b, "ks2", func(obj string) {
		b.mu.Lock()
		kc := b.claimOf[obj]
		rs := b.runs["ks2"]
		b.mu.Unlock()
		anchor := rs.anchor
		if kc == nil {
			t.Fatalf("the fork's pod %s is not a claimed pool Sandbox's", obj)
		}
		claimName = kc.claim.GetName()
		c, err := b.dyn.Resource(sandboxClaimGVR).Namespace(ns).Get(ctx, claimName, metav1.GetOptions{})
		must(t, err)
		if refs := c.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != anchor.GetUID() {
			t.Errorf("claim %s: owners %+v, want the run's anchor", claimName, refs)
		}
		sb, err := b.dyn.Resource(sandboxGVR).Namespace(ns).Get(ctx, obj, metav1.GetOptions{})
		must(t, err)
		p, err := b.dyn.Resource(podGVR).Namespace(ns).Get(ctx, obj, metav1.GetOptions{})
		must(t, err)
		// its deadline the run's from now on, no longer the pool's
		started, _, _ := unstructured.NestedString(p.Object, "status", "startTime")
		at, err := time.Parse(time.RFC3339, started)
		must(t, err)
		if d, _, _ := unstructured.NestedInt64(p.Object, "spec", "activeDeadlineSeconds"); d > int64(time.Since(at).Seconds())+2+int64(b.o.Deadline/time.Second) {
			t.Errorf("pod %s: deadline %d s from its start %s, not lowered to the run's %s", obj, d, started, b.o.Deadline)
		}
		kind := p.GetLabels()[LabelSandboxPool]
		l, err := b.dyn.Resource(leaseGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed + "," + LabelRun + "=" + poolRun(kind)})
		must(t, err)
		if len(l.Items) != 1 {
			t.Fatalf("pool leases: %d", len(l.Items))
		}
		poolName := sandboxPoolName(kind, &l.Items[0])
		// its own deny-all NetworkPolicy, the run's, selecting it by the
		// controller's name hash
		np, err := b.dyn.Resource(netpolGVR).Namespace(ns).Get(ctx, objectName("forkbomb-", claimName), metav1.GetOptions{})
		must(t, err)
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		if refs := np.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != anchor.GetUID() || len(sel) != 1 || sel[sandboxNameHashLabel] != p.GetLabels()[sandboxNameHashLabel] {
			t.Errorf("the claimed pod's policy: owners %+v, selector %v", refs, sel)
		}
		if err := keptSandboxChain(c, sb, p, poolName, kind); err != nil {
			t.Fatalf("the claimed pool Sandbox as read: %v", err)
		}
		// each link changed, as an impostor's would be
		for _, tc := range []struct {
			name   string
			change func(c, sb, p *unstructured.Unstructured)
		}{
			{"Sandbox owned by another claim", func(c, sb, p *unstructured.Unstructured) { c.SetUID("other") }},
			{"Sandbox still the pool's", func(c, sb, p *unstructured.Unstructured) {
				refs := sb.GetOwnerReferences()
				refs[0].Kind = "SandboxWarmPool"
				sb.SetOwnerReferences(refs)
			}},
			{"Sandbox names another pod", func(c, sb, p *unstructured.Unstructured) {
				sb.SetAnnotations(map[string]string{sandboxPodNameAnnotation: "x"})
			}},
			{"pod of another Sandbox", func(c, sb, p *unstructured.Unstructured) { sb.SetUID("other") }},
			{"pod made before its Sandbox", func(c, sb, p *unstructured.Unstructured) {
				p.SetCreationTimestamp(metav1.NewTime(sb.GetCreationTimestamp().Add(-time.Second)))
			}},
			{"an extra label", func(c, sb, p *unstructured.Unstructured) {
				l := p.GetLabels()
				l["role"] = "db"
				p.SetLabels(l)
			}},
			{"another template", func(c, sb, p *unstructured.Unstructured) {}},
			{"a finalizer", func(c, sb, p *unstructured.Unstructured) { p.SetFinalizers([]string{"x/y"}) }},
			{"Sandbox of two owners", func(c, sb, p *unstructured.Unstructured) {
				sb.SetOwnerReferences(append(sb.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "x", UID: "x"}))
			}},
			{"Sandbox owned, not controlled, by its claim", func(c, sb, p *unstructured.Unstructured) {
				refs := sb.GetOwnerReferences()
				refs[0].Controller = nil
				sb.SetOwnerReferences(refs)
			}},
			{"Sandbox being deleted", func(c, sb, p *unstructured.Unstructured) { now := metav1.Now(); sb.SetDeletionTimestamp(&now) }},
			{"another list of copied labels", func(c, sb, p *unstructured.Unstructured) {
				a := p.GetAnnotations()
				a[sandboxPropagatedLabels] = LabelManaged
				p.SetAnnotations(a)
			}},
			{"made with an annotation more", func(c, sb, p *unstructured.Unstructured) { makerAnnotates(t, p, "k8s.v1.cni.cncf.io/networks", "x") }},
			{"the eviction mark made false", func(c, sb, p *unstructured.Unstructured) {
				makerAnnotates(t, p, autoscalerSafeToEvictAnnot, "false")
			}},
		} {
			c2, sb2, p2 := c.DeepCopy(), sb.DeepCopy(), p.DeepCopy()
			tc.change(c2, sb2, p2)
			pool := poolName
			if tc.name == "another template" {
				pool += "x"
			}
			if err := keptSandboxChain(c2, sb2, p2, pool, kind); err == nil {
				t.Errorf("%s: passed", tc.name)
			}
		}
		// its spec is forkbomb's for the kind, and a writable root is not
		want := podSpec(b.keptSandboxOptions(b.warmOptions(rs), kind))
		want["activeDeadlineSeconds"], _, _ = unstructured.NestedFieldNoCopy(p.Object, "spec", "activeDeadlineSeconds")
		if err := specIs(p, want); err != nil {
			t.Errorf("pod %s's spec: %v", obj, err)
		}
		p2 := p.DeepCopy()
		cs, _, _ := unstructured.NestedSlice(p2.Object, "spec", "containers")
		must(t, unstructured.SetNestedField(cs[0].(map[string]any), false, "securityContext", "readOnlyRootFilesystem"))
		must(t, unstructured.SetNestedSlice(p2.Object, cs, "spec", "containers"))
		if err := specIs(p2, want); err == nil {
			t.Error("a writable root passed")
		}
	})
	if obj != kept {
		t.Errorf("the second run's fork ran in %s, want the pool's Sandbox %s", obj, kept)
	}
	waitGone(t, b, sandboxClaimGVR, claimName)
	waitGone(t, b, sandboxGVR, obj)
	// the controller tops the pool up; someone with exec in the namespace
	// is in its new Sandbox first
	planted := keptSandboxRunning(t, b, obj)
	var serr bytes.Buffer
	if code, err := b.stream(ctx, planted, []string{"/bin/sh", "-c", "echo x > /work/planted"}, nil, io.Discard, &serr); err != nil || code != 0 {
		t.Fatalf("plant in %s: %d %v %s", planted, code, err, serr.String())
	}
	if obj := race(b, "ks3", nil); obj == planted {
		t.Errorf("the fork ran in %s, where someone else had been first", planted)
	}
	// whoever may update SandboxTemplates changes the pool's: the pool
	// makes its Sandboxes again from it, and the next run's claim of one
	// is given back, its fork in a Sandbox of its own
	tl, err := b.dyn.Resource(sandboxTemplateGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelSandboxPool})
	must(t, err)
	if len(tl.Items) != 1 {
		t.Fatalf("%d SandboxTemplates", len(tl.Items))
	}
	tmpl := &tl.Items[0]
	cs, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "podTemplate", "spec", "containers")
	must(t, unstructured.SetNestedSlice(cs[0].(map[string]any), []any{map[string]any{"name": "PLANTED", "value": "1"}}, "env"))
	must(t, unstructured.SetNestedSlice(tmpl.Object, cs, "spec", "podTemplate", "spec", "containers"))
	_, err = b.dyn.Resource(sandboxTemplateGVR).Namespace(ns).Update(ctx, tmpl, metav1.UpdateOptions{})
	must(t, err)
	changed := ""
	for deadline := time.Now().Add(3 * time.Minute); changed == ""; time.Sleep(200 * time.Millisecond) {
		name := keptSandboxRunning(t, b, "")
		p, err := b.dyn.Resource(podGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // one of the old template's, deleted meanwhile
		}
		must(t, err)
		if env, _ := json.Marshal(p.Object["spec"]); strings.Contains(string(env), `"PLANTED"`) {
			changed = name
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool made no Sandbox of the changed template")
		}
	}
	must(t, b.waitPool(ctx)) // counted ready by the pool, which the claims go by
	if obj := race(b, "ks4", func(obj string) {
		b.mu.Lock()
		kc := b.claimOf[obj]
		b.mu.Unlock()
		if kc != nil {
			t.Errorf("the fork runs in pool Sandbox %s, of a changed template", obj)
		}
	}); obj == changed {
		t.Errorf("the fork ran in %s, of a changed template", changed)
	}
	if got := said.String(); !strings.Contains(got, "claim fb-ks4-w0-c given back (pod forkbomb-pool-") || !strings.Contains(got, ": spec.containers[].env[].") {
		t.Errorf("no claim of the changed template's Sandbox given back for its spec; said:\n%s", got)
	}
	c := openStore(t, cfg, o)
	a.Close()
	b.Close()
	c.Close()
	bg := metav1.DeletePropagationBackground
	must(t, c.dyn.Resource(leaseGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed}))
	waitNothingLeft(t, cfg, ns, 2*time.Minute)
}

// keptSandboxRunning waits for the namespace's one pool Sandbox (not
// named not) to be ready and its pod to run, and returns its name.
func keptSandboxRunning(t *testing.T, s *Store, not string) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		l, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: LabelSandboxPool})
		must(t, err)
		var names []string
		for _, p := range l.Items {
			if ok, err := podRunning(&p); ok && err == nil && p.GetName() != not && p.GetDeletionTimestamp() == nil &&
				p.GetLabels()["agents.x-k8s.io/warm-pool-sandbox"] != "" {
				names = append(names, p.GetName())
			}
		}
		if len(names) == 1 {
			return names[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool's Sandbox does not run: %d pods, %v running", len(l.Items), names)
		}
	}
}

// waitGone waits for the object to be gone (the garbage collector takes
// a moment).
func waitGone(t *testing.T, s *Store, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		u, err := s.dyn.Resource(gvr).Namespace(s.o.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("%s %s: %v", gvr.Resource, name, err)
			}
			t.Fatalf("%s %s is still there (deleting since %v)", gvr.Resource, name, u.GetDeletionTimestamp())
		}
	}
}

// makerAnnotates gives pod u annotation k=v as set by its maker (the
// field manager that set its spec).
func makerAnnotates(t *testing.T, u *unstructured.Unstructured, k, v string) {
	t.Helper()
	a := u.GetAnnotations()
	a[k] = v
	u.SetAnnotations(a)
	mfs := u.GetManagedFields()
	for i, mf := range mfs {
		var fields map[string]any
		if mf.FieldsV1 == nil || json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil || fields["f:spec"] == nil {
			continue
		}
		meta, _ := fields["f:metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			fields["f:metadata"] = meta
		}
		an, _ := meta["f:annotations"].(map[string]any)
		if an == nil {
			an = map[string]any{}
			meta["f:annotations"] = an
		}
		an["f:"+k] = map[string]any{}
		b, err := json.Marshal(fields)
		must(t, err)
		mfs[i].FieldsV1 = metav1.NewFieldsV1(string(b))
		u.SetManagedFields(mfs)
		return
	}
	t.Fatal("no maker's fields")
}
