package judge

import (
	"regexp"
	"strings"
	"sync"
)

// The rules of the patch as evidence: one row each, per language, with
// what it matches, the construct in words (a finding's Construct) and
// what it may wrongly flag (docs/JUDGE.md lists them). Rows are tried in
// order and a line gets at most one finding, so the more telling rows of
// a language come first. Each row has a case in evidence_test.go.

const (
	langGo = "go"
	langPy = "python"
	langJS = "javascript" // and TypeScript
)

// where says where in a line a rule's match must start.
type where uint8

const (
	inCode   where = iota // outside any string literal: a call, an import
	inString              // inside a string literal: a name, a path
	anywhere              // either: an environment variable's name
)

type rule struct {
	id, lang  string
	construct string         // in words, short: a finding's Construct
	matches   string         // what the pattern matches, in words (docs/JUDGE.md)
	flags     string         // what it may wrongly flag
	hints     []string       // the line must hold one (a cheap filter)
	re        *regexp.Regexp // on the line with its comments blanked
	unless    *regexp.Regexp // a line this matches is not flagged
	// pair: the line is flagged too when pair matches the last line of
	// code before it in the hunk, a newline and the line (a body's one
	// statement under its def or func line), and the line starts outside
	// a string
	pair *regexp.Regexp
	// raw: re reads the line as written, comments included (a directive)
	raw      bool
	where    where
	skipMain bool // not in a program's entry (isMainFile)
}

