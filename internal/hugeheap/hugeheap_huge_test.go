//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestImportsOnlySyscall: syscall and unsafe alone, so the package runs right after syscall.
func TestImportsOnlySyscall(t *testing.T) {
	t.Parallel()
	testutil.CheckImportsOnly(t, "hugeheap.go", []string{"."}, []string{"syscall", "unsafe"})
}

// childEnv marks this test binary's run as the child of TestFewerFaults.
const childEnv = "FORKBOMB_HUGEHEAP_TEST_CHILD"

// childMiB is what the child allocates and touches, 4 KiB at a time.
const childMiB = 2

var keep [][]byte

// TestFewerFaults starts this test binary twice, as a child that allocates and writes
// childMiB of heap in 4 KiB pieces and exits: with the package on, and with FORKBOMB_HUGEHEAP=0
// (the control). With huge pages the child's page faults (the kernel's count of its minor
// faults) fall by at least half the pages it wrote: most of them land on huge pages (some may
// land in a 2 MiB the runtime had begun in 4 KiB pages before the package ran, and a race
// build's shadow memory is not the heap's); without, the two counts would be about equal.
func TestFewerFaults(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		for range childMiB << 8 {
			b := make([]byte, 4096)
			b[0], b[4095] = 1, 1
			keep = append(keep, b)
		}
		return
	}
	t.Parallel()
	if Err != nil {
		b, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
		if errors.Is(Err, syscall.EINVAL) && (len(b) == 0 || strings.Contains(string(b), "[never]")) {
			testutil.SkipOrFail(t, "transparent huge pages are off on this machine (%s): %v", strings.TrimSpace(string(b)), Err)
		}
		t.Fatalf("the kernel refused: %v", Err)
	}
	faults := func(env ...string) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFewerFaults$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Minflt
	}
	on, off := faults(), faults(Env+"=0")
	t.Logf("minor faults: %d with huge pages, %d without", on, off)
	if pages := int64(childMiB << 8); off-on < pages/2 {
		t.Errorf("huge pages saved %d faults, fewer than half the %d pages the child wrote: %d with, %d without", off-on, pages, on, off)
	}
}
