package sandbox

// The Seatbelt profile: macOS's backend (sandbox_darwin.go) confines a
// command by running it under /usr/bin/sandbox-exec with a profile written
// here, in Apple's Sandbox Profile Language (SBPL), from the same Policy
// as every other backend. The writer is a pure function — it reads no file
// and no environment — so it builds, and is tested, on every platform.
//
// What a profile says, in the order it says it (in SBPL the last rule that
// matches an operation decides, and nothing is allowed that no rule
// allows):
//
//   - deny by default;
//   - processes may fork and exec (or only the allowed programs), and
//     signal or inspect only processes of this same sandbox;
//   - the host is readable but for the folders hidden from every command
//     (homes, service sockets, the system keychains, the temp folders of
//     the machine and Policy.Hide), stacked with what the policy exposes —
//     the workdir, --rw and --ro paths, the private temp dir and home,
//     toolchains — shallow to deep, so that the deepest rule that matches
//     a path decides, as binds stacked by depth do on Linux;
//   - a few devices;
//   - last, what no grant reopens: credential folders, root-only secrets,
//     the git metadata in the writable trees (writes, moves of the folders
//     above it, hard links), denied programs, and with an allow-list any
//     executable mapping in the writable trees;
//   - the network: loopback only and no DNS, the model proxy's port alone,
//     or the host's.
//
// Every path is written as a string literal, escaped; a path that cannot
// be (a control character, invalid UTF-8 — which APFS refuses anyway) is
// refused with a PolicyError, never dropped. Paths are never regexes. A
// rule that denies is written a second time as a regex that matches every
// spelling a case-insensitive filesystem (APFS's default) takes for the
// path: ASCII letters in either case, a name holding any other byte as any
// name, and no metacharacter of the path's own — over-matching a denial
// only denies more.

