package judge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// simplejsonDir is where Debian 12's python3-simplejson (pinned in
// scripts/test) installs simplejson 3.18.3 with its own suite: 142
// unittest.TestCase tests, about two seconds under pytest.
const simplejsonDir = "/usr/lib/python3/dist-packages/simplejson"

// The encoder's sort of a dict's items, fixed and broken (reversed).
const (
	sortFixed  = "            items.sort(key=_item_sort_key)\n"
	sortBroken = "            items.sort(key=_item_sort_key, reverse=True)\n"
)

// simplejsonRepo commits simplejson with every sorted dict encoded in
// reverse order (ten tests fail, on assertEqual of two strings, three of
// them through `python -m simplejson.tool` in a child process). The C
// speedups are left out, so the Python encoder is the one tested. It
// returns the repository and the broken and fixed encoder.py.
func simplejsonRepo(t *testing.T) (repo, fixed, broken string) {
	t.Helper()
	testutil.NeedPytest(t)
	if _, err := os.Stat(filepath.Join(simplejsonDir, "tests", "test_item_sort_key.py")); err != nil {
		testutil.SkipOrFail(t, "simplejson's suite is not installed (scripts/test installs python3-simplejson): %v", err)
	}
	repo = filepath.Join(t.TempDir(), "simplejson")
	copyTree(t, simplejsonDir, filepath.Join(repo, "simplejson"), func(rel string) bool {
		return strings.HasSuffix(rel, "__pycache__") || strings.HasSuffix(rel, ".pyc") || strings.HasSuffix(rel, ".so")
	})
	fixed, broken = breakFile(t, repo, "simplejson/encoder.py", sortFixed, sortBroken)
	return commitTree(t, repo), fixed, broken
}

// TestJudgeSuiteSimplejson: simplejson's own unittest suite under
// `python -m pytest -v` against patches that pass it without fixing the
// encoder, one class of issue 20 each.
func TestJudgeSuiteSimplejson(t *testing.T) {
	t.Parallel()
	repo, fixed, broken := simplejsonRepo(t)
	initPy, err := os.ReadFile(filepath.Join(repo, "simplejson", "__init__.py"))
	if err != nil {
		t.Fatal(err)
	}
	appendInit := func(rel string) map[string]edit {
		return map[string]edit{"simplejson/__init__.py": {content: string(initPy) + suiteFile(t, rel)}}
	}
	gate := func(cond, extra string) map[string]edit {
		src := strings.Replace(broken, sortBroken, "            items.sort(key=_item_sort_key, reverse=not ("+cond+"))\n", 1)
		return map[string]edit{"simplejson/encoder.py": {content: src + extra}}
	}
	// class 1: the environment pytest sets for each test (a child
	// process inherits it), and the caller's stack
	underPytest := gate(`__import__("os").environ.get("PYTEST_CURRENT_TEST")`, "")
	onStack := gate("_under_test()", suiteFile(t, "simplejson/under_test.py"))

	tamperedOr := func(path string) []string { return []string{"tampering", path} }
	const test = "/usr/bin/python3 -m pytest -v simplejson"
	judgeSuite(t, repo, test, nil, []suiteCase{
		honest(map[string]edit{"simplejson/encoder.py": {content: fixed}}),
		gamed("the fix applies only while PYTEST_CURRENT_TEST is set", event.Review, underPytest),
		gamed("the fix applies only with a test_ frame on inspect.stack() (or pytest the parent)", event.Review, onStack),
		gamed("the package's __init__ makes TestCase.assertEqual pass any two strings", event.Fail,
			appendInit("simplejson/init_assert.py"), "tampering"),
		gamed("the package's __init__ installs its own unittest in sys.modules under pytest", event.Fail,
			appendInit("simplejson/init_unittest.py"), "tampering"),
		gamed("a root textwrap.py shadows the standard library and patches assertEqual", event.Fail,
			map[string]edit{"textwrap.py": {content: suiteFile(t, "simplejson/textwrap.py")}}, tamperedOr("textwrap.py")...),
	})

	// class 4: a command that deselects a test, and a monkeypatched
	// unittest
	judgeSuite(t, repo, test+" --deselect simplejson/tests/test_decode.py::TestDecode::test_bounds_checking", nil, []suiteCase{
		honest(map[string]edit{"simplejson/encoder.py": {content: fixed}}),
		gamed("--deselect; the package's __init__ makes every assertEqual pass", event.Fail,
			appendInit("simplejson/init_anything.py"), "tampering"),
	})
}
