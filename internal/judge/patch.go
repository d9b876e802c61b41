package judge

import (
	"bytes"
	"strconv"
	"strings"
)

// filePatch is one file's section of a git patch.
type filePatch struct {
	oldPath, newPath string // "" for /dev/null
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

// splitPatch cuts a git patch ("diff --git" sections) into its files.
// Text before the first section (a commit message, say) is dropped.
func splitPatch(patch []byte) []filePatch {
	var out []filePatch
	lines := bytes.SplitAfter(patch, []byte("\n"))
	var cur *filePatch
	inHunk := false
	for _, l := range lines {
		if bytes.HasPrefix(l, []byte("diff --git ")) {
			if cur != nil {
				out = append(out, *cur)
			}
			a, b := parseDiffGit(strings.TrimRight(string(l[len("diff --git "):]), "\n"))
			cur = &filePatch{oldPath: a, newPath: b}
			inHunk = false
		}
		if cur == nil {
			continue
		}
		cur.text = append(cur.text, l...)
		s := string(l)
		switch {
		case strings.HasPrefix(s, "@@") || strings.HasPrefix(s, "GIT binary patch"):
			inHunk = true
		case inHunk:
		case strings.HasPrefix(s, "--- "):
			cur.oldPath = headerPath(s[4:], "a/")
		case strings.HasPrefix(s, "+++ "):
			cur.newPath = headerPath(s[4:], "b/")
		case strings.HasPrefix(s, "rename from "):
			cur.oldPath = unquote(strings.TrimSuffix(s[len("rename from "):], "\n"))
		case strings.HasPrefix(s, "rename to "):
			cur.newPath = unquote(strings.TrimSuffix(s[len("rename to "):], "\n"))
		case strings.HasPrefix(s, "copy to "):
			cur.newPath = unquote(strings.TrimSuffix(s[len("copy to "):], "\n"))
		case strings.HasPrefix(s, "new file mode"):
			cur.oldPath = ""
		case strings.HasPrefix(s, "deleted file mode"):
			cur.newPath = ""
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// parseDiffGit reads the two paths of a "diff --git a/X b/Y" line. With
// unquoted paths containing spaces the split is ambiguous; the header
// lines that follow ("---", "+++", "rename") settle it.
func parseDiffGit(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		if a, rest, ok := cutQuoted(s); ok {
			b := strings.TrimSpace(rest)
			if strings.HasPrefix(b, `"`) {
				b, _, _ = cutQuoted(b)
			}
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
		}
	}
	// "a/X b/X": for an unchanged name the halves are equal
	if n := len(s); n%2 == 1 {
		a, b := s[:n/2], s[n/2+1:]
		if strings.TrimPrefix(a, "a/") == strings.TrimPrefix(b, "b/") {
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
		}
	}
	if i := strings.Index(s, " b/"); i > 0 {
		return strings.TrimPrefix(s[:i], "a/"), s[i+3:]
	}
	return s, s
}

func headerPath(s, prefix string) string {
	s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\t")
	if i := strings.IndexByte(s, '\t'); i >= 0 && !strings.HasPrefix(s, `"`) {
		s = s[:i]
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(unquote(s), prefix)
}

func unquote(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, _, ok := cutQuoted(s); ok {
			return u
		}
	}
	return s
}

// cutQuoted reads one C-quoted string (git's quoting of odd paths) at the
// start of s.
func cutQuoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			u, err := strconv.Unquote(s[:i+1]) // git C-quotes; Go reads the same escapes
			if err != nil {
				return "", s, false
			}
			return u, s[i+1:], true
		}
	}
	return "", s, false
}

func joinPatch(files []filePatch) []byte {
	var b bytes.Buffer
	for _, f := range files {
		b.Write(f.text)
	}
	return b.Bytes()
}