import (
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What macOS keeps where. Paths are canonical: /tmp, /var and /etc are
// symlinks into /private there, and Seatbelt judges the resolved path.
var (
	// seatbeltHomeRoots hold the home directories.
	seatbeltHomeRoots = []string{"/Users", "/private/var/root"}
	// seatbeltHiddenDirs are hidden besides the homes: the sockets of
	// system services, the system keychains, the local directory's user
	// records (password hashes) and sudo's state.
	seatbeltHiddenDirs = []string{"/private/var/run", "/Library/Keychains", "/private/var/db/dslocal", "/private/var/db/sudo"}
	// seatbeltTempRoots are the machine's temp folders — the per-user
	// ones of every program under /private/var/folders included — hidden
	// like the homes; the private temp dir and home forkbomb makes below
	// one are exposed.
	seatbeltTempRoots = []string{"/private/tmp", "/private/var/tmp", "/private/var/folders"}
	// seatbeltRootSecrets are files only root can read (a root caller's
	// command runs as root).
	seatbeltRootSecrets = []string{
		"/private/etc/master.passwd", "/private/etc/sudoers",
		"/private/etc/ssh/ssh_host_rsa_key", "/private/etc/ssh/ssh_host_ecdsa_key",
		"/private/etc/ssh/ssh_host_ed25519_key", "/private/etc/ssh/ssh_host_dsa_key",
	}
	// seatbeltCredentials are credential folders under a macOS home besides
	// homeCredentials: in ~/Library the login keychain, every
	// application's data, containers, cookies and preferences, mail,
	// messages, iCloud's documents (its caches are not: a build cache
	// lives there); shell sessions.
	seatbeltCredentials = []string{
		"Library/Keychains", "Library/Application Support", "Library/Containers", "Library/Group Containers",
		"Library/Cookies", "Library/HTTPStorages", "Library/Preferences", "Library/Accounts", "Library/Mail",
		"Library/Messages", "Library/Safari", "Library/Mobile Documents", "Library/Passes",
		".zsh_sessions", ".bash_sessions", ".zhistory",
	}
)

// seatbeltDevices are the devices a command may open, to read and write:
// the rest of /dev is neither readable nor writable. /dev/autofs_nowait
// is what libc opens to walk folders without mounting network shares.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/dtracehelper", "/dev/autofs_nowait"}

// seatbeltSysctls are the kernel values a program may read: the machine's
// shape and the system's version, and the basic record of a process by
// pid (name, parent, owner). Not kern.procargs2: another process's
// arguments and environment, where forkbomb's own keys are.
var seatbeltSysctls = []string{
	"kern.argmax", "kern.boottime", "kern.hostname", "kern.maxfiles", "kern.maxfilesperproc",
	"kern.maxproc", "kern.maxprocperuid", "kern.ngroups", "kern.osproductversion", "kern.osrelease",
	"kern.ostype", "kern.osvariant_status", "kern.osversion", "kern.secure_kernel", "kern.usrstack64",
	"kern.version", "sysctl.proc_cputype", "sysctl.proc_translated", "vm.loadavg",
}

// seatbeltSysctlPrefixes are families of such values.
var seatbeltSysctlPrefixes = []string{"hw.", "machdep.cpu.", "kern.proc.pid.", "net.routetable."}

// seatbeltServices are the Mach services any command may look up: user
// and group records (getpwuid, getgrouplist). Not the keychain, user
// preferences, launchd's job control or the pasteboard.
var seatbeltServices = []string{"com.apple.system.opendirectoryd.libinfo", "com.apple.system.opendirectoryd.membership"}

// seatbeltHostServices are what a command on the host's network may look
// up besides: DNS and certificate trust.
var seatbeltHostServices = []string{
	"com.apple.dnssd.service", "com.apple.SystemConfiguration.DNSConfiguration",
	"com.apple.SystemConfiguration.configd", "com.apple.networkd", "com.apple.trustd.agent",
}

// seatbeltSpec is what one profile says: a resolved policy and what the
// darwin backend found for it on the filesystem. The writer reads nothing
// else.
type seatbeltSpec struct {
	*resolved
	// PrivTmp and PrivHome are the command's private temp dir and home:
	// writable, below a temp root that is hidden.
	PrivTmp, PrivHome string
	// GitTargets are the git metadata in the writable trees, kept
	// read-only (gitTargets of each git directory found).
	GitTargets []string
	// ToolchainPaths are the ToolchainDirs found under home
	// (toolchainDirs), readable when Policy.Toolchains asks for them.
	ToolchainPaths []string
	// Init is the program that is the sandbox's init: forkbomb itself,
	// readable and executable whatever else the policy says.
	Init string
}

// access is what the view grants at one path.
type access int

const (
	hidden access = iota
	readable
	writable
)

// viewEntry is one path of the view, with the Policy field it comes from.
type viewEntry struct {
	path, field string
	access      access
}

// writeSeatbelt writes the profile for s. A path that cannot be written
// safely is refused with a *PolicyError naming the field it came from.
func writeSeatbelt(s seatbeltSpec) (string, error) {
	w := &sbpl{}
	if s.Init == "" {
		return "", policyErr("Init", "", "the seatbelt backend needs forkbomb's own program as its init")
	}
	for _, d := range s.DenyPrograms {
		if within(s.Init, d) {
			return "", policyErr("DenyPrograms", d, "holds forkbomb itself (%s), the sandbox's init on macOS", s.Init)
		}
	}
	w.line("(version 1)")
	w.line("(deny default)")

	w.comment("processes: fork and exec; signals and process information only within this sandbox")
	w.line("(allow process-fork)")
	if len(s.AllowPrograms) > 0 {
		w.rule("allow", "process-exec*", w.grants("AllowPrograms", s.AllowPrograms), []string{w.literal("Init", s.Init)})
	} else {
		w.line("(allow process-exec*)")
	}
	w.line("(allow signal (target same-sandbox))")
	w.line("(allow process-info* (target same-sandbox))")

	w.comment("what a program asks of the system: its shape and version, user records, POSIX semaphores and shared memory")
	var sysctls []string
	for _, n := range seatbeltSysctls {
		sysctls = append(sysctls, "(sysctl-name "+quote(n)+")")
	}
	for _, n := range seatbeltSysctlPrefixes {
		sysctls = append(sysctls, "(sysctl-name-prefix "+quote(n)+")")
	}
	w.rule("allow", "sysctl-read", sysctls)
	w.line("(allow mach-host*)")
	w.rule("allow", "mach-lookup", globalNames(seatbeltServices))
	w.line("(allow ipc-posix-sem)")
	w.line("(allow ipc-posix-shm)")

	w.comment("files: the host is readable but what is hidden; what the policy exposes is stacked over it, shallow to deep")
	w.line("(allow file-read*)")
	w.line("(allow file-map-executable)")
	view := s.view()
	for _, e := range view {
		switch e.access {
		case hidden:
			w.rule("deny", "file-read* file-write*", w.denials(e.field, []string{e.path}))
		case readable:
			w.rule("allow", "file-read*", w.grants(e.field, []string{e.path}))
			w.rule("deny", "file-write*", w.denials(e.field, []string{e.path}))
		case writable:
			w.rule("allow", "file-read* file-write*", w.grants(e.field, []string{e.path}))
		}
	}
	var ancestors []string
	for _, e := range view {
		if e.access != hidden {
			ancestors = appendAncestors(ancestors, e.path)
		}
	}
	ancestors = appendAncestors(ancestors, s.Init)
	if len(ancestors) > 0 {
		w.comment("the folders on the way to what is exposed may be looked at (realpath, getcwd)")
		w.rule("allow", "file-read-metadata", w.literals("Workdir", ancestors))
	}
	w.comment("the sandbox's init: forkbomb itself")
	w.rule("allow", "file-read* file-map-executable process-exec*", []string{w.literal("Init", s.Init)})

	w.comment("devices: a few, and no other of /dev")
	w.rule("deny", "file-read*", w.denials("", []string{"/dev"}))
	w.rule("allow", "file-read*", []string{w.literal("", "/dev"), w.literal("", "/dev/fd"), `(regex #"^/dev/(stdin|stdout|stderr)$")`})
	w.rule("allow", "file-read* file-write-data file-ioctl", append(w.literals("", seatbeltDevices), `(regex #"^/dev/fd/[0-9]+$")`))

	w.comment("never reopened by a grant above: credential folders and root-only secrets")
	w.rule("deny", "file-read* file-write*", w.denials("", append(credentialPathsOf(s.Home, seatbeltCredentials), seatbeltRootSecrets...)))

	if len(s.GitTargets) > 0 {
		w.comment("git metadata in the writable trees stays read-only; the folders above it cannot be moved away")
		w.rule("deny", "file-write*", w.denials("Workdir", s.GitTargets))
	}
	var pinned []string
	for _, t := range s.GitTargets {
		pinned = appendAncestors(pinned, t)
	}
	for _, e := range view {
		if e.access != writable && s.insideWritable(e.path, view) {
			pinned = appendAncestors(pinned, e.path)
		}
	}
	if len(pinned) > 0 {
		w.rule("deny", "file-write-unlink", w.exactDenials("Workdir", pinned))
	}
	w.comment("no hard links: one would be a writable name for a file kept read-only")
	w.line("(deny file-link)")

	if len(s.DenyPrograms) > 0 {
		w.comment("programs denied")
		w.rule("deny", "process-exec*", w.denials("DenyPrograms", s.DenyPrograms))
	}
	if len(s.AllowPrograms) > 0 {
		w.comment("with an allow-list nothing in a writable tree is mapped executable (a copy run through dyld)")
		var trees []string
		for _, e := range view {
			if e.access == writable {
				trees = append(trees, e.path)
			}
		}
		w.rule("deny", "file-map-executable", w.denials("ReadWrite", trees))
	}

	w.network(s, view)
	if w.err != nil {
		return "", w.err
	}
	return w.b.String(), nil
}

// view is the stack of hidden and exposed paths, shallow to deep; at one
// depth what is hidden comes first, so a path both hidden and exposed is
// exposed (as on Linux: the caller asked to see it).
func (s seatbeltSpec) view() []viewEntry {
	var v []viewEntry
	add := func(field string, a access, paths ...string) {
		for _, p := range paths {
			v = append(v, viewEntry{path: p, field: field, access: a})
		}
	}
	homes := slices.Clone(seatbeltHomeRoots)
	if h := s.Home; h != "" && !slices.ContainsFunc(homes, func(r string) bool { return within(h, r) }) {
		homes = append(homes, h)
	}
	add("", hidden, homes...)
	add("", hidden, seatbeltHiddenDirs...)
	add("", hidden, seatbeltTempRoots...)
	add("Hide", hidden, s.Hide...)
	add("ReadOnly", readable, s.ReadOnly...)
	add("Scratch", readable, s.Scratch...) // read-only without overlayfs, as in the landlock backend
	if s.Toolchains {
		add("Toolchains", readable, s.ToolchainPaths...)
	}
	add("Workdir", writable, s.Workdir)
	add("ReadWrite", writable, s.ReadWrite...)
	add("", writable, s.PrivTmp, s.PrivHome)
	sort.SliceStable(v, func(i, j int) bool {
		di, dj := strings.Count(v[i].path, "/"), strings.Count(v[j].path, "/")
		if di != dj {
			return di < dj
		}
		return v[i].access == hidden && v[j].access != hidden
	})
	return v
}

// insideWritable reports whether p lies strictly inside a writable path
// of the view.
func (s seatbeltSpec) insideWritable(p string, view []viewEntry) bool {
	for _, e := range view {
		if e.access == writable && p != e.path && within(p, e.path) {
			return true
		}
	}
	return false
}

// network writes the network rules: loopback only, with no DNS (a
// resolver on the loopback included); the model proxy's port alone; or
// the host's network. A command's own UNIX sockets in its writable trees
// work under every one.
func (w *sbpl) network(s seatbeltSpec, view []viewEntry) {
	switch s.Network {
	case NetworkHost:
		w.comment("network: the host's")
		w.line("(allow network*)")
		w.line("(allow system-socket)")
		w.rule("allow", "mach-lookup", globalNames(seatbeltHostServices))
	case NetworkProxy:
		if s.Proxy == nil {
			w.fail(policyErr("Proxy", "", "a proxy network needs its port"))
			return
		}
		w.comment("network: the model proxy's port on the loopback, nothing else")
		w.line("(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6) (socket-domain AF_UNIX))")
		w.line(`(allow network-outbound (remote ip "localhost:` + strconv.Itoa(s.Proxy.Port) + `"))`)
	default:
		w.comment("network: the loopback only, and no DNS")
		w.line("(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6) (socket-domain AF_UNIX))")
		w.line(`(allow network-bind network-inbound (local ip "localhost:*"))`)
		w.line(`(allow network-outbound (remote ip "localhost:*"))`)
		w.line(`(deny network-outbound (remote ip "localhost:53"))`)
	}
	var local, remote []string
	for _, e := range view {
		if q, ok := w.quoted(e.field, e.path); ok && e.access == writable {
			local = append(local, "(local unix-socket (subpath "+q+"))")
			remote = append(remote, "(remote unix-socket (subpath "+q+"))")
		}
	}
	w.rule("allow", "network-bind network-inbound", local)
	w.rule("allow", "network-outbound", remote)
}

// sbpl accumulates a profile; the first path it cannot write is its err.
type sbpl struct {
	b   strings.Builder
	err error
}

func (w *sbpl) line(s string) { w.b.WriteString(s + "\n") }

// fail keeps the first error.
func (w *sbpl) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *sbpl) comment(s string) { w.b.WriteString("\n; " + s + "\n") }

