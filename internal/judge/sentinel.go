package judge

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// Sentinel tests catch a test runner that the code under test talked round.
// In each judged copy — after the patch is applied and the hidden tests are
// laid over it — the judge plants tests with random names, fresh for each
// Judger (warm.go), in the runner's own format, among the tests the command runs: some must pass,
// some must fail. Code that flips failures into passes, forges passing
// output for the tests it can find, replaces the assertion library or makes
// the runner exit 0 early gets a sentinel's outcome wrong, and the verdict
// says so. Sentinels never count towards the comparison or the score.
//
// A sentinel is checked only in a scope that ran: a Go package, a pytest
// file, a tape file, or (node, whose TAP names no files) the whole run. A
// scope ran when one of its real tests appears in the output.

// sentinel is one planted test.
type sentinel struct {
	name     string // as the results name it
	mustFail bool
	scope    string   // results-name prefix of the real tests beside it; "" = the whole run
	goPkg    string   // Go: the package, whose "(package)" result a must-fail makes fail
	ranWith  []string // tape: its file ran when one of these tests did (scope unused)
	file     string   // node: the test file it is appended to
}

// sentinelPlan says what the judge plants in one judged copy.
type sentinelPlan struct {
	runner  string            // go, pytest, node, tape; "" when none are placed
	files   map[string]string // new files, by path in the tree
	appends map[string]string // text appended to existing files, by path
	wrapper string            // go: the -exec wrapper that removes the sources
	// fixWord, in each file of fixup once planted, is replaced by what the
	// set-up shell's fd 1 links to, hex-encoded (pytest's pyOutput)
	fixWord string
	fixup   []string
	list    []sentinel
	note    string // why none (or only must-pass ones) were placed
	// second is the sentinel-only run's command, when the test command
	// selects tests so that its own run would leave the sentinels out
	// (sentinel_select.go); "" when they run in the command's own run.
	second string
	// own is, for node, each test file's string literals that no other
	// test file holds: a test of that name ran from that file (nodeLoaded).
	own map[string]map[string]bool
}

// taken is every sentinel name planned so far, one a line: a new name must
// be fresh across the plan, not only in its own file, since node's and
// tape's results are named by the test alone and two files' sentinels of
// one name would read as one (a must-pass one taken for a must-fail one).
func (p *sentinelPlan) taken() string {
	var b strings.Builder
	for _, s := range p.list {
		b.WriteString(s.name + "\n")
	}
	return b.String()
}

// SentinelReport is what the verdict says about the sentinels.
type SentinelReport struct {
	Runner  string   `json:"runner"`          // go, pytest, node, tape; "" when none were placed
	Planted int      `json:"planted"`         // sentinel tests planted
	Checked int      `json:"checked"`         // of those, in a scope that ran
	Wrong   []string `json:"wrong,omitempty"` // sentinels whose outcome was wrong
	Note    string   `json:"note,omitempty"`  // why none could be placed or checked
}

func (p *sentinelPlan) report() *SentinelReport {
	if p == nil {
		return &SentinelReport{Note: "no sentinel tests were placed"}
	}
	return &SentinelReport{Runner: p.runner, Planted: len(p.list), Note: p.note}
}

// planSentinels decides, from the baseline's format and names and the
// base's test files, which sentinels a judged copy gets. The baseline runs
// without them: what it names is what the command really runs.
func planSentinels(tree string, hidden []string, cmd string, bl *Baseline) *sentinelPlan {
	none := func(why string) *sentinelPlan { return &sentinelPlan{note: "no sentinel tests were placed: " + why} }
	if bl == nil || bl.Results == nil || !bl.Results.Named {
		return none("the baseline output names no tests, so none could be checked")
	}
	sel := readSelection(structured(cmd))
	var p *sentinelPlan
	switch bl.Results.Format {
	case "go-test-json":
		p = planGo(tree, hidden, cmd, bl.Results)
	case "pytest":
		p = planPytest(tree, hidden, cmd, bl.Results)
	case "tap":
		p = planNode(tree, hidden, cmd)
	case "tape":
		p = planTape(tree, hidden, cmd, bl.Results)
	default:
		return none("the judge does not know how to plant tests for " + bl.Results.Format + " output")
	}
	if note := applySelection(p, sel); note != "" {
		if p.note != "" && len(p.list) > 0 {
			note += "; " + p.note
		}
		p.note = note
	}
	if len(p.list) == 0 && p.note == "" {
		p.note = "no sentinel tests were placed: no test file of the baseline could be found in the tree"
	}
	if len(p.list) == 0 {
		p.runner = ""
	}
	return p
}

