//go:build linux || darwin

package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/sandbox/attacker"
)

// Helpers of the attack tests on every backend.

// attackArg makes the test binary run as the attacker (see TestMain).
const attackArg = "__forkbomb_attacker"

func attackMain(args []string) int { return attacker.Main(args) }

type outcome struct {
	res       *sandbox.Result
	err       error
	out, err2 string
}

func (o outcome) all() string { return o.out + o.err2 }

func (o outcome) code() int {
	if o.res == nil {
		return -1
	}
	return o.res.ExitCode
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "    | " + strings.ReplaceAll(s, "\n", "\n    | ")
}

func attackerExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func canary(t *testing.T) string {
	return fmt.Sprintf("CANARY-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// survivors polls for processes carrying marker, for up to 10 s (what the
// kernel may still be finishing on a loaded machine); a correct sandbox
// has killed them all by the time Run returns.
func survivors(marker string) []int {
	var p []int
	for i := 0; i < 200; i++ {
		if p = hostProcsWith(marker); len(p) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

func killAll(pids []int) {
	for _, p := range pids {
		if proc, err := os.FindProcess(p); err == nil {
			_ = proc.Kill()
		}
	}
}

// sleepMarker is a sleep argument unique to this test: "300.NNNNNN".
func sleepMarker() string {
	return fmt.Sprintf("300.%06d", time.Now().UnixNano()%1000000)
}