// rule writes (ACTION OPS FILTER...), one filter a line; no filters, no rule.
func (w *sbpl) rule(action, ops string, filters ...[]string) {
	var all []string
	for _, f := range filters {
		all = append(all, f...)
	}
	if len(all) == 0 {
		return
	}
	w.b.WriteString("(" + action + " " + ops)
	for _, f := range all {
		w.b.WriteString("\n  " + f)
	}
	w.b.WriteString(")\n")
}

// quoted is p as an SBPL string, or false (and w.err) when p cannot be
// one: not absolute and clean (a rule for it would name another path),
// a control character, invalid UTF-8.
func (w *sbpl) quoted(field, p string) (string, bool) {
	reason := ""
	switch {
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p:
		reason = "is not an absolute, clean path"
	case !utf8.ValidString(p):
		reason = "is not UTF-8, so it cannot be written into a Seatbelt profile"
	case strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		reason = "holds a control character, so it cannot be written into a Seatbelt profile"
	}
	if reason != "" {
		w.fail(policyErr(field, strconv.Quote(p), "%s", reason))
		return "", false
	}
	return quote(p), true
}

// quote writes s as an SBPL (Scheme) string literal: a backslash and a
// double quote escaped, every other byte as it is.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// literal is (literal "p").
func (w *sbpl) literal(field, p string) string {
	q, _ := w.quoted(field, p)
	return "(literal " + q + ")"
}

