package run_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// repo has a bug (add subtracts) and a check that finds it.
func repo(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "lib.sh"), []byte("add() { echo $(($1 - $2)); }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte(". ./lib.sh\np=0; f=0\n[ \"$(add 2 3)\" = 5 ] && p=$((p+1)) || f=$((f+1))\necho \"$p passed, $f failed\"\n[ $f = 0 ]\n"), 0o644)
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}
