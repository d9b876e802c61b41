package judge

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrUnattributed means a patch holds text the judge could not assign to
// one file section it parsed, or a section whose paths it could not read
// unambiguously. Such a patch is refused whole: git apply reads more forms
// than a section splitter does (a plain "---"/"+++" diff after a git one,
// a section hidden in a commit message, a "diff --git" line naming other
// paths than its "---"/"+++" lines), and the judge applies exactly what it
// inspected. Kept here rather than in an errors.go: the judge's other
// sentinels are being written alongside.
var ErrUnattributed = errors.New("the patch has text the judge could not attribute to a file")

// filePatch is one file's section of a git patch: its text as given and
// the paths git touches ("" for none: a new file has no old path).
type filePatch struct {
	oldPath, newPath string
	text             []byte
}

// paths returns the file's paths, old and new, without duplicates.
func (f filePatch) paths() []string {
	switch {
	case f.oldPath == "" || f.oldPath == f.newPath:
		return []string{f.newPath}
	case f.newPath == "":
		return []string{f.oldPath}
	}
	return []string{f.oldPath, f.newPath}
}

func refuse(line int, format string, args ...any) error {
	return fmt.Errorf("%w (line %d: %s)", ErrUnattributed, line+1, fmt.Sprintf(format, args...))
}

// malformed refuses a section git itself could not read either (a hunk
// that disagrees with its line counts, a broken binary patch).
func malformed(line int, format string, args ...any) error {
	return fmt.Errorf("the patch does not apply: %w", refuse(line, format, args...))
}

