package judge

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// tape sentinels are tests appended to each tape test file whose tests
// the baseline ran, registered through the tape module object that file
// uses (its own top-level `require('tape')` or `import … from 'tape'`
// binding where it has one) and asserting with the Test methods that file
// calls, at the top level and, where the file nests tests, as subtests.
// tape runs every file of a command in one process, so whatever the code
// under test did to tape at import or at run time — a replaced _assert or
// assertion method, a wrapped process.stdout.write, a rerun whose TAP is
// rewritten, an exit handler forcing 0 — reaches them too.
//
// tape's TAP names tests, not files: a file's sentinels are checked when
// one of that file's own tests — a baseline test whose name is a string
// literal of that file and of no other — appears in the run, so a file the
// command does not run is never held against a patch. A file none of whose
// baseline tests can be told apart gets none.

var (
	tapeRequireRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\brequire\(\s*['"]tape['"]\s*\)|\bfrom\s+['"]tape['"]|\bimport\(\s*['"]tape['"]\s*\)`)
	})
	tapeCJSBindRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^(?:var|let|const)\s+([A-Za-z_$][\w$]*)\s*=\s*require\(\s*['"]tape['"]\s*\)\s*;?\s*$`)
	})
	tapeESMBindRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^import\s+([A-Za-z_$][\w$]*)\s+from\s+['"]tape['"]\s*;?\s*$`)
	})
	tapeESMSyntax = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^(?:import\s|export\s)`) })
	tapeOnlyRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.only\s*\(`) })
	tapeReturnRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^(?:return\b|if\s*\(.*\)\s*\{?\s*return\b)`) })
	tapeMethodRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([A-Za-z_$][\w$]*)\.([a-zA-Z]+)\(`) })
	tapeObjRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([A-Za-z_$][\w$]*)\.(?:end\(\s*\)|plan\(|test\()`) })
	shellSepRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`&&|\|\||;|\|`) })
	tapeSubtestRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[A-Za-z_$][\w$]*\.test\(\s*['"\x60]`) })
	jsStringRE    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("'((?:[^'\\\\\\n]|\\\\.)*)'|\"((?:[^\"\\\\\\n]|\\\\.)*)\"|`([^`\\\\$]*)`")
	})
	jsFileRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.(c|m)?js$`) })
	// a base that wraps an emitter's emit or on itself (instrumentation:
	// an assignment to .emit or .on, or 'emit' named for a wrapper such as
	// shimmer's)
	tapeEmitRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("\\.(emit|on|addListener|prependListener)\\s*=[^=]|['\"`](emit|addListener|prependListener)['\"`]")
	})
)

// tapeAsserts are a must-pass and a must-fail call of each Test method a
// sentinel may use; %[1]s is the test object, %[2]d and %[3]d two
// distinct numbers. Aliases are separate properties of Test.prototype, so
// each is exercised under the name the file uses.
var tapeAsserts = map[string][2]string{}

func init() {
	for _, group := range []struct {
		names      []string
		pass, fail string
	}{
		{[]string{"equal", "equals", "isEqual", "strictEqual", "strictEquals", "is"},
			"%[1]s.%[4]s(%[2]d * 2, %[2]d + %[2]d)", "%[1]s.%[4]s(%[2]d * 2, %[3]d)"},
		{[]string{"notEqual", "notEquals", "isNotEqual", "doesNotEqual", "isInequal", "notStrictEqual", "notStrictEquals", "isNot", "not"},
			"%[1]s.%[4]s(%[2]d, %[3]d)", "%[1]s.%[4]s(%[2]d, %[2]d)"},
		{[]string{"deepEqual", "deepEquals", "isEquivalent", "same", "deepLooseEqual", "looseEqual", "looseEquals"},
			"%[1]s.%[4]s([%[2]d], [%[2]d])", "%[1]s.%[4]s([%[2]d], [%[3]d])"},
		{[]string{"notDeepEqual", "notDeepEquals", "notEquivalent", "notDeeply", "notSame", "isNotDeepEqual", "isNotEquivalent", "isInequivalent", "notDeepLooseEqual", "notLooseEqual"},
			"%[1]s.%[4]s([%[2]d], [%[3]d])", "%[1]s.%[4]s([%[2]d], [%[2]d])"},
		{[]string{"ok", "true", "assert"}, "%[1]s.%[4]s(%[2]d < %[3]d)", "%[1]s.%[4]s(%[3]d < %[2]d)"},
		{[]string{"notOk", "false", "notok"}, "%[1]s.%[4]s(%[3]d < %[2]d)", "%[1]s.%[4]s(%[2]d < %[3]d)"},
		{[]string{"throws"}, "%[1]s.%[4]s(function () { throw new RangeError('v%[2]d'); })", "%[1]s.%[4]s(function () { return %[2]d; })"},
		{[]string{"doesNotThrow"}, "%[1]s.%[4]s(function () { return %[2]d; })", "%[1]s.%[4]s(function () { throw new RangeError('v%[2]d'); })"},
		{[]string{"match"}, "%[1]s.%[4]s('v%[2]d', /v%[2]d/)", "%[1]s.%[4]s('v%[2]d', /w%[3]d/)"},
		{[]string{"error", "ifError", "ifErr", "iferror"}, "%[1]s.%[4]s(null)", "%[1]s.%[4]s(new RangeError('v%[2]d'))"},
	} {
		for _, n := range group.names {
			tapeAsserts[n] = [2]string{group.pass, group.fail}
		}
	}
}

