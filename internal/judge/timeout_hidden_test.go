package judge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestJudgeTimeoutKeepsTail: a test run stopped by --timeout says so, and
// the verdict keeps the end of what the run printed, to say why.
func TestJudgeTimeoutKeepsTail(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	// The limit covers the compile and link before the hang, which on a
	// loaded machine as forkbomb-ci once took all of 20 s; the hang
	// sleeps, so a long limit costs this test wall time, not CPU.
	hang := "package calc\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\nfunc Add(a, b int) int {\n\tfmt.Println(\"STUCK-IN-ADD\")\n\ttime.Sleep(time.Hour)\n\treturn 0\n}\n\nfunc Sub(a, b int) int { return a - b }\n"
	v := judgeOneVerdict(t, repo, "go test ./...", map[string]edit{"calc.go": {content: hang}}, func(o *judge.Options) { o.Timeout = 90 * time.Second })
	if !v.TimedOut || v.Verdict == event.Pass || !strings.Contains(v.Reason, "timed out") {
		t.Errorf("want a timeout, got timed_out=%v verdict=%s: %s", v.TimedOut, v.Verdict, v.Reason)
	}
	if !strings.Contains(v.OutputTail, "STUCK-IN-ADD") {
		t.Errorf("the verdict's output tail does not hold what the run printed before it hung: %q", v.OutputTail)
	}
}

// TestJudgeHiddenWarning: hidden tests the command never runs are warned
// about; hidden tests it runs are not (the positive control).
func TestJudgeHiddenWarning(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	unused, used := t.TempDir(), t.TempDir()
	writeFiles(t, unused, map[string]string{"test_hidden.py": "def test_x():\n    assert False\n"})
	writeFiles(t, used, map[string]string{"hidden_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAddHidden(t *testing.T) {\n\tif Add(10, 7) != 17 {\n\t\tt.Fatal()\n\t}\n}\n"})
	for _, c := range []struct {
		name   string
		hidden string
		warn   bool
	}{{"never run", unused, true}, {"run", used, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := judgeOneVerdict(t, repo, "go test ./...", map[string]edit{"calc.go": {content: goFixed}}, func(o *judge.Options) { o.Hidden = []string{c.hidden} })
			warned := strings.Contains(strings.Join(v.Warnings, "\n"), "add no test")
			if warned != c.warn {
				t.Errorf("warned = %v, want %v: %v", warned, c.warn, v.Warnings)
			}
		})
	}
}
