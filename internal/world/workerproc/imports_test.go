package workerproc

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// earlyImports are all that this package and progfile may import outside their tests, so that
// Go initialises this package right after os, early in forkbomb's start, and the prestart
// (prestart.go) starts the worker from there. One import more that sorts after github.com —
// path/filepath, strings, fmt, golang.org/x/sys/unix — puts it behind dozens of packages
// (crypto, encoding, the CLI's own), some milliseconds later.
var earlyImports = []string{"errors", "os", "strconv", "sync", "syscall", "github.com/forkbomb/forkbomb/internal/sandbox/progfile"}

func TestImportsKeepThePrestartEarly(t *testing.T) {
	t.Parallel()
	testutil.CheckImportsOnly(t, "workerproc.go", []string{".", "../../sandbox/progfile"}, earlyImports)
}