// selectsTests names a test-selection flag in a command the judge does not
// rewrite (one with shell syntax, or a runner it does not know): sentinels
// with fresh names would be deselected by it.
func selectsTests(cmd string) string {
	fields := strings.Fields(cmd)
	for i, f := range fields {
		name, _, _ := strings.Cut(f, "=")
		if name == "-m" && i > 0 && strings.HasPrefix(filepath.Base(fields[i-1]), "python") {
			continue // python -m MODULE
		}
		switch name {
		case "-run", "-test.run", "-skip", "-test.skip", "-k", "-m", "--deselect",
			"--test-name-pattern", "--test-skip-pattern", "--test-only", "--grep", "-g", "-t", "--testNamePattern":
			return name
		}
		if strings.Contains(f, "::") {
			return f
		}
	}
	return ""
}

// failsFast reports whether the command stops at the first failure: a
// must-fail sentinel would then stop the real tests.
func failsFast(cmd string) bool {
	for _, f := range strings.Fields(cmd) {
		name, _, _ := strings.Cut(f, "=")
		switch name {
		case "-failfast", "-test.failfast", "-x", "--exitfirst", "--maxfail", "--sw", "--stepwise", "--bail", "-b", "--test-bail":
			return true
		}
		if shortFlagsHold(f, 'x') {
			return true
		}
	}
	return false
}

// shortFlagsHold says whether a cluster of short flags ("-xv", "-vsx")
// holds flag: up to the first of pytest's flags that take a value
// (-k, -m, -p, -c, -o, -r, -W, -n), whose value the rest is ("-rxX").
func shortFlagsHold(word string, flag byte) bool {
	if len(word) < 3 || word[0] != '-' || word[1] == '-' {
		return false
	}
	for i := 1; i < len(word); i++ {
		c := word[i]
		switch {
		case c == flag:
			return true
		case strings.IndexByte("kmpcorWn", c) >= 0, !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'):
			return false
		}
	}
	return false
}

// sentinelCheck is what a run's sentinels showed.
type sentinelCheck struct {
	cur    *Results        // the results without the sentinels
	skip   map[string]bool // names left out of the comparison, the baseline's too
	report *SentinelReport
	tamper string // what gave the tampering away; "" when nothing did
	// expectFail: a must-fail sentinel ran (the command had to exit
	// non-zero), or one the base gets wrong failed (calibrate.go): a
	// non-zero exit is the sentinels', not the tests'.
	expectFail bool
	bad        wrongSet // what came out wrong, by sentinel and by run
	// loaded: the node test files every sentinel appended to ran in the
	// command's own run (nodeLoaded)
	loaded map[string]bool
}

// wrongSet is what came out wrong in a run, by what it belongs to.
// Only what a sentinel that ran was reported is noted by name: one that
// did not run there is not a wrong outcome the base could excuse (a
// package whose tests panic at the base runs none of its sentinels, and a
// patch that ends the run at that point must not be excused by it).
type wrongSet struct {
	sentinels map[string]Outcome // by run label and sentinel name (key): what it was reported, when wrong
	missing   bool               // some sentinel did not run (never excused)
	pkgs      map[string]bool    // Go packages reported passing although a must-fail sentinel in them ran
	exit      bool               // the command exited 0 although a must-fail sentinel ran
	sepExit   bool               // the sentinel-only run did (its not starting or finishing is never excused)
}

// runKey names a sentinel in the run labelled label.
func runKey(label, name string) string { return label + "\x00" + name }

func (w wrongSet) any() bool {
	return len(w.sentinels) > 0 || w.missing || len(w.pkgs) > 0 || w.exit || w.sepExit
}

// excusable is whether anything of w is what a base could excuse.
func (w wrongSet) excusable() bool {
	return len(w.sentinels) > 0 || len(w.pkgs) > 0 || w.exit || w.sepExit
}

// sentinelRun is what the sentinel-only run (sentinelPlan.second) showed,
// read from its own part of the output (see splitRuns).
type sentinelRun struct {
	started  bool // its part of the output began
	finished bool // and ended, with its exit status
	results  *Results
	exit     int
}

// checkSentinels reads the sentinels' outcomes in a run. Besides the
// sentinels, the package results their must-fail tests decide (go test's
// "(package)") are left out of the comparison.
func checkSentinels(p *sentinelPlan, cur *Results, exit int) sentinelCheck {
	return checkSentinelRuns(p, cur, exit, nil, nil)
}

