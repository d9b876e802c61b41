package workerproc

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// earlyImports are all that this package and progfile may import outside their tests. Go
// initialises packages in import-path order among those whose imports are done (the spec,
// since Go 1.21), so a package that imports only these is initialised right after os, early in
// forkbomb's start, and the prestart (prestart.go) starts the worker from there. One import
// more that sorts after github.com — path/filepath, strings, fmt, golang.org/x/sys/unix — puts it
// behind dozens of packages (crypto, encoding, the CLI's own), some milliseconds later.
var earlyImports = []string{"errors", "os", "strconv", "sync", "syscall"}

func TestImportsKeepThePrestartEarly(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("workerproc.go"); err != nil {
		t.Skip("not run from the source tree; the run from it checks the imports")
	}
	for _, dir := range []string{".", "../../sandbox/progfile"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources in %s: %v", dir, err)
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
				p, _ := strconv.Unquote(im.Path.Value)
				if !slices.Contains(earlyImports, p) && p != "github.com/forkbomb/forkbomb/internal/sandbox/progfile" {
					t.Errorf("%s imports %s, which would start the worker later (earlyImports)", f, p)
				}
			}
		}
	}
}
