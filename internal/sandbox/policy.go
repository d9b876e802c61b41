package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Network says what network the command sees.
type Network string

const (
	// NetworkNone gives the command a loopback of its own and nothing else.
	NetworkNone Network = "none"
	// NetworkHost shares the host's network (and its DNS).
	NetworkHost Network = "host"
	// NetworkProxy is NetworkNone plus one way out: 127.0.0.1:Proxy.Port
	// on the command's own loopback leads to the host socket Proxy.Socket
	// (forkbomb's model proxy) and nowhere else. Namespaces backend only.
	NetworkProxy Network = "proxy"
)

// Mode selects the backend. ModeAuto tries namespaces first and falls back to
// Landlock alone (on macOS it is Seatbelt); the other values force one
// backend (for diagnosis and for testing the fallback on a machine that has
// both).
type Mode string

const (
	ModeAuto       Mode = "auto"
	ModeNamespaces Mode = "namespaces"
	ModeLandlock   Mode = "landlock"
	// ModeSeatbelt is macOS's backend: a Seatbelt profile (seatbelt.go).
	ModeSeatbelt Mode = "seatbelt"
	// ModeNone is what Run reports when the caller asked for no sandbox.
	ModeNone Mode = "none"
)

// Modes are the values Policy.Mode may take on this platform (backends).
func Modes() []Mode { return slices.Clone(backends) }

// Policy is everything the caller decides about one confined command.
type Policy struct {
	Command   []string      // argv; Command[0] is looked up in the sandbox's PATH
	Workdir   string        // the only tree the command may write besides its temp dir; also its cwd
	ReadOnly  []string      // extra paths made readable (e.g. inside a hidden home)
	ReadWrite []string      // extra writable paths
	Network   Network       // none (default), host or proxy
	Env       []string      // names of extra variables passed from the caller's environment
	SetEnv    []string      // NAME=VALUE pairs set by the caller (never credentials); a name of the allowlist's (PATH) takes this value instead
	Timeout   time.Duration // wall-clock limit; 0 means none
	Memory    int64         // bytes; 0 means none
	Pids      int           // max processes; 0 means none
	CPUs      float64       // CPU quota in cores; 0 means none
	// Nice lowers the command's CPU priority below the caller's by this
	// many nice steps (1 to 19; 0 leaves it the caller's), so that where
	// the two compete for the CPU, the caller's own work goes first. Every
	// process of the command starts with it, and none can raise it again
	// (raising a priority needs CAP_SYS_NICE in the host's namespace).
	// Where a cgroup with the CPU controller can be had, the sandbox's
	// cgroup carries that nice's weight, which its processes cannot leave;
	// elsewhere, where the kernel schedules each session as a group
	// (autogroup), the sandbox's group is lowered as well, a request the
	// command can leave (a new session of its own is a new group). Never
	// a limit: on an idle machine the command runs as fast as without it.
	Nice int
	// Yield, with Nice, lowers the command's priority only while the
	// Yield is held (see Yield): its group (cgroup weight or session
	// group) by Nice steps, and not each process's nice.
	Yield     *Yield
	MaxOutput int64 // cap on stdout+stderr bytes; 0 means none
	// Toolchains makes the toolchains a user keeps under home readable
	// (see ToolchainDirs); their credential files stay hidden.
	Toolchains bool
	Mode       Mode
	// Overlay, when set, makes the workdir an overlay mount built inside
	// the sandbox (namespaces backend only): the lower layers read-only,
	// every write going to Upper. This is how a workspace fork costs O(1).
	Overlay *Overlay
	// Scratch paths are seen with their content and are writable, through
	// a throwaway overlay: nothing written there reaches the host (a build
	// cache the command may fill but not poison). Namespaces backend only;
	// the landlock backend makes them read-only.
	Scratch []string
	// ScratchLayers changes the overlay of a Scratch path (the key, as
	// given in Scratch): read-only layers laid over the path's own
	// content, or a folder of the caller's that keeps the writes. The
	// judge keeps what a base's run built this way and lays it, read-only,
	// under each patched run's throwaway layer.
	ScratchLayers map[string]ScratchLayers
	// GitDirs, when not nil, lists the git directories under the writable
	// trees (.git entries, bare repositories: FindGitDirs), for a caller
	// that knows them (a workspace knows its pid 1's); otherwise every
	// writable tree is scanned for them.
	GitDirs []string
	// Hide lists host paths the command must not see, wherever they are:
	// forkbomb's state (other workspaces, runs, judge caches), hidden
	// tests, the user's repository. Each is replaced by an empty read-only
	// folder (namespaces) or left out of what may be read (Landlock). A
	// path the policy exposes below one (the workdir, the overlay layers
	// it is built from, a ReadOnly path) stays exposed; the root and system
	// folders are refused (see CheckHide); a path that does not exist is
	// ignored.
	Hide []string
	// Proxy is the way out of a NetworkProxy sandbox, and is given only
	// with it (see Proxy).
	Proxy *Proxy
	// Placeholders are credential variables the command may hold because
	// their values are not credentials: NAME → a value NewPlaceholder made,
	// for an agent CLI that will not start without an API key (the real
	// key is added outside the sandbox, by forkbomb's model proxy). A value
	// of another shape, or one that is a credential in forkbomb's own
	// environment, is refused (ErrNotPlaceholder).
	Placeholders map[string]string
	// User, when set, is the uid and gid the command has inside the
	// sandbox instead of the caller's own (see User). Namespaces backend
	// only; ignored with NoSandbox.
	User *User
	// AllowPrograms, when not empty, are the only files (or folders of
	// files) any process of the command may execute; DenyPrograms may not
	// be executed even when allowed (deny wins). Enforced by Landlock's
	// execute right on every exec; see programs.go for what that covers.
	AllowPrograms []string
	DenyPrograms  []string
	// Init is the standalone sandbox init (cmd/forkbomb-init) to start
	// instead of the forkbomb-init beside the running executable: checked,
	// held open and compared by build fingerprint the same way, and passed
	// over for the running binary itself when refused (initbin_linux.go).
	// For tests and for installs that keep it elsewhere; empty means the
	// default.
	Init string
	// NoSandbox runs the command unconfined. Only for development.
	NoSandbox bool
}

