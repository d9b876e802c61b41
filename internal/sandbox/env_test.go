package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestBuildEnvSetReplaces: a SetEnv pair of an allowlisted name replaces
// the caller's value rather than standing beside it — which of two a
// program reads is its own choice (Go's os.Getenv takes the first, a shell
// the last), and the judge's filtered PATH must be the one every program
// reads.
func TestBuildEnvSetReplaces(t *testing.T) {
	t.Setenv("PATH", "/caller/bin:/usr/bin")
	t.Setenv("LANG", "C.UTF-8")
	count := func(env []string, name string) (n int, last string) {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				n, last = n+1, v
			}
		}
		return n, last
	}
	env := buildEnv(nil, []string{"PATH=/usr/bin", "GOFLAGS=-count=1"}, "/home/x", "/tmp")
	if n, v := count(env, "PATH"); n != 1 || v != "/usr/bin" {
		t.Errorf("PATH given in SetEnv: %d PATH entries, the last %q: %q", n, v, env)
	}
	if n, v := count(env, "LANG"); n != 1 || v != "C.UTF-8" {
		t.Errorf("LANG from the caller: %d, %q", n, v)
	}
	if !slices.Contains(env, "GOFLAGS=-count=1") || !slices.Contains(env, "HOME=/home/x") || !slices.Contains(env, "TMPDIR=/tmp") {
		t.Errorf("env: %q", env)
	}
	if n, v := count(buildEnv(nil, nil, "/h", "/t"), "PATH"); n != 1 || v != "/caller/bin:/usr/bin" {
		t.Errorf("no SetEnv: %d PATH entries, %q", n, v)
	}
	t.Setenv("PATH", "") // restored afterwards
	os.Unsetenv("PATH")
	if n, v := count(buildEnv(nil, nil, "/h", "/t"), "PATH"); n != 1 || v == "" {
		t.Errorf("no PATH in the caller's environment: %d PATH entries, %q", n, v)
	}
}
