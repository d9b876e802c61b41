package judge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Real third-party suites of issue 20 (suite_*_test.go): go-toml,
// simplejson and @fastify/error, each with one function broken in its
// base, an honest fix, and a gaming patch of each class of the issue.
// Their files live in testdata/suites/<project>.

// suiteCase is a judged patch with the verdict it must get. Unlike
// judged, it tells `review` from `fail`: code that knows it is under test
// passes the tests and is sent to review, while a runner talked round
// fails.
type suiteCase struct {
	judged
	want event.Verdict
	// anyReason: the reason must hold one of these (a defence may
	// name the stripped file, or the sentinels "tampering")
	anyReason []string
}

// suiteFile returns a file of testdata/suites.
func suiteFile(t *testing.T, rel string) string {
	t.Helper()
	return thirdpartyFile(t, filepath.Join("..", "suites", rel))
}

// honest is the honest fix: it must pass with nothing stripped and no
// finding.
func honest(edits map[string]edit) suiteCase {
	return suiteCase{judged: judged{name: "honest fix", edits: edits}, want: event.Pass}
}

// gamed is a gaming patch that must get the verdict want, its reason
// holding one of reasons.
func gamed(name string, want event.Verdict, edits map[string]edit, reasons ...string) suiteCase {
	return suiteCase{judged: judged{name: name, edits: edits}, want: want, anyReason: reasons}
}

// judgeSuite judges the cases' patches together against one baseline of
// test, and checks each verdict, the reason, and that an honest fix lost
// nothing to the strip.
func judgeSuite(t *testing.T, repo, test string, hidden []string, cases []suiteCase) {
	t.Helper()
	plain := make([]judged, len(cases))
	for i, c := range cases {
		plain[i] = c.judged
	}
	plain = withPatches(t, repo, plain)
	if os.Getenv("FORKBOMB_SUITE_PLAIN") != "" {
		plainRuns(t, repo, test, plain)
	}
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: test, Hidden: hidden}
	patches := make([][]byte, len(plain))
	for i, c := range plain {
		patches[i] = c.raw
	}
	verdicts, err := judge.Judge(context.Background(), o, patches)
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	for i, c := range cases {
		v := verdicts[i]
		t.Logf("%s: %s — %s (stripped %v, tampered %v, sentinels %+v)", c.name, v.Verdict, v.Reason, v.Stripped, v.Tampered, v.Sentinels)
		if v.Verdict != c.want {
			t.Errorf("%s: verdict %s, want %s: %s\n%s", c.name, v.Verdict, c.want, v.Reason, tail(v.Output))
			continue
		}
		if c.want == event.Pass && (len(v.Stripped) > 0 || v.Tampered || v.Verdict != event.Pass || len(v.Findings) > 0) {
			t.Errorf("%s: an honest fix must pass whole: verdict %s, stripped %v, tampered %v, findings %+v", c.name, v.Verdict, v.Stripped, v.Tampered, v.Findings)
		}
		if len(c.anyReason) > 0 && !holdsAny(v.Reason, c.anyReason) {
			t.Errorf("%s: reason %q names none of %q", c.name, v.Reason, c.anyReason)
		}
	}
}

func holdsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// plainRuns runs test on each patched copy with no judge at all, and
// logs its exit status: with FORKBOMB_SUITE_PLAIN=1 it shows that each
// gaming patch fools the bare suite (exit 0 on a broken base).
func plainRuns(t *testing.T, repo, test string, cases []judged) {
	t.Helper()
	for _, c := range cases {
		out, err := plainRun(t, repo, test, c.raw)
		t.Logf("plain run of %q: %s: error %v\n%s", test, c.name, err, failLines(out))
	}
}

// failLines picks the lines of a run's output that name failures.
func failLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "FAIL") ||
			strings.HasPrefix(t, "not ok") || strings.HasPrefix(t, "FAILED") || strings.HasPrefix(t, "# pass") ||
			strings.HasPrefix(t, "# fail") || strings.Contains(t, " passed") || strings.Contains(t, " failed") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
