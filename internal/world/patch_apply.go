package world

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// patchFile is one file's part of a patch.
type patchFile struct {
	name             string // relative to /work
	oldMode, newMode uint32 // 0: no file on that side
	oldHash, newHash string // from the index line; "" when it has none
	asIs             bool   // a change that names no mode: the file's own stays
	binary           bool
	literal          []byte // a binary file's new bytes
	hunks            []hunk
}

// made and removed say whether the patch makes the file or removes it.
func (f patchFile) made() bool    { return f.oldMode == 0 && !f.asIs }
func (f patchFile) removed() bool { return f.newMode == 0 && !f.asIs }

// hunk is one "@@ -a,b +c,d @@" and its lines, each an op (' ', '-', '+') and a line that keeps
// its "\n" unless git marked it as having none.
type hunk struct {
	oldStart, oldLen, newLen int // oldStart counts from 0
	ops                      []byte
	lines                    []string
}

// ApplyPatch applies a patch of /work that Diff made — or git, within what Diff writes: no
// renames, copies or binary deltas — as `git apply` would: without fuzz (every context and
// removed line where the hunk says), a file's bytes checked against the index line's hashes
// when it has them, nothing written beyond a symlink, every removal before any file is made
// (so a file may become a directory), and directories left empty by a removal removed. maxSize
// bounds the world's file data as an exec's limit does (0: none). The patch is hostile data:
// whatever it says, an error is the only outcome besides the patched world. On an error w is
// partly patched; discard it.
func (w *World) ApplyPatch(patch []byte, maxSize int64) (err error) {
	defer patchPanic(&err)
	w.FS.maxSize = maxSize
	max := int64(maxFileBytes)
	if maxSize > 0 {
		max = maxSize
	}
	files, err := parsePatch(patch, max)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPatch, err)
	}
	for _, f := range files {
		if f.removed() {
			if err := w.FS.applyFile(f); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPatch, f.name, err)
			}
		}
	}
	for _, f := range files {
		if !f.removed() {
			if err := w.FS.applyFile(f); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPatch, f.name, err)
			}
		}
	}
	return nil
}

// applyFile removes, makes or changes one file.
func (f *FS) applyFile(pf patchFile) error {
	p := "/work/" + pf.name
	if err := f.noLinkBelow(pf.name); err != nil {
		return err
	}
	if pf.asIs {
		fi, err := f.Stat(p, false)
		if err != nil {
			return err
		}
		pf.oldMode = gitModeOf(fi.Mode())
		pf.newMode = pf.oldMode
	}
	var old []byte
	perm := fileMode(pf.newMode)
	if pf.oldMode != 0 {
		fi, err := f.Stat(p, false)
		if err != nil {
			return err
		}
		switch t := fi.Mode().Type(); {
		case pf.oldMode == modeSymlink && t == fs.ModeSymlink:
			target, err := f.Readlink(p)
			if err != nil {
				return err
			}
			old = []byte(target)
		case pf.oldMode != modeSymlink && t == 0:
			if old, err = f.ReadFile(p); err != nil {
				return err
			}
			if pf.oldMode == pf.newMode {
				perm = fi.Mode().Perm() // what git does not track is kept
			}
		default:
			return fmt.Errorf("not a %s", kindName(pf.oldMode))
		}
	} else if _, err := f.Stat(p, false); err == nil {
		return errors.New("already exists")
	}
	if pf.oldHash != "" && !strings.HasPrefix(blobHash(old), pf.oldHash) {
		return errors.New("its bytes are not those the patch was made against")
	}
	data := old
	switch {
	case pf.binary:
		data = pf.literal
	case len(pf.hunks) > 0:
		var err error
		if data, err = applyHunks(old, pf.hunks); err != nil {
			return err
		}
	}
	if pf.newHash != "" && !strings.HasPrefix(blobHash(data), pf.newHash) {
		return errors.New("its patched bytes are not those the patch names")
	}
	if pf.oldMode != 0 {
		if err := f.Remove(p, false); err != nil {
			return err
		}
	}
	if pf.newMode == 0 {
		if len(data) != 0 {
			return errors.New("a removal that leaves lines")
		}
		f.removeEmptyParents(path.Dir(p))
		return nil
	}
	if err := f.mkdirs(pf.name); err != nil {
		return err
	}
	if pf.newMode == modeSymlink {
		if len(data) == 0 || strings.IndexByte(string(data), 0) >= 0 {
			return errors.New("an empty symlink or one with a NUL")
		}
		return f.Symlink(string(data), p)
	}
	// A new inode, as git writes one: a hard link to the old file keeps the old bytes.
	return f.WriteFile(p, data, perm)
}