func planTape(tree string, hidden []string, cmd string, base *Results) *sentinelPlan {
	p := &sentinelPlan{runner: "tape", appends: map[string]string{}}
	runner := npmScript(tree, hidden, cmd)
	globs, named := tapeGlobs(runner)
	files := listBase(tree, hidden, func(rel string) bool {
		if !jsFileRE().MatchString(rel) {
			return false
		}
		for _, g := range globs {
			if g.MatchString(rel) {
				return true
			}
		}
		return !named
	}, 500)
	texts := map[string]string{}
	for _, f := range files {
		if data, ok := readBase(tree, hidden, f); ok && tapeRequireRE().Match(data) {
			texts[f] = string(data)
			if tapeOnlyRE().Match(data) {
				p.note = "no sentinel tests were placed: " + f + " calls .only(), which would keep tape from running them"
				return p
			}
		}
	}
	// The events check (tapeOrigin) would fail every patch of a base whose
	// own code wraps emit: such a base does not get it.
	wraps := ""
	for _, f := range listBase(tree, hidden, func(rel string) bool { return jsFileRE().MatchString(rel) && texts[rel] == "" }, 3000) {
		if data, ok := readBase(tree, hidden, f); ok && tapeEmitRE().Match(data) {
			wraps = f
			break
		}
	}
	scopes := tapeScopes(texts, base)
	mustFail := !failsFast(runner)
	var taken strings.Builder // every name so far, so no two files share one
	for name := range base.Tests {
		taken.WriteString(name + "\n")
	}
	for _, f := range sortedKeys(texts) {
		// code appended after a top-level return (CommonJS) would not run
		if len(scopes[f]) == 0 || tapeReturnRE().MatchString(texts[f]) {
			continue
		}
		src, list := tapeSource(f, texts[f], esmFile(tree, hidden, f), mustFail, wraps == "", &taken)
		if len(list) == 0 {
			continue
		}
		for i := range list {
			list[i].ranWith = scopes[f]
		}
		p.list = append(p.list, list...)
		p.appends[f] = src
	}
	if len(p.list) == 0 {
		p.note = "no sentinel tests were placed: no tape test file holds a test of the baseline by a name of its own"
		return p
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure"
	}
	if wraps != "" {
		p.note = strings.TrimPrefix(p.note+"; the sentinels do not check the path of tape's events: "+wraps+" wraps an emitter's emit", "; ")
	}
	return p
}

