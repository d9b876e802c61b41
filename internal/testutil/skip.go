package testutil

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// RequireAllEnv names the variable that turns every skip of forkbomb's
// tests into a failure. CI sets it: there the machine is provisioned with
// every tool and kernel feature, so a skip means a test that silently
// stopped testing, not a machine that cannot run it.
const RequireAllEnv = "FORKBOMB_REQUIRE_ALL"

// RequireAll reports whether skips are failures in this run.
func RequireAll() bool { return os.Getenv(RequireAllEnv) == "1" }

// SkipOrFail skips the test with the reason — something this machine lacks
// (a kernel feature, a tool, a writable folder) — or, with
// FORKBOMB_REQUIRE_ALL=1, fails it with the same reason.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if RequireAll() {
		t.Fatalf(RequireAllEnv+"=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

// SkipNotApplicable skips a test that has nothing to prove here, whatever
// FORKBOMB_REQUIRE_ALL says: the attack is impossible on this machine even
// unconfined (a kernel that refuses it outright), or the test is about the
// other identity, whose run of the suite covers it (scripts/test runs it as
// root and as an unprivileged user). A missing feature or tool is never
// that: it goes through SkipOrFail.
func SkipNotApplicable(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skipf(format, args...)
}

// Need skips (or, under FORKBOMB_REQUIRE_ALL=1, fails) a test when a tool
// it runs is not on PATH; scripts/test installs every tool a test needs.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "%s not installed (scripts/test installs it)", tool)
		}
	}
}

// SystemPython is the interpreter the tests run pytest with: Debian's, with
// Debian's pytest. A python3 earlier on PATH (pyenv, a venv) may lack it.
const SystemPython = "/usr/bin/python3"

var pytestOnce = sync.OnceValue(func() bool {
	return exec.Command(SystemPython, "-m", "pytest", "--version").Run() == nil
})

// NeedPytest skips (or, under FORKBOMB_REQUIRE_ALL=1, fails) a test when
// SystemPython cannot run pytest.
func NeedPytest(t testing.TB) {
	t.Helper()
	if !pytestOnce() {
		SkipOrFail(t, "pytest not installed for %s (scripts/test installs python3-pytest)", SystemPython)
	}
}
