package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestReclaimStale: the temporary directories of a forkbomb that was
// killed are removed by the next one; a live process's are kept.
func TestReclaimStale(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(os.TempDir(), fmt.Sprintf("forkbomb-sbx-%d-123", dead.Process.Pid))
	live := filepath.Join(os.TempDir(), fmt.Sprintf("forkbomb-sbx-%d-456", os.Getppid()))
	other := filepath.Join(os.TempDir(), "not-ours-1-2")
	for _, d := range []string{stale, live, other} {
		writeFile(t, filepath.Join(d, "sub", "f"), "x")
	}
	os.Chmod(filepath.Join(stale, "sub"), 0o500) // as a command may leave it
	sandbox.ReclaimStale()
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("a dead process's temp dir was kept")
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
}
