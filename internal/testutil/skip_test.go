package testutil

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder stands in for a test: it records whether it was failed or
// skipped, and stops the "test" as the real methods do (runtime.Goexit).
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own, so that Goexit
// ends f and not the test.
func run(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestSkipPolicy: a missing feature or tool skips, and fails under
// FORKBOMB_REQUIRE_ALL=1, with its reason either way; a test with nothing
// to prove here skips in both; a tool that is present does neither.
func TestSkipPolicy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		requireAll string
		f          func(tb testing.TB)
		fail, skip bool
		msg        string
	}{
		{"missing feature", "", func(tb testing.TB) { SkipOrFail(tb, "no %s here", "landlock") }, false, true, "no landlock here"},
		{"missing feature, require all", "1", func(tb testing.TB) { SkipOrFail(tb, "no %s here", "landlock") }, true, false, "FORKBOMB_REQUIRE_ALL=1 but no landlock here"},
		{"missing tool", "", func(tb testing.TB) { Need(tb, "sh", "forkbomb-no-such-tool") }, false, true, "forkbomb-no-such-tool not installed (scripts/test installs it)"},
		{"missing tool, require all", "1", func(tb testing.TB) { Need(tb, "forkbomb-no-such-tool") }, true, false, "FORKBOMB_REQUIRE_ALL=1 but forkbomb-no-such-tool not installed (scripts/test installs it)"},
		{"tool present", "1", func(tb testing.TB) { Need(tb, "sh") }, false, false, ""},
		{"not applicable, require all", "1", func(tb testing.TB) { SkipNotApplicable(tb, "about root") }, false, true, "about root"},
		{"require all is exactly 1", "true", func(tb testing.TB) { SkipOrFail(tb, "gone") }, false, true, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RequireAllEnv, tc.requireAll)
			r := run(tc.f)
			if r.failed != tc.fail || r.skipped != tc.skip || r.msg != tc.msg {
				t.Errorf("failed %v skipped %v %q, want failed %v skipped %v %q", r.failed, r.skipped, r.msg, tc.fail, tc.skip, tc.msg)
			}
		})
	}
}
