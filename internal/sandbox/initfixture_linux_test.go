package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// The slim init (cmd/forkbomb-init) the tests confine with, as forkbomb
// does in production: built once per test binary from the same tree, on
// first use, into a temporary folder TestMain removes. Away from the
// source (a test binary copied elsewhere, as scripts/test runs the
// unprivileged suite) it is the forkbomb-init beside the test binary.
var slimInit struct {
	once sync.Once
	dir  string // the folder it was built in, removed by TestMain
	path string
	root string // the module it was built from; "" when found beside the binary
	err  error
}

// testInit is the slim init's path, or "" (with the reason logged) where
// there is none: the test then runs with the test binary as its init.
// TestInitSelection fails where there is none and FORKBOMB_REQUIRE_ALL=1.
func testInit(t testing.TB) string {
	t.Helper()
	slimInit.once.Do(findSlimInit)
	if slimInit.err != nil {
		t.Logf("no slim init (the test binary serves as init): %v", slimInit.err)
		return ""
	}
	return slimInit.path
}

func findSlimInit() {
	if root, err := moduleRoot(); err == nil {
		slimInit.root = root
		slimInit.dir, slimInit.err = os.MkdirTemp("", "forkbomb-init-test-")
		if slimInit.err == nil {
			slimInit.path, slimInit.err = buildInit(root, slimInit.dir)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		slimInit.err = err
		return
	}
	p := filepath.Join(filepath.Dir(exe), sandbox.InitName)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		slimInit.err = fmt.Errorf("not in the module's source tree, and no %s beside %s", sandbox.InitName, exe)
		return
	}
	slimInit.path = p
}

// moduleRoot is the forkbomb module around the working directory (go test
// runs a package's tests in its folder).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/forkbomb/forkbomb\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the forkbomb module")
		}
		dir = parent
	}
}

// buildInit builds cmd/forkbomb-init of the module at root into dir, as the
// README says (CGO_ENABLED=0), offline.
func buildInit(root, dir string) (string, error) {
	out := filepath.Join(dir, sandbox.InitName)
	cmd := osexec.Command("go", "build", "-o", out, "./cmd/forkbomb-init")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/forkbomb-init in %s: %v\n%s", root, err, b)
	}
	return out, nil
}

// staleInit is an init from another build: cmd/forkbomb-init built from a
// copy of the module with one sandbox source changed (a comment added).
// Away from the source, where nothing can be built, the same change is
// made to the copy of that source embedded in the slim init.
func staleInit(t *testing.T, good, dir string) string {
	t.Helper()
	if slimInit.root == "" {
		data, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		line := []byte("// Package sandbox runs one command so that the kernel")
		if bytes.Count(data, line) == 0 {
			t.Fatalf("%s holds no embedded copy of doc.go", good)
		}
		data = bytes.ReplaceAll(data, line, []byte("// Package sandbox runs one COMMAND so that the kernel"))
		p := filepath.Join(dir, sandbox.InitName)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("stale init: %s with its embedded doc.go changed (no source tree to build from)", good)
		return p
	}
	src := filepath.Join(dir, "src")
	copyFile := func(rel string, change string) {
		data, err := os.ReadFile(filepath.Join(slimInit.root, rel))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(src, rel), string(data)+change)
	}
	copyFile("go.mod", "")
	copyFile("go.sum", "")
	copyFile("cmd/forkbomb-init/main.go", "")
	files, err := filepath.Glob(filepath.Join(slimInit.root, "internal/sandbox/*.go"))
	if err != nil {
		t.Fatal(err)
	}
	// What cmd/forkbomb-init imports besides the sandbox: progfile, and hugeheap (its first step).
	for _, dir := range []string{"internal/sandbox/progfile", "internal/hugeheap"} {
		more, err := filepath.Glob(filepath.Join(slimInit.root, dir, "*.go"))
		if err != nil || len(more) == 0 {
			t.Fatalf("no sources in %s: %v", dir, err)
		}
		files = append(files, more...)
	}
	for _, f := range files {
		if name := filepath.Base(f); !strings.HasSuffix(name, "_test.go") {
			change := ""
			if name == "doc.go" {
				change = "\n// This copy is another build.\n"
			}
			rel, _ := filepath.Rel(slimInit.root, f)
			copyFile(rel, change)
		}
	}
	p, err := buildInit(src, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stale init: built from a copy of the module with doc.go changed")
	return p
}
