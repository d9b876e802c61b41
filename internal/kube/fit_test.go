package kube

import "testing"

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
