//go:build !linux

package workspace

import (
	"fmt"
	"runtime"
)

// Copies keep overlayfs's whiteouts and attributes, which only Linux has.
func copyTree(src, dst string, reflink bool) (bool, error) {
	return false, fmt.Errorf("workspace copies are not implemented on %s", runtime.GOOS)
}

func reflinkWorks(dir string) bool { return false }
