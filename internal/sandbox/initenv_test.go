package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// TestInitEnv: the init starts with exactly the command's environment,
// except that a race-detector build adds GORACE with the exit-time sleep
// off, after the caller's own options (the last setting wins).
func TestInitEnv(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=1")
	cmdEnv := []string{"PATH=/usr/bin:/bin", "HOME=/home/x", "TMPDIR=/tmp"}
	got := initEnv(slices.Clip(cmdEnv))
	if !slices.Equal(got[:len(cmdEnv)], cmdEnv) {
		t.Fatalf("the command's environment changed: %q", got)
	}
	if !raceBuild {
		if len(got) != len(cmdEnv) {
			t.Fatalf("a build without the race detector added %q", got[len(cmdEnv):])
		}
		return
	}
	if len(got) != len(cmdEnv)+1 || !strings.HasPrefix(got[len(cmdEnv)], "GORACE=halt_on_error=1 ") ||
		!strings.HasSuffix(got[len(cmdEnv)], " atexit_sleep_ms=0") {
		t.Fatalf("race build: %q, want the command's environment and GORACE=halt_on_error=1 ... atexit_sleep_ms=0", got)
	}
}