// checkSentinelRuns is checkSentinels with the sentinel-only run's
// outcome, for a plan that has one (p.second): the command's own run still
// decides which scopes ran (its real tests are the ones scored); each
// sentinel of such a scope must come out right in the sentinel-only run,
// and any sentinel the command's own run did run (its selection kept it)
// must have come out right there too. What the untouched base's own run
// gets wrong (cal, calibrate.go; nil when it was not needed) is not
// checked.
func checkSentinelRuns(p *sentinelPlan, cur *Results, exit int, second *sentinelRun, cal *wrongSet) sentinelCheck {
	c := sentinelCheck{cur: cur, report: p.report()}
	if p == nil || len(p.list) == 0 || cur == nil {
		return c
	}
	if !cur.Named {
		c.report.Note = "the output names no tests, so the sentinel tests could not be checked"
		return c
	}
	rep := c.report
	isSentinel := map[string]bool{}
	for _, s := range p.list {
		isSentinel[s.name] = true
	}
	engaged := map[string]bool{}
	for name := range cur.Tests {
		if isSentinel[name] || strings.HasSuffix(name, " (package)") {
			continue
		}
		for _, s := range p.list {
			if s.scope == "" || strings.HasPrefix(name, s.scope) {
				engaged[s.scope] = true
			}
		}
	}
	if cal == nil {
		cal = &wrongSet{}
	}
	var wrong []string
	// own: the command's own run, whose must-fail sentinels decide its
	// expected exit and which package results leave the comparison.
	own := outcomes{res: cur, exit: exit, pkgs: map[string]bool{}, off: map[string]bool{}, bad: &c.bad, cal: cal}
	sep := outcomes{res: &Results{}, pkgs: map[string]bool{}, off: map[string]bool{}, label: " in the sentinel-only run", bad: &c.bad, cal: cal}
	if second != nil && second.results != nil {
		sep.res = second.results
	}
	for _, s := range p.list {
		inScope := s.ran(cur, engaged)
		switch {
		case p.second == "":
			if inScope {
				rep.Checked++
				wrong = own.check(s, wrong)
			}
		default:
			if o, ok := cur.Tests[s.name]; ok && o != Skipped {
				wrong = own.check(s, wrong) // kept by the command's own selection
			}
			if inScope {
				rep.Checked++
				wrong = sep.check(s, wrong)
			}
		}
	}
	ran := rep.Checked
	if p.second == "" {
		rep.Checked -= own.excused
	} else {
		rep.Checked -= sep.excused
	}
	wrong = own.finish(wrong)
	if p.second != "" && ran > 0 {
		switch {
		case second == nil || !second.started:
			wrong = append(wrong, "the sentinel-only run did not start")
			c.bad.missing = true
		case !second.finished:
			wrong = append(wrong, "the sentinel-only run did not finish")
			c.bad.missing = true
		default:
			sep.exit = second.exit
			wrong = sep.finish(wrong)
		}
	}
	sort.Strings(wrong)
	rep.Wrong = wrong
	c.skip = isSentinel
	for pkg := range own.pkgs {
		c.skip[pkg+" (package)"] = true
	}
	for pkg := range own.off {
		c.skip[pkg+" (package)"] = true
	}
	c.cur = without(cur, c.skip)
	c.expectFail = own.expectFail || own.offFailed
	c.loaded = map[string]bool{}
	for _, s := range p.list {
		if s.file == "" {
			continue
		}
		_, ran := cur.Tests[s.name]
		if prev, seen := c.loaded[s.file]; !seen || prev {
			c.loaded[s.file] = ran
		}
	}
	if len(wrong) > 0 {
		shown := wrong
		if len(shown) > 3 {
			shown = append(append([]string{}, shown[:3]...), fmt.Sprintf("and %d more", len(wrong)-3))
		}
		c.tamper = fmt.Sprintf("tampering: the test runner was talked round — %d of the judge's sentinel test(s) came out wrong: %s", len(wrong), strings.Join(shown, "; "))
		if exit != 0 {
			c.tamper += fmt.Sprintf(" (the test command exited %d)", exit)
		}
	}
	return c
}

// outcomes checks sentinels against one run's results.
type outcomes struct {
	res        *Results
	exit       int
	label      string          // "" for the command's own run
	pkgs       map[string]bool // Go packages holding a must-fail sentinel that ran
	expectFail bool
	bad        *wrongSet // where what came out wrong is noted
	// cal is what the untouched base got wrong (calibrate.go): a sentinel
	// reported here exactly as it was there is excused, not checked.
	cal       *wrongSet
	excused   int
	offFailed bool            // an excused sentinel failed: the exit is its
	off       map[string]bool // Go packages an excused sentinel failed
}

