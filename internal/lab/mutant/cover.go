package mutant

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// coverage is, per file, the lines some test ran.
type coverage map[string]map[int]bool

// parseCoverProfile reads `go test -coverprofile` output: each block
// "importpath/file.go:L1.C1,L2.C2 statements count" with count > 0 marks
// lines L1..L2 as reached. module is the go.mod's module path, stripped
// to make the name relative.
func parseCoverProfile(b []byte, module string) coverage {
	cov := coverage{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		colon := strings.LastIndexByte(l, ':')
		f := strings.Fields(l)
		if colon < 0 || len(f) != 3 || f[2] == "0" {
			continue
		}
		name := strings.TrimPrefix(l[:colon], module+"/")
		var l1, l2 int
		rng := strings.SplitN(f[0][colon+1:], ",", 2)
		if len(rng) != 2 {
			continue
		}
		l1, _ = strconv.Atoi(strings.SplitN(rng[0], ".", 2)[0])
		l2, _ = strconv.Atoi(strings.SplitN(rng[1], ".", 2)[0])
		if cov[name] == nil {
			cov[name] = map[int]bool{}
		}
		for i := l1; i <= l2 && i-l1 < 100000; i++ {
			cov[name][i] = true
		}
	}
	return cov
}

// reached: whether a test ran any line of the mutant.
func (c coverage) reached(m Mutant) bool {
	lines := c[m.File]
	for i := m.Line; i <= m.EndLine; i++ {
		if lines[i] {
			return true
		}
	}
	return false
}

// goModule is the module path a go.mod declares.
func goModule(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