func (w *sbpl) literals(field string, paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, w.literal(field, p))
	}
	return out
}

// grants are the filters of paths a rule allows: each one and what lies
// below it, spelled exactly.
func (w *sbpl) grants(field string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if q, ok := w.quoted(field, p); ok {
			out = append(out, "(subpath "+q+")")
		}
	}
	return out
}

// denials are the filters of paths a rule denies, and what lies below
// them: exactly, and in every spelling a case-insensitive filesystem takes
// for them.
func (w *sbpl) denials(field string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if q, ok := w.quoted(field, p); ok {
			out = append(out, "(subpath "+q+")", "(regex #\""+caseless(p, true)+"\")")
		}
	}
	return out
}

// exactDenials are denials of the paths themselves, not what lies below.
func (w *sbpl) exactDenials(field string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if q, ok := w.quoted(field, p); ok {
			out = append(out, "(literal "+q+")", "(regex #\""+caseless(p, false)+"\")")
		}
	}
	return out
}

// caseless is a regex for every spelling of p (clean, absolute) on a
// case-insensitive filesystem, and with below everything under it: an
// ASCII letter matches either case, a digit or _ itself, '.', '-' and ' '
// themselves through a bracket, and a name holding any other byte matches
// any name — Unicode folds case and normalisation in ways no short
// pattern follows, and matching more only denies more. Nothing of p
// reaches the regex but letters, digits and those three characters.
func caseless(p string, below bool) string {
	var b strings.Builder
	b.WriteByte('^')
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		b.WriteByte('/')
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !plainByte(r) }) >= 0 {
			b.WriteString("[^/]+")
			continue
		}
		for _, r := range name {
			switch {
			case 'a' <= r && r <= 'z':
				b.WriteString("[" + strings.ToUpper(string(r)) + string(r) + "]")
			case 'A' <= r && r <= 'Z':
				b.WriteString("[" + string(r) + strings.ToLower(string(r)) + "]")
			case '0' <= r && r <= '9' || r == '_':
				b.WriteRune(r)
			default: // '.', '-', ' '
				b.WriteString("[" + string(r) + "]")
			}
		}
	}
	if below {
		b.WriteString("(/.*)?")
	}
	b.WriteByte('$')
	return b.String()
}

func plainByte(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_.- ", r)
}

func globalNames(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, "(global-name "+quote(n)+")")
	}
	return out
}

// appendAncestors adds the folders above p (not the root) to list, once.
func appendAncestors(list []string, p string) []string {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if !slices.Contains(list, d) {
			list = append(list, d)
		}
	}
	return list
}
