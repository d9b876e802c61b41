package early

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlySyscall: the package imports syscall alone, so that Go initialises it right
// after syscall; os, or anything that imports it, would put it behind a few more milliseconds
// of forkbomb's start, which is most of what a world fork costs.
func TestImportsOnlySyscall(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("early.go"); err != nil {
		t.Skip("not run from the source tree; the run from it checks the imports")
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range src.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p != "syscall" {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
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
