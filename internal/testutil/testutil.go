// Package testutil holds helpers shared by forkbomb's tests: git with a
// fixed identity, a folder outside the sandbox's masks, and the skip
// policy — every skip of a missing feature or tool goes through SkipOrFail
// or Need, so that FORKBOMB_REQUIRE_ALL=1 (CI) turns it into a failure.
package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Git runs git in dir with a fixed identity and no system or global
// configuration, failing the test on error; it returns the trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