// tapeScopes gives each file the baseline tests (not skipped) whose name is
// a string literal of that file and of no other: when one of them runs,
// the file ran.
func tapeScopes(texts map[string]string, base *Results) map[string][]string {
	out := map[string][]string{}
	for f, lits := range ownLiterals(texts) {
		var names []string
		for s := range lits {
			if o, ok := base.Tests[s]; ok && o != Skipped {
				names = append(names, s)
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			out[f] = names
		}
	}
	return out
}

// tapeOrigin is the must-pass test that checks the path of the test
// object's events (tape reports each assertion's result as an event): an
// event fired at the test object, and a "result" fired at a new emitter
// of its class's parent (node's EventEmitter), each at a listener that
// throws, must pass through nothing but node's own code (or a
// dependency's, in node_modules/, which no patch changes) on its way, so
// an emit wrapped to forgive failures — all of them, or only those right
// after the code under test ran — shows, and so does a "result" listener
// wrapped as it is added. %[1]s is the tape binding, %[2]q the test's
// name, %[3]s its Test object, %[4]s the file's own name as its frames
// give it ("null" leaves them unread), %[5]q the event, %[6]s jsFrames.
const tapeOrigin = `%[1]s(%[2]q, function (%[3]s) {
  var self = %[4]s, ev = %[5]q;
%[6]s
  var through = function (target, kind, payload) {
    var listener = function () { throw new RangeError(ev); };
    target.on(kind, listener);
    var got = frames(function () { target.emit(kind, payload); });
    target.removeListener(kind, listener);
    if (!got.err || got.err.message !== ev) return 'the ' + kind + ' event did not reach its listener';
    if (self === null) return '';
    if (got.head === undefined) return 'the stack of the ' + kind + ' event could not be read';
    var n = got.head;
    while (n !== null && n.file !== self) n = n.next;
    if (n === null) return 'the ' + kind + ' event did not run from this test';
    for (n = n.next; n !== null && n.file !== self; n = n.next) {
      if (n.ev || !(isNode(n.file) || holds(n.file, '/node_modules/'))) return 'the ' + kind + ' event ran code outside node: ' + n.text;
    }
    return n === null ? 'the ' + kind + ' event did not run from this test' : '';
  };
  var Emitter = Object.getPrototypeOf(Object.getPrototypeOf(%[3]s)).constructor;
  var problem = through(%[3]s, ev, undefined) || through(new Emitter(), 'result', { ok: false, name: ev });
  %[3]s.ok(problem === '', problem || 'the events are node\'s');
  %[3]s.end();
});
`

// tapeSource is the code appended to one test file, and its sentinels.
func tapeSource(file, text string, esm, mustFail, events bool, taken *strings.Builder) (string, []sentinel) {
	ids := freshNames(4, text, func() string { return pick(nouns) + title(pick(adjectives)) + title(pick(nouns)) })
	if len(ids) < 4 {
		return "", nil
	}
	tape, t, st := ids[0], ids[1], ids[2]
	var src strings.Builder
	module := ""
	if m := tapeCJSBindRE().FindStringSubmatch(text); m != nil {
		module = m[1]
	} else if m := tapeESMBindRE().FindStringSubmatch(text); m != nil {
		module = m[1]
	}
	switch {
	case module != "":
	case esm || tapeESMSyntax().MatchString(text):
		module = ids[3]
		fmt.Fprintf(&src, "\nimport %s from 'tape';\n", module)
	default:
		module = "require('tape')"
	}
	fmt.Fprintf(&src, "\n;(function () {\nvar %s = %s;\n", tape, module)
	// the methods the file calls on its Test objects: the names it calls
	// end(), plan() or test() on
	objs := map[string]bool{}
	for _, m := range tapeObjRE().FindAllStringSubmatch(text, -1) {
		objs[m[1]] = true
	}
	used := map[string]bool{"equal": true, "ok": true}
	for _, m := range tapeMethodRE().FindAllStringSubmatch(text, -1) {
		if _, ok := tapeAsserts[m[2]]; ok && objs[m[1]] {
			used[m[2]] = true
		}
	}
	var methods []string
	for m := range used {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	a, b := randInt(3, 90), randInt(200, 900) // b > 2a always: a must-fail "a*2 == b" can never hold
	var list []sentinel
	fresh := func() string {
		name := freshNames(1, text+taken.String(), func() string {
			return pick(adjectives) + " " + pick(nouns) + " " + pick(verbs) + " " + pick(nouns)
		})
		if len(name) == 0 {
			return ""
		}
		taken.WriteString(name[0] + "\n")
		return name[0]
	}
	// one test per assertion: tape fails a test when any assertion in it does
	each := func(emit func(name string, call func(obj string) string)) {
		for _, fn := range methods {
			for i, fail := range []bool{false, true} {
				if fail && !mustFail {
					continue
				}
				if name := fresh(); name != "" {
					list = append(list, sentinel{name: name, mustFail: fail})
					emit(name, func(obj string) string { return fmt.Sprintf(tapeAsserts[fn][i], obj, a, b, fn) })
				}
			}
		}
	}
	each(func(name string, call func(string) string) {
		fmt.Fprintf(&src, "%s(%q, function (%s) { %s; %s.end(); });\n", tape, name, t, call(t), t)
	})
	if name := fresh(); events && name != "" {
		self := "__filename"
		if esm || tapeESMSyntax().MatchString(text) {
			self = "import.meta.url"
		}
		if strings.Contains(text, "sourceMappingURL") {
			self = "null"
		}
		list = append(list, sentinel{name: name})
		fmt.Fprintf(&src, tapeOrigin, tape, name, t, self, pick(nouns)+title(pick(adjectives))+title(pick(nouns)), jsFrames)
	}
	if tapeSubtestRE().MatchString(text) {
		// the parent has no assertion of its own: tape reports only its subtests
		if parent := fresh(); parent != "" {
			fmt.Fprintf(&src, "%s(%q, function (%s) {\n", tape, parent, t)
			each(func(name string, call func(string) string) {
				fmt.Fprintf(&src, "  %s.test(%q, function (%s) { %s; %s.end(); });\n", t, name, st, call(st), st)
			})
			fmt.Fprintf(&src, "  %s.end();\n});\n", t)
		}
	}
	src.WriteString("}());\n")
	return src.String(), list
}

// esmFile says whether node loads a .js file as an ES module: by its
// extension, else by the "type" of the nearest package.json.
func esmFile(tree string, hidden []string, file string) bool {
	switch path.Ext(file) {
	case ".mjs":
		return true
	case ".cjs":
		return false
	}
	return nearestPackageType(tree, hidden, file) == "module"
}

// nearestPackageType is the "type" of the package.json nearest to file
// ("" when it sets none, or there is none), as node reads it.
func nearestPackageType(tree string, hidden []string, file string) string {
	for d := path.Dir(file); ; d = path.Dir(d) {
		if data, ok := readBase(tree, hidden, path.Join(d, "package.json")); ok {
			var pkg struct{ Type string }
			json.Unmarshal(data, &pkg)
			return pkg.Type
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// npmScript follows `npm test` and `npm run NAME` (a few levels deep) to
// the command package.json gives for them.
func npmScript(tree string, hidden []string, cmd string) string {
	var pkg struct{ Scripts map[string]string }
	data, _ := readBase(tree, hidden, "package.json")
	json.Unmarshal(data, &pkg)
	for range 4 {
		var parts []string
		changed := false
		for _, seg := range shellSegments(cmd) {
			f := strings.Fields(seg)
			var args []string
			for _, a := range f {
				if !strings.HasPrefix(a, "-") {
					args = append(args, a)
				}
			}
			script := ""
			switch {
			case len(args) >= 2 && args[0] == "npm" && (args[1] == "test" || args[1] == "t" || args[1] == "tst"):
				script = "test"
			case len(args) >= 3 && args[0] == "npm" && (args[1] == "run" || args[1] == "run-script"):
				script = args[2]
			}
			if s, ok := pkg.Scripts[script]; ok && script != "" {
				seg, changed = s, true
			}
			parts = append(parts, seg)
		}
		cmd = strings.Join(parts, " && ")
		if !changed {
			break
		}
	}
	return cmd
}

// shellSegments cuts a command line at &&, ||, ; and |.
func shellSegments(cmd string) []string {
	return shellSepRE().Split(cmd, -1)
}

// tapeGlobs reads the files a tape command names: the arguments of each
// tape invocation (`tape …`, `node node_modules/tape/bin/tape …`, through
// npx, nyc or c8) as globs, `**` matching any depth whether or not a shell
// expanded it first. named is false when no tape invocation was found
// (e.g. `node test/index.js`): any tape test file may then run.
func tapeGlobs(cmd string) (globs []*regexp.Regexp, named bool) {
	for _, seg := range shellSegments(cmd) {
		f := shellWords(seg)
		at := -1
		for i, w := range f {
			if path.Base(w) == "tape" {
				at = i
				break
			}
		}
		if at < 0 {
			continue
		}
		named = true
		for i := at + 1; i < len(f); i++ {
			a := f[i]
			switch {
			case a == "-r" || a == "--require" || a == "-i" || a == "--ignore" || a == "--ignore-pattern":
				i++
			case strings.HasPrefix(a, "-"), strings.Contains(a, "="):
			default:
				globs = append(globs, globRE(strings.TrimPrefix(a, "./")))
			}
		}
	}
	return globs, named
}

// shellWords splits a command into words, honouring simple quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// globRE turns a glob into a regexp over slash paths: `**/` any folders,
// `*` and `?` within one name, `{a,b}` alternatives, a folder everything
// under it.
func globRE(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '{':
			b.WriteString("(?:")
			depth++
		case c == '}' && depth > 0:
			b.WriteString(")")
			depth--
		case c == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	for ; depth > 0; depth-- {
		b.WriteString(")")
	}
	b.WriteString("(?:/.*)?$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(".*")
	}
	return re
}