// gitModeOf is the mode git would give a file of mode m.
func gitModeOf(m fs.FileMode) uint32 {
	switch {
	case m.Type() == fs.ModeSymlink:
		return modeSymlink
	case m&0o100 != 0:
		return modeExec
	}
	return modeFile
}

func kindName(m uint32) string {
	if m == modeSymlink {
		return "symlink"
	}
	return "regular file"
}

// noLinkBelow refuses a name whose directories are not all directories (a symlink among them
// would lead the write elsewhere; a file is in the way).
func (f *FS) noLinkBelow(name string) error {
	dir := "/work"
	comps := strings.Split(name, "/")
	for _, c := range comps[:len(comps)-1] {
		dir += "/" + c
		fi, err := f.Stat(dir, false)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
	}
	return nil
}

// mkdirs makes the missing directories of name.
func (f *FS) mkdirs(name string) error {
	dir := "/work"
	comps := strings.Split(name, "/")
	for _, c := range comps[:len(comps)-1] {
		dir += "/" + c
		if err := f.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// removeEmptyParents removes dir and its parents below /work while they are empty.
func (f *FS) removeEmptyParents(dir string) {
	for ; strings.HasPrefix(dir, "/work/"); dir = path.Dir(dir) {
		if ents, err := f.ReadDir(dir); err != nil || len(ents) > 0 || f.Remove(dir, false) != nil {
			return
		}
	}
}

// applyHunks applies the hunks, in order, to old's lines.
func applyHunks(old []byte, hunks []hunk) ([]byte, error) {
	x := splitLines(old)
	var out strings.Builder
	pos := 0
	for _, h := range hunks {
		if h.oldStart < pos || h.oldStart > len(x) {
			return nil, fmt.Errorf("a hunk at line %d does not apply", h.oldStart+1)
		}
		for _, l := range x[pos:h.oldStart] {
			out.WriteString(l)
		}
		i := h.oldStart
		for k, op := range h.ops {
			if op == '+' {
				out.WriteString(h.lines[k])
				continue
			}
			if i >= len(x) || x[i] != h.lines[k] {
				return nil, fmt.Errorf("a hunk at line %d does not apply", h.oldStart+1)
			}
			if op == ' ' {
				out.WriteString(x[i])
			}
			i++
		}
		pos = i
	}
	for _, l := range x[pos:] {
		out.WriteString(l)
	}
	return []byte(out.String()), nil
}

// parsePatch reads a patch's files; max bounds a binary file's bytes.
func parsePatch(patch []byte, max int64) ([]patchFile, error) {
	if len(patch) == 0 {
		return nil, nil
	}
	if patch[len(patch)-1] != '\n' {
		return nil, errors.New("the patch does not end with a newline")
	}
	p := &patchReader{lines: strings.Split(string(patch[:len(patch)-1]), "\n")}
	var out []patchFile
	for !p.done() {
		f, err := p.file(max)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", p.i+1, err)
		}
		out = append(out, f)
	}
	return out, nil
}

type patchReader struct {
	lines []string
	i     int
}

func (p *patchReader) done() bool { return p.i >= len(p.lines) }

func (p *patchReader) peek() string {
	if p.done() {
		return ""
	}
	return p.lines[p.i]
}

// file reads one "diff --git" part.
func (p *patchReader) file(max int64) (patchFile, error) {
	rest, ok := strings.CutPrefix(p.peek(), "diff --git ")
	if !ok {
		return patchFile{}, errors.New(`not a "diff --git" line`)
	}
	name, err := gitNames(rest)
	if err != nil {
		return patchFile{}, err
	}
	f := patchFile{name: name}
	p.i++
	var indexMode uint32
	var made, removed, sawOld, sawNew bool
headers:
	for ; !p.done(); p.i++ {
		l := p.peek()
		var err error
		switch {
		case strings.HasPrefix(l, "old mode "):
			sawOld = true
			f.oldMode, err = gitMode(l[len("old mode "):])
		case strings.HasPrefix(l, "new mode "):
			sawNew = true
			f.newMode, err = gitMode(l[len("new mode "):])
		case strings.HasPrefix(l, "deleted file mode "):
			removed = true
			f.oldMode, err = gitMode(l[len("deleted file mode "):])
		case strings.HasPrefix(l, "new file mode "):
			made = true
			f.newMode, err = gitMode(l[len("new file mode "):])
		case strings.HasPrefix(l, "index "):
			f.oldHash, f.newHash, indexMode, err = indexLine(l[len("index "):])
		default:
			break headers
		}
		if err != nil {
			return f, err
		}
	}
	switch {
	case made && (removed || sawOld || sawNew), removed && (sawOld || sawNew), sawOld != sawNew:
		return f, errors.New("modes that contradict each other")
	case made:
		f.oldHash = ""
	case removed:
		f.newHash = ""
	case !sawOld:
		// No mode said: the file keeps its own (asMode).
		f.oldMode, f.newMode = indexMode, indexMode
		f.asIs = indexMode == 0
	}
	switch {
	case p.peek() == "GIT binary patch":
		p.i++
		f.binary = true
		lines, size, err := p.literal()
		if err != nil {
			return f, err
		}
		if f.literal, err = readLiteral(lines, size, max); err != nil {
			return f, err
		}
		if strings.HasPrefix(p.peek(), "literal ") || strings.HasPrefix(p.peek(), "delta ") {
			if _, _, err := p.literal(); err != nil { // the reverse hunk git adds
				return f, err
			}
		}
	case strings.HasPrefix(p.peek(), "--- "):
		if err := p.sides(f.name, f.made(), f.removed()); err != nil {
			return f, err
		}
		for strings.HasPrefix(p.peek(), "@@ ") {
			h, err := p.hunk()
			if err != nil {
				return f, err
			}
			f.hunks = append(f.hunks, h)
		}
		if len(f.hunks) == 0 {
			return f, errors.New("a text change without a hunk")
		}
	}
	return f, nil
}

// literal reads "literal N" (or "delta N"), its lines and the blank line that ends them.
func (p *patchReader) literal() ([]string, int64, error) {
	head := p.peek()
	kind, n, _ := strings.Cut(head, " ")
	size, err := strconv.ParseInt(n, 10, 64)
	if err != nil || kind != "literal" && kind != "delta" {
		return nil, 0, fmt.Errorf("a binary patch's %q", head)
	}
	if kind == "delta" {
		return nil, 0, errors.New("a binary delta (only literals are taken)")
	}
	p.i++
	start := p.i
	for !p.done() && p.peek() != "" {
		p.i++
	}
	if p.done() {
		return nil, 0, errors.New("a binary literal without its blank line")
	}
	lines := p.lines[start:p.i]
	p.i++
	return lines, size, nil
}

// sides reads the "---" and "+++" lines, which must name the file (or /dev/null).
func (p *patchReader) sides(name string, made, removed bool) error {
	want := [2]string{quoteName("a/" + name), quoteName("b/" + name)}
	if made {
		want[0] = "/dev/null"
	}
	if removed {
		want[1] = "/dev/null"
	}
	for k, prefix := range []string{"--- ", "+++ "} {
		got, ok := strings.CutPrefix(p.peek(), prefix)
		if !ok || strings.TrimSuffix(got, "\t") != want[k] {
			return fmt.Errorf("%q does not name %q", p.peek(), name)
		}
		p.i++
	}
	return nil
}

// hunk reads one hunk.
func (p *patchReader) hunk() (hunk, error) {
	head := p.peek()
	rest, _ := strings.CutPrefix(head, "@@ -")
	ranges, _, ok := strings.Cut(rest, " @@")
	oldR, newR, ok2 := strings.Cut(ranges, " +")
	var h hunk
	var err1, err2 error
	var newStart int
	h.oldStart, h.oldLen, err1 = hunkSpan(oldR)
	newStart, h.newLen, err2 = hunkSpan(newR)
	if !ok || !ok2 || err1 != nil || err2 != nil || newStart < 0 {
		return h, fmt.Errorf("a hunk header %q", head)
	}
	p.i++
	olds, news := 0, 0
	for olds < h.oldLen || news < h.newLen {
		l := p.peek()
		if p.done() || l == "" {
			return h, errors.New("a hunk shorter than its header says")
		}
		switch l[0] {
		case ' ':
			olds, news = olds+1, news+1
		case '-':
			olds++
		case '+':
			news++
		default:
			return h, fmt.Errorf("a hunk line %q", l)
		}
		if olds > h.oldLen || news > h.newLen {
			return h, errors.New("a hunk longer than its header says")
		}
		p.i++
		line := l[1:] + "\n"
		if !p.done() && p.peek()+"\n" == noNewline {
			line = l[1:]
			p.i++
		}
		h.ops = append(h.ops, l[0])
		h.lines = append(h.lines, line)
	}
	return h, nil
}

// hunkSpan reads "a,b" or "a" of a hunk header as the 0-based first line and the count.
func hunkSpan(s string) (int, int, error) {
	a, b, hasLen := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, errors.New("a hunk range")
	}
	n := 1
	if hasLen {
		if n, err = strconv.Atoi(b); err != nil || n < 0 {
			return 0, 0, errors.New("a hunk range")
		}
	}
	if n > 0 {
		if start == 0 {
			return 0, 0, errors.New("a hunk range")
		}
		start--
	}
	return start, n, nil
}

