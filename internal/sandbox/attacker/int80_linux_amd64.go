//go:build linux

package attacker

import "fmt"

// int80 makes a 32-bit (i386) system call through int $0x80.
func int80(nr uintptr) uintptr

// int80Getpid calls the i386 getpid (20): the classic way around a filter
// that checks only native syscall numbers.
func int80Getpid() int {
	pid := int80(20)
	fmt.Println("ok: i386 getpid =", pid)
	return 0
}
