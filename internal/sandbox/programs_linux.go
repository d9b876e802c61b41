package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The rights of go-landlock's RODirs, ROFiles, RWDirs and RWFiles, named
// here so the execute right can be taken out of them (strip).
const (
	execRight      = landlock.AccessFSSet(ll.AccessFSExecute)
	readDirRights  = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	readFileRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile)
	writeRights    = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate)
	rwDirRights    = readDirRights | writeRights
	rwFileRights   = readFileRights | landlock.AccessFSSet(ll.AccessFSWriteFile|ll.AccessFSTruncate)
)

// programsConfig is what the init needs to grant execution: canonical
// paths, the same inside the namespaces view as on the host.
type programsConfig struct {
	Allow []string `json:"allow,omitempty"` // empty: everything not denied
	Deny  []string `json:"deny,omitempty"`
}

// loaderGlobs find the dynamic loaders. The kernel opens a program's ELF
// interpreter for execution, so with an allow-list no dynamic program
// would start without them; they are allowed with it (see programs.go for
// what that costs).
var loaderGlobs = []string{"/lib64/ld-linux*.so*", "/lib/ld-linux*.so*", "/lib/ld-musl-*.so*", "/lib/*-linux-gnu*/ld-linux*.so*", "/usr/lib/*-linux-gnu*/ld-linux*.so*"}

// Loaders are the canonical paths of this machine's dynamic loaders.
func Loaders() []string {
	var out []string
	for _, g := range loaderGlobs {
		m, _ := filepath.Glob(g)
		for _, p := range m {
			if c, err := filepath.EvalSymlinks(p); err == nil && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

func (r *resolved) programsConfig() *programsConfig {
	if !r.RestrictsExec() {
		return nil
	}
	pc := &programsConfig{Deny: r.DenyPrograms}
	if len(r.AllowPrograms) > 0 {
		pc.Allow = append(slices.Clone(r.AllowPrograms), Loaders()...)
	}
	return pc
}

// strip takes the execute right out of a base grant when execution is
// granted by rules of its own.
func (p *programsConfig) strip(s landlock.AccessFSSet) landlock.AccessFSSet {
	if p == nil {
		return s
	}
	return s &^ execRight
}

// rules grants the execute right on what is allowed (everything, without
// an allow-list) minus what is denied. Landlock only adds rights, so a
// deny is the absence of a grant: a folder holding a denied path is
// descended into and its other entries granted one by one, as
// readableRoots does for hidden paths. Symlinks are judged by their
// target, and a file that is a hard link of a denied one (the same inode,
// which is what a Landlock rule names) is not granted in a folder
// descended into; a hard link elsewhere in a folder granted whole is (see
// docs/SECURITY.md).
func (p *programsConfig) rules() ([]landlock.Rule, error) {
	if p == nil {
		return nil, nil
	}
	type inode struct{ dev, ino uint64 }
	deniedInodes := map[inode]bool{}
	for _, d := range p.Deny {
		if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				deniedInodes[inode{st.Dev, st.Ino}] = true
			}
		}
	}
	isDenied := func(path string, fi os.FileInfo) bool {
		for _, d := range p.Deny {
			if within(path, d) {
				return true
			}
		}
		if fi != nil && !fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && deniedInodes[inode{st.Dev, st.Ino}] {
				return true
			}
		}
		return false
	}
	holdsDenied := func(path string) bool {
		for _, d := range p.Deny {
			if within(d, path) && d != path {
				return true
			}
		}
		return false
	}
	var dirs, files []string
	add := func(path string, fi os.FileInfo) {
		if fi.IsDir() {
			dirs = append(dirs, path)
		} else {
			files = append(files, path)
		}
	}
	var visit func(dir string)
	visit = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable: nothing in it is granted
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				continue
			}
			fi, err := os.Stat(real)
			if err != nil || isDenied(path, nil) || isDenied(real, fi) {
				continue
			}
			if holdsDenied(real) {
				if real == path && fi.IsDir() {
					visit(path)
				}
				continue
			}
			add(path, fi)
		}
	}
	roots := p.Allow
	if len(roots) == 0 {
		roots = []string{"/"}
	}
	for _, root := range roots {
		fi, err := os.Stat(root)
		if err != nil || isDenied(root, fi) {
			continue
		}
		if fi.IsDir() && holdsDenied(root) {
			visit(root)
			continue
		}
		add(root, fi)
	}
	var rules []landlock.Rule
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(execRight, dirs...))
	}
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(execRight, files...))
	}
	return rules, nil
}

// noexecWritable mounts every tree the command can write noexec when an
// allow-list is set (namespaces backend, after the view is built): a copy
// of an allowed program made there cannot be run even by mapping it
// through the dynamic loader, which Landlock alone does not see.
func noexecWritable(cfg *initConfig) error {
	if cfg.Programs == nil || len(cfg.Programs.Allow) == 0 {
		return nil
	}
	trees := slices.Concat(cfg.Writable, cfg.Scratch, []string{"/tmp", "/var/tmp", cfg.Home, "/dev/shm"})
	for _, t := range trees {
		if err := setattr(t, true, unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
			return fmt.Errorf("mount %s noexec: %w", t, err)
		}
	}
	return nil
}
