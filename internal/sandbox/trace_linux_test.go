package sandbox_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestStartTrace: with Stdio.Trace set, every phase of a start is named
// once, the parent's in Trace and the init's on the command's stderr, on a
// clock both share — checked by causality (the init reads the config after
// the parent sent it; the parent reads the end after the init reaped
// everything), never by durations. The control: without Trace, nothing of
// it reaches the command's stderr.
func TestStartTrace(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		p := sandbox.Policy{Command: []string{"sh", "-c", "echo out; echo err >&2"}, Workdir: t.TempDir(), Mode: mode}
		var trace, out, errOut bytes.Buffer
		res, err := sandbox.Run(context.Background(), p, sandbox.Stdio{Stdout: &out, Stderr: &errOut, Trace: &trace})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v %+v", err, res)
		}
		at := map[string]int64{}
		for _, line := range strings.Split(trace.String()+errOut.String(), "\n") {
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != "forkbomb-trace" {
				continue
			}
			if _, dup := at[f[2]]; dup {
				t.Errorf("phase %s named twice", f[2])
			}
			at[f[2]], _ = strconv.ParseInt(f[3], 10, 64)
		}
		for _, ph := range []string{"parent.start", "parent.tempdirs", "parent.clone", "parent.init-execed", "parent.config-ready",
			"init.config-read", "init.set-up", "init.restricted", "init.command-execed", "init.all-reaped",
			"parent.status-read", "parent.init-reaped", "parent.cleaned-up"} {
			if at[ph] == 0 {
				t.Errorf("phase %s missing; trace:\n%s%s", ph, trace.String(), errOut.String())
			}
		}
		for _, before := range [][2]string{{"parent.config-ready", "init.config-read"}, {"init.all-reaped", "parent.status-read"},
			{"parent.init-reaped", "parent.cleaned-up"}} {
			if at[before[0]] > at[before[1]] {
				t.Errorf("%s after %s", before[0], before[1])
			}
		}
		if strings.Contains(trace.String(), "init.") || !strings.Contains(errOut.String(), "err\n") || out.String() != "out\n" {
			t.Errorf("streams mixed up: trace %q, stdout %q, stderr %q", trace.String(), out.String(), errOut.String())
		}

		// Control: no trace asked for, none written.
		errOut.Reset()
		if _, err := sandbox.Run(context.Background(), p, sandbox.Stdio{Stdout: &out, Stderr: &errOut}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(errOut.String(), "forkbomb-trace") {
			t.Errorf("a trace without Stdio.Trace: %q", errOut.String())
		}
	})
}
