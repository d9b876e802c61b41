package judge

import "strings"

var pytestStatuses = []string{"PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"}

// pytestLine reads one test's outcome from a pytest line: the -rA short
// summary's "STATUS nodeid[ - message]" or -v's "nodeid STATUS[ (reason)]
// [ NN%]". Parametrized ids may hold spaces ("test_x[a b]"), so a node id
// is never cut at the first space.
func pytestLine(line string) (name, status string, ok bool) {
	if st, rest, found := strings.Cut(line, " "); found && isPytestStatus(st) {
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