func (o *outcomes) check(s sentinel, wrong []string) []string {
	got, ok := o.res.Tests[s.name]
	if was, bad := o.cal.sentinels[runKey(o.label, s.name)]; bad && ok && got == was {
		o.excused++
		if got == Failed {
			o.offFailed = true
			if s.goPkg != "" {
				o.off[s.goPkg] = true
			}
		}
		return wrong
	}
	n := len(wrong)
	defer func() {
		switch {
		case len(wrong) == n:
		case !ok:
			o.bad.missing = true
		default:
			if o.bad.sentinels == nil {
				o.bad.sentinels = map[string]Outcome{}
			}
			o.bad.sentinels[runKey(o.label, s.name)] = got
		}
	}()
	switch {
	case s.mustFail:
		o.expectFail = true
		if s.goPkg != "" {
			o.pkgs[s.goPkg] = true
		}
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s (must fail) did not run%s", s.name, o.label))
		} else if got != Failed {
			wrong = append(wrong, fmt.Sprintf("%s (must fail) was reported %s%s", s.name, got, o.label))
		}
	case !ok:
		wrong = append(wrong, fmt.Sprintf("%s (must pass) did not run%s", s.name, o.label))
	case got != Passed:
		wrong = append(wrong, fmt.Sprintf("%s (must pass) was reported %s%s", s.name, got, o.label))
	}
	return wrong
}

// finish adds what the run as a whole got wrong: a package, or the exit
// status, that says all passed although a must-fail sentinel ran.
// What the base gets wrong as well (o.cal) is not added.
func (o *outcomes) finish(wrong []string) []string {
	cal := o.cal
	for pkg := range o.pkgs {
		if r, ok := o.res.Tests[pkg+" (package)"]; ok && r != Failed && !cal.pkgs[pkg] {
			wrong = append(wrong, fmt.Sprintf("package %s was reported %s%s although a sentinel test in it must fail", pkg, r, o.label))
			if o.bad.pkgs == nil {
				o.bad.pkgs = map[string]bool{}
			}
			o.bad.pkgs[pkg] = true
		}
	}
	if o.expectFail && o.exit == 0 {
		if o.label == "" && !cal.exit {
			wrong = append(wrong, "the test command exited 0 although a sentinel test that must fail ran")
			o.bad.exit = true
		} else if o.label != "" && !cal.sepExit {
			wrong = append(wrong, "the sentinel-only run exited 0 although a sentinel test that must fail ran")
			o.bad.sepExit = true
		}
	}
	return wrong
}

// ran says whether a sentinel's scope ran: its prefix's, or for tape (whose
// TAP names no files) one of the tests of its file.
func (s sentinel) ran(cur *Results, engaged map[string]bool) bool {
	if len(s.ranWith) == 0 {
		return engaged[s.scope]
	}
	for _, name := range s.ranWith {
		if _, ok := cur.Tests[name]; ok {
			return true
		}
	}
	return false
}

// without is r less the named tests.
func without(r *Results, skip map[string]bool) *Results {
	if r == nil || len(skip) == 0 || !r.Named {
		return r
	}
	out := &Results{Format: r.Format, Named: true, SkippedUnnamed: r.SkippedUnnamed}
	for name, o := range r.Tests {
		if !skip[name] {
			out.add(name, o)
		}
	}
	return out
}

