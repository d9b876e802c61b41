//go:build linux && !amd64

package attacker

import "fmt"

func int80Getpid() int {
	fmt.Println("unsupported: no i386 compat entry on this architecture")
	return 4
}
