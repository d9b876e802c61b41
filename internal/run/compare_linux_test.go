package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestCompareRefusesLinks attacks the comparison of passing forks from a
// fork: fork 0 fixes the bug and replaces its test file by a symbolic
// link to a file of the host's outside every fork. The judge strips that
// edit (a test file), so the fork passes and the comparison reads the
// fork's test files — through the store's link-refusing Files. The link
// is left out with a note, and the host file's content reaches nothing:
// not the record, not the run's comparison. The control: fork 0 passed
// (the attack reached the comparison), the comparison ran, and the host
// file is there and readable by the test.
func TestCompareRefusesLinks(t *testing.T) {
	t.Parallel()
	outside, _ := testutil.OutsideDir(t)
	secret := filepath.Join(outside, "secret.txt")
	const word = "FORKBOMB-COMPARE-SECRET-7f3a"
	if err := os.WriteFile(secret, []byte("echo "+word+"\necho '1 passed, 0 failed'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := repo(t)
	o := options(t, dir)
	o.Forks, o.All, o.Verify = 2, true, run.DefaultVerify
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", `case $FORKBOMB_FORK in
0) sed -i 's/\$1 - \$2/$1 + $2/' lib.sh; rm check.sh; ln -s ` + secret + ` check.sh ;;
1) sed -i 's/\$1 - \$2/$2 + $1/' lib.sh ;;
esac`}}
	r, recDir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fork[0].Verdict != event.Pass || r.Fork[1].Verdict != event.Pass {
		t.Fatalf("control: want both forks passing, got %+v", r.Fork)
	}
	if len(r.Compared) != 1 {
		t.Fatalf("control: the forks were not compared: %+v", r.Compared)
	}
	if b, err := os.ReadFile(secret); err != nil || !strings.Contains(string(b), word) {
		t.Fatalf("control: the host file is not readable here: %v", err)
	}
	notes := strings.Join(r.Compared[0].Notes, "\n")
	if !strings.Contains(notes, "fork 0's check.sh is left out of its tests") {
		t.Errorf("the link was not left out with a note; notes:\n%s", notes)
	}
	filepath.WalkDir(recDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), word) {
				t.Errorf("LEAK: the host file's content is in %s", p)
			}
		}
		return nil
	})
}
