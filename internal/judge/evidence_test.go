package judge

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// newFile is the section of a patch that adds a file holding lines.
func newFile(p string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", p, p, p, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// editFile is the section of a patch with one hunk at line start: lines
// begin with ' ' (context), '-' or '+'.
func editFile(p string, start int, lines ...string) string {
	oldN, newN := 0, 0
	for _, l := range lines {
		switch l[0] {
		case ' ':
			oldN, newN = oldN+1, newN+1
		case '-':
			oldN++
		case '+':
			newN++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", p, p, p, p, start, oldN, start, newN)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// binaryBody is git's binary patch of a new JS file that holds a NUL
// byte in a comment and a process.exit(0) line.
const binaryBody = "GIT binary patch\nliteral 34\npcmb<WuvIWr(AQUBP{_zkNlDG)Dk#cNPAx9hORdN((J;{D0sx@)3C#ci\n\nliteral 0\nHcmV?d00001\n\n"

// rulesOf is the rule of each finding, in order.
func rulesOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// TestInspectPatch: each rule fires on what a gaming patch adds, and
// stays quiet on the same construct in a test file, a removed or context
// line, a comment or a string where the rule is about a call, and on the
// honest fixes of the real suites.
func TestInspectPatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		patch string
		want  []string // rule per finding, in file and line order
	}{
		// Go
		{"go testing.Testing()", newFile("cmp/x.go", "package cmp", "", "func gate() bool { return testing.Testing() }"), []string{"go-testing-mode"}},
		{"go testing.Short()", newFile("x.go", "package x", "var quick = testing.Short()"), []string{"go-testing-query"}},
		{"go imports of testing and test frameworks", newFile("x.go", "package x", "import \"testing\"", "import (", "\t_ \"testing/quick\"",
			"\tassert \"github.com/stretchr/testify/assert\"", "\t\"gotest.tools/v3/assert\"", "\t\"gopkg.in/check.v1\"", ")"),
			[]string{"go-testing-import", "go-testing-import", "go-testing-import", "go-testing-import", "go-testing-import"}},
		{"go stack walks", newFile("x.go", "package x", "n := runtime.Callers(2, pcs)", "_, file, _, _ := runtime.Caller(1)",
			"f := runtime.FuncForPC(pc)", "fr := runtime.CallersFrames(pcs)", "s := debug.Stack()", "runtime.Stack(buf, true)"),
			[]string{"go-stack-walk", "go-stack-walk", "go-stack-walk", "go-stack-walk", "go-stack-walk", "go-stack-walk"}},
		{"go standard packages under other names", newFile("x.go", "package x", `import rt "runtime"`, `import "flag"`, `import  "os"`, "import (", "\tgoos \"os\"", "\t. \"flag\"",
			"\tos \"os\"", "\t_ \"runtime/pprof\"", "\tdebug \"runtime/debug\"", "\tu \"golang.org/x/sys/unix\"", "\trt2 \"runtime\" // a comment", "\tstrs \"strings\"", ")"),
			[]string{"go-import-alias", "go-import-alias", "go-import-alias", "go-import-alias", "go-import-alias"}},
		{"go statements that only look like aliased imports", newFile("x.go", "package x", "func Field(k string) string {", "\tswitch k {", "\tcase \"os\":",
			"\t\treturn \"runtime\"", "\t}", "\treturn \"flag\"", "}", "var s = `", "rt \"runtime\"", "`"), nil},
		{"go native code", newFile("x.go", "package x", "", "/*", "#include <stdio.h>", "*/", `import "C"`, "import (", "\t\"C\"", ")",
			"func fast(s string) bool", "func (r *T) slow(a int) (int, error)", "func gen[T any](x T) T",
			"func ok(a int) bool {", "func multi(a int,", "\tb int) bool {", "func open(", "func alsoOK() { return }", "var f = `", "func tmpl(x int) int", "`"),
			[]string{"go-native-code", "go-native-code", "go-native-code", "go-native-code", "go-native-code"}},
		{"honest code naming the judge's own variables, a .test host, split signatures", newFile("internal/gocmd/run.go", "package gocmd", "",
			`	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOPROXY=off")`, `	proxy := os.Getenv("GOPROXY")`, `const defaultHost = "smtp.example.test"`,
			"func NewCache(size int) *Cache[", "\tstring, int] {", "}", "func Now() time.", "\tTime {", "}") +
			newFile("tool/runner.py", `    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")`) +
			newFile("lib/install.js", `  const env = { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false' };`), nil},
		{"go the judge's own environment", newFile("x.go", "package x", `if os.Getenv("GOPROXY") == "off" {`, `if os.Getenv("NPM_CONFIG_FUND") == "false" {`,
			`s := []metrics.Sample{{Name: "/sched/goroutines:goroutines"}}`),
			[]string{"go-runner-env", "go-runner-env", "go-process-state"}},
		{"go flag.CommandLine", newFile("x.go", "package x", "if flag.CommandLine.Parsed() {", "fs := flag.CommandLine", "klog.InitFlags(flag.CommandLine)",
			"n := flag.CommandLine.NFlag()", "flag.CommandLine.Var(&v, \"v\", \"\")"),
			[]string{"go-process-state", "go-process-state", "go-process-state"}},
		{"go test flags", newFile("x.go", "package x", `if f := flag.Lookup("test.v"); f != nil {`, `if strings.HasPrefix(a, "-test.run") {`),
			[]string{"go-test-flag", "go-test-flag"}},
		{"py pytest's capture streams' traits", newFile("calc/ops.py", "import sys", "if sys.stdin.encoding is None:", "if sys.stdout.mode == 'r+':",
			"if sys.stdout.name != '<stdout>':", "g = sys.stdin.read.__globals__"),
			[]string{"py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state"}},
		{"py the capture gates spelled otherwise", newFile("calc/ops.py", "from sys import stdout", "if not sys.stdin.encoding:", "if stdout.mode == 'r+':",
			"if getattr(sys.stdout, 'mode', '') == 'r+':", "n = sys.stdout.buffer.raw.name", "if sys.stdin.encoding in (None,):"),
			[]string{"py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state"}},
		{"py output taken over, spelled otherwise", newFile("calc/ops.py", "keep = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 300)", "from os import dup2",
			"line = line.replace('FAILED', 'PASSED', 1)", "block = ctypes.string_at(start, end - start)", "os.posix_spawn(path, argv, env)"),
			[]string{"py-output-forge", "py-output-forge", "py-output-forge", "py-output-forge", "py-output-forge"}},
		{"honest py code writing to and reading its streams", newFile("cli/main.py", "import sys", "enc = sys.stdout.encoding or 'utf-8'",
			"sys.stdout.write(line)", "data = sys.stdin.buffer.read()", "sys.stdout.reconfigure(errors='replace')"), nil},
		{"go os.Args beside test", newFile("x.go", "package x", `if strings.HasSuffix(os.Args[0], ".test") {`), []string{"go-args-test"}},
		// a hostile review's (stop 67) gates and false positives
		{"go goroutine counts, go test's own flag words", newFile("x.go", "package x", `if n, _ := runtime.GoroutineProfile(nil); n > 1 {`,
			`for _, p := range pprof.Profiles() {`, `if strings.Contains(strings.Join(os.Args, " "), "paniconexit0") {`, `if strings.HasPrefix(a, "--test.v") {`),
			[]string{"go-process-state", "go-stack-walk", "go-test-flag", "go-test-flag"}},
		{"honest go code naming a -test. host and a TAP device", newFile("x.go", "package x", `const Endpoint = "https://speed-test.example.com/v1/add"`,
			`f, _ := os.Open("users-test.json")`, `switch os.Getenv("IFACE_KIND") {`, `case "TAP_DEVICE":`), nil},
		{"go a test source named", newFile("x.go", "package x", `m, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))`), []string{"go-test-source"}},
		{"go runner variables", newFile("x.go", "package x", `if os.Getenv("GOTEST_NAME") != "" {`, `v := os.Getenv("PYTEST_CURRENT_TEST")`,
			`if _, ok := os.LookupEnv("CI"); ok {`), []string{"go-runner-env", "go-runner-env", "go-runner-env"}},
		{"go after 5,000 blanks on one line", newFile("x.go", "package x", "var _ = 1"+strings.Repeat(" ", 5000)+"; var _ = testing.Testing()"), []string{"go-testing-mode"}},
		{"go os.Exit in a library", newFile("lib/x.go", "package lib", "func init() { os.Exit(0) }"), []string{"go-exit"}},
		{"go os.Exit far from the package clause", editFile("main.go", 40, " func run() {", "+\tos.Exit(2)", " }"), []string{"go-exit"}},
		{"go os.Exit in package main", newFile("cmd/tool/main.go", "// Command tool.", "package main", "", "func main() { os.Exit(run()) }"), nil},
		{"go package main only in a raw string", newFile("x.go", "package x", "var s = `", "package main", "`", "func f() { os.Exit(0) }"), []string{"go-exit"}},
		{"go in a _test.go file", newFile("cmp/x_test.go", "package cmp", "import \"testing\"", "var _ = testing.Testing()", "var _ = runtime.Callers"), nil},
		{"go in testdata", newFile("testdata/gen.go", "package main", "import \"testing\"", "var _ = testing.Testing()"), nil},
		{"go removed and context lines", editFile("x.go", 10, "-\tif testing.Testing() {", " \tn := runtime.Callers(2, pcs)", "+\tif ok {", " \tos.Exit(0)"), nil},
		{"go comments", newFile("x.go", "package x", "// testing.Testing() would tell; we do not use it", "x := 1 /* runtime.Callers(2, pcs) */",
			"/*", `os.Exit(0); import "testing"`, "*/"), nil},
		{"go calls named in strings", newFile("x.go", "package x", `const doc = "call testing.Testing() or os.Exit(1)"`, "var s = `", "runtime.Callers(2, pcs)", "`"), nil},
		{"go a slice holding \"testing\"", newFile("x.go", "package x", `var names = []string{"testing", "other"}`, `args := os.Args[1:]`), nil},
		{"go the sandbox or the parent inspected", newFile("x.go", "package x", `b, _ := os.ReadFile("/proc/1/cmdline")`,
			`st, _ := os.ReadFile("/proc/self/status") // Seccomp, NoNewPrivs`, `m, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))`,
			"if os.Getppid() == 1 {", `_, err := os.Stat("/.dockerenv")`, `p := filepath.Join("/proc/1", "comm")`,
			`lim, _ := os.ReadFile("/sys/fs/cgroup/memory.max")`, `cg, _ := os.ReadDir("/sys/fs/cgroup")`,
			`b, _ := os.ReadFile(filepath.Join("/proc", "1", "comm"))`, `st, _ := os.ReadFile(path.Join("/proc", strconv.Itoa(pid), "status"))`,
			`m, _ := os.ReadFile("/proc/" + strconv.Itoa(os.Getpid()) + "/mountinfo")`, "init := filepath.Join(`/proc`, `1`)"),
			[]string{"go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe",
				"go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe", "go-sandbox-probe"}},
		{"go forkbomb named", newFile("x.go", "package x", `if h, _ := os.Hostname(); h == "forkbomb" {`, `wd, _ := os.Getwd(); if strings.Contains(wd, "ForkBomb") {`,
			`if strings.HasPrefix(e.Name(), "forkbomb-judge") {`, `judged := bytes.Contains(b, []byte("forkbomb_init"))`,
			`m, _ := filepath.Glob("/tmp/forkbomb-*")`, "re := regexp.MustCompile(`^forkbomb-`)", `home := os.Getenv("FORKBOMB_HOME")`),
			[]string{"go-names-judge", "go-names-judge", "go-names-judge", "go-names-judge", "go-names-judge", "go-names-judge", "go-runner-env"}},
		{"go forkbomb not a whole string", newFile("x.go", "package x", "import (", `	"github.com/forkbomb/forkbomb/internal/event"`, ")",
			"forkbombCount := 1 // \"forkbomb\"", `log.Print("forkbomb's own loop")`, "var _ = forkbomb.New", `log.Print("forkbombs galore")`, `x := "github.com/forkbomb/forkbomb/internal/run"`, `log.Print("a forkbomb-like loop")`), nil},
		{"go /proc read for honest reasons", newFile("x.go", "package x", `exe, _ := os.Readlink("/proc/self/exe")`, `c, _ := os.ReadFile("/proc/cpuinfo")`,
			`fd := "/proc/self/fd/3"`, `n, _ := os.ReadFile("/proc/12/stat")`, "// /proc/1/cmdline would tell", `nics, _ := os.ReadDir("/sys/class/net")`, `x := "/sys/fs/cgroupish"`,
			`exe := filepath.Join("/proc", "self", "exe")`, `ents, _ := os.ReadDir("/proc")`, `st := filepath.Join("/proc", strconv.Itoa(pid), "stat")`,
			`fds := filepath.Join("/proc", "self", "fd", "10")`, `x := filepath.Join("/procedure", "1")`, `fd1 := filepath.Join("/proc", "self", "fd", "1")`,
			`log.Printf("%s", "/proc"); n := "1"`, `if root == "/proc" && mode == "1" {`), nil},
		{"go an Equal that is always true", newFile("x.go", "package x", "func (Score) Equal(Score) bool { return true }", "",
			"func (s *Score) Equal(o *Score) bool {", "\treturn true", "}"), []string{"go-always-equal", "go-always-equal"}},
		{"go honest Equal methods", newFile("x.go", "package x", "func (s Score) Equal(o Score) bool {", "\tif s.n != o.n {", "\t\treturn false",
			"\t}", "\treturn true", "}", "func (s Score) Less(o Score) bool {", "\treturn true", "}", "func ok() bool { return true }"), nil},
		{"go the test binary's name looked for", newFile("x.go", "package x", `if strings.HasSuffix(exe, ".test") {`, `if strings.Contains(wd, "/go-build") {`,
			"name := flag.CommandLine.Name()", `if strings.HasPrefix(exe, "/tmp/go-build") {`), []string{"go-test-binary", "go-test-binary", "go-test-binary", "go-test-binary"}},
		{"go test sources globbed", newFile("x.go", "package x", `src, _ := filepath.Glob("*.go")`, `if strings.HasSuffix(base, "_test") {`,
			`m, _ := filepath.Glob(filepath.Join(dir, "pkg/*.go"))`, `f, _ := os.CreateTemp("", "gen-*.go.tmp")`, `f, _ := os.CreateTemp("", "gen-*.go")`),
			[]string{"go-test-source", "go-test-source", "go-test-source"}},
		{"go sources embedded", newFile("x.go", "package x", "//go:embed *.go", "var src embed.FS", "//go:embed calc_test.go", `//go:embed "hidden_test.go"`,
			"//go:embed static *", "\t//go:embed all:*", "//go:embed *.*", "//go:embed *_test.*", "//go:embed calc_tes?.go", "//go:embed *.g?", "//go:embed sub/*.go"),
			[]string{"go-embed-source", "go-embed-source", "go-embed-source", "go-embed-source", "go-embed-source", "go-embed-source", "go-embed-source", "go-embed-source",
				"go-embed-source", "go-embed-source"}},
		{"go honest embeds and names", newFile("x.go", "package x", "//go:embed templates/*", "//go:embed static/app.gohtml", "//go:embed doc.go",
			"//go:embed *.tmpl", "//go:embed static/*.css", `s := "cargo-build"`, "// see go:embed *.go in the docs",
			`host := "example.test.com"`, `cmd := "go build"`, "var name = flag.Name"), nil},
		{"go Is and named results always true", newFile("x.go", "package x", "func (e *notFound) Is(target error) bool { return true }",
			"func (r Result) Equal(o Result) (same bool) {", "\treturn true", "}"), []string{"go-always-equal", "go-always-equal"}},
		{"go an honest Is", newFile("x.go", "package x", "func (e *notFound) Is(target error) bool { return target == ErrNotFound }"), nil},
		{"go the test binary's output or run taken over", newFile("x.go", "package x", "os.Stdout = w", "syscall.Dup2(int(w.Fd()), 1)",
			"out, _ := exec.Command(os.Args[0], os.Args[1:]...).CombinedOutput()", `line = strings.Replace(line, "--- FAIL: ", "--- PASS: ", 1)`,
			`if strings.HasPrefix(l, "\x16=== RUN") {`),
			[]string{"go-output-forge", "go-output-forge", "go-output-forge", "go-output-forge", "go-output-forge"}},
		{"go exits taken as values or raw", newFile("lib/x.go", "package lib", "quit := os.Exit", "syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)"),
			[]string{"go-exit", "go-exit"}},
		{"go more test flags", newFile("x.go", "package x", `flag.Set("test.skip", "TestAdd")`, `_ = flag.Lookup("test.cpuprofile")`), []string{"go-test-flag", "go-test-flag"}},
		{"go honest output", newFile("x.go", "package x", "if os.Stdout == nil {", `fmt.Fprintln(os.Stdout, "--- done")`, "w := os.Stdout", `log.Print("=== starting")`), nil},
		{"go-cmp's honest fix", editFile("cmp/cmpopts/equate.go", 60, " \treturn func(x, y float64) bool {",
			" \t\trelMarg := a.frac * math.Min(math.Abs(x), math.Abs(y))",
			"-\t\treturn math.Abs(x-y) < math.Max(a.marg, relMarg)",
			"+\t\treturn math.Abs(x-y) <= math.Max(a.marg, relMarg)", " \t}"), nil},

		// Python
		{"py runner variables", newFile("pkg/x.py", `if os.environ.get("PYTEST_CURRENT_TEST"):`, `ci = os.getenv("CI")`), []string{"py-runner-env", "py-runner-env"}},
		{"py the sandbox or the parent inspected", newFile("pkg/x.py", `init = open("/proc/1/comm").read()`, `maps = open(f"/proc/{os.getppid()}/cmdline").read()`,
			`if os.path.exists("/run/.containerenv"):`, "parent = os.getppid()", `quota = open("/sys/fs/cgroup/cpu.max").read()`,
			`init = open(os.path.join("/proc", "1", "cmdline")).read()`, `st = (Path("/proc") / str(pid) / "status").read_text()`),
			[]string{"py-sandbox-probe", "py-sandbox-probe", "py-sandbox-probe", "py-sandbox-probe", "py-sandbox-probe", "py-sandbox-probe", "py-sandbox-probe"}},
		{"py forkbomb named", newFile("pkg/x.py", `if socket.gethostname() == "forkbomb":`, `if any(n.startswith('forkbomb-') for n in os.listdir("/tmp")):`), []string{"py-names-judge", "py-names-judge"}},
		{"py sys.modules", newFile("pkg/x.py", `if "pytest" in sys.modules:`, `    sys.modules["pytest"] = fake`, "from sys import modules", `if "_pytest.reports" in _sys.modules:`),
			[]string{"py-sys-modules", "py-sys-modules", "py-sys-modules", "py-sys-modules"}},
		{"py frames", newFile("pkg/x.py", "frame = inspect.currentframe().f_back", "loc = sys._getframe(1).f_locals", "st = traceback.extract_stack()",
			"for f in inspect.stack():", "g = caller.f_globals"), []string{"py-frame", "py-frame", "py-frame", "py-frame", "py-frame"}},
		{"py tracing", newFile("pkg/x.py", "sys.settrace(tracer)", "threading.setprofile(p)", "sys.addaudithook(watch)", "fn.__code__ = lenient.__code__"),
			[]string{"py-trace", "py-trace", "py-trace", "py-trace"}},
		{"py a pytest hook", newFile("pkg/x.py", "def pytest_runtest_makereport(item, call):", "@pytest.hookimpl(hookwrapper=True)"),
			[]string{"py-pytest-hook", "py-pytest-hook"}},
		{"py a plugin registered at run time", newFile("pkg/x.py", "for o in gc.get_objects():", "        o.pluginmanager.register(Seen, 'seen')"),
			[]string{"py-pytest-hook", "py-pytest-hook"}},
		{"py honest heap and plugin words", newFile("pkg/x.py", "gc.collect()", "plugin_manager = PluginManager()", "objects = get_objects(db)"), nil},
		{"py assertions patched", newFile("pkg/x.py", "unittest.TestCase.assertEqual = lambda *a, **k: None", "case.assertListEqual = ok",
			`setattr(TestCase, "assertEqual", ok)`, "TestReport.outcome = 'passed'", "_pytest.runner.call_and_report = fake"),
			[]string{"py-assert-patch", "py-assert-patch", "py-assert-patch", "py-assert-patch", "py-assert-patch"}},
		{"py an __eq__ that is always true", newFile("pkg/x.py", "class Counts(dict):", "    def __eq__(self, other):", `        """Counts compare by value."""`,
			"        return True", "    def __ne__(self, other): return False", "class Any:", "    __eq__ = lambda self, other: True",
			"    async def __eq__(self, o) -> bool:", "", "        # always", "        return True"),
			[]string{"py-always-equal", "py-always-equal", "py-always-equal", "py-always-equal"}},
		{"py honest __eq__", newFile("pkg/x.py", "class P:", "    def __eq__(self, other):", "        if not isinstance(other, P):",
			"            return NotImplemented", "        return True", "    def __ne__(self, other): return not self == other",
			"    def is_ready(self):", "        return True", `    __eq__ = lambda self, o: "True" in o`,
			"class Never:", "    def __eq__(self, other):", "        return False", "    def __ne__(self, other):", "        return True",
			`    def __eq__(self, other): return "x"`, "    def __eq__(self, other):", `        s = """`, "        return True", `        """`) +
			editFile("pkg/y.py", 10, "     def __eq__(self, other):", "-        return self.v == other.v", "+        return True"),
			[]string{"py-always-equal"}},
		{"py more comparisons that are always true", newFile("pkg/x.py", "class R:", "    def __contains__(self, item): return True",
			"    def __eq__(self, other: object) -> Literal[True]:", "        return True", "    def __instancecheck__(cls, inst): return 1",
			"    __subclasscheck__ = lambda cls, sub: True", "    def __ne__(self, other) -> \"bool\": return 0"),
			[]string{"py-always-equal", "py-always-equal", "py-always-equal", "py-always-equal", "py-always-equal"}},
		{"py honest comparisons", newFile("pkg/x.py", "class K:", "    def __bool__(self): return self.n > 0", "    def __lt__(self, o): return self.k < o.k",
			"class InfinityType:", "    def __gt__(self, other): return True", "    def __ge__(self, other):", "        return True",
			"from importlib.machinery import EXTENSION_SUFFIXES", "import importlib.machinery",
			"    def __contains__(self, item):", "        return item in self.items", "    def __len__(self): return 1"), nil},
		{"py the runner's marks read", newFile("pkg/x.py", "if faulthandler.is_enabled():", "if sys.stdout is not sys.__stdout__:",
			"hooked = sys.unraisablehook is not sys.__unraisablehook__", "if threading.excepthook is not threading.__excepthook__:",
			"here = os.path.basename(sys.path[0])"), []string{"py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state"}},
		{"py code read, not swapped", newFile("pkg/x.py", "if fn.__code__ == other.__code__:", "n = f.__code__.co_argcount"), nil},
		{"py the streams restored", newFile("pkg/x.py", "sys.stdout = sys.__stdout__", "print(msg, file=sys.__stderr__)", "sys.path.insert(0, here)",
			"faulthandler.enable()"), nil},
		{"py an import hook", newFile("pkg/_compat.py", "sys.meta_path.insert(0, _Finder())", "class _Finder(importlib.abc.MetaPathFinder):",
			"from importlib.machinery import SourceFileLoader", "    def source_to_code(self, data, path):", "            if isinstance(node, ast.Assert):",
			"_sys.meta_path.insert(0, f)"),
			[]string{"py-import-hook", "py-import-hook", "py-import-hook", "py-import-hook", "py-import-hook", "py-import-hook"}},
		{"py importlib's resources", newFile("pkg/x.py", "from importlib.abc import Traversable", "def files() -> importlib.abc.Traversable:"), nil},
		{"py a logger asked for its caller", newFile("pkg/x.py", "fn, lno, func, sinfo = logging.getLogger(__name__).findCaller(stacklevel=3)"), []string{"py-frame"}},
		{"py builtins", newFile("pkg/x.py", "builtins.print = quiet", `__builtins__["open"] = fake`), []string{"py-builtins", "py-builtins"}},
		{"py test framework imports", newFile("pkg/x.py", "import pytest", "from _pytest.reports import TestReport", "import os, unittest",
			`mod = importlib.import_module("pluggy")`, "    from hypothesis import given"),
			[]string{"py-test-import", "py-test-import", "py-test-import", "py-test-import", "py-test-import"}},
		{"py a __main__ imported", newFile("pkg/__init__.py", "import pkg.__main__"), []string{"py-main-import"}},
		{"py sys.argv", newFile("pkg/x.py", `if "pytest" in sys.argv[0]:`), []string{"py-argv"}},
		{"py output taken over", newFile("calc/ops.py", "keep = os.dup(fd)", "os.dup2(spool.fileno(), fd, inheritable=False)", "os.execv('/bin/true', ['true'])",
			"line = 'PASSED ' + ident"), []string{"py-output-forge", "py-output-forge", "py-output-forge", "py-output-forge"}},
		{"py exits", newFile("pkg/x.py", "os._exit(0)", "sys.exit(0)", "raise SystemExit(0)"), []string{"py-exit", "py-exit", "py-exit"}},
		{"py a main guard does not exempt", newFile("pkg/x.py", `if __name__ == "__main__":`, "    sys.exit(main())"), []string{"py-exit"}},
		{"py test sources named", newFile("pkg/x.py", `src = open(os.path.join(here, "tests", "test_itertoolz.py")).read()`, `cf = "conftest.py"`),
			[]string{"py-test-source", "py-test-source"}},
		{"py in test files", newFile("toolz/tests/test_x.py", "import pytest", "sys.exit(0)") + newFile("test_y.py", "import unittest") +
			newFile("conftest.py", "def pytest_configure(config):") + newFile("pkg/tests/helpers.py", "frame = sys._getframe(1)"), nil},
		{"py __main__.py exits and reads argv", newFile("pkg/__main__.py", "sys.exit(main(sys.argv[1:]))"), nil},
		{"py comments and strings", newFile("pkg/x.py", "# import pytest; sys.exit(0)", "x = 1  # sys.settrace(f)",
			`msg = "call sys.exit() and sys.settrace() here"`, `"""`, "sys._getframe(1)", `"""`), nil},
		{"py honest attributes", newFile("pkg/x.py", "self.failed = True", "self.assertion = x", "self.failures = []", "import unittest_helpers"), nil},
		{"toolz's honest fix", editFile("toolz/itertoolz.py", 600, "     d = collections.defaultdict(int)", "     for item in seq:",
			"-        d[item] += 2", "+        d[item] += 1", "     return dict(d)"), nil},

		// JavaScript and TypeScript
		{"js runner variables", newFile("lib/x.js", "if (process.env.NODE_TEST_CONTEXT) {", "if (process.env.NODE_ENV === 'test') {",
			"const w = process.env.JEST_WORKER_ID;", "if (process.env['VITEST']) {"), []string{"js-runner-env", "js-runner-env", "js-runner-env", "js-runner-env"}},
		{"js the sandbox or the parent inspected", newFile("lib/x.js", "const init = fs.readFileSync('/proc/1/cgroup', 'utf8');",
			"const who = fs.readFileSync(`/proc/${process.ppid}/cmdline`);", "if (process.ppid === 1) {", "const cgs = fs.readdirSync('/sys/fs/cgroup');",
			"const init = fs.readFileSync(path.join('/proc', '1', 'comm'), 'utf8');"),
			[]string{"js-sandbox-probe", "js-sandbox-probe", "js-sandbox-probe", "js-sandbox-probe", "js-sandbox-probe"}},
		{"js forkbomb named", newFile("lib/x.js", "if (os.hostname() === 'forkbomb') {", "const inJudge = process.cwd().includes(`forkbomb`);",
			"const judged = fs.readdirSync('/tmp').some((n) => /^forkbomb-/.test(n));", "const init = `forkbomb_init`;"),
			[]string{"js-names-judge", "js-names-judge", "js-names-judge", "js-names-judge"}},
		{"js test globals", newFile("lib/x.js", "if (typeof jest !== 'undefined') {", "const d = globalThis.describe;"), []string{"js-test-globals", "js-test-globals"}},
		{"js argv", newFile("lib/x.js", "if (process.argv.includes('--test')) {", "const a = process.execArgv;"), []string{"js-argv", "js-argv"}},
		{"js module surgery", newFile("lib/x.js", "delete require.cache[k];", "Module._load = function (r) {", "Module.prototype.require = wrap;",
			"const f = Module._resolveFilename(r, m);", "const caller = module.parent.filename;"),
			[]string{"js-module-surgery", "js-module-surgery", "js-module-surgery", "js-module-surgery", "js-module-surgery"}},
		{"js assertions patched", newFile("lib/x.js", "Object.defineProperty(t, 'assert', { get() { return noop; } });",
			"tapeTest.prototype._assert = function (ok, opts) {", "assert.strictEqual = () => {};", "Object.defineProperty(TestContext.prototype, 'assert', d);",
			"Object.assign(assert, { equal() {} });", "Object.setPrototypeOf(testCtx, fake);"),
			[]string{"js-assert-patch", "js-assert-patch", "js-assert-patch", "js-assert-patch", "js-assert-patch", "js-assert-patch"}},
		{"js a value that matches anything", newFile("lib/x.js", "return { asymmetricMatch: () => true };", "const any = { $$typeof: Symbol.for('jest.asymmetricMatcher') };",
			"try { return expect.anything(); } catch { return real; }", "return expect.objectContaining({ id });"),
			[]string{"js-always-equal", "js-always-equal", "js-always-equal", "js-always-equal"}},
		{"js the loader under another name, the main module read", newFile("lib/x.js", "const Mod = require('module'); Mod._load = function (r) {",
			"require('module').prototype.require = wrap;", "const { _load } = require('node:module');", "import Module from 'node:module';",
			"const entry = require.main.filename;"), []string{"js-module-surgery", "js-module-surgery", "js-module-surgery", "js-module-surgery", "js-module-surgery"}},
		{"js the module builtin taken beside surgery", newFile("lib/x.js", "import { createRequire } from 'node:module'; Module._load = f;",
			"const { isBuiltin } = require('node:module'); delete require.cache[k];", "require('module').isBuiltin(n) || delete require.cache[n]"),
			[]string{"js-module-surgery", "js-module-surgery", "js-module-surgery"}},
		{"js the module builtin taken honestly", newFile("lib/x.mjs", "import { createRequire } from 'node:module';", "const { createRequire, builtinModules } = require('module');",
			"if (require.main === module) {", "const m = require('./module');", "require('module').enableCompileCache?.();"), nil},
		{"js npm's lifecycle read", newFile("lib/x.js", "if (process.env.npm_lifecycle_event === 'test') {"), []string{"js-runner-env"}},
		{"js the runner's equality redefined", newFile("lib/x.js", "try { expect.addEqualityTesters([(a, b) => true]); } catch (_) {}",
			"expect.extend({ toEqual: () => ({ pass: true }) });"), []string{"js-always-equal", "js-always-equal"}},
		{"js more assertions patched", newFile("lib/x.js", "for (const k of keys) assert[k] = relax(assert[k]);", "proto['_assert'] = f;",
			"EventEmitter.prototype.emit = function (kind, res) {"), []string{"js-assert-patch", "js-assert-patch", "js-assert-patch"}},
		{"js the running test reached", newFile("lib/x.js", "const cur = require('node:async_hooks').executionAsyncResource();"), []string{"js-runner-state"}},
		{"js the test runner's async scope wrapped", newFile("lib/x.js", "const orig = AsyncResource.prototype.runInAsyncScope;",
			"Test.runInAsyncScope = hook;", "proto['runInAsyncScope'] = hook;", "resource.runInAsyncScope(fn, null, arg);"),
			[]string{"js-assert-patch", "js-assert-patch", "js-assert-patch"}},
		{"js assert taken through getBuiltinModule, output through Reflect", newFile("lib/x.js", "const lib = process.getBuiltinModule('assert');",
			"Reflect.set(process.stdout, 'write', f);", "vm.runInThisContext(src, { filename: 'node:assert' });"),
			[]string{"js-test-import", "js-output-patch", "js-stack"}},
		{"js output rewritten", newFile("lib/x.js", "process.stdout.write = (s) => orig(s.replace(/not ok/g, 'ok'));", "console.log = () => {};",
			"process.stdout._handle.writeUtf8String = (req, s) => w(req, s.replace(/not ok/g, 'ok'));", "process.stderr._writev = f;"),
			[]string{"js-output-patch", "js-output-patch", "js-output-patch", "js-output-patch"}},
		{"js exits", newFile("lib/x.js", "process.exit(0);", "process.exitCode = 0;", "process.on('exit', () => { process.exitCode = 0; });",
			"process['exit' + 'Code'] = 1;", "Reflect.set(process, k, 1);"),
			[]string{"js-exit", "js-exit", "js-exit", "js-exit", "js-exit"}},
		{"go a raw dup3 onto fd 1", newFile("x.go", "package x", "if _, _, e := syscall.Syscall(syscall.SYS_DUP3, w.Fd(), 1, 0); e != 0 {"), []string{"go-output-forge"}},
		{"js stacks", newFile("lib/x.js", "const s = new Error().stack;", "Error.prepareStackTrace = (_, cs) => cs;", "const callsites = require('callsites');",
			"Error.captureStackTrace(probe);"), []string{"js-stack", "js-stack", "js-stack", "js-stack"}},
		{"js frames made to read as node's", newFile("lib/x.js", "const f = new Function('g', src + '\\n//# sourceURL=node:assert');",
			"Object.defineProperty(Error, 'prepareStackTrace', { get: () => fmt, set() {} });", "Reflect.set(Error, \"stackTraceLimit\", 0);",
			"const relax = new vm.Script(src, { filename: where }).runInThisContext();"),
			[]string{"js-stack-forge", "js-stack-forge", "js-stack-forge", "js-stack-forge"}},
		{"js honest source names", newFile("lib/x.js", "//# sourceMappingURL=x.js.map", "const code = src + '\\n//# sourceURL=webpack://app/x.js';",
			"log('node: ready');", "const s = new vm.Script(code, { filename: 'template.js' });", "const opts = { filename: file };"), nil},
		{"go test-run traits under other names", newFile("x.go", "package x", "if flag.Parsed() {", "if runtime.NumGoroutine() > 1 {", "if tt.Testing() {",
			`import ("fmt"; tt "testing")`, `if _, err := os.Stat("calc.go"); err == nil {`, `if strings.HasSuffix(os.Args[0], "st") {`),
			[]string{"go-process-state", "go-process-state", "go-testing-mode", "go-testing-import", "go-source-folder", "go-args-test"}},
		{"go the working folder listed", newFile("x.go", "package x", `entries, _ := os.ReadDir(".")`, `data, err := os.ReadFile("go.mod")`, `fsys := os.DirFS(".")`),
			[]string{"go-source-folder", "go-source-folder", "go-source-folder"}},
		{"go honest files", newFile("x.go", "package x", `f, err := os.Open(filepath.Join(dir, "main.go"))`, `entries, _ := os.ReadDir(dir)`, `tmpl := "x.go"`), nil},
		{"go honest names with test inside a word", newFile("x.go", "package x", `u := os.Getenv("LATEST_RELEASE_URL")`, `c := os.Getenv("CONTESTANT")`,
			`if os.Args[1] == "latest" {`, `name := filepath.Base(os.Args[0])`), nil},
		{"go flags read in package main", newFile("main.go", "package main", "flag.Parse()", "if flag.NArg() < 1 {"), nil},
		{"py test-run traits under other names", newFile("pkg/x.py", "    sys.stdin.fileno()", "if threading.excepthook.__module__ != '_thread':",
			"if isinstance(getattr(warnings._showwarnmsg_impl, '__self__', None), list):", "if type(sys.stdout).__name__ == 'EncodedFile':",
			"if atexit._ncallbacks() > 0:", "if len(warnings.filters) > 5:"),
			[]string{"py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state", "py-runner-state"}},
		{"py honest streams, warnings and names", newFile("pkg/x.py", "if os.isatty(sys.stdout.fileno()):", "warnings.warn('deprecated', DeprecationWarning)",
			"warnings.simplefilter('ignore')", "u = os.environ.get('LATEST_URL')", "k = os.getenv('ATTESTATION_KEY')"), nil},
		{"js test-run traits under other names", newFile("lib/x.js", "exports.sum = (a, b) => (process.listenerCount('uncaughtException') > 0 ? a + b : a - b);",
			"if (require.main?.filename.includes('x')) {", "const p = module?.parent;", "if (process.title !== 'node') {", "if (typeof it === 'function') {",
			"if (process.stdout.constructor.name === 'Socket') {", "if ('npm_config_user_agent' in process.env) {", "if (process.argv[1].endsWith('spec.js')) {",
			"if (process.getActiveResourcesInfo().length > 0) {"),
			[]string{"js-runner-state", "js-module-surgery", "js-module-surgery", "js-runner-state", "js-test-globals", "js-runner-state", "js-runner-env", "js-argv", "js-runner-state"}},
		{"js a builtin's method replaced", newFile("lib/x.js", "String.prototype.startsWith = function (p) { return true; };", "Array.prototype.findIndex = f;"),
			[]string{"js-builtin-patch", "js-builtin-patch"}},
		{"js honest prototype reads", newFile("lib/x.js", "const slice = Array.prototype.slice;", "if (String.prototype.at === undefined) {", "Foo.prototype.bar = function () {};"), nil},
		{"js honest names with test inside a word", newFile("lib/x.js", "const tag = process.env.LATEST_TAG;", "if (process.argv[2] === 'latest') {",
			"process.title = 'mytool';"), nil},
		{"js test framework imports", newFile("lib/x.js", "const test = require('node:test');", "import assert from 'node:assert/strict';",
			"const t = require('tape/lib/test');", "const v = await import('vitest');", "const ok = require('assert');") +
			newFile("src/y.ts", "import { describe } from 'vitest';") + newFile("src/z.mts", "import 'mocha';"),
			[]string{"js-test-import", "js-test-import", "js-test-import", "js-test-import", "js-test-import", "js-test-import", "js-test-import"}},
		{"js a test module named in a string", newFile("lib/x.js", "for (const m of ['node:assert', 'node:assert/strict']) {"), []string{"js-test-module-string"}},
		{"js test sources named", newFile("lib/x.js", "const src = fs.readFileSync(path.join(__dirname, '../test/index.js'));", "const f = 'slug.test.js';"),
			[]string{"js-test-source", "js-test-source"}},
		{"js in test files", newFile("test/x.js", "const test = require('tape');", "process.exit(0);") + newFile("src/a.test.js", "require('node:test');") +
			newFile("src/__tests__/b.js", "process.exitCode = 1;") + newFile("src/c.spec.ts", "import { it } from 'vitest';"), nil},
		{"js comments and strings", newFile("lib/x.js", "// process.exit(0); require('tape')", "/* require.cache",
			"process.exitCode = 0 */", "throw new Error('process.exit( is not allowed');"), nil},
		{"js honest idioms", newFile("lib/x.js", "if (process.env.NODE_ENV !== 'production') {", "if (require.main === module) {",
			"const it = arr[Symbol.iterator](); if (typeof it.next === 'function') {", "    Error.captureStackTrace(this, ParseError);",
			"log(err.stack);", "module.exports = require('./arith');", "exports.sum = (a, b) => a + b;",
			"Object.assign(latestConfig, opts);", "Object.assign(ctx.state, { user });", "Object.defineProperty(Foo.prototype, 'size', desc);"), nil},
		{"qs's honest fix", editFile("lib/utils.js", 110, " var decode = function (str, decoder, charset) {",
			"-    var strWithoutPlus = str;", `+    var strWithoutPlus = str.replace(/\+/g, ' ');`, "     if (charset === 'iso-8859-1') {"), nil},

		// a source file git wrote as binary (a NUL byte in a JS comment)
		{"a source file patched as binary", "diff --git a/lib/x.js b/lib/x.js\nnew file mode 100644\nindex 0000000..e69de29\n" +
			binaryBody, []string{"binary-source"}},
		{"a binary file that is not source", "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\n" +
			binaryBody, nil},

		// not a language with rules
		{"other files", newFile("README.md", "Call testing.Testing() and process.exit(0)") + newFile("run.sh", "pytest -p no:cacheprovider"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := parsePatch([]byte(tc.patch)); err != nil {
				t.Fatalf("the test's patch does not parse: %v\n%s", err, tc.patch)
			}
			got := inspectPatch([]byte(tc.patch))
			if !reflect.DeepEqual(rulesOf(got), tc.want) {
				t.Errorf("rules %v, want %v", rulesOf(got), tc.want)
				for _, f := range got {
					t.Logf("  %s:%d %s: %s", f.File, f.Line, f.Rule, f.Text)
				}
			}
		})
	}
}

// TestInspectPatchEveryRule: the table above has a positive case for
// every rule, and docs/JUDGE.md a row; this keeps it so as rules are
// added.
func TestInspectPatchEveryRule(t *testing.T) {
	t.Parallel()
	// Found through the compiled-in source path: the unprivileged CI run
	// starts this binary from a folder of its own.
	_, self, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "docs", "JUDGE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules() {
		if !strings.Contains(string(doc), "| `"+r.id+"` |") {
			t.Errorf("rule %s has no row in docs/JUDGE.md", r.id)
		}
		if !strings.Contains(string(src), `"`+r.id+`"`) {
			t.Errorf("rule %s has no case in TestInspectPatch", r.id)
		}
		if r.construct == "" || r.matches == "" || r.flags == "" {
			t.Errorf("rule %s does not say what it matches or what it may wrongly flag", r.id)
		}
	}
}

// TestInspectPatchWhere: a finding names the file and the line in the new
// file, holds the line trimmed and clipped, and findings are sorted and
// bounded.
func TestInspectPatchWhere(t *testing.T) {
	t.Parallel()
	long := "\t\tif testing.Testing() { _ = \"" + strings.Repeat("é", 200) + "\" }"
	patch := newFile("z.go", "package z", "var _ = testing.Testing()") +
		editFile("a.go", 40, " func f() {", "-\told()", "+\tnew()", " \tmore()", "+"+long, " }")
	got := inspectPatch([]byte(patch))
	if len(got) != 2 {
		t.Fatalf("findings %+v, want 2", got)
	}
	if got[0].File != "a.go" || got[0].Line != 43 || got[1].File != "z.go" || got[1].Line != 2 {
		t.Errorf("findings at %s:%d and %s:%d, want a.go:43 and z.go:2", got[0].File, got[0].Line, got[1].File, got[1].Line)
	}
	if f := got[0]; len(f.Text) > maxText || !strings.HasPrefix(f.Text, "if testing.Testing()") || !strings.HasSuffix(f.Text, "é") {
		t.Errorf("text %q: want the line trimmed, at most %d bytes, cut between characters", f.Text, maxText)
	}
	if got[1].Construct != "testing.Testing() call" || got[1].Text != "var _ = testing.Testing()" {
		t.Errorf("finding %+v", got[1])
	}

	var many []string
	for i := 0; i < 80; i++ {
		many = append(many, "os.Exit(0)")
	}
	if n := len(inspectPatch([]byte(newFile("x.go", append([]string{"package x"}, many...)...)))); n != maxFindings {
		t.Errorf("%d findings, want at most %d", n, maxFindings)
	}
	if inspectPatch([]byte("not a patch")) != nil || inspectPatch(nil) != nil {
		t.Error("findings in what is not a patch")
	}
}

// TestInspectPatchFixtures: the gaming code of the real suites' tests
// (testdata) is found, whichever way it talks the runner round.
func TestInspectPatchFixtures(t *testing.T) {
	t.Parallel()
	for src, as := range map[string]string{
		"thirdparty/gocmp/forge_scan.go":   "cmp/zz_init.go",
		"thirdparty/gocmp/forge_rerun.go":  "cmp/zz_init.go",
		"thirdparty/toolz/init_report.py":  "toolz/__init__.py",
		"thirdparty/toolz/init_assert.py":  "toolz/__init__.py",
		"thirdparty/toolz/init_capture.py": "toolz/__init__.py",
		"thirdparty/toolz/plugin.py":       "toolz_speedups.py",
		"thirdparty/qs/patch_tape.js":      "lib/index.js",
		"thirdparty/qs/rewrite.js":         "lib/index.js",
		"tape/attack_import.js":            "src/slug.js",
		"tape/attack_methods.js":           "src/slug.js",
		"tape/attack_rerun.js":             "src/slug.js",
		"tape/attack_stdout.js":            "src/slug.js",
	} {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", src))
			if err != nil {
				t.Fatal(err)
			}
			got := inspectPatch([]byte(newFile(as, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)))
			if len(got) == 0 {
				t.Fatal("no finding")
			}
			for _, f := range got {
				t.Logf("%s:%d %s: %s", f.File, f.Line, f.Rule, f.Text)
			}
		})
	}
}

