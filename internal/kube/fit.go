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
)

// PodMemory is the most memory each of pods pods can ask for and all of
// them still fit the cluster's schedulable nodes at once, as the
// scheduler counts (each node's allocatable memory, whole pods per node);
// 0 when the nodes cannot be read (a user may not list them) or hold no
// memory. A fork's default memory is the local machine's share (its
// memory over the forks), which a node of the same size cannot hold
// pods-many of: its allocatable memory is less than the machine's, so the
// last fork's pod would wait for another's to end.
func PodMemory(ctx context.Context, cfg *rest.Config, pods int) (int64, error) {
	if pods < 1 {
		pods = 1
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := dyn.Resource(podGVR.GroupVersion().WithResource("nodes")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	var alloc []int64
	for _, n := range list.Items {
		if unschedulable, _, _ := unstructured.NestedBool(n.Object, "spec", "unschedulable"); unschedulable {
			continue
		}
		s, _, _ := unstructured.NestedString(n.Object, "status", "allocatable", "memory")
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Value() <= 0 {
			continue
		}
		alloc = append(alloc, q.Value())
	}
	return fitMemory(alloc, pods), nil
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