// plantScript is the shell that plants the sentinels. It is fed to a
// shell on standard input, never in an argument list, and that shell has
// exited before the test command starts: nothing in the sandbox can read
// it back from /proc.
func (p *sentinelPlan) plantScript() string {
	if p == nil || (len(p.files) == 0 && len(p.appends) == 0) {
		return ""
	}
	var b strings.Builder
	eof := "FORKBOMB_" + randWord(upperAlpha, 16)
	write := func(op, path, content string) {
		fmt.Fprintf(&b, "cat %s %s <<'%s' || exit 125\n%s\n%s\n", op, shellQuote(path), eof, strings.TrimSuffix(content, "\n"), eof)
	}
	for _, path := range sortedKeys(p.files) {
		write(">", path, p.files[path])
	}
	for _, path := range sortedKeys(p.appends) {
		// a file not ending in a newline must not swallow the first line
		fmt.Fprintf(&b, "[ -f %s ] && [ ! -L %s ] || exit 125\n", shellQuote(path), shellQuote(path))
		write(">>", path, "\n"+p.appends[path])
	}
	if p.fixWord != "" && len(p.fixup) > 0 {
		// hex digits only: nothing sed or Python could read otherwise
		fmt.Fprintf(&b, "H=$(printf %%s \"$(readlink /proc/$$/fd/1 2>/dev/null)\" | od -An -tx1 | tr -dc 0-9a-f)\nsed -i \"s/%s/$H/\"", p.fixWord)
		for _, f := range p.fixup {
			b.WriteString(" " + shellQuote(f))
		}
		b.WriteString(" || exit 125\n")
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// Names are made of words, so a sentinel does not stand out among real
// tests by looking random.
var (
	adjectives = []string{"plain", "quiet", "round", "sharp", "early", "late", "empty", "full", "small", "large", "fresh",
		"stale", "nested", "flat", "single", "double", "mixed", "sorted", "cached", "direct", "simple", "partial", "basic", "strict"}
	nouns = []string{"input", "value", "list", "record", "entry", "range", "order", "limit", "window", "buffer", "path",
		"token", "field", "block", "chunk", "group", "table", "index", "cursor", "frame", "batch", "scope", "state", "case"}
	verbs = []string{"returns", "keeps", "handles", "accepts", "matches", "yields", "holds", "reads", "parses", "merges"}
)

const upperAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

func pick(words []string) string {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(words))))
	if err != nil {
		return words[0]
	}
	return words[n.Int64()]
}

func randWord(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = pick(strings.Split(alphabet, ""))[0]
	}
	return string(b)
}

func randInt(lo, hi int64) int64 {
	n, err := rand.Int(rand.Reader, big.NewInt(hi-lo))
	if err != nil {
		return lo
	}
	return lo + n.Int64()
}

// freshNames returns n distinct names from mk that appear nowhere in text.
func freshNames(n int, text string, mk func() string) []string {
	seen := map[string]bool{}
	var out []string
	for tries := 0; len(out) < n && tries < 1000; tries++ {
		s := mk()
		if seen[s] || strings.Contains(text, s) {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// readBase reads a regular file of the base (or of a hidden folder, which
// wins) relative to its root, bounded, with no link followed.
func readBase(tree string, hidden []string, rel string) ([]byte, bool) {
	for i := len(hidden) - 1; i >= -1; i-- {
		root := tree
		if i >= 0 {
			root = hidden[i]
		}
		if data, ok := readRegular(root, rel, 1<<20); ok {
			return data, true
		}
	}
	return nil, false
}

func readRegular(root, rel string, max int64) ([]byte, bool) {
	d, err := layerfs.Open(root)
	if err != nil {
		return nil, false
	}
	defer d.Close()
	data, _, err := d.ReadFile(rel, max)
	return data, err == nil
}

// listBase lists the regular files of the base and the hidden folders
// below dir whose names match keep, skipping dependency and VCS folders.
func listBase(tree string, hidden []string, keep func(rel string) bool, max int) []string {
	seen := map[string]bool{}
	var out []string
	for _, root := range append([]string{tree}, hidden...) {
		filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || len(out) >= max {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if e.IsDir() {
				switch e.Name() {
				case ".git", "node_modules", "vendor", "__pycache__", ".venv", "venv", "testdata":
					return filepath.SkipDir
				}
				return nil
			}
			if e.Type().IsRegular() && keep(rel) && !seen[rel] {
				seen[rel] = true
				out = append(out, rel)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// quietWindow is how much of a run's end quiet reads: the output tail is
// 4 KiB, and sentinels rarely print more than this around it.
const quietWindow = 256 << 10

// quiet returns the end of a run's output without the lines that name a
// sentinel or a planted file: a person reading why a patch failed needs
// the real tests' lines, and a few dozen sentinels' output would push
// them out of the tail.
func (p *sentinelPlan) quiet(out string) string {
	if p == nil || len(p.list) == 0 {
		return out
	}
	var marks []string
	for _, s := range p.list {
		n := s.name
		if i := strings.LastIndexAny(n, ".:/"); i >= 0 && i+1 < len(n) {
			n = n[i+1:]
		}
		marks = append(marks, n)
	}
	for f := range p.files {
		marks = append(marks, filepath.Base(f))
	}
	if len(out) > quietWindow {
		out = out[len(out)-quietWindow:]
	}
	var b strings.Builder
	for line := range strings.Lines(out) {
		keep := true
		for _, m := range marks {
			if strings.Contains(line, m) {
				keep = false
				break
			}
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}
