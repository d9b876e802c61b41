package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// podMemory is the most memory each of pods pods can ask for and all of
// them still fit the cluster's nodes at once, whole pods per node: a
// node's allocatable memory, less what the pods already on it request
// (where forkbomb may list them), over the nodes a fork's pod can go to
// (ready, not cordoned, no NoSchedule or NoExecute taint: a fork's pod
// tolerates none). Unclaimed kept pods (unclaimedKept) are not counted
// against it: a run claims them for its forks. 0 when the nodes cannot be
// read (a user may not list them) or hold no memory. A fork's default
// memory is the local machine's share (its memory over the forks), which a
// node of the same size cannot hold pods-many of: its allocatable memory
// is less than the machine's, so the last fork's pod would wait for
// another's to end.
func podMemory(ctx context.Context, cfg *rest.Config, pods int) (int64, error) {
	if pods < 1 {
		pods = 1
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nodes, err := dyn.Resource(podGVR.GroupVersion().WithResource("nodes")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	var running []unstructured.Unstructured
	if list, err := dyn.Resource(podGVR).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"}); err == nil {
		running = list.Items
	}
	return fitMemory(freeMemory(nodes.Items, running), pods), nil
}

// freeMemory is each node's allocatable memory that a fork's pod could
// have: the nodes it can go to, less the requests of the pods on them
// but unclaimed kept pods.
func freeMemory(nodes, pods []unstructured.Unstructured) []int64 {
	free := map[string]int64{}
	var order []string
	for _, n := range nodes {
		if unschedulable, _, _ := unstructured.NestedBool(n.Object, "spec", "unschedulable"); unschedulable {
			continue
		}
		taints, _, _ := unstructured.NestedSlice(n.Object, "spec", "taints")
		tainted := false
		for _, t := range taints {
			if m, ok := t.(map[string]any); ok && (m["effect"] == "NoSchedule" || m["effect"] == "NoExecute") {
				tainted = true
			}
		}
		ready := false
		conds, _, _ := unstructured.NestedSlice(n.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				ready = true
			}
		}
		s, _, _ := unstructured.NestedString(n.Object, "status", "allocatable", "memory")
		q, err := resource.ParseQuantity(s)
		if tainted || !ready || err != nil || q.Value() <= 0 {
			continue
		}
		free[n.GetName()] = q.Value()
		order = append(order, n.GetName())
	}
	for _, p := range pods {
		node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
		if _, ok := free[node]; !ok || unclaimedKept(&p) {
			continue
		}
		free[node] -= podRequest(p)
	}
	var out []int64
	for _, n := range order {
		if free[n] > 0 {
			out = append(out, free[n])
		}
	}
	return out
}

// podRequest is the memory a pod requests as the scheduler counts it: the
// larger of its containers' sum and any one init container's, plus its
// runtime's overhead.
func podRequest(p unstructured.Unstructured) int64 {
	mem := func(c any) int64 {
		m, _ := c.(map[string]any)
		s, _, _ := unstructured.NestedString(m, "resources", "requests", "memory")
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return 0
		}
		return q.Value()
	}
	var sum, initMax int64
	cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
	for _, c := range cs {
		sum += mem(c)
	}
	ics, _, _ := unstructured.NestedSlice(p.Object, "spec", "initContainers")
	for _, c := range ics {
		initMax = max(initMax, mem(c))
	}
	over := int64(0)
	if s, ok, _ := unstructured.NestedString(p.Object, "spec", "overhead", "memory"); ok {
		if q, err := resource.ParseQuantity(s); err == nil {
			over = q.Value()
		}
	}
	return max(sum, initMax) + over
}

// fitMemory is the largest m (to the KiB) with sum(alloc[i] / m) >= pods.
func fitMemory(alloc []int64, pods int) int64 {
	fits := func(m int64) bool {
		n := int64(0)
		for _, a := range alloc {
			n += a / m
		}
		return n >= int64(pods)
	}
	lo, hi := int64(0), int64(0) // fits(lo) or lo == 0; !fits(hi+1)
	for _, a := range alloc {
		hi = max(hi, a)
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo &^ 1023
}

// DefaultMemory is def, a fork's default memory (the machine's share), or
// less where pods-many pods of it would not fit the cluster at once
// (podMemory) — but never under sandbox.MinDefaultMemory: a pod that
// waits for memory is better than an agent killed for the lack of it.
// lowered says it is less than def.
func DefaultMemory(ctx context.Context, cfg *rest.Config, pods int, def int64) (mem int64, lowered bool) {
	fit, err := podMemory(ctx, cfg, pods)
	if err != nil || fit <= 0 {
		return def, false
	}
	mem = min(def, max(fit, sandbox.MinDefaultMemory))
	return mem, mem < def
}

// unclaimedKept: p is a kept pod no run has claimed — forkbomb's own
// (LabelPool), or a pool Sandbox's (LabelSandboxPool) without the claim
// controller's label of its claim.
func unclaimedKept(p *unstructured.Unstructured) bool {
	l := p.GetLabels()
	return l[LabelPool] != "" || l[LabelSandboxPool] != "" && l[sandboxClaimUIDLabel] == ""
}
