package world

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxDiffCells bounds the comparison table (lines of one file times lines of the other).
const maxDiffCells = 16 << 20

// block is a run of changed lines: x[i1:i2] replaced by y[j1:j2].
type block struct{ i1, i2, j1, j2 int }

// cmdDiff prints diff's normal format by default ("1c1", "< a", "---", "> b"), a unified diff
// with hunk headers under -u or -U N, and only whether they differ under -q. Exit status 1
// when the files differ, 2 on trouble.
func cmdDiff(c *cmd, args []string) int {
	set, files, err := flags(args, "U")
	if err != nil || len(files) != 2 {
		c.fail("usage: diff [-u | -U N | -q] FILE1 FILE2")
		return 2
	}
	var data [2][]byte
	for k, f := range files {
		if data[k], err = c.read(f); err != nil {
			c.failErr(err)
			return 2
		}
	}
	if bytes.Equal(data[0], data[1]) {
		return 0
	}
	if has(set, "q") {
		fmt.Fprintf(c.out, "Files %s and %s differ\n", files[0], files[1])
		return 1
	}
	x, y := lines(data[0]), lines(data[1])
	if int64(len(x)+1)*int64(len(y)+1) > maxDiffCells {
		c.fail("files too large to compare in a world (%d and %d lines)", len(x), len(y))
		return 2
	}
	blocks := diffBlocks(x, y)
	ctx := -1
	if has(set, "u") {
		ctx = 3
	}
	if v, ok := set['U']; ok {
		if ctx, err = strconv.Atoi(v); err != nil || ctx < 0 {
			c.fail("invalid context length '%s'", v)
			return 2
		}
	}
	var b strings.Builder
	if ctx < 0 {
		normalDiff(&b, x, y, blocks)
	} else {
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", files[0], files[1])
		unifiedDiff(&b, x, y, blocks, ctx, func(op byte, l string) { b.WriteByte(op); b.WriteString(l + "\n") })
	}
	c.out.Write([]byte(b.String()))
	return 1
}

// diffBlocks finds the changed runs by a longest common subsequence.
func diffBlocks(x, y []string) []block {
	m := make([][]int32, len(x)+1)
	for i := range m {
		m[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				m[i][j] = m[i+1][j+1] + 1
			} else {
				m[i][j] = max(m[i+1][j], m[i][j+1])
			}
		}
	}
	var out []block
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		if i < len(x) && j < len(y) && x[i] == y[j] {
			i, j = i+1, j+1
			continue
		}
		b := block{i1: i, j1: j}
		for i < len(x) || j < len(y) {
			if i < len(x) && j < len(y) && x[i] == y[j] {
				break
			}
			if i < len(x) && (j == len(y) || m[i+1][j] >= m[i][j+1]) {
				i++
			} else {
				j++
			}
		}
		b.i2, b.j2 = i, j
		out = append(out, b)
	}
	return out
}

// span is a normal diff's line range: "3", or "3,5".
func span(a, b int) string {
	if b-a <= 1 {
		return strconv.Itoa(a + 1)
	}
	return strconv.Itoa(a+1) + "," + strconv.Itoa(b)
}

func normalDiff(w *strings.Builder, x, y []string, blocks []block) {
	for _, b := range blocks {
		switch {
		case b.j1 == b.j2:
			fmt.Fprintf(w, "%sd%d\n", span(b.i1, b.i2), b.j1)
		case b.i1 == b.i2:
			fmt.Fprintf(w, "%da%s\n", b.i1, span(b.j1, b.j2))
		default:
			fmt.Fprintf(w, "%sc%s\n", span(b.i1, b.i2), span(b.j1, b.j2))
		}
		for _, l := range x[b.i1:b.i2] {
			w.WriteString("< " + l + "\n")
		}
		if b.i1 != b.i2 && b.j1 != b.j2 {
			w.WriteString("---\n")
		}
		for _, l := range y[b.j1:b.j2] {
			w.WriteString("> " + l + "\n")
		}
	}
}

// hunkRange is a unified hunk header's "start,length" (an empty range starts at the line
// before it; a length of 1 is not written).
func hunkRange(start, n int) string {
	if n == 0 {
		return strconv.Itoa(start) + ",0"
	}
	if n == 1 {
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(n)
}

// unifiedDiff writes the hunks of blocks, each block's context ctx lines,
// to w: the headers itself, every line through line (op ' ', '-' or '+').
// diff -u and a world's git patch (patch.go) share it.
func unifiedDiff(w io.Writer, x, y []string, blocks []block, ctx int, line func(op byte, l string)) {
	for k := 0; k < len(blocks); {
		// A hunk takes every block whose context touches the next one's.
		end := k + 1
		for end < len(blocks) && blocks[end].i1-blocks[end-1].i2 <= 2*ctx {
			end++
		}
		first, last := blocks[k], blocks[end-1]
		i1, j1 := max(first.i1-ctx, 0), max(first.j1-ctx, 0)
		i2, j2 := min(last.i2+ctx, len(x)), min(last.j2+ctx, len(y))
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(i1, i2-i1), hunkRange(j1, j2-j1))
		i := i1
		for _, b := range blocks[k:end] {
			for ; i < b.i1; i++ {
				line(' ', x[i])
			}
			for _, l := range x[b.i1:b.i2] {
				line('-', l)
			}
			for _, l := range y[b.j1:b.j2] {
				line('+', l)
			}
			i = b.i2
		}
		for ; i < i2; i++ {
			line(' ', x[i])
		}
		k = end
	}
}