// Overlay describes an overlayfs mount: Lower layers, topmost first; Upper
// receives the writes; Work is overlayfs's scratch directory, on the same
// filesystem as Upper.
type Overlay struct {
	Lower []string
	Upper string
	Work  string
	// Volatile skips the flush of the upper filesystem when the overlay
	// is unmounted (every sandbox exit): for layers thrown away afterwards,
	// where a crash losing them costs nothing.
	Volatile bool
}

// ScratchLayers are the layers of one Scratch path's overlay besides the
// path's own content, which is always the bottom one.
type ScratchLayers struct {
	// Lower are read-only folders above the path's content, topmost
	// first: nothing the command does changes them.
	Lower []string
	// Keep, when set, is an empty or earlier-kept folder of the caller's
	// that receives the writes (in Keep/upper, overlayfs working in
	// Keep/work) instead of a throwaway layer, flushed on unmount. Only
	// for a command whose writes the caller means to trust later.
	Keep string
}

// resolved is a Policy whose paths are absolute and canonical and whose
// defaults are filled in; only Resolve makes one.
type resolved struct {
	Policy
	Home     string // the caller's home, canonical
	HomeDirs []string
}

// Resolve validates p and makes every path absolute and canonical, so that
// what the init mounts is exactly what was checked here.
func (p Policy) resolve() (*resolved, error) {
	if len(p.Command) == 0 || p.Command[0] == "" {
		return nil, policyErr("", "", "no command given")
	}
	if p.Network == "" {
		p.Network = NetworkNone
	}
	switch p.Network {
	case NetworkNone, NetworkHost, NetworkProxy:
	default:
		return nil, policyErr("Network", string(p.Network), "must be none, host or proxy")
	}
	if p.Mode == "" {
		p.Mode = ModeAuto
	}
	if !slices.Contains(backends, p.Mode) {
		names := make([]string, len(backends))
		for i, m := range backends {
			names[i] = string(m)
		}
		last := len(names) - 1
		return nil, policyErr("Mode", string(p.Mode), "unknown mode (%s or %s)", strings.Join(names[:last], ", "), names[last])
	}
	for _, l := range []struct {
		field    string
		negative bool
		value    any
	}{{"Timeout", p.Timeout < 0, p.Timeout}, {"Memory", p.Memory < 0, p.Memory}, {"Pids", p.Pids < 0, p.Pids}, {"CPUs", p.CPUs < 0, p.CPUs}, {"MaxOutput", p.MaxOutput < 0, p.MaxOutput}} {
		if l.negative {
			return nil, policyErr(l.field, fmt.Sprint(l.value), "limits must not be negative")
		}
	}
	if p.Nice < 0 || p.Nice > 19 {
		return nil, policyErr("Nice", strconv.Itoa(p.Nice), "must be 0 to 19 (how far below the caller's CPU priority)")
	}
	if p.Yield != nil && p.Nice == 0 {
		return nil, policyErr("Yield", "set", "needs Nice (how far below the caller's CPU priority to go while it is held)")
	}
	if p.Init != "" && !filepath.IsAbs(p.Init) {
		return nil, policyErr("Init", p.Init, "not an absolute path")
	}
	for _, name := range p.Env {
		if err := checkEnvName("Env", name); err != nil {
			return nil, err
		}
	}
	for _, kv := range p.SetEnv {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, policyErr("SetEnv", fmt.Sprintf("%q", kv), "not NAME=VALUE")
		}
		if err := checkEnvName("SetEnv", name); err != nil {
			return nil, err
		}
	}
	r := &resolved{Policy: p}
	taken := slices.Clone(p.Env)
	for _, kv := range p.SetEnv {
		name, _, _ := strings.Cut(kv, "=")
		taken = append(taken, name)
	}
	ph, err := checkPlaceholders(p.Placeholders, os.Environ(), taken)
	if err != nil {
		return nil, err
	}
	// A fresh slice: the caller's SetEnv is never appended to in place.
	r.SetEnv = slices.Concat(p.SetEnv, ph)
	r.Home = callerHome()
	r.HomeDirs = homeRoots(r.Home)

	if p.Workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, &PolicyError{Field: "Workdir", Reason: "current directory: " + err.Error(), Err: err}
		}
		p.Workdir = wd
	}
	if r.Workdir, err = canonicalDir(p.Workdir, "Workdir", true); err != nil {
		return nil, err
	}
	if err := r.checkExposure(r.Workdir, "Workdir"); err != nil {
		return nil, err
	}
	r.ReadOnly, r.ReadWrite = nil, nil
	for _, path := range p.ReadOnly {
		c, err := canonicalDir(path, "ReadOnly", false)
		if err != nil {
			return nil, err
		}
		if err := r.checkExposure(c, "ReadOnly"); err != nil {
			return nil, err
		}
		r.ReadOnly = append(r.ReadOnly, c)
	}
	for _, path := range p.ReadWrite {
		c, err := canonicalDir(path, "ReadWrite", false)
		if err != nil {
			return nil, err
		}
		if err := r.checkExposure(c, "ReadWrite"); err != nil {
			return nil, err
		}
		r.ReadWrite = append(r.ReadWrite, c)
	}
	if p.Overlay != nil {
		if p.Mode == ModeLandlock {
			return nil, policyErr("Overlay", "", "an overlay workdir needs the namespaces backend")
		}
		ov := &Overlay{Volatile: p.Overlay.Volatile}
		for _, l := range p.Overlay.Lower {
			c, err := canonicalDir(l, "Overlay.Lower", true)
			if err != nil {
				return nil, err
			}
			ov.Lower = append(ov.Lower, c)
		}
		if len(ov.Lower) == 0 {
			return nil, policyErr("Overlay.Lower", "", "an overlay needs at least one lower layer")
		}
		if ov.Upper, err = canonicalDir(p.Overlay.Upper, "Overlay.Upper", true); err != nil {
			return nil, err
		}
		if ov.Work, err = canonicalDir(p.Overlay.Work, "Overlay.Work", true); err != nil {
			return nil, err
		}
		for _, d := range append([]string{ov.Upper, ov.Work}, ov.Lower...) {
			if strings.ContainsAny(d, ",:\\") {
				return nil, policyErr("Overlay", fmt.Sprintf("%q", d), "holds a character overlayfs options cannot carry")
			}
		}
		r.Overlay = ov
	}
	r.Scratch = nil
	for _, path := range p.Scratch {
		c, err := canonicalDir(path, "Scratch", true)
		if err != nil {
			return nil, err
		}
		if err := r.checkExposure(c, "Scratch"); err != nil {
			return nil, err
		}
		r.Scratch = append(r.Scratch, c)
		l, ok := p.ScratchLayers[path]
		if !ok {
			continue
		}
		if err := r.resolveScratchLayers(c, l); err != nil {
			return nil, err
		}
	}
	for path := range p.ScratchLayers {
		if !slices.Contains(p.Scratch, path) {
			return nil, policyErr("ScratchLayers", path, "is not a Scratch path")
		}
	}
	if err := r.resolveHide(p.Hide); err != nil {
		return nil, err
	}
	if err := r.resolveProxy(); err != nil {
		return nil, err
	}
	if err := r.resolveUser(); err != nil {
		return nil, err
	}
	if err := r.resolvePrograms(); err != nil {
		return nil, err
	}
	for _, ro := range r.ReadOnly {
		for _, rw := range append([]string{r.Workdir}, r.ReadWrite...) {
			if ro == rw {
				return nil, policyErr("ReadOnly", ro, "given both read-only and writable")
			}
		}
	}
	return r, nil
}

