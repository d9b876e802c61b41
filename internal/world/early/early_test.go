package early

import (
	"os"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestImportsOnlySyscall: the package imports syscall alone, so that Go initialises it right
// after syscall; os, or anything that imports it, would put it behind a few more milliseconds
// of forkbomb's start, which is most of what a world fork costs.
func TestImportsOnlySyscall(t *testing.T) {
	t.Parallel()
	testutil.CheckImportsOnly(t, "early.go", []string{"."}, []string{"syscall"})
}

// TestCmdline: the kernel's argv is os.Args (the test binary's own, with its flags).
func TestCmdline(t *testing.T) {
	t.Parallel()
	args, ok := cmdline()
	if !ok {
		t.Fatal("cmdline not read")
	}
	if strings.Join(args, "\x00") != strings.Join(os.Args, "\x00") {
		t.Errorf("cmdline %q, os.Args %q", args, os.Args)
	}
}
