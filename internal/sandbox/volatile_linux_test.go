package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestReadyVolatile: the layers of a kept overlay are mounted without the
// flush on unmount only while the machine has not restarted since their
// last such mount. overlayfs's marker of an unflushed mount is removed
// when the boot's ID beside it is this boot's (the mount ended without a
// restart: its writes are in the page cache), and refused — the marker
// left as it was — when it is another's or missing.
func TestReadyVolatile(t *testing.T) {
	t.Parallel()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		testutil.SkipOrFail(t, "no boot ID on this kernel (%v): ReadyVolatile flushes as before", err)
	}
	// marked makes a work layer as an unflushed mount leaves it: the
	// marker inside overlayfs's own folder, mode 000 as overlayfs leaves it.
	marked := func(t *testing.T) (work, marker string) {
		work = filepath.Join(t.TempDir(), "work")
		marker = filepath.Join(work, "work", "incompat", "volatile")
		if err := os.MkdirAll(filepath.Join(marker, "dirty"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(work, "work"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(work, "work"), 0o700) })
		return work, marker
	}
	t.Run("fresh layers", func(t *testing.T) {
		work := filepath.Join(t.TempDir(), "work")
		os.Mkdir(work, 0o700)
		ok, err := sandbox.ReadyVolatile(work)
		if err != nil || !ok {
			t.Fatalf("ReadyVolatile = %v, %v; want true", ok, err)
		}
		if got, _ := os.ReadFile(work + ".boot"); string(got) != string(boot) {
			t.Errorf("boot stamp %q, want this boot's %q", got, boot)
		}
	})
	t.Run("marker of this boot", func(t *testing.T) {
		work, marker := marked(t)
		os.WriteFile(work+".boot", boot, 0o600)
		ok, err := sandbox.ReadyVolatile(work)
		if err != nil || !ok {
			t.Fatalf("ReadyVolatile = %v, %v; want true", ok, err)
		}
		if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the marker of a mount of this boot is still there (%v): overlayfs would refuse the next mount", err)
		}
	})
	for name, stamp := range map[string]*string{"marker of another boot": ptr("00000000-0000-0000-0000-000000000000\n"), "marker with no stamp": nil} {
		t.Run(name, func(t *testing.T) {
			work, marker := marked(t)
			if stamp != nil {
				os.WriteFile(work+".boot", []byte(*stamp), 0o600)
			}
			ok, err := sandbox.ReadyVolatile(work)
			if !errors.Is(err, sandbox.ErrLayersLost) || ok {
				t.Fatalf("ReadyVolatile = %v, %v; want ErrLayersLost", ok, err)
			}
			if _, err := os.Lstat(marker); err != nil {
				t.Errorf("the marker of a mount cut by a restart is gone (%v): its layers would be mounted as if whole", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
