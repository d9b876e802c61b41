package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// errNoLandlock means the kernel has no Landlock; namespace mode carries on
// without this second layer, the probe reports it, and Landlock mode refuses.
var errNoLandlock = errors.New("landlock unavailable")

// landlockABI is the kernel's Landlock ABI version, 0 when absent.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// landlockNetABI is landlockABI where Landlock exists at all (Linux);
// the network rules came with ABI 4.
func landlockNetABI() int { return landlockABI() }

const allAccessFS = landlock.AccessFSSet(1<<17 - 1)

// applyLandlock restricts the calling thread (it must hold no_new_privs).
//
// In namespace mode the view is already built, so the rules are the same
// as the mounts: read and execute everywhere, write only to the writable
// trees, the private temp dirs and a few devices. Landlock cannot carve a
// read-only .git out of a writable tree; the mount layer alone does that.
//
// In Landlock mode, with the host's real tree, reading is granted only to
// the parts of the tree that hold nothing hidden (see readableRoots), and
// TCP is denied outright when offline.
func applyLandlock(cfg *initConfig) error {
	if landlockABI() < 1 {
		if cfg.Mode == ModeLandlock || cfg.Programs != nil {
			return errNoLandlock
		}
		return nil // reported by the probe; namespaces still confine
	}
	conf := landlock.Config{
		HandledAccessFS: allAccessFS,
		Scoped:          landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal),
	}
	if cfg.Mode == ModeLandlock && cfg.NewNet {
		conf.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP | ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP)
	}
	if cfg.ListenPort > 0 && (cfg.Mode != ModeLandlock || !cfg.NewNet || landlockABI() < 4) {
		// BestEffort would drop the network rules on an older kernel and
		// leave the caller's whole network open: refused instead.
		return fmt.Errorf("a listening proxy needs the landlock backend with Landlock ABI 4 (this kernel: %d)", landlockABI())
	}
	conf = conf.BestEffort()

	var rules []landlock.Rule
	var rwDirs, rwFiles []string
	split := func(paths []string, dirs, files *[]string) {
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				*dirs = append(*dirs, p)
			} else if err == nil {
				*files = append(*files, p)
			}
		}
	}
	if cfg.Mode == ModeNamespaces {
		rules = append(rules, landlock.PathAccess(cfg.Programs.strip(readDirRights), "/"))
		// Scratch paths are overlays whose writes go to a layer of their
		// own: writable wherever they are (a GOCACHE outside the home).
		split(append(append(append([]string{}, cfg.Writable...), cfg.Scratch...), "/tmp", "/var/tmp", cfg.Home, "/dev/shm"), &rwDirs, &rwFiles)
	} else {
		hidden := append(append(append([]string{}, cfg.HideDirs...), cfg.HideFiles...), "/tmp", "/dev")
		// The policy's hidden paths are left out of the grant like the
		// homes; one inside a tree granted below cannot be, so it is
		// refused rather than shown.
		hidden = append(hidden, cfg.Hide...)
		grants := append(append(append([]string{}, cfg.ReadOnly...), cfg.Toolchains...), cfg.Writable...)
		if err := hideGrantConflict(cfg.Hide, append(grants, cfg.PrivTmp, cfg.PrivHome, "/dev/shm")); err != nil {
			return err
		}
		roDirs, roFiles := readableRoots(hidden)
		split(append(append([]string{}, cfg.ReadOnly...), cfg.Toolchains...), &roDirs, &roFiles)
		if len(roDirs) > 0 {
			rules = append(rules, landlock.PathAccess(cfg.Programs.strip(readDirRights), roDirs...))
		}
		if len(roFiles) > 0 {
			rules = append(rules, landlock.PathAccess(cfg.Programs.strip(readFileRights), roFiles...))
		}
		split(append(append([]string{}, cfg.Writable...), cfg.PrivTmp, cfg.PrivHome, "/dev/shm"), &rwDirs, &rwFiles)
	}
	if len(rwDirs) > 0 {
		rules = append(rules, landlock.PathAccess(cfg.Programs.strip(rwDirRights), rwDirs...).WithRefer().WithResolveUnix())
	}
	if len(rwFiles) > 0 {
		rules = append(rules, landlock.PathAccess(cfg.Programs.strip(rwFileRights), rwFiles...))
	}
	rules = append(rules, landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty").WithIoctlDev().IgnoreIfMissing())
	if cfg.Mode == ModeNamespaces {
		// The sandbox's own devpts. Never the host's: in Landlock mode
		// /dev/pts holds the user's other terminals.
		rules = append(rules,
			landlock.RWFiles("/dev/ptmx").WithIoctlDev().IgnoreIfMissing(),
			landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSReadDir|ll.AccessFSIoctlDev), "/dev/pts").IgnoreIfMissing())
	}
	if cfg.ListenPort > 0 {
		// the one TCP port the command may connect to; no bind at all
		rules = append(rules, landlock.ConnectTCP(uint16(cfg.ListenPort)))
	}
	prules, err := cfg.Programs.rules()
	if err != nil {
		return err
	}
	rules = append(rules, prules...)
	fd, flags, err := conf.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		if cfg.Mode == ModeLandlock || cfg.Programs != nil {
			return errNoLandlock
		}
		return nil
	}
	defer func() { _ = closeFD(fd) }()
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// readableRoots splits the host tree into the largest paths that hold
// nothing hidden: a directory with a hidden path below it is descended
// into, everything else is granted whole. Symlinks are judged by where they
// point, so no link re-exposes a hidden folder.
func readableRoots(hidden []string) (dirs, files []string) {
	isHidden := func(p string) bool {
		for _, h := range hidden {
			if within(p, h) {
				return true
			}
		}
		return false
	}
	holdsHidden := func(p string) bool {
		for _, h := range hidden {
			if within(h, p) && h != p {
				return true
			}
		}
		return false
	}
	var visit func(dir string)
	visit = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if isHidden(p) {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil || isHidden(real) {
				continue
			}
			fi, err := os.Stat(real)
			if err != nil {
				continue
			}
			if holdsHidden(real) {
				if real == p && fi.IsDir() {
					visit(p)
				}
				continue
			}
			if fi.IsDir() {
				dirs = append(dirs, p)
			} else {
				files = append(files, p)
			}
		}
	}
	visit("/")
	return dirs, files
}