// parsePatch reads a git patch into its file sections, refusing anything
// it cannot attribute. It accepts what `git diff --binary` prints: text
// before the first "diff --git" line (a commit message) only when no line
// of it is one a patch reader acts on, and after the last section only
// blank lines or a mail signature ("-- ") of the same kind.
func parsePatch(patch []byte) ([]filePatch, error) {
	lines := bytes.SplitAfter(patch, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	i := 0
	for ; i < len(lines) && !bytes.HasPrefix(lines[i], []byte("diff --git ")); i++ {
		if patchLike(lines[i]) {
			return nil, refuse(i, "%q before the first \"diff --git\" line", clip(lines[i]))
		}
	}
	if i == len(lines) {
		if len(bytes.TrimSpace(patch)) > 0 {
			return nil, refuse(0, "no \"diff --git\" section")
		}
		return nil, nil
	}
	var out []filePatch
	for i < len(lines) && bytes.HasPrefix(lines[i], []byte("diff --git ")) {
		f, next, err := parseSection(lines, i)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		i = next
	}
	// the tail: blank lines, or a signature that holds nothing a patch
	// reader would act on
	sig := false
	for j := i; j < len(lines); j++ {
		l := lines[j]
		switch {
		case len(bytes.TrimSpace(l)) == 0:
		case !sig && string(l) == "-- \n":
			sig = true
		case sig && !patchLike(l):
		default:
			return nil, refuse(j, "%q after a file section's end", clip(l))
		}
	}
	return out, nil
}

// patchLike reports whether a line outside the sections is one git apply,
// patch(1) or a mail tool could take as part of a patch.
func patchLike(l []byte) bool {
	for _, p := range []string{"diff ", "--- ", "+++ ", "@@", "GIT binary patch", "Binary files ", "Files ",
		"rename ", "copy ", "new file mode", "deleted file mode", "old mode", "new mode", "index ",
		"similarity index", "dissimilarity index", "literal ", "delta ", "Index: ", "*** ", "\\ "} {
		if bytes.HasPrefix(l, []byte(p)) {
			return true
		}
	}
	return false
}

// section is the header of one file section as read.
type section struct {
	hdr                       string // after "diff --git "
	isNew, isDel, isRen, isCp bool
	from, to                  string // rename or copy
	minus, plus               *string
	minusNull, plusNull       bool
}

// parseSection reads the section starting at lines[start] and returns the
// index of the line after it.
func parseSection(lines [][]byte, start int) (filePatch, int, error) {
	var s section
	s.hdr = strings.TrimSuffix(string(lines[start]), "\n")
	if err := metaLine(lines, start, false); err != nil {
		return filePatch{}, 0, err
	}
	seen := map[string]bool{}
	i := start + 1
header:
	for ; i < len(lines); i++ {
		l := string(lines[i])
		switch {
		case strings.HasPrefix(l, "diff --git "), strings.HasPrefix(l, "@@ -"), l == "GIT binary patch\n", strings.HasPrefix(l, "Binary files "):
			break header
		}
		if err := metaLine(lines, i, strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")); err != nil {
			return filePatch{}, 0, err
		}
		key, rest := headerKey(l)
		if key == "" {
			return filePatch{}, 0, refuse(i, "%q is not a git header line", clip(lines[i]))
		}
		if seen[key] {
			return filePatch{}, 0, refuse(i, "a second %q line in one section", strings.TrimSpace(key))
		}
		seen[key] = true
		if err := s.read(key, rest); err != nil {
			return filePatch{}, 0, refuse(i, "%v", err)
		}
		if key == "--- " {
			if i+1 >= len(lines) || !bytes.HasPrefix(lines[i+1], []byte("+++ ")) {
				return filePatch{}, 0, refuse(i, "a \"---\" line not followed by \"+++\"")
			}
		}
		if key == "+++ " {
			if !seen["--- "] {
				return filePatch{}, 0, refuse(i, "a \"+++\" line without \"---\"")
			}
			if i+1 >= len(lines) || !bytes.HasPrefix(lines[i+1], []byte("@@ -")) {
				return filePatch{}, 0, refuse(i, "a \"+++\" line not followed by a hunk")
			}
		}
	}
	oldPath, newPath, err := s.paths()
	if err != nil {
		return filePatch{}, 0, refuse(start, "%v", err)
	}
	end, err := parseBody(lines, i)
	if err != nil {
		return filePatch{}, 0, err
	}
	if i < len(lines) && bytes.HasPrefix(lines[i], []byte("@@ -")) && !seen["--- "] {
		return filePatch{}, 0, refuse(i, "a hunk without \"---\"/\"+++\" lines")
	}
	var text []byte
	for _, l := range lines[start:end] {
		text = append(text, l...)
	}
	return filePatch{oldPath: oldPath, newPath: newPath, text: text}, end, nil
}

// metaLine refuses header lines git never prints: without a final
// newline, or with a NUL, CR or other control byte (git quotes names that
// hold one). A "---"/"+++" line may end in one tab, which git adds after
// a name with a space.
func metaLine(lines [][]byte, i int, nameLine bool) error {
	l := lines[i]
	if !bytes.HasSuffix(l, []byte("\n")) {
		return refuse(i, "a header line without a newline")
	}
	body := l[:len(l)-1]
	if nameLine {
		body = bytes.TrimSuffix(body, []byte("\t"))
	}
	for _, c := range body {
		if c < 0x20 || c == 0x7f {
			return refuse(i, "a control byte (%#x) in a header line", c)
		}
	}
	return nil
}

var headerKeys = []string{"--- ", "+++ ", "old mode ", "new mode ", "deleted file mode ", "new file mode ",
	"copy from ", "copy to ", "rename from ", "rename to ", "similarity index ", "dissimilarity index ", "index "}

func headerKey(l string) (string, string) {
	for _, k := range headerKeys {
		if strings.HasPrefix(l, k) {
			return k, strings.TrimSuffix(l[len(k):], "\n")
		}
	}
	return "", ""
}

// read records one extended header line, checking its form.
func (s *section) read(key, rest string) error {
	var err error
	switch key {
	case "--- ", "+++ ":
		name, null, e := nameOfSide(rest)
		if e != nil {
			return e
		}
		if key == "--- " {
			s.minus, s.minusNull = &name, null
		} else {
			s.plus, s.plusNull = &name, null
		}
	case "old mode ", "new mode ":
		err = checkMode(rest)
	case "deleted file mode ":
		s.isDel, err = true, checkMode(rest)
	case "new file mode ":
		s.isNew, err = true, checkMode(rest)
	case "copy from ", "copy to ", "rename from ", "rename to ":
		name, e := cName(rest)
		if e != nil {
			return e
		}
		if strings.HasPrefix(key, "copy") {
			s.isCp = true
		} else {
			s.isRen = true
		}
		if strings.HasSuffix(key, "from ") {
			s.from = name
		} else {
			s.to = name
		}
	case "similarity index ", "dissimilarity index ":
		if n := strings.TrimSuffix(rest, "%"); n == rest || !digits(n) || len(n) > 3 {
			err = fmt.Errorf("bad similarity %q", rest)
		}
	case "index ":
		err = checkIndex(rest)
	}
	return err
}

func checkMode(m string) error {
	switch m {
	case "100644", "100755", "120000", "160000":
		return nil
	}
	return fmt.Errorf("unknown file mode %q", m)
}

func checkIndex(s string) error {
	ids, mode, hasMode := strings.Cut(s, " ")
	a, b, ok := strings.Cut(ids, "..")
	if !ok || !isHex(a) || !isHex(b) || (hasMode && checkMode(mode) != nil) {
		return fmt.Errorf("bad index line %q", s)
	}
	return nil
}

func isHex(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// paths settles the section's old and new path from every line that
// names one; they must all agree, as git diff prints them.
func (s *section) paths() (oldPath, newPath string, err error) {
	kinds := 0
	for _, b := range []bool{s.isNew, s.isDel, s.isRen, s.isCp} {
		if b {
			kinds++
		}
	}
	if kinds > 1 {
		return "", "", errors.New("a section that is more than one of new, deleted, renamed, copied")
	}
	if s.minus != nil && s.minusNull != s.isNew {
		return "", "", errors.New("\"--- /dev/null\" must go with \"new file mode\" and only with it")
	}
	if s.plus != nil && s.plusNull != s.isDel {
		return "", "", errors.New("\"+++ /dev/null\" must go with \"deleted file mode\" and only with it")
	}
	cands, err := diffGitNames(s.hdr)
	if err != nil {
		return "", "", err
	}
	has := func(a, b string) bool {
		for _, c := range cands {
			if c[0] == a && c[1] == b {
				return true
			}
		}
		return false
	}
	if s.isRen || s.isCp {
		if s.from == "" || s.to == "" {
			return "", "", errors.New("a rename or copy without both \"from\" and \"to\"")
		}
		if (s.minus != nil && *s.minus != s.from) || (s.plus != nil && *s.plus != s.to) || !has(s.from, s.to) {
			return "", "", errors.New("the \"diff --git\", rename/copy and \"---\"/\"+++\" lines name different paths")
		}
		return s.from, s.to, nil
	}
	name := ""
	for _, p := range []*string{s.minus, s.plus} {
		if p != nil && *p != "" {
			if name != "" && *p != name {
				return "", "", errors.New("the \"---\" and \"+++\" lines name different paths")
			}
			name = *p
		}
	}
	if name == "" {
		var same []string
		for _, c := range cands {
			if c[0] == c[1] {
				same = append(same, c[0])
			}
		}
		if len(same) != 1 {
			return "", "", errors.New("the \"diff --git\" line does not name one path unambiguously")
		}
		name = same[0]
	}
	if !has(name, name) {
		return "", "", errors.New("the \"diff --git\" line names other paths than the \"---\"/\"+++\" lines")
	}
	oldPath, newPath = name, name
	if s.isNew {
		oldPath = ""
	}
	if s.isDel {
		newPath = ""
	}
	return oldPath, newPath, nil
}

// parseBody reads a section's hunks, or its binary patch, from lines[i]
// and returns the index after them. Hunks are read by their line counts,
// as git reads them: a "---" inside a hunk is a removed line, and one after
// the counts ran out starts nothing.
func parseBody(lines [][]byte, i int) (int, error) {
	if i < len(lines) {
		switch l := string(lines[i]); {
		case l == "GIT binary patch\n":
			return parseBinary(lines, i+1)
		case strings.HasPrefix(l, "Binary files "):
			if err := metaLine(lines, i, false); err != nil {
				return 0, err
			}
			if !strings.HasSuffix(l, " differ\n") {
				return 0, malformed(i, "a malformed \"Binary files\" line")
			}
			return i + 1, nil
		}
	}
	for i < len(lines) && bytes.HasPrefix(lines[i], []byte("@@ -")) {
		oldN, newN, ok := hunkHeader(string(lines[i]))
		if !ok {
			return 0, malformed(i, "a malformed hunk header %q", clip(lines[i]))
		}
		start := i
		i++
		changed := false
		for oldN > 0 || newN > 0 {
			if i >= len(lines) || !bytes.HasSuffix(lines[i], []byte("\n")) {
				return 0, malformed(start, "a hunk that ends before its line counts")
			}
			switch lines[i][0] {
			case ' ', '\n':
				oldN, newN = oldN-1, newN-1
			case '-':
				oldN, changed = oldN-1, true
			case '+':
				newN, changed = newN-1, true
			case '\\':
				if len(lines[i]) < 12 || lines[i][1] != ' ' {
					return 0, malformed(i, "a malformed \"\\\" line")
				}
			default:
				return 0, malformed(i, "%q inside a hunk", clip(lines[i]))
			}
			if oldN < 0 || newN < 0 {
				return 0, malformed(start, "a hunk longer than its line counts")
			}
			i++
		}
		if !changed {
			return 0, malformed(start, "a hunk that changes nothing")
		}
		if i < len(lines) && bytes.HasPrefix(lines[i], []byte("\\ ")) && bytes.HasSuffix(lines[i], []byte("\n")) {
			i++ // "\ No newline at end of file" after the last line
		}
	}
	return i, nil
}

// hunkHeader reads "@@ -a[,b] +c[,d] @@…" and returns b and d.
func hunkHeader(l string) (int, int, bool) {
	rest, ok := strings.CutPrefix(l, "@@ -")
	if !ok {
		return 0, 0, false
	}
	oldN, rest, ok := hunkRange(rest, " +")
	if !ok {
		return 0, 0, false
	}
	newN, _, ok := hunkRange(rest, " @@")
	return oldN, newN, ok
}

func hunkRange(s, end string) (int, string, bool) {
	r, rest, ok := strings.Cut(s, end)
	if !ok {
		return 0, "", false
	}
	pos, n, hasN := strings.Cut(r, ",")
	if !digits(pos) || (hasN && !digits(n)) || len(pos) > 9 || len(n) > 9 {
		return 0, "", false
	}
	count := 1
	if hasN {
		count = 0
		for _, c := range n {
			count = count*10 + int(c-'0')
		}
	}
	return count, rest, true
}

// parseBinary reads the hunks of a "GIT binary patch": one or two blocks
// of "literal N" or "delta N", base-85 lines and a blank line each.
func parseBinary(lines [][]byte, i int) (int, error) {
	for block := 0; block < 2; block++ {
		if i >= len(lines) {
			break
		}
		l := string(lines[i])
		kind, n, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		if (kind != "literal" && kind != "delta") || !digits(n) || !strings.HasSuffix(l, "\n") {
			if block == 0 {
				return 0, malformed(i, "a binary patch without \"literal\" or \"delta\"")
			}
			break
		}
		i++
		for ; ; i++ {
			if i >= len(lines) {
				return 0, malformed(i-1, "a binary hunk without its closing blank line")
			}
			d := lines[i]
			if string(d) == "\n" {
				i++
				break
			}
			if !base85Line(d) {
				return 0, malformed(i, "a malformed base-85 line in a binary patch")
			}
		}
	}
	return i, nil
}

func base85Line(d []byte) bool {
	if len(d) < 7 || (len(d)-2)%5 != 0 || d[len(d)-1] != '\n' {
		return false
	}
	if c := d[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
		return false
	}
	for _, c := range d[1 : len(d)-1] {
		if !strings.ContainsRune(base85Alphabet, rune(c)) {
			return false
		}
	}
	return true
}

const base85Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

func clip(l []byte) string {
	s := strings.TrimSuffix(string(l), "\n")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
