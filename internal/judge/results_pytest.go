package judge

import "strings"

var pytestStatuses = []string{"PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"}

// pytestLine reads one test's outcome from a pytest line: the -rA short
// summary's "STATUS nodeid[ - message]" or -v's "nodeid STATUS[ (reason)]
// [ NN%]". Parametrized ids may hold spaces ("test_x[a b]"), so a node id
// is never cut at the first space.
func pytestLine(line string) (name, status string, ok bool) {
	if st, rest, found := strings.Cut(line, " "); found && isPytestStatus(st) {
		if st == "ERROR" && !strings.Contains(rest, "::") {
			// "ERROR tests/test_new.py - ImportError: …": a file that did
			// not collect, named by its path (pytestCollected)
			if f, _, _ := strings.Cut(strings.TrimRight(rest, " \r"), " - "); strings.HasSuffix(f, ".py") && !strings.ContainsAny(f, " \t") {
				return f, st, true
			}
			return "", "", false
		}
		if !strings.Contains(rest, "::") || strings.HasPrefix(rest, "[") {
			return "", "", false // "SKIPPED [1] t.py:3: reason" names no test
		}
		return pytestID(rest, st), st, true
	}
	colon := strings.Index(line, "::")
	if colon <= 0 || strings.ContainsAny(line[:colon], " \t") {
		return "", "", false
	}
	best := -1
	for _, st := range pytestStatuses {
		for from := colon; ; {
			j := strings.Index(line[from:], " "+st)
			if j < 0 {
				break
			}
			j += from
			end := j + 1 + len(st)
			if end == len(line) || line[end] == ' ' {
				if best < 0 || j < best {
					best, status = j, st
				}
				break
			}
			from = j + 1
		}
	}
	if best < 0 {
		return "", "", false
	}
	return line[:best], status, true
}

func isPytestStatus(s string) bool {
	for _, st := range pytestStatuses {
		if s == st {
			return true
		}
	}
	return false
}

// pytestID cuts the node id from the rest of a short-summary line: a
// PASSED line holds nothing else; the others may end in " - message"
// (pytest 7's XPASS: " reason"). A parametrized id ends at the first "]"
// that the end of the line or the message follows.
func pytestID(rest, st string) string {
	rest = strings.TrimRight(rest, " \r")
	if st == "PASSED" {
		return rest
	}
	colon := strings.Index(rest, "::")
	tail := rest[colon:]
	sp := strings.IndexByte(tail, ' ')
	if b := strings.IndexByte(tail, '['); b >= 0 && (sp < 0 || b < sp) {
		for k := b; k < len(tail); k++ {
			if tail[k] != ']' {
				continue
			}
			after := tail[k+1:]
			if after == "" || strings.HasPrefix(after, " - ") || (st == "XPASS" && strings.HasPrefix(after, " ")) {
				return rest[:colon+k+1]
			}
		}
	}
	if i := strings.Index(tail, " - "); i >= 0 {
		return rest[:colon+i]
	}
	if sp >= 0 {
		return rest[:colon+sp]
	}
	return rest
}

// pytestCollected is cur with the baseline's collection errors that are
// gone credited: a test file that did not collect on the base (an entry
// named by its path, "ERROR tests/test_new.py - ImportError …": the task's
// new tests, importing what the base lacks) counts as fixed when it is no
// longer reported so, a test of that file that did not run at the
// baseline runs now, and none of its tests is skipped (a test the project
// skips on purpose there, a platform's, costs the credit). A patch that leaves it uncollectable leaves the
// entry failing, as the base's; one that only makes it collect is judged
// by the tests it then runs.
func pytestCollected(base, cur *Results) *Results {
	if base == nil || cur == nil || base.Format != "pytest" || !cur.Named {
		return cur
	}
	var fixed []string
	for name, o := range base.Tests {
		if o != Failed || strings.Contains(name, "::") {
			continue
		}
		if _, still := cur.Tests[name]; still {
			continue
		}
		// the file's tests run now, none skipped: the entry stands for
		// them all (a patch that makes it collect and then skips its real
		// tests from the code under test is not credited with it)
		ran, skipped := false, false
		for n, o := range cur.Tests {
			if !strings.HasPrefix(n, name+"::") {
				continue
			}
			if o == Skipped {
				skipped = true
			} else if _, was := base.Tests[n]; !was {
				ran = true
			}
		}
		// (a skip -rA does not name: more of them than on the base may
		// be this file's)
		if !ran || skipped || cur.SkippedUnnamed > base.SkippedUnnamed {
			continue
		}
		fixed = append(fixed, name)
	}
	return withPassed(cur, fixed)
}
