package mine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/mine"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestMineXmltodict mines six commits of a real third-party Python
// library's history as published (testdata/xmltodict.sh; the hashes are
// upstream's) under Debian's pytest: the two bug fixes whose new tests
// fail on their parents are kept, and every other commit is listed with
// why — a release (its version bump changes no test's outcome: judged),
// documentation and style alone (no test change), a build file alone (no
// code change).
func TestMineXmltodict(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo, ws, ls, cache := fixture(t, "xmltodict.bundle", "master")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	test := testutil.SystemPython + " -m pytest"
	var progress bytes.Buffer
	res, err := mine.Run(ctx, mine.Options{Store: ws, Lab: ls, CacheDir: cache, Repo: repo, Test: test, Timeout: 2 * time.Minute, Progress: &progress,
		Rev: "ed704344226ed6451f6735811c695fb5004df44d", Last: 6})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("\n%s", progress.String())
	got := map[string]mine.Commit{}
	for _, c := range append(append([]mine.Commit{}, res.Kept...), res.Skipped...) {
		got[c.Commit[:12]] = c
	}
	for c, want := range map[string]string{
		"89c4bf77b856": "no test fails on the parent and passes with the commit", // chore(master): release 1.0.3
		"fd6a73bf606c": "no test change",                                         // docs(readme): fix Fedora and Arch package links
		"f7d76c96fc01": "no test change",                                         // style: lines required between function definitions
		"1bfb267cd00b": "no code change (only tests or their configuration)",     // build: remove unnecessary `wheel` from dependencies
	} {
		if s, ok := got[c]; !ok || s.Task != "" || s.Reason != want {
			t.Errorf("%s: want skipped because %q, got %+v", c, want, s)
		}
	}
	if len(res.Kept) != 2 || len(res.Skipped) != 4 {
		t.Fatalf("kept %d, skipped %d: want 2 and 4", len(res.Kept), len(res.Skipped))
	}
	for c, want := range map[string][]string{
		// fix(unparse): add bytes_errors policy and handle bytes scalars consistently
		"ed704344226e": {"test_unparse_rejects_invalid_bytes_errors_handler", "test_boolean_unparse"},
		// fix(unparse): serialize None text/attrs as empty values (fixes #401)
		"aa165113bef2": {"test_none_attribute_serializes_as_empty_string", "test_non_string_text_with_attributes"},
	} {
		k := got[c]
		if k.Task == "" || k.Test != test || k.PassToPass == 0 {
			t.Errorf("%s: want a task of %s with tests that pass to pass, got %+v", c, test, k)
			continue
		}
		for _, w := range want {
			if !containsSuffix(k.FailToPass, "tests/test_dicttoxml.py::"+w) {
				t.Errorf("%s: FAIL_TO_PASS %v lacks %s", c, k.FailToPass, w)
			}
		}
		task, err := ls.LoadTask(k.Task)
		if err != nil {
			t.Fatal(err)
		}
		if task.Rev != k.Parent || task.Test != test || len(task.Hidden) != 1 {
			t.Fatalf("task %s: %+v", k.Task, task)
		}
		data, err := os.ReadFile(filepath.Join(task.Hidden[0], "tests", "test_dicttoxml.py"))
		if err != nil || strings.TrimSpace(string(data)) != testutil.Git(t, repo, "show", k.Commit+":tests/test_dicttoxml.py") {
			t.Errorf("task %s: the hidden test_dicttoxml.py is not the commit's: %v", k.Task, err)
		}
	}
}
