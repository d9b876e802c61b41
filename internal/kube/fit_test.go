package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFitMemory: the most memory each pod can ask for with every pod
// placed at once, whole pods per node — the case that made the last of
// four forks wait on this machine's test node (its allocatable memory a
// little under the machine's, whose quarter each fork asked for).
func TestFitMemory(t *testing.T) {
	t.Parallel()
	const Ki, Gi = 1024, 1 << 30
	for _, c := range []struct {
		alloc []int64
		pods  int
		want  int64
	}{
		{[]int64{24581384 * Ki}, 4, 6145346 * Ki},
		{[]int64{24581384 * Ki}, 1, 24581384 * Ki},
		{[]int64{8 * Gi, 8 * Gi}, 4, 4 * Gi},
		{[]int64{8 * Gi, 8 * Gi}, 3, 4 * Gi}, // whole pods: two on one node, one on the other
		{[]int64{16 * Gi, 4 * Gi}, 2, 8 * Gi},
		{[]int64{16 * Gi, 4 * Gi}, 5, 4 * Gi},
		{nil, 4, 0},
		{[]int64{1000}, 4, 0}, // under a KiB each: none
	} {
		got := fitMemory(c.alloc, c.pods)
		if got != c.want {
			t.Errorf("fitMemory(%v, %d) = %d, want %d", c.alloc, c.pods, got, c.want)
		}
		if got > 0 {
			n := int64(0)
			for _, a := range c.alloc {
				n += a / got
			}
			if n < int64(c.pods) {
				t.Errorf("fitMemory(%v, %d) = %d: only %d pods fit", c.alloc, c.pods, got, n)
			}
		}
	}
}

// TestFreeMemory: only the nodes a fork's pod can go to count (ready, not
// cordoned, no NoSchedule or NoExecute taint), each less what the pods on
// it request — containers summed, an init container's if larger, the
// runtime's overhead — but unclaimed kept pods, which the run claims.
func TestFreeMemory(t *testing.T) {
	t.Parallel()
	node := func(name, mem string, extra map[string]any, ready bool) unstructured.Unstructured {
		st := "False"
		if ready {
			st = "True"
		}
		spec := map[string]any{}
		for k, v := range extra {
			spec[k] = v
		}
		return unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name},
			"spec":     spec,
			"status": map[string]any{"allocatable": map[string]any{"memory": mem},
				"conditions": []any{map[string]any{"type": "Ready", "status": st}}},
		}}
	}
	ctr := func(mem string) any {
		return map[string]any{"resources": map[string]any{"requests": map[string]any{"memory": mem}}}
	}
	pod := func(node string, labels map[string]any, spec map[string]any) unstructured.Unstructured {
		spec["nodeName"] = node
		return unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p", "labels": labels}, "spec": spec}}
	}
	nodes := []unstructured.Unstructured{
		node("a", "8Gi", nil, true),
		node("cordoned", "8Gi", map[string]any{"unschedulable": true}, true),
		node("control", "8Gi", map[string]any{"taints": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}}}, true),
		node("prefer", "4Gi", map[string]any{"taints": []any{map[string]any{"key": "x", "effect": "PreferNoSchedule"}}}, true),
		node("down", "8Gi", nil, false),
	}
	pods := []unstructured.Unstructured{
		pod("a", nil, map[string]any{"containers": []any{ctr("1Gi"), ctr("512Mi")}, "overhead": map[string]any{"memory": "256Mi"}}),
		pod("a", map[string]any{LabelPool: "k"}, map[string]any{"containers": []any{ctr("2Gi")}}),
		// a pool Sandbox's pod: not counted until claimed, then counted
		pod("a", map[string]any{LabelSandboxPool: "k"}, map[string]any{"containers": []any{ctr("2Gi")}}),
		pod("a", map[string]any{LabelSandboxPool: "k", sandboxClaimUIDLabel: "u"}, map[string]any{"containers": []any{ctr("1Gi")}}),
		pod("prefer", nil, map[string]any{"containers": []any{ctr("1Gi")}, "initContainers": []any{ctr("3Gi")}}),
		pod("down", nil, map[string]any{"containers": []any{ctr("1Gi")}}),
	}
	got := freeMemory(nodes, pods)
	const Mi = 1 << 20
	want := []int64{8192*Mi - 1792*Mi - 1024*Mi, 4096*Mi - 3072*Mi}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("freeMemory = %v, want %v", got, want)
	}
}
