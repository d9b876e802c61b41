package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// initCaps are the capabilities (in the sandbox's own user namespace) the
// init keeps across its exec to build the mount tree and bring up loopback.
// They mean nothing outside the namespace and are dropped before the command
// starts.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER}

// Where the init builds the new root. /tmp is covered by a private tmpfs
// first; after pivot_root into it the host's root, /tmp included, stays
// reachable at /oldroot until the final pivot (the bubblewrap technique).
const (
	baseDir = "/tmp"
	newRoot = "/newroot"
	oldRoot = "/oldroot"
)

// setupNamespaces builds the sandbox's filesystem view and network, then
// pivots into it. It runs as the init, with CAP_SYS_ADMIN in the new user
// namespace only.
func setupNamespaces(cfg *initConfig) error {
	// Nothing mounted from here on may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &nsRefused{fmt.Errorf("make mounts private: %w", err)}
	}
	if err := unix.Mount("tmpfs", baseDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return &nsRefused{fmt.Errorf("mount base tmpfs: %w", err)}
	}
	for _, d := range []string{newRoot, oldRoot} {
		if err := os.Mkdir(baseDir+d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(baseDir+"/empty", nil, 0o444); err != nil {
		return err
	}
	if err := unix.PivotRoot(baseDir, baseDir+oldRoot); err != nil {
		return fmt.Errorf("pivot_root into base: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}

	// The whole host, read-only, without setuid or device files.
	if err := unix.Mount(oldRoot, newRoot, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind host root: %w", err)
	}
	if err := setattr(newRoot, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
		return fmt.Errorf("make host root read-only: %w", err)
	}
	// The proxy socket's folder, taken while the view still shows it: the
	// masks below hide it from the command (see openProxyDir).
	if cfg.Proxy != nil {
		if err := openProxyDir(cfg.Proxy); err != nil {
			return err
		}
	}

	// Home directories, service sockets: empty tmpfs, made read-only below.
	// Each hidden tmpfs is made read-only at the end through a descriptor
	// taken now: by then a bind (the private home) may sit on top of its
	// path, and a path would reach that instead.
	var hidden []int
	defer func() {
		for _, fd := range hidden {
			unix.Close(fd)
		}
	}()
	for _, d := range cfg.HideDirs {
		fi, err := os.Lstat(newRoot + d)
		if err != nil || !fi.IsDir() {
			continue // absent, or a symlink to something hidden anyway
		}
		if err := unix.Mount("tmpfs", newRoot+d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
			return fmt.Errorf("hide %s: %w", d, err)
		}
		fd, err := unix.Open(newRoot+d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("hide %s: %w", d, err)
		}
		hidden = append(hidden, fd)
	}
	for _, f := range cfg.HideFiles {
		fi, err := os.Lstat(newRoot + f)
		if err != nil || fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := unix.Mount("/empty", newRoot+f, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hide %s: %w", f, err)
		}
		if err := setattr(newRoot+f, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return fmt.Errorf("hide %s: %w", f, err)
		}
	}

	if err := mountProc(cfg.LastPid); err != nil {
		return err
	}
	if err := mountDev(); err != nil {
		return err
	}

	// The policy's hidden paths (forkbomb's state, hidden tests, the
	// user's repository), then private /tmp and /var/tmp, and a fresh
	// empty home. Hidden paths are sorted with the binds: what the policy
	// exposes below one (the workdir inside FORKBOMB_HOME) is mounted on
	// top of its empty tmpfs, and one inside an exposed tree covers that
	// part of it.
	var binds []bind
	for _, h := range cfg.Hide {
		binds = append(binds, bind{dst: h, hide: true})
	}
	binds = append(binds,
		bind{src: cfg.PrivTmp, dst: "/tmp", rw: true},
		bind{src: cfg.PrivTmp, dst: "/var/tmp", rw: true},
		bind{src: cfg.PrivHome, dst: cfg.Home, rw: true},
	)
	for _, p := range cfg.Toolchains {
		binds = append(binds, bind{src: p, dst: p})
	}
	for _, p := range cfg.ReadOnly {
		binds = append(binds, bind{src: p, dst: p})
	}
	for i, p := range cfg.Writable {
		b := bind{src: p, dst: p, rw: true}
		if i == 0 && cfg.Overlay != nil {
			b.overlay = cfg.Overlay
		}
		binds = append(binds, b)
	}
	for i, p := range cfg.Scratch {
		// Its layers live in the private temp dir, removed afterwards.
		// beside the private /tmp, not in it: the command must not reach
		// the layers of a mounted overlay
		base := fmt.Sprintf("%s/scratch-%d", filepath.Dir(cfg.PrivTmp), i)
		layers := cfg.ScratchLayers[p]
		// Thrown away afterwards, so nothing to flush on unmount; a
		// kept layer is flushed, since a later run will read it.
		volatile := layers.Keep == ""
		if !volatile {
			base = layers.Keep
		}
		up, work := base+"/upper", base+"/work"
		for _, d := range []string{oldRoot + up, oldRoot + work} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		lower := append(append([]string{}, layers.Lower...), p)
		binds = append(binds, bind{src: p, dst: p, rw: true, overlay: &Overlay{Lower: lower, Upper: up, Work: work, Volatile: volatile}})
	}
	// Parents before children, so a narrower bind lands on top of a wider;
	// at equal depth the order above holds (a hidden path before a bind of
	// the same path, which the caller asked to see).
	sort.SliceStable(binds, func(i, j int) bool {
		return depth(binds[i].dst) < depth(binds[j].dst)
	})
	for _, b := range binds {
		if b.hide {
			fd, err := hideInView(b.dst)
			if err != nil {
				return err
			}
			if fd >= 0 {
				hidden = append(hidden, fd)
			}
			continue
		}
		if err := b.mount(); err != nil {
			return err
		}
	}
	// Credential files inside toolchain folders (cargo's token) stay hidden.
	for _, f := range cfg.HideFiles {
		for _, t := range cfg.Toolchains {
			if within(f, t) {
				if fi, err := os.Lstat(newRoot + f); err == nil && fi.Mode().IsRegular() {
					if err := unix.Mount("/empty", newRoot+f, "", unix.MS_BIND, ""); err != nil {
						return fmt.Errorf("hide %s: %w", f, err)
					}
					_ = setattr(newRoot+f, false, unix.MOUNT_ATTR_RDONLY, 0)
				}
			}
		}
	}
	for _, fd := range hidden {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make a hidden folder read-only: %w", err)
		}
	}

	if cfg.NewNet {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up loopback: %w", err)
		}
	}
	// The machine keeps its name: the UTS namespace (a sethostname inside
	// stays inside) starts with the host's, which /etc/hostname also
	// gives. A name of the sandbox's own told code under test it was
	// confined — and, in the judge, judged (TestJudgeThirdPartyGo).

	// Final pivot: the base tmpfs and the host root under it go away.
	if err := os.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into sandbox: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach host root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := protectGitDirs(cfg.GitDirs, cfg.Writable); err != nil {
		return err
	}
	return noexecWritable(cfg)
}

// nsRefused is a failure of the very first steps in the new namespaces:
// the kernel or a security module refusing them, not anything the
// repository could cause.
type nsRefused struct{ err error }

func (e *nsRefused) Error() string { return e.err.Error() }
func (e *nsRefused) Unwrap() error { return e.err }

type bind struct {
	src, dst string
	rw       bool
	overlay  *Overlay // mount this overlay at dst instead of binding src
	hide     bool     // cover dst with an empty tmpfs (see hideInView); src unused
}

// mount bind-mounts the host path b.src (reached through /oldroot) at b.dst
// in the new root, creating the mount point if a hidden tmpfs or the
// private home covers it.
func (b bind) mount() error {
	src, dst := oldRoot+b.src, newRoot+b.dst
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", b.src, err)
	}
	if fi.IsDir() {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", b.dst, err)
		}
	} else if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", b.dst, err)
		}
		if err := os.WriteFile(dst, nil, 0o644); err != nil {
			return fmt.Errorf("mount point %s: %w", b.dst, err)
		}
	}
	if b.overlay != nil {
		return mountOverlay(b.overlay, dst)
	}
	// The parent checked canonical paths; a symlink in one now means
	// something swapped a component since. Open both ends refusing any
	// symlink and mount through the descriptors, so what is mounted is
	// what was checked.
	sfd, err := openNoSymlinks(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", b.src, err)
	}
	defer unix.Close(sfd)
	dfd, err := openNoSymlinks(dst)
	if err != nil {
		return fmt.Errorf("bind %s: mount point: %w", b.dst, err)
	}
	defer unix.Close(dfd)
	if err := unix.Mount(fdPath(sfd), fdPath(dfd), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", b.dst, err)
	}
	set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !b.rw {
		set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := setattr(dst, true, set, 0); err != nil {
		return fmt.Errorf("restrict %s: %w", b.dst, err)
	}
	return nil
}