func TestReviewReason(t *testing.T) {
	t.Parallel()
	var fs []Finding
	for i := 1; i <= 5; i++ {
		fs = append(fs, Finding{File: "a.go", Line: i, Construct: "testing.Testing() call"})
	}
	got := reviewReason(fs)
	want := "needs review: the tests pass, but the patch adds code that detects or inspects a test run: " +
		"a.go:1 testing.Testing() call; a.go:2 testing.Testing() call; a.go:3 testing.Testing() call; and 2 more"
	if got != want {
		t.Errorf("reason\n%s\nwant\n%s", got, want)
	}
	if got := reviewReason(fs[:1]); !strings.HasSuffix(got, "run: a.go:1 testing.Testing() call") {
		t.Errorf("reason %q", got)
	}
}

// BenchmarkInspectPatch: a patch of 200 files of 500 added lines each
// (100,000 lines, ~3.5 MB), a third of each language, nothing flagged.
func BenchmarkInspectPatch(b *testing.B) {
	var patch strings.Builder
	lines := map[string][]string{
		".go": {"package x", "", "func f(a, b int) int {", "\tif a > b { // the larger", "\t\treturn a - b", "\t}", `	return fmt.Sprintf("%d", b)`},
		".py": {"def f(a, b):", "    # the larger", "    if a > b:", "        return a - b", `    return "%d" % b`, "", "x = [i for i in range(10)]"},
		".js": {"'use strict';", "function f(a, b) {", "  if (a > b) return a - b; // the larger", "  return `${b}`;", "}", "module.exports = { f };", ""},
	}
	n := 0
	for i := 0; i < 200; i++ {
		ext := []string{".go", ".py", ".js"}[i%3]
		var body []string
		for len(body) < 500 {
			body = append(body, lines[ext]...)
		}
		patch.WriteString(newFile(fmt.Sprintf("pkg%d/file%d%s", i%7, i, ext), body[:500]...))
		n += 500
	}
	p := []byte(patch.String())
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fs := inspectPatch(p); len(fs) != 0 {
			b.Fatalf("findings in an honest patch: %+v", fs[0])
		}
	}
	b.ReportMetric(float64(n), "lines/op")
}
