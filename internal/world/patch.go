package world

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// A world's patch is /work of one world against another's as a git patch (`git diff
// --full-index --binary` of the two exported trees): what a world race ships from a branch and
// judges, and what `git apply` takes in an exported world. It carries what git tracks — regular
// files with their executable bit, symlinks, binary contents — and not what git does not:
// empty directories, hard links, mtimes, other permission bits, and the shell's state.

const (
	// maxPatchBytes bounds a patch's text (workspace.DiffLimits' default for a fork's patch).
	maxPatchBytes = 128 << 20
	// maxPatchCells bounds one file's line comparison; past it the changed middle of the file
	// (its common first and last lines aside) is one hunk.
	maxPatchCells = 4 << 20
	// binaryProbe is how much of a file git reads for a NUL before it calls it binary.
	binaryProbe = 8000
)

// Git's modes for what it tracks.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
)

// zeroHash is a git index line's name for no file.
var zeroHash = strings.Repeat("0", 40)

// tracked is one file or symlink of /work as git sees it.
type tracked struct {
	mode uint32 // modeFile, modeExec or modeSymlink
	data []byte // a file's bytes, a symlink's target
}

// Diff returns /work of b as a patch against a's: "" when they hold the same tracked files.
// A patch over 128 MiB is refused (ErrLimit).
func Diff(a, b *World) (_ []byte, err error) {
	defer patchPanic(&err)
	old, cur := a.FS.tracked(), b.FS.tracked()
	names := make([]string, 0, len(old)+len(cur))
	for n := range old {
		names = append(names, n)
	}
	for n := range cur {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, n := range names {
		o, hasOld := old[n]
		c, hasCur := cur[n]
		switch {
		case !hasCur:
			filePatch(&out, n, &o, nil)
		case !hasOld:
			filePatch(&out, n, nil, &c)
		case (o.mode == modeSymlink) != (c.mode == modeSymlink):
			// A file become a symlink (or back) is one removed and another made, as in git.
			filePatch(&out, n, &o, nil)
			filePatch(&out, n, nil, &c)
		case o.mode != c.mode || !bytes.Equal(o.data, c.data):
			filePatch(&out, n, &o, &c)
		}
		if out.Len() > maxPatchBytes {
			return nil, limitError("patch bytes", maxPatchBytes)
		}
	}
	return out.Bytes(), nil
}

// tracked returns every file and symlink under /work by its path relative to /work.
func (f *FS) tracked() map[string]tracked {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]tracked{}
	var walk func(dir *inode, prefix string)
	walk = func(dir *inode, prefix string) {
		for name, n := range dir.children {
			switch n.kind {
			case kindDir:
				walk(n, prefix+name+"/")
			case kindSymlink:
				out[prefix+name] = tracked{mode: modeSymlink, data: []byte(n.target)}
			case kindFile:
				out[prefix+name] = tracked{mode: gitModeOf(n.mode), data: n.data}
			}
		}
	}
	walk(f.root.children["work"], "")
	return out
}

// filePatch writes one file's part of the patch: old nil for a file made, cur nil for one
// removed.
func filePatch(w *bytes.Buffer, name string, old, cur *tracked) {
	fmt.Fprintf(w, "diff --git %s %s\n", quoteName("a/"+name), quoteName("b/"+name))
	var before, after []byte
	oldHash, curHash := zeroHash, zeroHash
	if old != nil {
		before, oldHash = old.data, blobHash(old.data)
	}
	if cur != nil {
		after, curHash = cur.data, blobHash(cur.data)
	}
	switch {
	case old == nil:
		fmt.Fprintf(w, "new file mode %06o\nindex %s..%s\n", cur.mode, oldHash, curHash)
	case cur == nil:
		fmt.Fprintf(w, "deleted file mode %06o\nindex %s..%s\n", old.mode, oldHash, curHash)
	case old.mode != cur.mode:
		fmt.Fprintf(w, "old mode %06o\nnew mode %06o\n", old.mode, cur.mode)
		if oldHash != curHash {
			fmt.Fprintf(w, "index %s..%s\n", oldHash, curHash)
		}
	default:
		fmt.Fprintf(w, "index %s..%s %06o\n", oldHash, curHash, cur.mode)
	}
	if bytes.Equal(before, after) {
		return
	}
	if isBinary(before) || isBinary(after) {
		w.WriteString("GIT binary patch\n")
		writeLiteral(w, after)
		w.WriteString("\n")
		return
	}
	from, to := quoteName("a/"+name), quoteName("b/"+name)
	if old == nil {
		from = "/dev/null"
	}
	if cur == nil {
		to = "/dev/null"
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", from, to)
	writeHunks(w, splitLines(before), splitLines(after))
}

// blobHash is git's name for a blob holding b.
func blobHash(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// isBinary is git's test: a NUL in the first 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binaryProbe)], 0) >= 0
}

// splitLines cuts b into lines that keep their "\n"; only the last may lack one.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			i = len(b)
		}
		out = append(out, string(b[:i]))
		b = b[i:]
	}
	return out
}

// writeHunks writes the unified hunks (three lines of context) that turn x into y.
func writeHunks(w *bytes.Buffer, x, y []string) {
	var blocks []block
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	if int64(len(mx)+1)*int64(len(my)+1) > maxPatchCells {
		blocks = []block{{0, len(mx), 0, len(my)}}
	} else {
		blocks = diffBlocks(mx, my)
	}
	for k := range blocks {
		blocks[k].i1, blocks[k].i2 = blocks[k].i1+pre, blocks[k].i2+pre
		blocks[k].j1, blocks[k].j2 = blocks[k].j1+pre, blocks[k].j2+pre
	}
	unifiedDiff(w, x, y, blocks, 3, func(op byte, l string) { writeLine(w, op, l) })
}

// noNewline is git's mark after a last line that has no "\n".
const noNewline = "\\ No newline at end of file\n"

func writeLine(w *bytes.Buffer, op byte, l string) {
	w.WriteByte(op)
	w.WriteString(l)
	if !strings.HasSuffix(l, "\n") {
		w.WriteString("\n" + noNewline)
	}
}

// quoteName writes a name as git does when it must: C-quoted when it holds a control byte, a
// quote, a backslash or a byte over 0x7f — and, unlike git, a space too, so that a "diff
// --git" line has one reading (git apply takes either).
func quoteName(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			if e, ok := cEscape[c]; ok {
				b.WriteByte('\\')
				b.WriteByte(e)
			} else {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cEscape are git's one-letter escapes in a quoted name.
var cEscape = map[byte]byte{'\a': 'a', '\b': 'b', '\t': 't', '\n': 'n', '\v': 'v', '\f': 'f', '\r': 'r'}

// fileMode is a git mode as a world's permission bits.
func fileMode(m uint32) fs.FileMode {
	if m == modeExec {
		return 0o755
	}
	return 0o644
}

// patchPanic makes a panic in Diff or ApplyPatch — code that reads a fork's
// world on the trusted side, where nothing else would catch it — that
// call's ErrPatch: the fork ships nothing, and the race goes on.
func patchPanic(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%w: internal error: %v", ErrPatch, v)
	}
}
