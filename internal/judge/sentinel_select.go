package judge

import (
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A test command that selects or deselects tests by name would leave the
// sentinels out of its run: their names are fresh. What the judge does
// instead depends on the runner and the flag:
//
//   - pytest --deselect PREFIX (and --ignore, --ignore-glob): pytest drops
//     the node ids that start with PREFIX, and a sentinel's is fresh and
//     random, so sentinels are planted and checked in the command's own run
//     as usual; a file any of whose sentinels a prefix would drop (a
//     prefix naming the file, say) gets none, and ignored files none.
//   - pytest -k EXPR / -m MARK / path::test node ids, go test -run / -skip,
//     node --test-name-pattern / --test-skip-pattern / --test-only: whether
//     an expression keeps a name is the runner's to say (pytest's -k
//     matches substrings of every name up the collection tree, markers,
//     attributes), so the judge does not guess. The sentinels run in a
//     second, sentinel-only run of the same runner, in the same sandbox
//     and judged copy right after the command's own run (see runTests):
//     the same command, word for word, less its selection, selecting only
//     the sentinels — pytest `-k 'S1 or S2 …'` with node ids cut back to
//     their files, go test `-run '^(S1|S2…)$'`, node
//     `--test-name-pattern='^(?:S1|S2…)$'`.
//
// Only a simple command is rewritten: words, quoted or not, with no
// expansion, redirection or operator the shell would act on. A command
// with those that selects tests gets no sentinels, as before, and the
// note says why.

// selection is what a test command selects by name.
type selection struct {
	runner   string   // go, pytest, node; "" when the judge does not rewrite the runner
	flags    []string // the selecting flags, for the note
	words    []string // the command's words; nil when it has shell syntax
	prefix   int      // words[:prefix] name the runner (go test, python -m pytest)
	drop     []bool   // the words a sentinel-only run leaves out
	files    []int    // pytest: words that are node ids, cut back to their file there
	deselect []string // pytest --deselect prefixes
	ignore   []string // pytest --ignore paths and --ignore-glob patterns
	second   bool     // the sentinels need a run of their own
}

// readSelection reads the selecting flags of a test command as it runs.
func readSelection(cmd string) selection {
	words, ok := cmdWords(cmd)
	if !ok {
		if f := selectsTests(cmd); f != "" {
			return selection{flags: []string{f}}
		}
		return selection{}
	}
	s := selection{words: words, drop: make([]bool, len(words))}
	base := ""
	if len(words) > 0 {
		base = filepath.Base(words[0])
	}
	switch {
	case len(words) >= 2 && base == "go" && words[1] == "test":
		s.runner, s.prefix = "go", 2
		s.readGo()
	case base == "pytest" || base == "py.test":
		s.runner, s.prefix = "pytest", 1
		s.readPytest()
	case len(words) >= 3 && strings.HasPrefix(base, "python") && words[1] == "-m" && (words[2] == "pytest" || words[2] == "py.test"):
		s.runner, s.prefix = "pytest", 3
		s.readPytest()
	case base == "node" && contains(words, "--test"):
		s.runner, s.prefix = "node", 1
		s.readNode()
	default:
		if f := selectsTests(cmd); f != "" {
			s.flags = []string{f}
		}
		s.runner = ""
	}
	return s
}

// flagValue reads a flag that takes a value at words[i] — NAME VALUE,
// NAME=VALUE, or (short flags) NAMEVALUE — and returns how many words it
// spans.
func flagValue(words []string, i int, names []string, joined bool) (string, int) {
	w := words[i]
	for _, n := range names {
		switch {
		case w == n && i+1 < len(words):
			return words[i+1], 2
		case strings.HasPrefix(w, n+"="):
			return w[len(n)+1:], 1
		case joined && len(w) > len(n) && strings.HasPrefix(w, n):
			return w[len(n):], 1
		}
	}
	return "", 0
}

func (s *selection) mark(i, n int, flag string) {
	for k := i; k < i+n; k++ {
		s.drop[k] = true
	}
	s.flags = append(s.flags, flag)
	s.second = true
}

// readGo: go test's -run and -skip, as go test's flags or, after -args,
// the test binary's (-test.run); Go's flag package takes - and --.
func (s *selection) readGo() {
	for i := s.prefix; i < len(s.words); i++ {
		if !strings.HasPrefix(s.words[i], "-") {
			continue
		}
		words := append([]string{}, s.words...)
		words[i] = strings.TrimPrefix(words[i], "-")
		if !strings.HasPrefix(words[i], "-") {
			words[i] = s.words[i]
		}
		for _, name := range []string{"-run", "-skip", "-test.run", "-test.skip"} {
			if _, n := flagValue(words, i, []string{name}, false); n > 0 {
				s.mark(i, n, name)
				i += n - 1
				break
			}
		}
	}
}

func (s *selection) readPytest() {
	for i := s.prefix; i < len(s.words); i++ {
		w := s.words[i]
		if v, n := flagValue(s.words, i, []string{"--deselect"}, false); n > 0 {
			s.deselect = append(s.deselect, strings.TrimPrefix(v, "./"))
			s.drop[i] = true
			if n == 2 {
				s.drop[i+1] = true
			}
			s.flags = append(s.flags, "--deselect")
			i += n - 1
			continue
		}
		if v, n := flagValue(s.words, i, []string{"--ignore", "--ignore-glob"}, false); n > 0 {
			s.ignore = append(s.ignore, strings.TrimSuffix(strings.TrimPrefix(v, "./"), "/"))
			i += n - 1
			continue
		}
		if _, n := flagValue(s.words, i, []string{"-k", "-m"}, true); n > 0 && !strings.HasPrefix(w, "--") {
			s.mark(i, n, w[:2])
			i += n - 1
			continue
		}
		if !strings.HasPrefix(w, "-") && strings.Contains(w, "::") {
			s.files = append(s.files, i)
			s.flags = append(s.flags, "a node id ("+w+")")
			s.second = true
		}
	}
}

func (s *selection) readNode() {
	for i := s.prefix; i < len(s.words); i++ {
		if s.words[i] == "--test-only" {
			s.mark(i, 1, "--test-only")
			continue
		}
		for _, name := range []string{"--test-name-pattern", "--test-skip-pattern"} {
			if _, n := flagValue(s.words, i, []string{name}, false); n > 0 {
				s.mark(i, n, name)
				i += n - 1
				break
			}
		}
	}
}

// applySelection fits a plan to what the command selects: sentinels the
// command's own run keeps, or a sentinel-only run. It returns the note to
// give, or "" to keep the plan's; a plan it empties gets none placed.
func applySelection(p *sentinelPlan, s selection) string {
	if len(p.list) == 0 {
		return ""
	}
	if s.runner == "pytest" && p.runner == "pytest" && len(s.deselect)+len(s.ignore) > 0 {
		s.dropDeselected(p)
		if len(p.list) == 0 {
			return "no sentinel tests were placed: the command deselects or ignores every file they could go in"
		}
	}
	if len(s.flags) == 0 {
		return ""
	}
	if s.words == nil || s.runner != p.runner {
		p.list, p.files, p.appends, p.wrapper = nil, nil, nil, ""
		return "no sentinel tests were placed: the command selects tests by name (" + s.flags[0] + ") in a form the judge does not rewrite"
	}
	if !s.second {
		return "the command deselects tests (" + strings.Join(uniq(s.flags), ", ") + "); the sentinel tests, whose node ids are fresh, were planted and checked in its own run"
	}
	p.second = s.sentinelCommand(p)
	return "the command selects tests (" + strings.Join(uniq(s.flags), ", ") + "), so the sentinel tests were run in a second, sentinel-only run in the same sandbox right after it — " +
		s.describe() + " — and checked in that run's output alone; the real tests were scored from the command's own run"
}

// dropDeselected takes out the sentinels of a file that --deselect or
// --ignore would leave out, whole: a sentinel that ran but was not
// expected would count as a real test.
func (s selection) dropDeselected(p *sentinelPlan) {
	out := map[string]bool{}
	for _, x := range p.list {
		file := strings.TrimSuffix(x.scope, "::")
		for _, d := range s.deselect {
			if d != "" && strings.HasPrefix(x.name, d) {
				out[file] = true
			}
		}
		for _, ig := range s.ignore {
			// --ignore-glob is fnmatch on the whole path: a glob without
			// a slash is tried on the file's name as well
			ok, _ := path.Match(ig, file)
			if !ok && !strings.Contains(ig, "/") {
				ok, _ = path.Match(ig, path.Base(file))
			}
			if ok || file == ig || strings.HasPrefix(file, ig+"/") {
				out[file] = true
			}
		}
	}
	if len(out) == 0 {
		return
	}
	var keep []sentinel
	for _, x := range p.list {
		if !out[strings.TrimSuffix(x.scope, "::")] {
			keep = append(keep, x)
		}
	}
	for f := range out {
		delete(p.appends, f)
	}
	p.list = keep
}

// sentinelCommand is the sentinel-only run: the command's words less its
// selection, selecting the planted sentinels by name.
func (s selection) sentinelCommand(p *sentinelPlan) string {
	var out []string
	seen := map[string]bool{}
	files := map[int]bool{}
	for _, i := range s.files {
		files[i] = true
	}
	for i, w := range s.words {
		if s.drop[i] {
			continue
		}
		if files[i] {
			w, _, _ = strings.Cut(w, "::")
			if seen[w] {
				continue
			}
			seen[w] = true
		}
		out = append(out, w)
		if i == s.prefix-1 && s.runner == "go" {
			// go test's own flags come before -args: the sentinels' -run
			// right after "test" is go test's, whatever follows.
			out = append(out, "-run=^("+strings.Join(sentinelIdents(p), "|")+")$")
		}
	}
	switch s.runner {
	case "pytest":
		out = append(out, "-k", strings.Join(sentinelIdents(p), " or "))
	case "node":
		var q []string
		for _, n := range sentinelIdents(p) {
			q = append(q, regexp.QuoteMeta(n))
		}
		out = append(out, "--test-name-pattern=^(?:"+strings.Join(q, "|")+")$")
	}
	for i := range out {
		out[i] = shellQuote(out[i])
	}
	return strings.Join(out, " ")
}

// sentinelIdents are the names a runner selects the sentinels by: a Go
// test function, a pytest function or unittest class (whose methods are
// all sentinels), a node test.
func sentinelIdents(p *sentinelPlan) []string {
	var out []string
	for _, x := range p.list {
		n := x.name
		switch p.runner {
		case "go":
			n = strings.TrimPrefix(n, x.scope) // the package and a dot
		case "pytest":
			n = strings.TrimPrefix(n, x.scope)
			n, _, _ = strings.Cut(n, "::")
		}
		out = append(out, n)
	}
	return uniq(out)
}

func (s selection) describe() string {
	switch s.runner {
	case "go":
		return "the same go test command and packages less -run/-skip, with -run '^(…)$' naming only the sentinels"
	case "pytest":
		return "the same pytest command less -k/-m/--deselect and with node ids cut back to their files, with -k naming only the sentinels"
	}
	return "the same node --test command less its name patterns and --test-only, with --test-name-pattern naming only the sentinels"
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// cmdWords splits a simple command into its words as the shell would: ”
// and "" quote, and nothing is expanded. A command with anything else the
// shell acts on — $, `, \, globs, ~, #, redirections, operators — is not
// simple: ok is false.
func cmdWords(cmd string) (words []string, ok bool) {
	var cur strings.Builder
	in := false // inside a word
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(cmd[i+1:], c)
			if j < 0 {
				return nil, false
			}
			q := cmd[i+1 : i+1+j]
			if c == '"' && strings.ContainsAny(q, "$`\\!") {
				return nil, false
			}
			cur.WriteString(q)
			in = true
			i += j + 1
		case strings.IndexByte("|&;<>()$`\\*?[]{}~#!\n\r", c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, len(words) > 0
}
