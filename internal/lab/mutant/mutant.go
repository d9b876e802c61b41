package mutant

import (
	"fmt"
	"sort"
	"strings"
)

// Mutant is one small change of one file: the bytes [Start, End) replaced.
type Mutant struct {
	ID          string `json:"id"`
	File        string `json:"file"` // slash-separated, relative to the repository
	Operator    string `json:"operator"`
	Start       int    `json:"start"` // byte offsets in the file
	End         int    `json:"end"`
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
	Line        int    `json:"line"` // 1-based, of Start
	Column      int    `json:"column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
}

// Apply returns src with the mutation made.
func (m Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Replacement))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Replacement...)
	return append(out, src[m.End:]...)
}

// Diff is a unified diff of the mutation, one hunk of the lines it
// touches, for the terminal summary.
func (m Mutant) Diff(src []byte) string {
	ls := lineStart(src, m.Start)
	le := lineEnd(src, m.End)
	before := string(src[ls:le])
	after := string(src[ls:m.Start]) + m.Replacement + string(src[m.End:le])
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n@@ -%d +%d @@ %s\n", m.File, m.File, m.Line, m.Line, m.Operator)
	for _, l := range strings.Split(before, "\n") {
		b.WriteString("-" + l + "\n")
	}
	if after != "" {
		for _, l := range strings.Split(after, "\n") {
			b.WriteString("+" + l + "\n")
		}
	}
	return b.String()
}

func lineStart(src []byte, off int) int {
	for off > 0 && src[off-1] != '\n' {
		off--
	}
	return off
}

func lineEnd(src []byte, off int) int {
	for off < len(src) && src[off] != '\n' {
		off++
	}
	return off
}

// position is the 1-based line and column of a byte offset.
func position(src []byte, off int) (line, col int) {
	line = 1 + strings.Count(string(src[:off]), "\n")
	return line, off - lineStart(src, off) + 1
}

// finish fills the positions and ids of one file's mutants, in order of
// where they are.
func finish(file string, src []byte, ms []Mutant) []Mutant {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Start < ms[j].Start })
	for i := range ms {
		m := &ms[i]
		m.File = file
		m.Original = string(src[m.Start:m.End])
		m.Line, m.Column = position(src, m.Start)
		m.EndLine, m.EndColumn = position(src, m.End)
		m.ID = fmt.Sprintf("%s:%d:%d:%s", file, m.Line, m.Column, m.Operator)
	}
	return ms
}

// Generate returns the mutants of one file, by its language (from its
// name); a language it does not know gives none.
func Generate(file string, src []byte) ([]Mutant, error) {
	switch {
	case strings.HasSuffix(file, "_test.go"):
		return nil, nil
	case strings.HasSuffix(file, ".go"):
		return goMutants(file, src)
	case strings.HasSuffix(file, ".py"):
		return finish(file, src, tokenMutants(src, python)), nil
	case strings.HasSuffix(file, ".js"), strings.HasSuffix(file, ".mjs"), strings.HasSuffix(file, ".cjs"):
		return finish(file, src, tokenMutants(src, javascript)), nil
	}
	return nil, nil
}
