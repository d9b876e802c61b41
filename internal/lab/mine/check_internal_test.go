package mine

import (
	"slices"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
)

// TestFailToPassNoFileEntry: a pytest file that did not collect on the
// parent is an entry named by its path, which the judge credits once the
// commit's code makes it collect; FAIL_TO_PASS lists its tests, not it.
func TestFailToPassNoFileEntry(t *testing.T) {
	t.Parallel()
	v := &judge.Verdict{
		Baseline: &judge.Baseline{Results: &judge.Results{Format: "pytest", Named: true, Tests: map[string]judge.Outcome{
			"tests/test_old.py::test_old": judge.Passed, "tests/test_new.py": judge.Failed}}},
		Results: &judge.Results{Format: "pytest", Named: true, Tests: map[string]judge.Outcome{
			"tests/test_old.py::test_old": judge.Passed, "tests/test_new.py": judge.Passed, "tests/test_new.py::test_sub": judge.Passed}},
	}
	if got := failToPass(v); !slices.Equal(got, []string{"tests/test_new.py::test_sub"}) {
		t.Errorf("FAIL_TO_PASS %q", got)
	}
}
