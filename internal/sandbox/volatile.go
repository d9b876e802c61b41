package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrLayersLost: a kept overlay was last mounted without the flush on
// unmount (Overlay.Volatile, through ReadyVolatile) and the machine
// restarted before that mount ended, so what its commands wrote may be
// partly lost: overlayfs refuses to mount those layers again, and
// forkbomb does not vouch for them.
var ErrLayersLost = errors.New("the machine restarted while a command ran here with its writes not yet flushed; what it wrote may be lost")

// bootIDFile names this boot of the machine (a fresh random UUID at each).
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// ReadyVolatile readies the layers of an overlay kept for later mounts (a
// fork that lives on) for a mount with Overlay.Volatile, and says whether
// to use it. Without Volatile, every unmount — every command's end — makes
// overlayfs flush the whole filesystem its upper layer lives on: everything
// any process on the machine has written there, which under load costs
// far more than the command did. With it, a crash of the machine while
// mounted may lose writes, which overlayfs marks by a folder in the work
// layer (work/work/incompat/volatile) that makes it refuse a later mount.
//
// Only a restart of the machine loses anything: a mount ended by any
// other means, forkbomb killed included, leaves the writes in the page
// cache, where the next mount reads them. So before each mount the boot's
// ID is written beside work (work + ".boot"); a marker found with the same
// ID is overlayfs's own, from a mount of this boot, and is removed (what
// overlayfs's documentation allows "where the user knows that the system
// has not crashed"); one found with another ID, or none, is ErrLayersLost.
// Where the boot's ID cannot be read or written, it returns false: flush
// as before.
//
// Two commands at once over the same layers are not supported by
// overlayfs itself; here, the second's start removes the first's marker
// before its own mount writes it again.
func ReadyVolatile(work string) (bool, error) {
	boot, err := os.ReadFile(bootIDFile)
	if err != nil || len(bytes.TrimSpace(boot)) == 0 {
		return false, nil
	}
	stamp := work + ".boot"
	switch _, err := lstatOpening(work, volatileMarker...); {
	case err == nil:
		if was, _ := os.ReadFile(stamp); !bytes.Equal(was, boot) {
			return false, fmt.Errorf("%w (overlayfs's marker: %s)", ErrLayersLost, filepath.Join(append([]string{work}, volatileMarker...)...))
		}
		if err := EndVolatile(work); err != nil {
			return false, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("overlay work layer: %w", err)
	}
	if err := os.WriteFile(stamp, boot, 0o600); err != nil {
		return false, nil
	}
	return true, nil
}

// EndVolatile removes overlayfs's marker of a mount of work with
// Overlay.Volatile once that mount has ended (the sandbox it was mounted
// in has exited) on this boot: what it wrote is in the page cache, where
// the next mount reads it. Without a marker it does nothing.
func EndVolatile(work string) error {
	if _, err := lstatOpening(work, volatileMarker...); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("overlay work layer: %w", err)
	}
	marker := filepath.Join(append([]string{work}, volatileMarker...)...)
	if err := os.RemoveAll(marker); err != nil {
		return fmt.Errorf("overlay work layer: %w", err)
	}
	os.Remove(filepath.Dir(marker)) // incompat, when empty: the layer as a flushed mount leaves it
	return nil
}

// volatileMarker is where overlayfs marks a volatile mount, below its work
// folder.
var volatileMarker = []string{"work", "incompat", "volatile"}

// lstatOpening is Lstat of dir/names..., making each folder on the way —
// and the last, a folder — readable by its owner first: overlayfs leaves
// them mode 000, and an unprivileged owner could not look inside
// otherwise. It follows no link: a name that is not a folder is an error.
func lstatOpening(dir string, names ...string) (fs.FileInfo, error) {
	p := dir
	var info fs.FileInfo
	for _, n := range names {
		p = filepath.Join(p, n)
		var err error
		if info, err = os.Lstat(p); err != nil {
			return nil, err
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s: not a folder", p)
		}
		if info.Mode().Perm()&0o700 != 0o700 {
			if err := os.Chmod(p, 0o700); err != nil {
				return nil, err
			}
		}
	}
	return info, nil
}
