//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestImportsOnlySyscall: syscall and unsafe alone, so the package runs right after syscall.
func TestImportsOnlySyscall(t *testing.T) {
	t.Parallel()
	testutil.CheckImportsOnly(t, "hugeheap.go", []string{"."}, []string{"syscall", "unsafe"})
}

// childEnv marks this test binary's run as the child of TestAdvice.
const childEnv = "FORKBOMB_HUGEHEAP_TEST_CHILD"

// childMiB is what the child allocates and writes, 4 KiB at a time, before it reports.
const childMiB = 2

var keep [][]byte

// TestAdvice starts this test binary twice, as a child that writes childMiB of heap in 4 KiB
// pieces and reports what its kernel says of its heap (/proc/self/smaps): with the package on,
// and with FORKBOMB_HUGEHEAP=0 (the control). On, the mapping that holds the start's heap is
// advised for huge pages (VmFlags "hg") and the collapse was taken; off, neither. The page
// faults saved are logged, not asserted: whether the kernel has a free huge page at the
// moment of a fault depends on the whole machine (a loaded CI run saved 226 of a typical 512),
// and bench/README.md measures what the package is for.
func TestAdvice(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		for range childMiB << 8 {
			b := make([]byte, 4096)
			b[0], b[4095] = 1, 1
			keep = append(keep, b)
		}
		hg, huge, err := heapMapping()
		fmt.Printf("hugeheap-child err=%q hg=%t anonhuge=%d smaps=%v\n", errString(refused), hg, huge, err)
		return
	}
	t.Parallel()
	if refused != nil {
		b, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
		if errors.Is(refused, syscall.EINVAL) && (len(b) == 0 || strings.Contains(string(b), "[never]")) {
			testutil.SkipOrFail(t, "transparent huge pages are off on this machine (%s): %v", strings.TrimSpace(string(b)), refused)
		}
	}
	type report struct {
		err      string
		hg       bool
		anonHuge int
		minflt   int64
	}
	child := func(env ...string) report {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdvice$", "-test.count=1", "-test.v")
		cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		var r report
		line := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "hugeheap-child ") {
				line = l
			}
		}
		var smapsErr string
		if _, err := fmt.Sscanf(line, "hugeheap-child err=%q hg=%t anonhuge=%d smaps=%s", &r.err, &r.hg, &r.anonHuge, &smapsErr); err != nil {
			t.Fatalf("child's report %q: %v\n%s", line, err, out)
		}
		if smapsErr != "<nil>" {
			t.Fatalf("child could not read its smaps: %s", line)
		}
		r.minflt = cmd.ProcessState.SysUsage().(*syscall.Rusage).Minflt
		return r
	}
	on, off := child(), child(Env+"=0")
	t.Logf("on: %+v; off: %+v; faults saved %d", on, off, off.minflt-on.minflt)
	// A refusal the kernel may give on a busy machine (no huge page free to collapse into)
	// is not the package's failure; any other is.
	if on.err != "" && !strings.Contains(on.err, syscall.EAGAIN.Error()) && !strings.Contains(on.err, syscall.ENOMEM.Error()) && !strings.Contains(on.err, syscall.EBUSY.Error()) {
		t.Errorf("on: the kernel refused: %s", on.err)
	}
	if !on.hg {
		t.Errorf("on: the heap's mapping is not advised for huge pages")
	}
	if off.err != Env+"=0" || off.hg || off.anonHuge != 0 {
		t.Errorf("off: %+v, want the package off: no advice, no huge page", off)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// heapMapping reads /proc/self/smaps for the mapping that holds the package's first object:
// whether it is advised for huge pages, and how much of it is on them (kB).
func heapMapping() (hg bool, anonHugeKB int, err error) {
	if first == nil {
		p := new([64]byte) // the package was off: any heap object's mapping
		keepPtr = p
		return mappingOf(uintptr(unsafe.Pointer(p)))
	}
	return mappingOf(uintptr(unsafe.Pointer(first)))
}

var keepPtr *[64]byte

func mappingOf(addr uintptr) (hg bool, anonHugeKB int, err error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				if in {
					break // the mapping's lines ended
				}
				in = uint64(addr) >= l && uint64(addr) < h
				continue
			}
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			anonHugeKB, _ = strconv.Atoi(fields[1])
		case "VmFlags:":
			for _, fl := range fields[1:] {
				hg = hg || fl == "hg"
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, 0, err
	}
	return hg, anonHugeKB, nil
}
