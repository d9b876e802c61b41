// Package hugeheap asks the kernel, at the very start of each forkbomb binary, to back the Go
// heap with transparent huge pages: each 2 MiB the start has begun to use is collapsed into one
// huge page, and the rest of the heap's first mapping (the runtime maps it 4 MiB at a time)
// gets huge pages as it is first touched; what the runtime maps later is left as it is.
//
// Why: a Go program's start touches about a megabyte of heap (the runtime's own structures,
// package initialisers, the first goroutines' stacks), one 4 KiB page fault at a time. A fault
// costs under a microsecond on bare metal but 11–14 µs in a virtual machine that shadows the
// guest's page tables (this project's CI machine: 1,024 faults took 12 ms, one 4 MiB huge-page
// region 0.25 ms). There a `forkbomb world exec`, which starts two Go programs, spent a third of
// its CPU on the heap's faults. Where huge pages are off ("never") the calls are refused and
// the start is as it was; a kernel before MADV_COLLAPSE (Linux 6.1) takes the advice alone.
// Nothing depends on them. It is an optimisation, not a guarantee: no rule of the sandbox rests on it.
//
// The cost is memory: a huge page is resident whole, so a process holds a few MiB more (a
// sandbox's init 1.2 MB, `forkbomb ui` 2.6 MB, measured), and the kernel's khugepaged may
// later collapse the rest of that first mapping.
// Setting FORKBOMB_HUGEHEAP=0 leaves the heap to the kernel's defaults (a machine short of
// memory, or a comparison).
//
// It runs on 64-bit Linux on amd64 and arm64 (hugeheap_huge.go), whose heap arenas are 64 MiB
// and huge pages 2 MiB; elsewhere it does nothing.
//
// The package imports syscall and unsafe alone, so Go initialises it right after syscall,
// before os and the hundred-odd packages forkbomb links (the spec initialises packages in
// import-path order among those whose imports are done): the fewer pages touched before it
// runs, the more of the start it serves. Each binary imports it from its main package.
package hugeheap

// Env names the variable that turns the package off when it is "0".
const Env = "FORKBOMB_HUGEHEAP"
