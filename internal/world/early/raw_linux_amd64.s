#include "textflag.h"

// func rawSyscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, errno uintptr)
//
// A system call with no hand-over to the scheduler, as syscall.RawSyscall6 makes it: every call
// this package makes returns at once (the lock is tried without waiting).
TEXT ·rawSyscall6(SB),NOSPLIT,$0-72
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, r1+56(FP)
	NEGQ	AX
	MOVQ	AX, errno+64(FP)
	RET
ok:
	MOVQ	AX, r1+56(FP)
	MOVQ	$0, errno+64(FP)
	RET