// canonicalDir returns the absolute path of p with every symlink resolved;
// field names the Policy field p comes from.
func canonicalDir(p, field string, mustBeDir bool) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &PolicyError{Field: field, Value: p, Reason: err.Error(), Err: err}
	}
	c, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &PolicyError{Field: field, Value: p, Reason: "no such file or directory", Err: err}
	}
	fi, err := os.Stat(c)
	if err != nil {
		return "", &PolicyError{Field: field, Value: p, Reason: err.Error(), Err: err}
	}
	if mustBeDir && !fi.IsDir() {
		return "", policyErr(field, p, "not a directory")
	}
	return c, nil
}

// checkExposure refuses a path whose exposure would undo the credential
// masks: the root, a home directory itself (or anything holding one), and
// anything inside a credential folder.
func (r *resolved) checkExposure(path, field string) error {
	if path == "/" {
		return policyErr(field, path, "refusing to expose the whole filesystem")
	}
	// Kernel and service interfaces: a writable /proc/sys or cgroup tree,
	// or a service socket under /run, would undo the sandbox.
	for _, sys := range append([]string{"/proc", "/sys", "/dev", "/boot"}, hiddenDirs...) {
		if within(path, sys) || within(sys, path) {
			return policyErr(field, path, "refusing to expose %s", sys)
		}
	}
	for _, h := range append([]string{r.Home}, r.HomeDirs...) {
		if h != "" && within(h, path) {
			return policyErr(field, path, "refusing to expose %s, which holds credential folders; name a folder inside it", h)
		}
	}
	for _, s := range credentialPaths(r.Home) {
		if within(path, s) || within(s, path) {
			return policyErr(field, path, "refusing to expose credential path %s", s)
		}
	}
	return nil
}