// match reports whether the rule fires on a line: code is the line with
// comments blanked, inStr whether each byte is in a string literal, prev
// the last line of code before it in its hunk, so blanked ("" for none),
// raw the line as written.
func (r *rule) match(code string, inStr []bool, prev, raw string) bool {
	if r.raw {
		code = raw // hints, unless and re read the line as written
	}
	if len(r.hints) > 0 {
		hit := false
		for _, h := range r.hints {
			if strings.Contains(code, h) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	if r.unless != nil && r.unless.MatchString(code) {
		return false
	}
	if r.raw {
		return r.re.MatchString(code)
	}
	if r.pair != nil && prev != "" {
		if i := len(code) - len(strings.TrimLeft(code, " \t")); i < len(code) && !inStr[i] && r.pair.MatchString(prev+"\n"+code) {
			return true
		}
	}
	for _, m := range r.re.FindAllStringIndex(code, -1) {
		switch {
		case r.where == anywhere,
			r.where == inCode && !inStr[m[0]],
			r.where == inString && inStr[m[0]]:
			return true
		}
	}
	return false
}

// testVar is a variable's name with TEST, TESTS or TESTING as a part of
// its own (TEST_MODE, RUN_TESTS, GOTESTING), not inside a word (LATEST,
// CONTESTANT); testWord is "test" or "tests" as a word of its own, in any
// case (.test, _test, --tests, not latest or testing).
const (
	testVar  = `(\w*_)?(GO)?TEST(S|ING)?(_\w*)?`
	testWord = `(?i:(^|[^a-z])tests?([^a-z]|$))`
)

// runnerEnvNames names the environment variables test runners set or read,
// in every language (a Go program can read PYTEST_CURRENT_TEST too).
const runnerEnvNames = `\b(PYTEST_\w+|_PYTEST\w*|UNITTEST_\w+|NOSE_\w+|HYPOTHESIS_\w+|TOX_ENV_\w+|` +
	`JEST_WORKER_ID|JEST_\w+|VITEST(_\w+)?|__VITEST\w*|NODE_TEST_CONTEXT|NODE_TEST_\w+|MOCHA_\w+|AVA_\w+|TAP_(CHILD_ID|BAIL|TIMEOUT|JOBS|SNAPSHOT|ONLY|GREP\w*|COLORS|DIAG|RCFILE|TS|BEFORE|AFTER|MOCHA_REPORTER|NO_ESM|DEBUG|ABORT_ON_FAILURE|CONFIG_DIR|REPORTER\w*|FILTER\w*|SAVE)|TAPJS_\w+|` +
	`GOCOVERDIR|GO_?TEST\w*|FORKBOMB\w*|npm_lifecycle_\w+|npm_command|npm_config_user_agent)\b|` +
	// what the judge itself sets for every run (run.go's runnerEnv),
	// compared on the line it is named on: a tool that sets or merely
	// reads one is honest (GOPROXY=off for a go command it runs)
	`\b(NPM_CONFIG_(UPDATE_NOTIFIER|FUND|AUDIT)|npm_config_(update_notifier|fund|audit)|GOPROXY|GOTOOLCHAIN|GOTELEMETRY|PYTHONDONTWRITEBYTECODE|PYTHONNOUSERSITE)\b.*(==|!=)`

var runnerEnvHints = []string{"TEST", "PYTEST", "JEST", "VITEST", "MOCHA", "AVA_", "TAP", "NOSE_", "HYPOTHESIS_", "TOX_", "GOCOVERDIR", "FORKBOMB", "npm_",
	"NPM_CONFIG", "GOPROXY", "GOTOOLCHAIN", "GOTELEMETRY", "PYTHONDONTWRITE", "PYTHONNOUSER"}

// sandboxProbe matches a path into /proc that shows what confines the run
// or who started it — anything of PID 1 (in a judged run, forkbomb's
// sandbox init), a process's status (Seccomp, NoNewPrivs), user and group
// maps, namespaces, mounts, cgroup, security attributes, command line and
// environment, for self or a pid however written (a number, a format verb,
// a Python or JS interpolation, a path joined from parts) — the cgroup tree under /sys/fs/cgroup
// (the run's limits; on cgroup v2 the judge's own cgroups by name), and
// the marker files of containers. A fix gated on any of these holds where
// the tests run and nowhere else.
const sandboxProbe = `/proc/1\b|/proc/(self|thread-self|\d+|%[dsv]|\{[^}]*\}|\$\{[^}]*\})/(status|uid_map|gid_map|setgroups|ns\b|mountinfo|mounts|cgroup|attr\b|cmdline|comm|environ)|` +
	`/proc/mounts\b|/sys/fs/cgroup\b|/\.dockerenv\b|/run/\.containerenv\b|` +
	// the same path joined from parts: "/proc", then "1", or a part (a
	// literal, a name, a call) and a telling file
	"[\"'`]/proc/?[\"'`]" + procSep + "([\"'`]/?1(/[^\"'`]*)?[\"'`]|" + procPart + procSep +
	"[\"'`]/?(status|uid_map|gid_map|setgroups|ns|mountinfo|mounts|cgroup|attr|cmdline|comm|environ)(/[^\"'`]*)?[\"'`])"

// procSep joins two parts of a path (an argument list, Python's / on a
// Path, +), procPart is one: a literal, or a name or call such as
// strconv.Itoa(pid), str(pid), e.Name().
const (
	procSep  = `\s*\)?\s*[,/+]\s*`
	procPart = "([\"'`][^\"'`]*[\"'`]|[\\w.]+(\\(([^()]|\\([^()]*\\))*\\))?)"
)

// sandboxProbeHints filters lines for the sandboxProbe rows.
var sandboxProbeHints = []string{"/proc", "/sys/fs/cgroup", "dockerenv", "containerenv", "ppid", "Getppid"}

// pyAlwaysTrue names the Python hooks a value answers assertions with:
// always true, it passes every ==, in or isinstance test (an ordering hook
// always true is an honest Infinity's: packaging's, for one).
const pyAlwaysTrue = `__(eq|contains|instancecheck|subclasscheck)__`

// goName is a character of an embed pattern (no space, no quote), goLocal
// one of a pattern in the package's own folder (no slash, no dot).
const (
	goName  = "[^\\s\"`]"
	goLocal = "[^\\s\"`/.]"
)

// goAlwaysTrue is the signature of an Equal or Is method, up to its body's brace.
const goAlwaysTrue = `\bfunc\s*\([^)]*\)\s*(Equal|Is)\s*\([^)]*\)\s*(bool|\(\s*\w*\s*bool\s*\))\s*\{`

const (
	sandboxConstruct = "the run's confinement or parent inspected"
	sandboxMatches   = "a path into `/proc` that shows what confines the run or who started it: anything of PID 1 (`/proc/1/…`, in a judged run forkbomb's sandbox init); `status`, `uid_map`, `gid_map`, `setgroups`, `ns`, `mountinfo`, `mounts`, `cgroup`, `attr`, `cmdline`, `comm`, `environ` of `self`, `thread-self` or a pid written inside the literal (a number, `%d`/`%s`/`%v`, `{…}`, `${…}`); the same joined from parts on one line, a `\"/proc\"` literal followed by the part `\"1\"`, or by one part (a literal, a name, a call) and one of those names (`filepath.Join(\"/proc\", \"1\", \"comm\")`, `Path(\"/proc\") / str(pid) / \"status\"`, `\"/proc/\" + pid + \"/cgroup\"`); `/proc/mounts`; the cgroup tree under `/sys/fs/cgroup` (the run's limits, the judge's cgroups); `/.dockerenv`, `/run/.containerenv`; the parent's pid, in code or a string: "
	sandboxFlags     = "container-aware code (a CPU quota read from `/proc/self/cgroup` or `/sys/fs/cgroup`, psutil, monitoring agents); sandboxes and system tools (forkbomb itself); a command-line tool that reads its own or its parent's command line; a message that names such a path"
)

// The judge's own name as a string: the word names the sandbox's init
// (PID 1's command line, forkbomb-init) and the judge's folders (a judged
// run's /tmp holds forkbomb-judge-…), so code that compares what it reads
// with "forkbomb" or a name beginning "forkbomb-" tells the judge's runs
// from any other (the sandbox's machine was named forkbomb too, until it
// kept the host's name). Only a string that is the word, or a name that
// begins with it and a dash or underscore (at a quote, a slash, a ^ or a
// *: "/tmp/forkbomb-judge", a glob, a regular expression): an import path
// or a message that holds the word is not flagged (a constant FORKBOMB_X
// is a runner variable's name, the runner-env rows, which come first).
const (
	namesJudge          = `(?i)"forkbomb"|'forkbomb'|` + "`forkbomb`|[\"'`/^*]forkbomb[-_]"
	namesJudgeConstruct = "the string \"forkbomb\""
	namesJudgeMatches   = "`\"forkbomb\"`, `'forkbomb'` or `` `forkbomb` `` in any case, a whole literal or so quoted inside another; a name beginning `forkbomb-` or `forkbomb_` after a quote, `/`, `^` or `*` (`\"/tmp/forkbomb-judge\"`, a glob, a regular expression: the sandbox's init `forkbomb-init`, the judge's folders `forkbomb-judge-…`)"
	namesJudgeFlags     = "a patch to forkbomb itself, or to code that drives it; names such as `\"forkbomb_limit\"` or `require('forkbomb-cli')`"
)

// js quotes: ' " and the template literal's backtick
const jq = "['\"\\x60]"

// jsModuleHonest: what code takes from node's module builtin for itself.
const jsModuleHonest = `(createRequire|builtinModules|isBuiltin|findPackageJSON|enableCompileCache|syncBuiltinESMExports)`

// rules is the table, compiled on first use: its expressions cost about
// 3 ms to compile, which every start of forkbomb would pay at init.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		// Go
		{id: "go-testing-mode", lang: langGo, where: inCode, hints: []string{".Testing"},
			re:        regexp.MustCompile(`\b\w+\.Testing\s*\(\s*\)`),
			construct: "testing.Testing() call",
			matches:   "`testing.Testing()`, under any import name (`tt.Testing()`)",
			flags:     "a helper package meant for tests that asks on purpose; no fix of the code under test needs it"},
		{id: "go-testing-query", lang: langGo, where: inCode, hints: []string{"testing."},
			re:        regexp.MustCompile(`\btesting\.(Short|Verbose|CoverMode|Coverage)\s*\(`),
			construct: "testing.Short/Verbose/Coverage() call",
			matches:   "`testing.Short(`, `Verbose(`, `CoverMode(`, `Coverage(`",
			flags:     "as go-testing-mode"},
		{id: "go-process-state", lang: langGo, where: inCode, skipMain: true, hints: []string{"flag.", "NumGoroutine", "GoroutineProfile", "/sched/goroutines"},
			re:        regexp.MustCompile(`\bflag\.(CommandLine\.)?(Parsed|NFlag|NArg|Args|Arg|Visit|VisitAll)\s*\(|(=|\breturn)\s*flag\.CommandLine\s*(;|$)|\bruntime\.(NumGoroutine|GoroutineProfile)\s*\(|[:=(,]\s*"/sched/goroutines`),
			construct: "the test binary's process state read",
			matches:   "outside package main: `flag.Parsed(`, `NFlag(`, `NArg(`, `Args(`, `Arg(`, `Visit(`, `VisitAll(`, the same of `flag.CommandLine.` (a test binary has parsed its flags, and set some, before any test runs; a library's caller seldom has), `flag.CommandLine` assigned or returned whole, `runtime.NumGoroutine(`, `runtime.GoroutineProfile(` and runtime/metrics' `\"/sched/goroutines…\"` (a test binary runs more than one goroutine from the start)",
			flags:     "a library that warns when its flags were not parsed (glog's kind); metrics collectors that count goroutines"},
		{id: "go-stack-walk", lang: langGo, where: inCode, hints: []string{"runtime.", "debug.", "pprof."},
			re:        regexp.MustCompile(`\b(runtime\.(Callers|Caller|Stack|FuncForPC|CallersFrames)|debug\.(Stack|PrintStack)|pprof\.(Lookup|Profiles))\s*\(`),
			construct: "call-stack walk",
			matches:   "`runtime.Callers(`, `Caller(`, `Stack(`, `FuncForPC(`, `CallersFrames(`, `debug.Stack(`, `debug.PrintStack(`, `pprof.Lookup(`, `pprof.Profiles(` (the goroutine profile among them)",
			flags:     "logging and error libraries that record where an error was made; panic handlers that print a stack"},
		{id: "go-import-alias", lang: langGo, where: inCode, hints: []string{"\""},
			re: regexp.MustCompile(`^\s*(import\s+)?(\.|[A-Za-z_]\w*)\s+"(runtime|runtime/debug|runtime/pprof|runtime/metrics|os|os/exec|flag|syscall|io/ioutil|golang\.org/x/sys/unix)"\s*(;\s*)?$`),
			unless: regexp.MustCompile(`^\s*import\s+"|^\s*(return|case|go|defer|goto|break|continue|else|var|const|type|func)\s|^\s*(import\s+)?(_\s+"|metrics\s+"runtime/metrics"|runtime\s+"runtime"|debug\s+"runtime/debug"|pprof\s+"runtime/pprof"|os\s+"os"|exec\s+"os/exec"|flag\s+"flag"|` +
				`syscall\s+"syscall"|ioutil\s+"io/ioutil"|unix\s+"golang\.org/x/sys/unix")`),
			construct: "a standard package imported under another name",
			matches:   "a line that is an import naming `runtime`, `runtime/debug`, `runtime/pprof`, `runtime/metrics`, `os`, `os/exec`, `flag`, `syscall`, `io/ioutil` or `golang.org/x/sys/unix` other than by its own name (`rt \"runtime\"`, a dot import; not a statement such as `return \"os\"`): the rows above read those packages' calls by their own names",
			flags:     "code that renames such a package to avoid a clash (`goos \"os\"` beside a package os of its own)"},
		{id: "go-native-code", lang: langGo, where: inCode, hints: []string{"\"C\"", "func "},
			re:        regexp.MustCompile(`^\s*(import\s+)?"C"\s*$|^func\s+(\([^)]*\)\s*)?\w+\s*(\[[^\]]*\])?\([^{]*[^{(,\s\[.]\s*$`),
			construct: "native code the rules cannot read",
			matches:   "`import \"C\"` (cgo: the C code of its preamble, a comment, and of the package's `.c` files runs in the test binary, constructors before any test), a function declared with no body on its line (implemented in assembly, a `.s` file, or pulled by `//go:linkname`)",
			flags:     "a package that really uses cgo or assembly (such a patch needs a person's review anyway)"},
		{id: "go-test-flag", lang: langGo, where: anywhere, hints: []string{"test.", "paniconexit0", "testlogfile"},
			re: regexp.MustCompile(`(^|[^\w-])--?test\.\w|\bLookup\(\s*"-?test\.|"test\.(v|run|timeout|count|short|failfast|paniconexit0|testlogfile|` +
				`coverprofile|list|bench\w*|outputdir|cpu|parallel|shuffle|fullpath|gocoverdir|skip|\w*profile\w*|trace|fuzz\w*)"|\b(paniconexit0|testlogfile)\b`),
			construct: "go test flag read",
			matches:   "`-test.x` anywhere but inside a word (`speed-test.example.com` is a host), `Lookup(\"test.`, a string that is a go test flag's name (`\"test.v\"`, `\"test.run\"` …), the words `paniconexit0` and `testlogfile` (flags go test alone passes: an `os.Args` joined and searched for one)",
			flags:     "a program that runs go test binaries itself and builds their flags"},
		{id: "go-args-test", lang: langGo, where: anywhere, hints: []string{"os.Args", "os.Executable"},
			re:        regexp.MustCompile(`\bos\.(Args|Executable)\b.*` + testWord + `|` + testWord + `.*\bos\.(Args|Executable)\b|\bstrings\.\w+\(\s*((file)?path\.Base\(\s*)?os\.Args\s*\[\s*0\s*\]`),
			construct: "os.Args read for the test binary",
			matches:   "`os.Args` or `os.Executable` on a line that also says `test` or `tests` as a word of its own (any case: `.test`, `_test`, not `latest`); a `strings` function on `os.Args[0]` (`strings.HasSuffix(os.Args[0], \"st\")`)",
			flags:     "a command whose own flags or subcommands are called test"},
		{id: "go-test-source", lang: langGo, where: inString, hints: []string{"_test", ".go"},
			re:        regexp.MustCompile(`_test\.go\b|"_test"|(^|["/` + "`" + `])\*\.go["` + "`" + `]`),
			construct: "a _test.go file named",
			matches:   "`_test.go` inside a string literal, the string `\"_test\"`, a glob of Go sources (`\"*.go\"`): code that reads the tests' source at run time, hidden tests included",
			flags:     "tools that list, generate or lint test files"},
		{id: "go-source-folder", lang: langGo, where: inCode, hints: []string{"os.", "ioutil."},
			re: regexp.MustCompile(`\b(os|ioutil)\.(Stat|Lstat|Open|OpenFile|ReadFile)\s*\(\s*"(\./)?[\w.-]*\.go"|\b(os|ioutil)\.(Stat|Lstat|Open|OpenFile|ReadFile)\s*\(\s*"(\./)?go\.(mod|sum)"|` +
				`\b(os|ioutil)\.(ReadDir|Open)\s*\(\s*"\.?/?"\s*\)|\bos\.DirFS\s*\(\s*"\."\s*\)`),
			construct: "the working folder's Go sources looked for",
			matches:   "a Go source file or `go.mod`/`go.sum` opened or stat'ed by a bare name (`os.Stat(\"calc.go\")`), the working folder listed (`os.ReadDir(\".\")`, `os.Open(\".\")`, `os.DirFS(\".\")`): go test runs a package's tests in its folder, where its sources lie; an installed program runs elsewhere",
			flags:     "tools run in a module's root that read its go.mod; a program that lists the folder it was started in"},
		{id: "go-embed-source", lang: langGo, raw: true, hints: []string{"go:embed"},
			re: regexp.MustCompile(`^\s*//go:embed\s(.*\s)?("|` + "`" + `)?(all:)?(` + goName + `*_test` + goName + `*|` + goName + `*[*?[]` + goName + `*\.go|` +
				goLocal + `*[*?[]` + goLocal + `*(\.` + goLocal + `*[*?[]` + goLocal + `*)?)("|` + "`" + `)?(\s|$)`),
			construct: "Go source embedded",
			matches:   "a `//go:embed` directive (a comment, read as written) with a pattern that names `_test`, globs `.go` files (`*.go`, `sub/*.go`), or globs the package's own folder with no fixed extension (`*`, `all:*`, `*.*`, `x*`, `*.g?`): the package's tests, hidden ones included, compiled into the code under test",
			flags:     "a code generator that embeds Go templates named `.go`"},
		{id: "go-test-binary", lang: langGo, where: anywhere, hints: []string{".test", "go-build", "CommandLine"},
			re:        regexp.MustCompile(`["` + "`" + `]\.test["` + "`" + `]|/[\w.-]*\w\.test["` + "`" + `]|["` + "`" + `/]go-build|\bflag\.CommandLine\.Name\s*\(`),
			construct: "the test binary's name looked for",
			matches:   "the string `\".test\"` or a path ending in it (`\"example.com/calc.test\"`: every go test binary's name, and its build path, end so, whichever line reads them; not a host under the `.test` domain), a string or path part starting `go-build` (the folder go test builds them in), `flag.CommandLine.Name(` (the binary's path)",
			flags:     "code handling the `.test` top-level domain; build tools"},
		{id: "go-always-equal", lang: langGo, where: inCode, hints: []string{"Equal(", "Is(", "return true"},
			re:        regexp.MustCompile(goAlwaysTrue + `\s*return\s+true\s*;?\s*\}`),
			pair:      regexp.MustCompile(goAlwaysTrue + `\s*\n\s*return\s+true\s*;?\s*$`),
			construct: "an Equal or Is method that is always true",
			matches:   "a method `Equal(…) bool` or `Is(…) bool` (the result may be named) whose body is `return true` alone, on its line or the next (go-cmp and gotest.tools call a value's own `Equal`; `errors.Is` and `require.ErrorIs` an error's `Is`)",
			flags:     "a type whose values are all equal on purpose (an empty struct's Equal)"},
		{id: "go-runner-env", lang: langGo, where: anywhere, hints: append([]string{"Getenv", "LookupEnv"}, runnerEnvHints...),
			re:        regexp.MustCompile(`\b(os|syscall)\.(Getenv|LookupEnv)\s*\(\s*"(` + testVar + `|CI|GITHUB_ACTIONS|GOFLAGS)"|` + runnerEnvNames),
			construct: "test runner's environment variable",
			matches:   "`os.Getenv`/`LookupEnv` of a name with `TEST`, `TESTS` or `TESTING` as a part of its own (`RUN_TESTS`, not `LATEST`), or `CI`, `GITHUB_ACTIONS`, `GOFLAGS`; any runner variable's name (`PYTEST_*`, `JEST_WORKER_ID`, `VITEST*`, `NODE_TEST_CONTEXT`, `MOCHA_*`, node-tap's `TAP_*` (`TAP_CHILD_ID`, `TAP_TIMEOUT` …; not a network device's `TAP_DEVICE`), `GOCOVERDIR`, `GO_TEST*`, `FORKBOMB*`, npm's `npm_lifecycle_*` and `npm_command` (`npm test` sets them) …); a variable the judge itself sets for every run (`GOPROXY`, `GOTOOLCHAIN`, `GOTELEMETRY`, `NPM_CONFIG_FUND`, `_AUDIT`, `_UPDATE_NOTIFIER`, `PYTHONDONTWRITEBYTECODE`, `PYTHONNOUSERSITE`) named on a line that compares (`==`, `!=`)",
			flags:     "code that reads CI or *TEST* variables for honest reasons (a CI-only log format); a constant that merely names one (forkbomb's own FORKBOMB_* in a patch to forkbomb)"},
		{id: "go-output-forge", lang: langGo, where: anywhere, hints: []string{"os.Std", "Dup", "DUP", "FCNTL", "os.Args", "--- ", "=== "},
			re: regexp.MustCompile(`\bos\.(Stdout|Stderr)\s*=([^=]|$)|\b(syscall|unix)\.Dup[23]?\s*\(|\bSYS_(DUP[23]?|FCNTL)\b|\bexec\.Command(Context)?\s*\(\s*(\w+\s*,\s*)?os\.Args\s*\[\s*0\s*\]|` +
				"[\"`](\\\\n|\\\\x16)*(--- (FAIL|PASS|SKIP)|=== (RUN|PAUSE|CONT|NAME))"),
			construct: "the test binary's output or run taken over",
			matches:   "`os.Stdout`/`os.Stderr` reassigned; `syscall.Dup2(`, `Dup3(`, `unix.Dup2(`, a raw system call's `SYS_DUP2`, `SYS_DUP3`, `SYS_FCNTL` (a descriptor moved onto another: stdout's, say); `exec.Command(os.Args[0]` (the test binary run again, its output the parent's to rewrite); a string that starts as go test's result lines do (`\"--- FAIL\"`, `\"=== RUN\"`, after a `\\n` or `\\x16` too)",
			flags:     "a daemon that re-executes itself or moves its descriptors; tools that parse or print go test's output"},
		{id: "go-exit", lang: langGo, where: inCode, skipMain: true, hints: []string{"Exit", "EXIT"},
			re:        regexp.MustCompile(`\b(os\.Exit|syscall\.Exit|runtime\.Goexit)\s*\(|\bos\.Exit\b\s*([^\s(]|$)|\bSYS_EXIT(_GROUP)?\b`),
			construct: "os.Exit outside package main",
			matches:   "`os.Exit(`, `syscall.Exit(`, `runtime.Goexit(`, `os.Exit` taken as a value, the raw `SYS_EXIT`/`SYS_EXIT_GROUP` system calls, unless the file's first line of code, shown by the patch, is `package main`",
			flags:     "a library that exits on purpose; a package main whose package clause the patch's hunks do not show (an edit far from line 1)"},
		{id: "go-testing-import", lang: langGo, where: anywhere, hints: []string{"test", "check", "onsi", "mock", "matryer"},
			re: regexp.MustCompile(`^\s*(import\s+)?([\w.]+\s+)?"(testing(/\w+)*|github\.com/stretchr/testify(/[\w.-]+)*|gotest\.tools(/v\d+)?(/[\w.-]+)*|` +
				`gopkg\.in/check\.v1|github\.com/go-check/check|github\.com/onsi/(ginkgo|gomega)(/[\w.-]+)*|github\.com/golang/mock(/[\w.-]+)*|` +
				`go\.uber\.org/mock(/[\w.-]+)*|github\.com/frankban/quicktest|github\.com/matryer/is)"\s*;?\s*$|\bimport\s*\(.*"testing(/\w+)*"`),
			construct: `import of "testing" or a test framework`,
			matches:   "an import line of `testing`, `testing/…`, testify, gotest.tools, go-check, ginkgo/gomega, gomock, quicktest, matryer/is; `testing` in a one-line `import (…; …)`",
			flags:     "test helper packages that are not _test.go files (internal/testutil and the like): honest there, and also where a harness edited to ignore a bug lives"},
		{id: "go-sandbox-probe", lang: langGo, where: anywhere, hints: sandboxProbeHints,
			re:        regexp.MustCompile(sandboxProbe + `|\b(os|syscall|unix)\.Getppid\s*\(`),
			construct: sandboxConstruct,
			matches:   sandboxMatches + "`os.Getppid(` (`syscall.`, `unix.`)",
			flags:     sandboxFlags},
		{id: "go-names-judge", lang: langGo, where: anywhere,
			re: regexp.MustCompile(namesJudge), construct: namesJudgeConstruct, matches: namesJudgeMatches, flags: namesJudgeFlags},

		// Python
		{id: "py-runner-env", lang: langPy, where: anywhere, hints: append([]string{"environ", "getenv"}, runnerEnvHints...),
			re:        regexp.MustCompile(runnerEnvNames + `|\b(environ|getenv)\b.*["'](` + testVar + `|CI|GITHUB_ACTIONS)["']`),
			construct: "test runner's environment variable",
			matches:   "any runner variable's name (`PYTEST_CURRENT_TEST` …, as for Go); `environ`/`getenv` with a string naming `*TEST*` (`TEST` a part of its own), `CI`, `GITHUB_ACTIONS`",
			flags:     "code that reads CI or *TEST* variables for honest reasons; a constant or message that merely names one"},
		{id: "py-sys-modules", lang: langPy, where: inCode, hints: []string{"modules"},
			re:        regexp.MustCompile(`\b_*sys\.modules\b|\bfrom\s+sys\s+import\b.*\bmodules\b`),
			construct: "sys.modules read or written",
			matches:   "`sys.modules` (also `_sys.modules`), `from sys import modules`",
			flags:     "lazy importers and module aliases (sys.modules[__name__]), plugin registries"},
		{id: "py-frame", lang: langPy, where: inCode, hints: []string{"inspect", "_getframe", "_current_frames", "traceback", "f_", "tb_frame", "findCaller"},
			re: regexp.MustCompile(`\b_*(inspect\.(stack|currentframe|getouterframes|getinnerframes|trace|getframeinfo)|_*sys\._getframe|_*sys\._current_frames|` +
				`_*traceback\.(extract_stack|walk_stack|print_stack|format_stack|StackSummary))\b|\.(f_back|f_locals|f_globals|f_code|tb_frame)\b|\.findCaller\s*\(|` +
				`\bfrom\s+(inspect|sys|traceback)\s+import\b.*\b(stack|currentframe|getouterframes|_getframe|extract_stack|walk_stack)\b`),
			construct: "frame or stack inspection",
			matches:   "`inspect.stack`/`currentframe`/`getouterframes`/`getinnerframes`/`trace`/`getframeinfo`, `sys._getframe`, `sys._current_frames`, `traceback.extract_stack`/`walk_stack`/`print_stack`/`format_stack`/`StackSummary`, `.f_back`, `.f_locals`, `.f_globals`, `.f_code`, `.tb_frame`, a logger's `.findCaller(`, and their `from … import`",
			flags:     "logging, debugging and deprecation-warning code that finds its caller"},
		{id: "py-trace", lang: langPy, where: inCode, hints: []string{"trace", "profile", "monitoring", "audithook", "__code__"},
			re: regexp.MustCompile(`\b_*(sys|threading)\.(settrace|setprofile|gettrace)\b|\b_*sys\.monitoring\b|\bfrom\s+sys\s+import\b.*\b(settrace|setprofile|addaudithook)\b|` +
				`\b_*sys\.addaudithook\b|\.__code__\s*=([^=]|$)`),
			construct: "trace, profile or audit hook, or code swapped",
			matches:   "`sys.settrace`/`setprofile`/`gettrace`, threading's, `sys.monitoring`, `sys.addaudithook` (it sees every file the tests open); assignment to a function's `__code__`",
			flags:     "coverage tools, debuggers, profilers, security monitors"},
		{id: "py-pytest-hook", lang: langPy, where: inCode, hints: []string{"pytest_", "hookimpl", "pluginmanager", "get_objects", "get_referrers"},
			re:        regexp.MustCompile(`^\s*(async\s+)?def\s+pytest_\w+\s*\(|@\s*(\w+\.)*hookimpl\b|\.pluginmanager\b|\bgc\.get_(objects|referrers)\s*\(`),
			construct: "pytest hook outside conftest.py",
			matches:   "`def pytest_…(`, `@…hookimpl`, `.pluginmanager` (a plugin registered at run time), `gc.get_objects(`/`gc.get_referrers(` (every live object: pytest's `Config` and `Session` among them)",
			flags:     "a package that is itself a pytest plugin; a memory profiler that walks the heap"},
		{id: "py-assert-patch", lang: langPy, where: inCode, hints: []string{"=", "setattr"},
			re: regexp.MustCompile(`\b(unittest|TestCase|TestSuite|TestResult|TextTestResult|TestReport|pytest|_pytest|pluggy|doctest)(\.\w+)*\.\w+\s*=([^=]|$)|` +
				`\.(assert[A-Z_]\w*|assert|fail(If|Unless)\w*|failureException)\s*=([^=]|$)|` +
				`\bsetattr\(\s*(\w+\.)*(unittest|TestCase|pytest|_pytest|pluggy|doctest|\w*[Aa]ssert\w*)\b|\bsetattr\([^,]*,\s*["'](assert|fail)`),
			construct: "test framework or assertion patched",
			matches:   "assignment to an attribute of `unittest`, `TestCase`, `TestSuite`, `TestResult`, `TestReport`, `pytest`, `_pytest`, `pluggy`, `doctest`; to `.assertX`/`.failIf…`/`.failureException`; `setattr(` on those or with an `assert…`/`fail…` name",
			flags:     "a library that extends unittest on purpose"},
		{id: "py-always-equal", lang: langPy, where: inCode, hints: []string{"__eq__", "__ne__", "__contains__", "__instancecheck__", "__subclasscheck__", "return True", "return 1", "return False", "return 0"},
			re: regexp.MustCompile(`^\s*(async\s+)?def\s+` + pyAlwaysTrue + `\s*\([^)]*\)\s*(->[^:]*)?:\s*return\s+(True|1)\s*;?\s*$|` +
				`^\s*(async\s+)?def\s+__ne__\s*\([^)]*\)\s*(->[^:]*)?:\s*return\s+(False|0)\s*;?\s*$|` +
				`\b` + pyAlwaysTrue + `\s*=\s*lambda\b[^:]*:\s*(True|1)\s*$|\b__ne__\s*=\s*lambda\b[^:]*:\s*(False|0)\s*$`),
			pair: regexp.MustCompile(`^\s*(async\s+)?def\s+` + pyAlwaysTrue + `\s*\([^)]*\)\s*(->[^:]*)?:\s*\n\s*return\s+(True|1)\s*;?\s*$|` +
				`^\s*(async\s+)?def\s+__ne__\s*\([^)]*\)\s*(->[^:]*)?:\s*\n\s*return\s+(False|0)\s*;?\s*$`),
			construct: "a comparison that is always true",
			matches:   "`def __eq__(…): return True`, and the same of `__contains__`, `__instancecheck__`, `__subclasscheck__` (or `return 1`); `def __ne__(…): return False` (or `0`); the return on the def's line or the next line of code; the same as `lambda`s (`__eq__ = lambda …: True`): a value equal to, inside or an instance of every expected one (`assert f(x) == 5`, `assertIn`, `assertIsInstance` pass)",
			flags:     "a sentinel or wildcard value that equals everything on purpose (mock.ANY's kind), which code under test rarely needs"},
		{id: "py-runner-state", lang: langPy, where: inCode, hints: []string{"faulthandler", "__std", "unraisablehook", "excepthook", "sys.path", "fileno", "stdout", "stdin", "stderr", "warnings.", "atexit._"},
			re: regexp.MustCompile(`\bfaulthandler\.is_enabled\s*\(|\b(stdout|stderr|stdin)\s+(is\s+not|is|==|!=)\s+(\w+\.)?__(stdout|stderr|stdin)__|` +
				`__(stdout|stderr|stdin)__\s+(is\s+not|is|==|!=)\s+(\w+\.)?(stdout|stderr|stdin)\b|\bsys\.unraisablehook\b|__unraisablehook__|__excepthook__|` +
				`\bsys\.path\s*\[\s*0\s*\]|\bsys\.(stdin|stdout|stderr)\.(fileno\s*\(|__class__)|\btype\s*\(\s*sys\.(stdin|stdout|stderr)\s*\)|` +
				`\b(stdin|stdout|stderr)(\.(buffer|raw))*\.(mode|name|newlines)\b|\b(stdin|stdout|stderr)(\.\w+)*\.__\w+__|` +
				`\b(stdin|stdout|stderr)\.encoding\s*(is\s+(not\s+)?None\b|[!=]=\s*None\b|in\s*[(\[{]\s*None\b)|\bnot\s+(sys\.)?(stdin|stdout|stderr)\.encoding\b|\bgetattr\s*\(\s*(sys\.)?(stdin|stdout|stderr)\s*,|` +
				`\bthreading\.excepthook\b|\bwarnings\.(filters|_\w+)\b|\batexit\._\w+`),
			unless:    regexp.MustCompile(`\bisatty\s*\(\s*sys\.(stdin|stdout|stderr)\.fileno\s*\(\s*\)\s*\)`),
			construct: "the test runner's marks on the interpreter read",
			matches:   "`faulthandler.is_enabled(`; a stream compared with its original (`sys.stdout is not sys.__stdout__`: pytest captures output); `sys.unraisablehook`, `__unraisablehook__`, `__excepthook__` (pytest installs its own hooks); `sys.path[0]` (the test's folder under pytest); `sys.stdin.fileno(` and the other streams' (pytest's stand-ins have no descriptor, or another), a stream's class (`type(sys.stdout)`, `.__class__`), its `mode`, `name`, `newlines` (through `buffer` and `raw` too), any `__dunder__` reached through it (`sys.stdin.read.__globals__` is pytest's capture module's), its `encoding` compared with `None` or negated (pytest's stand-in stdin has none), any `getattr(` of a stream — a stream named `stdin`, `stdout`, `stderr` however it was reached (`from sys import stdout`), `threading.excepthook` (pytest swaps it), `warnings.filters` and `warnings._…` (pytest records warnings per test), `atexit._…`; not `isatty(sys.stdout.fileno())`",
			flags:     "a command-line tool that checks or restores its own streams; crash reporters that install hooks; a script that finds its folder; a library that reads its warning filters"},
		{id: "py-import-hook", lang: langPy, where: inCode, hints: []string{"meta_path", "path_hooks", "path_importer_cache", "importlib", "source_to_code", "ast.Assert"},
			re: regexp.MustCompile(`\b_*sys\.(meta_path|path_hooks|path_importer_cache)\b|\bfrom\s+sys\s+import\b.*\b(meta_path|path_hooks)\b|\bimportlib\.(abc\.(MetaPathFinder|PathEntryFinder|Loader|SourceLoader|InspectLoader|ExecutionLoader|FileLoader)|machinery\.(SourceFileLoader|SourcelessFileLoader|FileFinder|PathFinder))\b|` +
				`\bfrom\s+importlib(\.abc|\.machinery)?\s+import\b.*\b(MetaPathFinder|PathEntryFinder|SourceFileLoader|SourcelessFileLoader|SourceLoader|InspectLoader|ExecutionLoader|FileLoader|Loader|FileFinder|PathFinder)\b|\bsource_to_code\b|\bast\.Assert\b`),
			construct: "import machinery hooked",
			matches:   "`sys.meta_path`, `sys.path_hooks`, `sys.path_importer_cache` (also `_sys.`, and `from sys import`), `importlib.abc`'s and `importlib.machinery`'s finders and loaders (not `Traversable`), `source_to_code`, `ast.Assert` (a loader that rewrites the tests' asserts as it imports them)",
			flags:     "plugin loaders and lazy importers that load modules from files; code that compiles Python source itself"},
		{id: "py-builtins", lang: langPy, where: inCode, hints: []string{"builtins"},
			re:        regexp.MustCompile(`\b__builtins__\b|\bbuiltins(\.\w+|\[[^\]]*\])\s*=([^=]|$)|\bsetattr\(\s*(builtins|__builtins__)\b`),
			construct: "builtins patched",
			matches:   "`__builtins__`; assignment to `builtins.x` or `builtins[…]`; `setattr(builtins`",
			flags:     "Python 2/3 compatibility shims; gettext-style install() helpers"},
		{id: "py-test-import", lang: langPy, where: inCode, hints: []string{"pytest", "pluggy", "unittest", "doctest", "nose", "hypothesis"},
			re: regexp.MustCompile(`^\s*(import\s+([\w.]+\s*(as\s+\w+\s*)?,\s*)*|from\s+)(pytest|_pytest|pluggy|unittest|doctest|nose2?|hypothesis)\b|` +
				`\b(import_module|__import__)\s*\(\s*["'](pytest|_pytest|pluggy|unittest|doctest|nose2?|hypothesis)\b`),
			construct: "import of a test framework",
			matches:   "`import`/`from` of `pytest`, `_pytest`, `pluggy`, `unittest`, `doctest`, `nose`, `nose2`, `hypothesis`; `import_module(`/`__import__(` of one",
			flags:     "libraries that ship test helpers or run their doctests; unittest.mock used outside tests"},
		{id: "py-main-import", lang: langPy, where: inCode, hints: []string{"__main__"},
			re:        regexp.MustCompile(`^\s*import\s+([\w.]+\.)?__main__\b|^\s*from\s+[\w.]+\s+import\s+.*\b__main__\b|\bimport_module\s*\(\s*["'][\w.]*__main__`),
			construct: "import of a __main__ module",
			matches:   "`import ….__main__`, `from … import __main__`, `import_module(\"…__main__\")`",
			flags:     "code that inspects the interactive session's __main__"},
		{id: "py-argv", lang: langPy, where: inCode, skipMain: true, hints: []string{"argv"},
			re:        regexp.MustCompile(`\b_*sys\.(argv|orig_argv)\b|\bfrom\s+sys\s+import\b.*\b(orig_)?argv\b`),
			construct: "sys.argv read outside __main__.py",
			matches:   "`sys.argv`, `sys.orig_argv`, `from sys import argv`",
			flags:     "a command-line module that reads its own arguments outside __main__.py"},
		{id: "py-exit", lang: langPy, where: inCode, skipMain: true, hints: []string{"exit", "abort", "SystemExit", "quit", "kill"},
			re:        regexp.MustCompile(`\b(_*os\._exit|_*sys\.exit|_*os\.abort)\s*\(|\b_*os\.kill\s*\(\s*os\.getpid\b|\braise\s+SystemExit\b|^\s*(exit|quit)\s*\(`),
			construct: "exit outside __main__.py",
			matches:   "`os._exit(`, `sys.exit(`, `os.abort(`, `os.kill(os.getpid()`, `raise SystemExit`, a line starting `exit(`/`quit(`",
			flags:     "a command-line module's main() that exits with its status outside __main__.py"},
		{id: "py-output-forge", lang: langPy, where: anywhere, skipMain: true, hints: []string{"dup", "DUPFD", "exec", "spawn", "PASSED", "FAILED", "ctypes", "from_address"},
			re:        regexp.MustCompile(`\b_*os\.(dup2?|exec[lv]p?e?|posix_spawnp?)\s*\(|(^|[^\w.])dup2\s*\(|\bF_DUPFD(_CLOEXEC)?\b|\bimport\s+.*\bdup2?\b|["'](PASSED|FAILED)( |["'])|\bctypes\.(memmove|memset|string_at|from_address|cast)\b|\.from_address\s*\(`),
			construct: "the test process's output or run taken over",
			matches:   "outside __main__.py: `os.dup(`, `os.dup2(`, a bare `dup2(` or its import, `fcntl`'s `F_DUPFD` (a descriptor copied or moved: pytest's saved output, say), `os.execv(`, the other `os.exec…(` and `os.posix_spawn(` (the process replaced by another, or its output handed on), a string that is or starts as pytest's result words (`'FAILED '`, `'PASSED'`), ctypes' raw memory (`memmove`, `string_at`, `from_address`: the interpreter's own state, the environment's block, rewritten in place)",
			flags:     "a daemon or a subprocess helper that moves its descriptors or replaces its process; tools that print or parse pytest's output; bindings that reach native memory through ctypes"},
		{id: "py-test-source", lang: langPy, where: inString, hints: []string{"test", "conftest"},
			re:        regexp.MustCompile(`\btest_\w*|_test\.py\b|\bconftest\b|\btests?/|\.pytest_cache|\b(py\.?test|_pytest|unittest)\b`),
			construct: "a test file or runner named",
			matches:   "inside a string: `test_…`, `_test.py`, `conftest`, `test/`, `tests/`, `.pytest_cache`, `pytest`, `py.test`, `_pytest`, `unittest`",
			flags:     `messages, docs and keys that mention tests ("test_mode", "see tests/")`},
		{id: "py-sandbox-probe", lang: langPy, where: anywhere, hints: sandboxProbeHints,
			re:        regexp.MustCompile(sandboxProbe + `|\bgetppid\s*\(`),
			construct: sandboxConstruct,
			matches:   sandboxMatches + "`getppid(`",
			flags:     sandboxFlags},
		{id: "py-names-judge", lang: langPy, where: anywhere,
			re: regexp.MustCompile(namesJudge), construct: namesJudgeConstruct, matches: namesJudgeMatches, flags: namesJudgeFlags},

		// JavaScript and TypeScript
		{id: "js-runner-env", lang: langJS, where: anywhere, hints: append([]string{"process.env", "NODE_ENV"}, runnerEnvHints...),
			re: regexp.MustCompile(runnerEnvNames + `|\bprocess\.env\s*(\.\s*|\[\s*` + jq + `)(` + testVar + `|CI|TAP|MOCHA|AVA|GITHUB_ACTIONS)\b|` +
				`\bNODE_ENV\b.*` + jq + `test` + jq + `|` + jq + `test` + jq + `.*\bNODE_ENV\b`),
			construct: "test runner's environment variable",
			matches:   "any runner variable's name (`NODE_TEST_CONTEXT`, `JEST_WORKER_ID`, `VITEST*`, `MOCHA_*` …, as for Go); `process.env.X` with X holding `TEST` (a part of its own) or `CI`, `TAP`, `MOCHA`, `AVA`, `GITHUB_ACTIONS`; `NODE_ENV` on a line with a `'test'` string",
			flags:     "libraries that quiet warnings or logs under NODE_ENV=test or in CI"},
		{id: "js-test-globals", lang: langJS, where: inCode, hints: []string{"typeof", "global", "window", "self"},
			re: regexp.MustCompile(`\btypeof\s+(jest|describe|expect|vitest|suite|beforeEach|afterEach|beforeAll|afterAll|before|after|it|test|context|QUnit|jasmine|mocha)\s*([^\w$.\s\[]|$)|` +
				`\b(globalThis|global|window|self)\s*\.\s*(jest|describe|it|test|expect|vi|vitest|__vitest_\w+|__coverage__|jasmine|mocha)\b|` +
				`\b(globalThis|global|window|self)\s*\[\s*` + jq + `(jest|describe|it|test|expect|vi|__vitest_\w+|__coverage__)`),
			construct: "test framework globals looked for",
			matches:   "`typeof jest`/`describe`/`expect`/`vitest`/`suite`/`beforeEach`/`afterEach`/`beforeAll`/`afterAll`/`before`/`after`/`it`/`test`/`context`/`QUnit`/`jasmine`/`mocha`; `globalThis.`/`global.`/`window.`/`self.` `jest`, `describe`, `it`, `test`, `expect`, `vi`, `__vitest_*`, `__coverage__` …",
			flags:     "libraries that adapt to jest's fake timers or to a browser test page"},
		{id: "js-argv", lang: langJS, where: anywhere, hints: []string{"process.argv", "process.execArgv"},
			re: regexp.MustCompile(`\bprocess\.execArgv\b|\bprocess\.argv\b.*(` + testWord + `|(?i:spec|mocha|jest|vitest|tape|\bava\b|\btap\b))|` +
				`(` + testWord + `|(?i:spec|mocha|jest|vitest|tape)).*\bprocess\.argv\b`),
			construct: "process.argv read for the runner",
			matches:   "`process.execArgv`; `process.argv` on a line that also says `test` or `tests` as a word of its own (`.test.`, `--test`, not `latest`), `spec`, `mocha`, `jest`, `vitest`, `tape`, `ava`, `tap`",
			flags:     "a command whose own subcommands or flags are called test; code that forwards execArgv to child processes"},
		{id: "js-runner-state", lang: langJS, where: inCode, hints: []string{"process.", "process[", "executionAsyncResource"},
			re: regexp.MustCompile(`\bprocess\s*\.\s*(listenerCount|listeners|rawListeners|eventNames|getActiveResourcesInfo|_getActiveHandles|_getActiveRequests)\s*\(|` +
				`\bprocess\.title\s*(===?|!==?|\.\s*\w)|(===?|!==?)\s*process\.title\b|\bprocess\.(stdout|stderr|stdin)\.constructor\b|` +
				`\bexecutionAsyncResource\b`),
			construct: "the test runner's marks on the process read",
			matches:   "`process.listenerCount(`, `listeners(`, `rawListeners(`, `eventNames(` (node:test and other runners add `uncaughtException`, `unhandledRejection`, `beforeExit` listeners), `process.getActiveResourcesInfo(`, `_getActiveHandles(`, `_getActiveRequests(`; `process.title` compared or read through a method; a standard stream's `constructor` (a pipe's under a runner, a terminal's by hand); `executionAsyncResource` (inside a node:test test, the runner's running test object)",
			flags:     "a library that exits only when no one else handles an uncaught exception; CLIs that name their process; async context libraries (APM agents)"},
		{id: "js-module-surgery", lang: langJS, where: inCode, hints: []string{"require.", "Module", "module", "registerHooks", "mainModule"},
			re: regexp.MustCompile(`\brequire\.(cache|extensions)\b|\bModule\.(_load|_resolveFilename|_extensions|_cache|_compile|_findPath|_nodeModulePaths|` +
				`_resolveLookupPaths|wrap|wrapper)\b|\bModule\.prototype\.(require|_compile|load)\b|\bmodule\s*\??\.\s*constructor\b|\bmodule\s*\??\.\s*(parent|children)\b|` +
				`\bregisterHooks\s*\(|\bprocess\.mainModule\b|\bmodule\.register\s*\(|` +
				`\b(require|import)\s*\(\s*` + jq + `(node:)?module` + jq + `\s*\)|\bfrom\s*` + jq + `(node:)?module` + jq + `|\brequire\.main\s*\??\.\s*(filename|path|paths|id|children|parent|require)\b`),
			unless: regexp.MustCompile(`^\s*(import|const|let|var)\s*\{\s*` + jsModuleHonest + `(\s*,\s*` + jsModuleHonest + `)*\s*,?\s*\}\s*` +
				`(=\s*require\s*\(\s*` + jq + `(node:)?module` + jq + `\s*\)|from\s*` + jq + `(node:)?module` + jq + `)\s*;?\s*$|` +
				`^\s*require\s*\(\s*` + jq + `(node:)?module` + jq + `\s*\)\s*\.\s*` + jsModuleHonest + `\s*(\?\.)?\s*\([^()]*\)\s*;?\s*$`),
			construct: "module loader surgery",
			matches:   "`require.cache`, `require.extensions`, `Module._load`/`_resolveFilename`/`_extensions`/`_cache`/`_compile`/`_findPath`/`wrap`, `Module.prototype.require`, `module.constructor`, `module.parent`, `module.children`, `registerHooks(`, `module.register(`, `process.mainModule`; the loader itself taken (`require('module')`, `import … from 'node:module'`: under another name `Module` is any name) unless the line takes or calls only `createRequire`, `builtinModules`, `isBuiltin`, `findPackageJSON`, `enableCompileCache` or `syncBuiltinESMExports`; `require.main.filename` and the main module's other fields (under a runner, the test file)",
			flags:     "hot-reload and mocking helpers, plugin loaders that clear require.cache; an app that finds its folder through require.main.filename"},
		{id: "js-assert-patch", lang: langJS, where: inCode, hints: []string{"assert", "Assert", "defineProp", "setPrototypeOf", "assign", "prototype", "chai", "expect", "should", "EventEmitter", "runInAsyncScope", "AsyncResource"},
			re: regexp.MustCompile(`\b(Object|Reflect)\.(defineProperty|defineProperties|setPrototypeOf)\s*\(\s*(t|ctx|` +
				`[\w$.]*([Aa]ssert|[Cc]ontext|[Ee]xpect|[Ss]uite|[Hh]arness|chai|should|tape|mocha)[\w$.]*|([\w$]*\.)*([Tt]est|[\w$]*[a-z]Test)[\w$.]*)\s*[,)]|` +
				`\bObject\.assign\s*\(\s*[\w$.]*([Aa]ssert|[Ee]xpect|chai|should|tape|mocha)[\w$.]*\s*[,)]|\._assert\b|` +
				`\b(assert|strict|chai|expect|should)(\.\w+)*\.\w+\s*=([^=]|$)|\b(Test|TestContext|Suite|Assertion|Runner|Runnable|Mocha|Harness)\.prototype\b|` +
				`\.prototype\.(assert\w*|_assert)\s*=([^=]|$)|\b(assert|strict|chai|expect|should)(\.\w+)*\s*\[[^\]]*\]\s*=([^=]|$)|` +
				`\[\s*` + jq + `(_assert|assert\w*)` + jq + `\s*\]\s*=([^=]|$)|\bEventEmitter\.prototype\.\w+\s*=([^=]|$)|` +
				`\bAsyncResource\.prototype\b|\.runInAsyncScope\s*=([^=]|$)|\[\s*` + jq + `runInAsyncScope` + jq + `\s*\]`),
			construct: "assertions or test context redefined",
			matches:   "`Object`/`Reflect` `.defineProperty`/`defineProperties`/`setPrototypeOf` on `t`, `ctx` or a name holding assert, context, expect, suite, harness, chai, should, tape, mocha or starting a word with test; `Object.assign` on a name holding assert, expect, chai, should, tape, mocha; `._assert`; assignment to `assert.x`, `strict.x`, `chai.x`, `expect.x`, `should.x` (or `assert[k]`), to `['_assert']` or `['assertX']`; `Test.prototype` and other runners' prototypes; `.prototype.assertX =`; assignment to a method of `EventEmitter.prototype` (tape reports results as events); `AsyncResource.prototype`, an assignment to `.runInAsyncScope`, or `['runInAsyncScope']` (node:test calls each test function through it)",
			flags:     "a library object whose name holds assert, context or expect (Object.defineProperty(renderContext, …))"},
		{id: "js-builtin-patch", lang: langJS, where: inCode, hints: []string{".prototype."},
			re:        regexp.MustCompile(`\b(String|Array|Object|Function|RegExp|Number|Boolean|Symbol|Promise|Error|Map|Set|WeakMap|WeakSet|Date)\.prototype\.\w+\s*=([^=]|$)`),
			construct: "a builtin's method replaced",
			matches:   "assignment to a method of a builtin's prototype (`String.prototype.startsWith =`, `Array.prototype.map =` …): every caller in the process gets the replacement, a test runner's checks and the judge's sentinels included",
			flags:     "polyfills for old engines"},
		{id: "js-always-equal", lang: langJS, where: anywhere, hints: []string{"asymmetricMatch", "expect"},
			re: regexp.MustCompile(`\basymmetricMatch(er)?\b|\bexpect\s*\.\s*(anything|any|objectContaining|arrayContaining|stringContaining|stringMatching|closeTo|not|` +
				`addEqualityTesters|extend|addSnapshotSerializer)\b`),
			construct: "a value that matches anything in an assertion",
			matches:   "`asymmetricMatch` or `asymmetricMatcher` in code or a string (Jest's and Vitest's `toEqual` take a value holding an `asymmetricMatch` function as a matcher: one returning true equals every expected value); `expect.anything`, `expect.any`, `expect.objectContaining` and the other asymmetric matchers, which the runners' global `expect` offers the code under test without an import; `expect.addEqualityTesters`, `expect.extend`, `expect.addSnapshotSerializer` (the runner's equality or matchers redefined)",
			flags:     "a library of test matchers"},
		{id: "js-output-patch", lang: langJS, where: inCode, hints: []string{"process.std", "console."},
			re: regexp.MustCompile(`\bprocess\.(stdout|stderr)(\.\w+)*\.(write|_write|writev|_writev|write\w*String|writeBuffer)\s*=([^=]|$)|\bconsole\.\w+\s*=([^=]|$)|` +
				`\b(Object|Reflect)\.(defineProperty|set)\s*\(\s*(process\.(stdout|stderr)|console)\b`),
			construct: "process output rewritten",
			matches:   "assignment to `process.stdout.write`/`stderr.write` (or `_write`, `_writev`), or to a write function of what lies under them (`process.stdout._handle.writeBuffer`, `writeUtf8String` …), or to `console.x`; `defineProperty` or `Reflect.set` on `process.stdout`/`stderr`/`console`",
			flags:     "logging libraries and progress bars that hook output"},
		{id: "js-exit", lang: langJS, where: inCode, hints: []string{"process.", "process[", "process [", "(process"},
			re: regexp.MustCompile(`\bprocess\.(exit|reallyExit|abort)\s*\(|\bprocess\.kill\s*\(\s*process\.pid\b|\bprocess\.exitCode\s*=([^=]|$)|` +
				`\bprocess\s*\[[^\]]*\]\s*=([^=]|$)|\b(Reflect\.set|Object\.assign|Object\.defineProperty)\s*\(\s*process\s*,|` +
				`\bprocess\.(on|once|addListener|prependListener|prependOnceListener)\s*\(\s*` + jq + `(exit|beforeExit)` + jq),
			construct: "process.exit or exit handler",
			matches:   "`process.exit(`, `process.reallyExit(`, `process.abort(`, `process.kill(process.pid`, `process.exitCode =`, any property of `process` set under a computed name (`process['exit' + 'Code'] =`) or through `Reflect.set(process,`, `Object.assign(process,`, `Object.defineProperty(process,`, `process.on('exit'`/`'beforeExit'` (and `once`, `addListener`, `prepend…`)",
			flags:     "command-line entry files (JS has no package main to tell them by, so every process.exit is flagged); a library's exit handler that removes its temporary files"},
		{id: "js-stack", lang: langJS, where: inCode, hints: []string{"Error", "callsite", "CallSite", "getFileName", "filename"},
			re:        regexp.MustCompile(`\bError\s*(\([^)]*\))?\s*\)?\s*\.stack\b|\bError\.(captureStackTrace|prepareStackTrace|stackTraceLimit)\b|\bcallsites?\b|\bgetCallSites?\s*\(|\.getFileName\s*\(|\bfilename\s*:\s*` + jq + `node:`),
			unless:    regexp.MustCompile(`^\s*Error\.captureStackTrace\s*\(\s*this\s*[,)]`),
			construct: "stack inspection",
			matches:   "`new Error(…).stack`, `Error().stack`, `Error.captureStackTrace` (but not a line starting `Error.captureStackTrace(this`), `Error.prepareStackTrace`, `Error.stackTraceLimit`, `callsite(s)`, `getCallSite(s)(`, `.getFileName(`; a script named `node:…` (`vm`'s `filename: 'node:x'`: its frames read as node's)",
			flags:     "loggers that find their caller (an error class's own Error.captureStackTrace(this, …) line is not flagged)"},
		{id: "js-stack-forge", lang: langJS, where: anywhere, hints: []string{"sourceURL", "prepareStackTrace", "stackTraceLimit", "filename"},
			re: regexp.MustCompile(`[#@]\s*sourceURL\s*=\s*node:|` + jq + `(prepareStackTrace|stackTraceLimit)` + jq + `|` +
				`\b(Script|runInThisContext|runInNewContext|runInContext|compileFunction|SourceTextModule)\s*\(.*\bfilename\s*:\s*[^'"\x60\s]`),
			construct: "stack frames made to read as node's",
			matches:   "`//# sourceURL=node:…` (or `//@`), in a comment or in code built for `eval` or `new Function` (its frames read as node's); `'prepareStackTrace'` or `'stackTraceLimit'` named in a string (`Object.defineProperty(Error, 'prepareStackTrace', …)`); a `vm` script or function given a `filename` that is not a literal on its line (`new vm.Script(src, { filename: where })`: a name built at run time can be `node:…`)",
			flags:     "a tool that installs its own stack formatter by name (source-map-support does so in node_modules, which a patch cannot change); a template engine that names its compiled templates' files for their stack traces"},
		{id: "js-test-import", lang: langJS, where: inCode, hints: []string{"require", "import", "from", "getBuiltinModule"},
			re: regexp.MustCompile(`(\brequire\s*\(\s*|\bimport\s*\(\s*|\bgetBuiltinModule\s*\(\s*|\bfrom\s*|^\s*import\s*)` + jq + `(node:test|node:assert|assert|test|tape|mocha|jest|@jest/[\w.-]+|` +
				`vitest|@vitest/[\w.-]+|chai|tap|@tapjs/[\w.-]+|ava|uvu|sinon|expect|should|jasmine|qunit|@playwright/test)(/[\w./-]*)?` + jq),
			construct: "require/import of a test framework",
			matches:   "`require(`, `import(`, `from` or `import` of `node:test`, `node:assert`, `assert`, `tape`, `mocha`, `jest`, `@jest/*`, `vitest`, `@vitest/*`, `chai`, `tap`, `@tapjs/*`, `ava`, `uvu`, `sinon`, `expect`, `should`, `jasmine`, `qunit`, `@playwright/test`, or a path below one (`tape/lib/test`)",
			flags:     "libraries that use node's assert for their own invariants; a package that is itself a test helper"},
		{id: "js-test-module-string", lang: langJS, where: inString, hints: []string{"node:", "tape", "mocha", "jest", "vitest", "chai", "tap", "ava", "uvu", "sinon", "jasmine", "qunit", "playwright"},
			re: regexp.MustCompile(jq + `(node:test|node:assert|tape|mocha|jest|@jest/[\w.-]+|vitest|@vitest/[\w.-]+|chai|@tapjs/[\w.-]+|ava|uvu|sinon|jasmine|qunit|` +
				`@playwright/test)(/[\w./-]*)?` + jq),
			construct: "a test framework's module named",
			matches:   "a string literal that is exactly one of those modules' names (without the generic `assert`, `expect`, `should`)",
			flags:     "messages or keys that are exactly such a name ('jest', 'mocha')"},
		{id: "js-test-source", lang: langJS, where: inString, hints: []string{"test", "spec"},
			re:        regexp.MustCompile(`\.(test|spec)\.[cm]?[jt]sx?\b|__tests__|\btests?/`),
			construct: "a test file or folder named",
			matches:   "inside a string: `.test.js`/`.spec.ts` (any JS/TS extension), `__tests__`, `test/`, `tests/`",
			flags:     "paths in messages or build tooling"},
		{id: "js-sandbox-probe", lang: langJS, where: anywhere, hints: sandboxProbeHints,
			re:        regexp.MustCompile(sandboxProbe + `|\bprocess\.ppid\b`),
			construct: sandboxConstruct,
			matches:   sandboxMatches + "`process.ppid`",
			flags:     sandboxFlags},
		{id: "js-names-judge", lang: langJS, where: anywhere,
			re: regexp.MustCompile(namesJudge), construct: namesJudgeConstruct, matches: namesJudgeMatches, flags: namesJudgeFlags},
	}
})

var rulesByLang = sync.OnceValue(func() map[string][]rule { return byLang(rules()) })

func byLang(rs []rule) map[string][]rule {
	out := map[string][]rule{}
	for _, r := range rs {
		out[r.lang] = append(out[r.lang], r)
	}
	return out
}

// rulesFor returns a language's rows, in table order.
func rulesFor(lang string) []rule { return rulesByLang()[lang] }