// gitMode reads a mode git tracks.
func gitMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m != modeFile && m != modeExec && m != modeSymlink {
		return 0, fmt.Errorf("a mode %q", s)
	}
	return uint32(m), nil
}

// indexLine reads "OLD..NEW [MODE]".
func indexLine(s string) (string, string, uint32, error) {
	hashes, mode, hasMode := strings.Cut(s, " ")
	a, b, ok := strings.Cut(hashes, "..")
	if !ok || !isHash(a) || !isHash(b) {
		return "", "", 0, fmt.Errorf("an index line %q", s)
	}
	var m uint32
	if hasMode {
		var err error
		if m, err = gitMode(mode); err != nil {
			return "", "", 0, err
		}
	}
	return a, b, m, nil
}

func isHash(s string) bool {
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// gitNames reads a "diff --git" line's two names, which must be a/NAME and b/NAME.
func gitNames(s string) (string, error) {
	var a, b string
	if strings.HasPrefix(s, `"`) {
		var rest string
		var err error
		if a, rest, err = unquoteName(s); err != nil {
			return "", err
		}
		if b, _ = strings.CutPrefix(rest, " "); b == rest {
			return "", errors.New(`a "diff --git" line without a second name`)
		}
	} else {
		var ok bool
		if a, b, ok = strings.Cut(s, " "); !ok {
			return "", errors.New(`a "diff --git" line without a second name`)
		}
	}
	if strings.HasPrefix(b, `"`) {
		var rest string
		var err error
		if b, rest, err = unquoteName(b); err != nil || rest != "" {
			return "", errors.New(`a "diff --git" line's second name`)
		}
	} else if strings.ContainsAny(b, " \"\\") || strings.ContainsAny(a, "\"\\") {
		return "", errors.New(`an unquoted name with a space, a quote or a backslash`)
	}
	name, ok := strings.CutPrefix(a, "a/")
	if other, ok2 := strings.CutPrefix(b, "b/"); !ok || !ok2 || other != name {
		return "", fmt.Errorf("the names %q and %q (renames are not taken)", a, b)
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0 {
			return "", fmt.Errorf("a path %q", name)
		}
	}
	return name, nil
}

// unquoteName reads one C-quoted name at the start of s, bytes kept as they are, and returns
// the text after it.
func unquoteName(s string) (string, string, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i++; i >= len(s) {
				return "", "", errors.New("an unterminated quoted name")
			}
			if e, ok := cUnescape[s[i]]; ok {
				b.WriteByte(e)
			} else if i+2 < len(s) && '0' <= s[i] && s[i] <= '3' && isOctal(s[i+1]) && isOctal(s[i+2]) {
				b.WriteByte((s[i]-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			} else {
				return "", "", fmt.Errorf("an escape \\%c in a quoted name", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("an unterminated quoted name")
}

var cUnescape = map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', '"': '"'}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
