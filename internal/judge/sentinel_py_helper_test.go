package judge

import (
	"slices"
	"testing"
)

// TestPyEqualHelpers: the equality helpers a test file imports by name
// and calls, under the names it calls them by; not unittest's or pytest's,
// not one imported and never called, not an import inside a block, two at
// most.
func TestPyEqualHelpers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"plain and aliased", "from numpy.testing import assert_equal, assert_array_equal as aeq\n\nassert_equal(1, 1)\naeq([1], [1])\n", []string{"assert_equal", "aeq"}},
		{"parenthesized, a comment", "from calc.testing import (assertEquals)  # ours\nassertEquals(2, 2)\n", []string{"assertEquals"}},
		{"not an equality helper", "from calc.testing import assert_raises, check\nassert_raises(ValueError, f)\ncheck(1)\n", nil},
		{"unittest's and pytest's", "from unittest.case import assertEqual\nfrom _pytest.python_api import assert_eq\nassertEqual(1, 1)\nassert_eq(1, 1)\n", nil},
		{"imported, never called", "from calc.testing import assert_equal\n\ndef test_x():\n    assert 1 == 1\n", nil},
		{"only its method name called", "from calc.testing import assert_equal\nx.assert_equal(1, 1)\n", nil},
		{"inside a block", "try:\n    from numpy.testing import assert_equal\nexcept ImportError:\n    pass\nassert_equal(1, 1)\n", nil},
		{"through a module", "import numpy as np\nimport calc.testing as ct\nimport unittest\nnp.testing.assert_allclose(1, 1)\nct.assert_eq(1, 1)\n", []string{"np.testing.assert_allclose", "ct.assert_eq"}},
		// a hostile review's winners (stop 67): a module taken by a
		// from-import, and a star import
		{"a module by a from-import", "from calc import testing as ct\nfrom calc import testing\nct.assert_equal(1, 1)\ntesting.assert_eq(2, 2)\n", []string{"ct.assert_equal", "testing.assert_eq"}},
		{"a star import", "from calc.testing import *\n\ndef test_x():\n    assert_equal(1, 1)\n", []string{"assert_equal"}},
		{"a star import, the helper the file's own", "from calc.testing import *\n\ndef assert_equal(a, b):\n    assert a == b\n\nassert_equal(1, 1)\nassert_eq = lambda a, b: None\nassert_eq(1, 1)\n", nil},
		{"two at most", "from a import assert_equal\nfrom b import assert_eq\nfrom c import assert_almost_equal\nassert_equal(1, 1)\nassert_eq(1, 1)\nassert_almost_equal(1, 1)\n", []string{"assert_equal", "assert_eq"}},
	} {
		if got := pyEqualHelpers(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