// CheckWorkdir reports whether path may be a Policy's Workdir, as Run
// checks it: an existing folder that neither is nor holds the root, a
// kernel or service interface, a home folder or a credential path.
func CheckWorkdir(path string) error {
	c, err := canonicalDir(path, "Workdir", true)
	if err != nil {
		return err
	}
	r := &resolved{}
	r.Home = callerHome()
	r.HomeDirs = homeRoots(r.Home)
	return r.checkExposure(c, "Workdir")
}

// within reports whether path is base or lies below it.
func within(path, base string) bool {
	if path == base {
		return true
	}
	if base == "/" {
		return true
	}
	return strings.HasPrefix(path, base+"/")
}

// callerHome is the caller's home directory, canonical where it exists.
func callerHome() string {
	h := os.Getenv("HOME")
	if h == "" {
		if os.Getuid() == 0 {
			h = "/root"
		} else {
			return ""
		}
	}
	if c, err := filepath.EvalSymlinks(h); err == nil {
		return c
	}
	return filepath.Clean(h)
}

// resolveScratchLayers checks the layers of the Scratch path c like the
// workdir's overlay: canonical folders, exposable, and nothing overlayfs's
// option string cannot carry.
func (r *resolved) resolveScratchLayers(c string, l ScratchLayers) error {
	var out ScratchLayers
	for _, low := range l.Lower {
		lc, err := canonicalDir(low, "ScratchLayers.Lower", true)
		if err != nil {
			return err
		}
		if err := r.checkExposure(lc, "ScratchLayers.Lower"); err != nil {
			return err
		}
		out.Lower = append(out.Lower, lc)
	}
	if l.Keep != "" {
		kc, err := canonicalDir(l.Keep, "ScratchLayers.Keep", true)
		if err != nil {
			return err
		}
		if err := r.checkExposure(kc, "ScratchLayers.Keep"); err != nil {
			return err
		}
		out.Keep = kc
	}
	for _, d := range append([]string{c, out.Keep}, out.Lower...) {
		if strings.ContainsAny(d, ",:\\") {
			return policyErr("ScratchLayers", fmt.Sprintf("%q", d), "holds a character overlayfs options cannot carry")
		}
	}
	if r.ScratchLayers == nil {
		r.ScratchLayers = map[string]ScratchLayers{}
	}
	r.ScratchLayers[c] = out
	return nil
}

// toolchainDirs are the ToolchainDirs under home that exist, canonical (a
// link to elsewhere is exposed where it points, if that may be exposed),
// when the policy asks for them.
func (r *resolved) toolchainDirs() []string {
	if !r.Toolchains || r.Home == "" {
		return nil
	}
	var out []string
	for _, t := range ToolchainDirs {
		p := r.Home + "/" + t
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if c, err := filepath.EvalSymlinks(p); err == nil && c == p {
				out = append(out, p)
			} else if err == nil && r.checkExposure(c, "Toolchains") == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
