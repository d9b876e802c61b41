//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"syscall"
	"unsafe"
)

const (
	madvHugepage = 14 // MADV_HUGEPAGE
	madvCollapse = 25 // MADV_COLLAPSE (Linux 6.1)
	// arenaBytes is the Go runtime's heap arena on 64-bit Linux (heapArenaBytes): the first
	// one holds everything a start allocates, and no more than it is advised.
	arenaBytes = 64 << 20
	// hugeBytes is a huge page with 4 KiB pages (amd64, arm64); with another page size the
	// collapse is refused and the start is as it was.
	hugeBytes = 2 << 20
)

// first is the first heap object the package sees: the start's heap lies around it.
var first *[64]byte

// refused is why the start's heap is not backed by huge pages: nil when the kernel took both
// calls, else the first it refused (EINVAL where transparent huge pages are off or
// MADV_COLLAPSE unknown; EAGAIN or ENOMEM when it had no huge page free), or errOff.
var refused error

func init() {
	if v, _ := syscall.Getenv(Env); v == "0" {
		refused = errOff
		return
	}
	first = new([64]byte)
	p := uintptr(unsafe.Pointer(first))
	// The arena is reserved whole (its unused parts PROT_NONE), so this names no hole. The
	// advice holds for what is mapped now, the 4 MiB chunks the start's heap lies in: the
	// runtime maps more as the heap grows, and those mappings are the kernel's default.
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, p&^(arenaBytes-1), arenaBytes, madvHugepage); e != 0 {
		refused = errno("MADV_HUGEPAGE", e)
	}
	// What the runtime touched before this package ran is in 4 KiB pages, mostly in first's
	// 2 MiB. (Collapsing the 2 MiB on either side that hold a page too was tried: no fewer
	// faults in the A/Bs, whose spread, from where the runtime's randomised heap begins, is
	// larger than any difference.)
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, p&^(hugeBytes-1), hugeBytes, madvCollapse); e != 0 && refused == nil {
		refused = errno("MADV_COLLAPSE", e)
	}
}

// offError is refused when FORKBOMB_HUGEHEAP=0.
type offError struct{}

func (offError) Error() string { return Env + "=0" }

var errOff error = offError{}

// madviseError is a refused madvise.
type madviseError struct {
	advice string
	errno  syscall.Errno
}

func (e madviseError) Error() string { return "madvise " + e.advice + ": " + e.errno.Error() }

func (e madviseError) Unwrap() error { return e.errno }

func errno(advice string, e syscall.Errno) error { return madviseError{advice, e} }
