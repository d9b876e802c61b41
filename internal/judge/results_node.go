package judge

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

var (
	mochaSum  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+(\d+) (passing|failing|pending)\b`) })
	mochaTest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\s+)(?:(✔|✓)|(\d+)\)|-) (.*?)(?: \(\d+ms\))?$`)
	})
	jestSum  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Tests:\s+(.*\d+ total)\s*$`) })
	jestTest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\s+)(✓|✕|○|✎) (?:skipped |todo )?(.*?)(?: \(\d+(?:\.\d+)? ?m?s\))?$`)
	})
	jestFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(PASS|FAIL) (\S.*?)\s*(\(.*\))?$`) })
)

// nest keeps the suite titles above the current line, by indentation.
type nest struct {
	indents []int
	titles  []string
}

func (n *nest) push(indent int, title string) {
	n.pop(indent)
	n.indents, n.titles = append(n.indents, indent), append(n.titles, title)
}

func (n *nest) pop(indent int) {
	for len(n.indents) > 0 && n.indents[len(n.indents)-1] >= indent {
		n.indents, n.titles = n.indents[:len(n.indents)-1], n.titles[:len(n.titles)-1]
	}
}

func (n *nest) name(indent int, title string) string {
	n.pop(indent)
	return strings.Join(append(append([]string{}, n.titles...), title), " > ")
}

// parseMocha reads mocha's default (spec) reporter: its closing counts
// ("N passing", "N failing", "N pending") and, above them, the tests by
// suite ("✔ title", "N) title", "- title"). Names are kept only when they
// add up to the counts; otherwise only the counts are.
func parseMocha(out []byte) *Results {
	lines := strings.Split(string(out), "\n")
	sum := -1
	counts := map[string]int{}
	for i, l := range lines {
		if sum < 0 && mochaSum().MatchString(l) && strings.Contains(l, " passing (") {
			sum = i
			for _, l2 := range lines[i:min(i+3, len(lines))] {
				if m := mochaSum().FindStringSubmatch(l2); m != nil {
					counts[m[2]], _ = strconv.Atoi(m[1])
				}
			}
		}
	}
	if sum < 0 {
		return nil
	}
	named := &Results{Format: "mocha", Named: true}
	var n nest
	for _, l := range lines[:sum] {
		l = strings.TrimRight(l, "\r")
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if m := mochaTest().FindStringSubmatch(l); m != nil {
			name := n.name(indent, m[4])
			switch {
			case m[2] != "":
				named.add(name, Passed)
			case m[3] != "":
				named.add(name, Failed)
			default:
				named.add(name, Skipped)
			}
		} else if indent >= 2 && strings.TrimSpace(l) != "" {
			n.push(indent, strings.TrimSpace(l))
		}
	}
	return namedOrCounts(named, counts["passing"], counts["failing"], counts["pending"])
}

// parseJest reads jest's default reporter: the "Tests:" summary line and,
// where jest lists them (one test file, or --verbose), each test by file
// and suite ("✓", "✕", "○ skipped", "✎ todo").
func parseJest(out []byte) *Results {
	lines := strings.Split(string(out), "\n")
	counts := map[string]int{}
	found := false
	for _, l := range lines {
		if m := jestSum().FindStringSubmatch(strings.TrimRight(l, "\r")); m != nil {
			found = true
			for _, part := range strings.Split(m[1], ",") {
				f := strings.Fields(part)
				if len(f) == 2 {
					counts[f[1]], _ = strconv.Atoi(f[0])
				}
			}
		}
	}
	if !found {
		return nil
	}
	named := &Results{Format: "jest", Named: true}
	var n nest
	in := false
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if m := jestFile().FindStringSubmatch(l); m != nil {
			n = nest{}
			n.push(-1, m[2])
			in = true
			continue
		}
		if !in {
			continue
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "●") {
			in = false // the list ends where the failure details start
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if m := jestTest().FindStringSubmatch(l); m != nil {
			name := n.name(indent, m[3])
			switch m[2] {
			case "✓":
				named.add(name, Passed)
			case "✕":
				named.add(name, Failed)
			default:
				named.add(name, Skipped)
			}
		} else {
			n.push(indent, strings.TrimSpace(l))
		}
	}
	return namedOrCounts(named, counts["passed"], counts["failed"], counts["skipped"]+counts["todo"])
}

// namedOrCounts keeps the names read when they add up to the runner's own
// counts, else falls back to the counts alone.
func namedOrCounts(named *Results, pass, fail, skip int) *Results {
	if named.Passed == pass && named.Failed == fail && named.Skipped == skip && len(named.Tests) > 0 {
		return named
	}
	return &Results{Format: named.Format, Passed: pass, Failed: fail, Skipped: skip}
}