// openNoSymlinks opens path as an O_PATH descriptor, failing if any
// component is a symlink (openat2 RESOLVE_NO_SYMLINKS).
func openNoSymlinks(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// fdPath names a descriptor through the sandbox's own procfs (the base
// tmpfs the init stands in has no /proc).
func fdPath(fd int) string { return fmt.Sprintf("%s/proc/self/fd/%d", newRoot, fd) }

// mountOverlay mounts a workspace fork: its layers are reached through the
// host root still at /oldroot. userxattr keeps overlay's own metadata in
// user.* attributes, as a mount in a user namespace must.
func mountOverlay(o *Overlay, dst string) error {
	lower := make([]string, len(o.Lower))
	for i, l := range o.Lower {
		lower[i] = oldRoot + l
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr",
		strings.Join(lower, ":"), oldRoot+o.Upper, oldRoot+o.Work)
	if o.Volatile {
		opts += ",volatile"
	}
	if err := unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount overlay at %s: %w", strings.TrimPrefix(dst, newRoot), err)
	}
	return nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// setattr changes mount attributes with mount_setattr(2), recursively when
// asked: one call makes a whole tree read-only, which a remount cannot.
func setattr(path string, recursive bool, set, clr uint64) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set, Attr_clr: clr})
}

// mountProc mounts a read-only procfs of the sandbox's own pid namespace:
// host processes are invisible, and nothing under /proc (sysctls,
// sysrq-trigger) is writable even by a root caller. Before it is made
// read-only, the namespace's pid counter is set to lastPid (when known),
// so the command's pid is one the caller's namespace could have given it,
// not the 2 or 3 that tells a new pid namespace from any shell.
func mountProc(lastPid int) error {
	proc := newRoot + "/proc"
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	if lastPid > 0 {
		// ns_last_pid acts on the writer's pid namespace, this one, and
		// needs CAP_SYS_ADMIN in its user namespace, which the init holds.
		// A likeness, not a rule of the sandbox: where a security module
		// refuses the write, the pids start at 1 as they used to.
		_ = os.WriteFile(proc+"/sys/kernel/ns_last_pid", []byte(strconv.Itoa(lastPid)), 0)
	}
	if err := setattr(proc, false, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
		return fmt.Errorf("make proc read-only: %w", err)
	}
	return nil
}

// mountDev builds a minimal /dev: the harmless character devices, a private
// devpts and /dev/shm. No disk, no /dev/mem, no host pty.
func mountDev() error {
	dev := newRoot + "/dev"
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := os.WriteFile(dev+"/"+n, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount(oldRoot+"/dev/"+n, dev+"/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx",
	} {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(dev+"/"+d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"); err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", dev+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	return setattr(dev, false, unix.MOUNT_ATTR_RDONLY, 0)
}

// loopbackUp brings up the new network namespace's lo, the only interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
