package judge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// edit is one change a patch makes: new content, or "" with del to delete,
// or a rename to.
type edit struct {
	content string
	del     bool
	to      string
	mode    os.FileMode // a file's mode, when not 0644
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture makes a committed repository of files.
func fixture(t testing.TB, files map[string]string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	writeFiles(t, repo, files)
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")
	return repo
}

// makePatch applies edits to a clone of repo and returns `git diff`.
func makePatch(t testing.TB, repo string, edits map[string]edit) []byte {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "wt")
	testutil.Git(t, filepath.Dir(wt), "clone", "-q", repo, wt)
	for p, e := range edits {
		full := filepath.Join(wt, p)
		switch {
		case e.del:
			os.Remove(full)
		case e.to != "":
			testutil.Git(t, wt, "mv", p, e.to)
			if e.content != "" {
				writeFiles(t, wt, map[string]string{e.to: e.content})
			}
		default:
			writeFiles(t, wt, map[string]string{p: e.content})
		}
		if e.mode != 0 {
			if err := os.Chmod(full, e.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.Git(t, wt, "add", "-A")
	// through a file: testutil.Git trims its output, which cuts a final
	// empty context line (" \n") and leaves a corrupt hunk the judge refuses
	out := filepath.Join(t.TempDir(), "patch")
	testutil.Git(t, wt, "diff", "--cached", "--binary", "-M", "--output="+out)
	p, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

type judged struct {
	name   string
	edits  map[string]edit
	raw    []byte // a patch given as is
	pass   bool
	reason string // a substring the reason must hold
	// verdict, when set, is the verdict it must have (event.Review);
	// findings, when set, the findings it must have, as "file:line".
	verdict  event.Verdict
	findings []string
	// fools: the positive control of a gaming case — its patch, applied
	// to a plain clone, makes the test command exit 0 with no judge and no
	// sandbox, so the base's own failure is not what fails it.
	fools bool
	// outsideFails: the control of a fix gated on the judge's own
	// sandbox — applied to a plain clone, a Go test fails (--- FAIL).
	outsideFails bool
}

// judgeAll judges the cases' patches together and checks each verdict.
func judgeAll(t *testing.T, repo, test string, hidden []string, cases []judged, tweak func(*judge.Options)) {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: test, Hidden: hidden}
	if tweak != nil {
		tweak(&o)
	}
	var patches [][]byte
	for _, c := range cases {
		if c.raw != nil {
			patches = append(patches, c.raw)
		} else {
			patches = append(patches, makePatch(t, repo, c.edits))
		}
	}
	for i, c := range cases {
		if c.fools {
			if out, err := plainRun(t, repo, test, patches[i]); err != nil {
				t.Errorf("control: %s does not fool the bare suite (%v), so its verdict proves nothing:\n%s", c.name, err, tail(out))
			}
		}
		if c.outsideFails {
			// a test must fail there, not the build or the command
			if out, err := plainRun(t, repo, test, patches[i]); err == nil || !strings.Contains(out, "--- FAIL") {
				t.Errorf("control: %s does not fail a test outside the judge's sandbox (%v), so it is not a fix that holds only there:\n%s", c.name, err, tail(out))
			}
		}
	}
	var verdicts []*judge.Verdict
	if o.Warm {
		// as a race judges: once the warmed build cache is laid
		// (warm.go), every patch judged over it
		j, err := judge.Prepare(t.Context(), o)
		if err != nil {
			t.Fatalf("judge: %v", err)
		}
		if ok, why := j.WaitWarm(t.Context()); !ok {
			t.Fatalf("the build cache was not warmed: %s", why)
		}
		verdicts, err = j.Judge(t.Context(), patches)
		j.Close()
		if err != nil {
			t.Fatalf("judge: %v", err)
		}
		if left, _ := filepath.Glob(filepath.Join(o.CacheDir, "warm-*")); len(left) > 0 {
			t.Errorf("Close left the warmed build cache: %v", left)
		}
	} else {
		var err error
		verdicts, err = judge.Judge(context.Background(), o, patches)
		if err != nil {
			t.Fatalf("judge: %v", err)
		}
	}
	for i, c := range cases {
		v := verdicts[i]
		t.Logf("%s: %s — %s (stripped %v)", c.name, v.Verdict, v.Reason, v.Stripped)
		if (v.Verdict == event.Pass) != c.pass {
			t.Errorf("%s: pass = %v, want %v: %s\n%s", c.name, v.Verdict == event.Pass, c.pass, v.Reason, tail(v.Output))
		}
		if c.reason != "" && !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: reason %q does not name %q", c.name, v.Reason, c.reason)
		}
		if c.verdict != "" && v.Verdict != c.verdict {
			t.Errorf("%s: verdict %s, want %s", c.name, v.Verdict, c.verdict)
		}
		if c.findings != nil {
			var got []string
			for _, f := range v.Findings {
				got = append(got, fmt.Sprintf("%s:%d", f.File, f.Line))
			}
			if strings.Join(got, " ") != strings.Join(c.findings, " ") {
				t.Errorf("%s: findings %v, want %v (%+v)", c.name, got, c.findings, v.Findings)
			}
		}
	}
	// nothing is left behind but the cached pid 1
	all, _ := s.List(t.Context())
	if len(all) != 1 {
		t.Errorf("judge left %d workspaces", len(all))
	}
}

// plainRun applies patch to a plain clone of repo and runs test there, with
// no judge and no sandbox.
func plainRun(t *testing.T, repo, test string, patch []byte) (string, error) {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "plain")
	testutil.Git(t, filepath.Dir(wt), "clone", "-q", "--shared", repo, wt)
	pf := filepath.Join(t.TempDir(), "patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, wt, "apply", "--binary", pf)
	return runClient(wt, []string{"GOFLAGS=-count=1"}, "/bin/sh", "-c", test)
}

func tail(s string) string {
	if len(s) > 1500 {
		return "…" + s[len(s)-1500:]
	}
	return s
}
