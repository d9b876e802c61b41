package sandbox

import (
	"errors"
	"flag"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The seatbelt profile writer is pure, so its tests run on every platform:
// golden profiles, properties checked by evaluating what a profile says
// (sbpl_eval_test.go), hostile names, and a fuzz test. The profile in
// force on a real Mac is attacked by the darwin attack tests
// (attack_darwin_test.go).

var update = flag.Bool("update", false, "rewrite the golden profiles in testdata/seatbelt")

// A fork of a race, as the darwin backend sees it.
const (
	devHome     = "/Users/dev"
	devWork     = "/Users/dev/.forkbomb/workspaces/f1/tree"
	devTmp      = "/private/var/folders/xy/abc123/T/forkbomb-sbx-42-1/tmp"
	devPrivHome = "/private/var/folders/xy/abc123/T/forkbomb-sbx-42-1/home"
	devInit     = "/usr/local/bin/forkbomb"
)

// devSpec is the spec of p for a fork (the defaults a race's fork has).
func devSpec(p Policy) seatbeltSpec {
	if p.Workdir == "" {
		p.Workdir = devWork
	}
	if p.Command == nil {
		p.Command = []string{"make", "test"}
	}
	if p.Network == "" {
		p.Network = NetworkNone
	}
	return seatbeltSpec{
		resolved: &resolved{Policy: p, Home: devHome, HomeDirs: homeRoots(devHome)},
		PrivTmp:  devTmp, PrivHome: devPrivHome,
		GitTargets:     []string{p.Workdir + "/.git"},
		ToolchainPaths: []string{devHome + "/go/pkg/mod", devHome + "/.cargo"},
		Init:           devInit,
	}
}

func mustProfile(t testing.TB, s seatbeltSpec) (string, []sbRule) {
	t.Helper()
	p, err := writeSeatbelt(s)
	if err != nil {
		t.Fatalf("writeSeatbelt: %v", err)
	}
	return p, profileRules(t, p)
}

// goldenSpecs are the profiles kept in testdata/seatbelt, one per shape of
// policy forkbomb runs.
func goldenSpecs() map[string]seatbeltSpec {
	proxy := devSpec(Policy{Network: NetworkProxy, Proxy: &Proxy{Socket: "/private/var/folders/xy/abc123/T/forkbomb-proxy-42-1/f1.sock", Port: 8119},
		Hide: []string{devHome + "/.forkbomb", "/private/var/folders/xy/abc123/T/forkbomb-proxy-42-1"}})
	exposed := devSpec(Policy{
		ReadOnly: []string{"/opt/data", devWork + "/vendor"}, ReadWrite: []string{devHome + "/cache"}, Scratch: []string{"/opt/gocache"},
		Toolchains: true, Hide: []string{devHome + "/.forkbomb", devWork + "/secret"},
	})
	exposed.GitTargets = append(exposed.GitTargets, devWork+"/lib/sub/.git", "/Users/dev/cache/mirror.git")
	return map[string]seatbeltSpec{
		"fork":     devSpec(Policy{Hide: []string{devHome + "/.forkbomb", devHome + "/src/app"}}),
		"proxy":    proxy,
		"host":     devSpec(Policy{Network: NetworkHost}),
		"exposed":  exposed,
		"programs": devSpec(Policy{AllowPrograms: []string{"/usr/bin/make", "/bin"}, DenyPrograms: []string{"/usr/bin/curl"}}),
	}
}

// TestSeatbeltGolden: each golden profile is written exactly as kept
// (go test -run TestSeatbeltGolden -update rewrites them).
func TestSeatbeltGolden(t *testing.T) {
	t.Parallel()
	for name, s := range goldenSpecs() {
		t.Run(name, func(t *testing.T) {
			got, _ := mustProfile(t, s)
			file := filepath.Join("testdata", "seatbelt", name+".sb")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test -run TestSeatbeltGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the profile differs from %s (-update rewrites it):\n%s", file, got)
			}
		})
	}
}

// TestSeatbeltEveryFieldReachesARule: every field of a Policy, and of what
// the backend adds to it, either changes the profile or is enforced
// elsewhere for a reason named here — a field added to Policy without a
// decision for macOS fails this test.
func TestSeatbeltEveryFieldReachesARule(t *testing.T) {
	t.Parallel()
	// A change of the field that must change the profile, from a base
	// policy where the field is in force.
	inProfile := map[string]struct {
		base, change func(*seatbeltSpec)
	}{
		"Workdir":       {nil, func(s *seatbeltSpec) { s.Workdir = devHome + "/src/other" }},
		"ReadOnly":      {nil, func(s *seatbeltSpec) { s.ReadOnly = []string{"/opt/data"} }},
		"ReadWrite":     {nil, func(s *seatbeltSpec) { s.ReadWrite = []string{devHome + "/cache"} }},
		"Network":       {nil, func(s *seatbeltSpec) { s.Network = NetworkHost }},
		"Toolchains":    {nil, func(s *seatbeltSpec) { s.resolved.Toolchains = true }},
		"Scratch":       {nil, func(s *seatbeltSpec) { s.Scratch = []string{"/opt/gocache"} }},
		"Hide":          {nil, func(s *seatbeltSpec) { s.Hide = []string{"/srv/secret"} }},
		"AllowPrograms": {nil, func(s *seatbeltSpec) { s.AllowPrograms = []string{"/usr/bin/make"} }},
		"DenyPrograms":  {nil, func(s *seatbeltSpec) { s.DenyPrograms = []string{"/usr/bin/curl"} }},
		"Proxy": {func(s *seatbeltSpec) { s.Network, s.Proxy = NetworkProxy, &Proxy{Socket: "/srv/p/s", Port: 8119} },
			func(s *seatbeltSpec) { s.Proxy = &Proxy{Socket: "/srv/p/s", Port: 9000} }},
		// what the darwin backend gathers, and the caller's home
		"Home":           {nil, func(s *seatbeltSpec) { s.resolved.Home = "/Users/other" }},
		"PrivTmp":        {nil, func(s *seatbeltSpec) { s.PrivTmp = devTmp + "2" }},
		"PrivHome":       {nil, func(s *seatbeltSpec) { s.PrivHome = devPrivHome + "2" }},
		"GitTargets":     {nil, func(s *seatbeltSpec) { s.GitTargets = append(s.GitTargets, devWork+"/sub/.git") }},
		"ToolchainPaths": {func(s *seatbeltSpec) { s.resolved.Toolchains = true }, func(s *seatbeltSpec) { s.ToolchainPaths = s.ToolchainPaths[:1] }},
		"Init":           {nil, func(s *seatbeltSpec) { s.Init = "/opt/forkbomb/bin/forkbomb" }},
	}
	elsewhere := map[string]string{
		"Command":       "the init's argv",
		"Env":           "the environment allowlist (buildEnv)",
		"SetEnv":        "the environment (buildEnv)",
		"Placeholders":  "the environment, checked by resolve (checkPlaceholders)",
		"Timeout":       "forkbomb's timer, then the init ends the sandbox",
		"MaxOutput":     "forkbomb's copy of the output, then the init ends the sandbox",
		"Memory":        "not enforced on macOS; a warning says so (seatbeltWarnings)",
		"Pids":          "not enforced on macOS; a warning says so (seatbeltWarnings)",
		"CPUs":          "not enforced on macOS; a warning says so (seatbeltWarnings)",
		"Nice":          "setpriority on sandbox-exec's process just after its start (sandbox_darwin.go)",
		"Yield":         "not applied on macOS: a priority lowered there cannot be raised back without privilege (sandbox_darwin.go)",
		"Mode":          "chooses this backend",
		"Overlay":       "refused (seatbeltRefusals): macOS forks are copies",
		"User":          "refused for a root caller (seatbeltRefusals); otherwise what the command sees of itself only, which macOS cannot change",
		"ScratchLayers": "layers need overlayfs; a Scratch path is read-only as it is, as in the landlock backend",
		"GitDirs":       "made GitTargets by the backend (seatbeltSpec)",
		"Init":          "Linux's standalone init; macOS's is forkbomb itself (seatbeltSpec.Init)",
		"NoSandbox":     "no profile at all",
		"HomeDirs":      "the writer hides macOS's home roots (seatbeltHomeRoots) and Home",
	}
	var fields []string
	for _, typ := range []reflect.Type{reflect.TypeFor[Policy](), reflect.TypeFor[resolved](), reflect.TypeFor[seatbeltSpec]()} {
		for i := range typ.NumField() {
			if f := typ.Field(i); !f.Anonymous {
				fields = append(fields, f.Name)
			}
		}
	}
	for _, name := range fields {
		m, ok := inProfile[name]
		why, ok2 := elsewhere[name]
		switch {
		case ok && ok2 && name != "Init":
			t.Errorf("%s: both in the profile and elsewhere (%s)", name, why)
		case !ok && !ok2:
			t.Errorf("%s: neither reaches a rule nor is said to be enforced elsewhere: decide what it means on macOS", name)
		case ok:
			base := devSpec(Policy{})
			if m.base != nil {
				m.base(&base)
			}
			before, _ := mustProfile(t, base)
			r := *base.resolved
			changed := base
			changed.resolved = &r
			m.change(&changed)
			after, _ := mustProfile(t, changed)
			if before == after {
				t.Errorf("%s: changing it does not change the profile", name)
			}
		}
	}
}

// writableIn is what may be written under s, said plainly: a few devices;
// never what is a credential, a root-only secret or git metadata (in any
// letter case); else what the deepest folder of the view holding p says —
// writable trees by their exact name, hidden and read-only ones in any
// letter case (a name in another case is another spelling of the same
// folder on APFS).
func writableIn(s seatbeltSpec, p string) bool {
	if slices.Contains(seatbeltDevices, p) {
		return true
	}
	lower := strings.ToLower(p)
	under := func(list []string) bool {
		return slices.ContainsFunc(list, func(b string) bool { return within(lower, strings.ToLower(b)) })
	}
	if under(credentialPathsOf(s.Home, seatbeltCredentials)) || under(seatbeltRootSecrets) || under(s.GitTargets) {
		return false
	}
	depth, verdict := -1, false
	consider := func(list []string, exact, w bool) {
		for _, b := range list {
			in := within(p, b)
			if !exact {
				in = within(lower, strings.ToLower(b))
			}
			if d := strings.Count(b, "/"); in && (d > depth || d == depth && w) {
				depth, verdict = d, w
			}
		}
	}
	hidden := slices.Concat(seatbeltHomeRoots, []string{s.Home}, seatbeltHiddenDirs, seatbeltTempRoots, s.Hide)
	consider(hidden, false, false)
	consider(slices.Concat(s.ReadOnly, s.Scratch, s.ToolchainPaths), false, false)
	consider(append([]string{s.Workdir, s.PrivTmp, s.PrivHome}, s.ReadWrite...), true, true)
	return verdict
}

// TestSeatbeltNoWriteOutside: no rule of any golden profile grants a write
// outside the fork's writable trees and its private temp dir and home
// (but a few devices), and what is written there is exactly what may be:
// checked by the rules' filters and by deciding writes to paths all over
// the machine, in other letter cases too.
func TestSeatbeltNoWriteOutside(t *testing.T) {
	t.Parallel()
	for name, s := range goldenSpecs() {
		t.Run(name, func(t *testing.T) {
			_, rules := mustProfile(t, s)
			trees := append([]string{s.Workdir, s.PrivTmp, s.PrivHome}, s.ReadWrite...)
			for _, r := range rules {
				if !r.allow || !slices.ContainsFunc(r.ops, func(op string) bool { return strings.HasPrefix(op, "file-write") }) {
					continue
				}
				if len(r.filters) == 0 {
					t.Errorf("a write allowed everywhere: %v", r.ops)
				}
				for _, f := range r.filters {
					ok := false
					switch f.list[0].atom {
					case "subpath":
						ok = slices.ContainsFunc(trees, func(tr string) bool { return within(f.list[1].str, tr) })
					case "literal":
						ok = slices.Contains(seatbeltDevices, f.list[1].str)
					case "regex":
						ok = f.list[1].regex == "^/dev/fd/[0-9]+$"
					}
					if !ok {
						t.Errorf("a write is allowed by %s", render(f))
					}
				}
			}
			probes := []string{
				"/", "/Users", devHome, devHome + "/x", devHome + "/.ssh/authorized_keys", devHome + "/Library/LaunchAgents/evil.plist",
				"/private/etc/hosts", "/usr/local/bin/forkbomb", "/Applications/x", "/Library/LaunchDaemons/x.plist",
				"/private/tmp/x", "/private/var/tmp/x", "/private/var/folders/zz/other/T/x", "/private/var/folders/xy/abc123/T/forkbomb-sbx-42-1/profile.sb",
				path.Dir(s.Workdir) + "/x", devHome + "/.forkbomb/workspaces/f2/tree/x", devHome + "/.forkbomb/runs/r1/run.json",
				s.Workdir + "/main.go", s.Workdir + "/.git/config", s.Workdir + "/.git/hooks/pre-commit", strings.ToUpper(s.Workdir) + "/.GIT/config",
				s.Workdir + "/.Git/hooks/post-checkout", s.PrivTmp + "/x", s.PrivHome + "/.cache/x", "/dev/null", "/dev/disk0", "/dev/ttys001",
				"/Library/Keychains/System.keychain", devHome + "/Library/Keychains/login.keychain-db",
			}
			for _, e := range s.view() {
				probes = append(probes, e.path+"/x", strings.ToUpper(e.path)+"/X")
			}
			probes = append(probes, s.GitTargets...)
			for _, p := range probes {
				want := writableIn(s, p)
				if got := allowed(t, rules, query{op: "file-write-data", path: p}); got != want {
					t.Errorf("write %s: allowed %v, want %v", p, got, want)
				}
			}
		})
	}
}

// TestSeatbeltCredentials: every credential folder under home and every
// root-only secret is unreadable and unwritable in every letter case —
// also inside a toolchain folder that is readable (~/.cargo/credentials)
// and when the policy names it readable itself (the writer denies it
// whatever resolve let through).
func TestSeatbeltCredentials(t *testing.T) {
	t.Parallel()
	s := devSpec(Policy{Toolchains: true, ReadOnly: []string{devHome + "/.ssh", devHome + "/Library/Keychains"}})
	_, rules := mustProfile(t, s)
	if !allowed(t, rules, query{op: "file-read-data", path: devHome + "/.cargo/registry/index"}) {
		t.Fatal("control: a toolchain folder is not readable")
	}
	secrets := append(credentialPathsOf(devHome, seatbeltCredentials), seatbeltRootSecrets...)
	for _, c := range secrets {
		for _, p := range []string{c, c + "/x", strings.ToUpper(c), strings.ToUpper(c) + "/X", strings.ToLower(c)} {
			for _, op := range []string{"file-read-data", "file-read-metadata", "file-write-data", "file-write-create"} {
				if allowed(t, rules, query{op: op, path: p}) {
					t.Errorf("%s %s: allowed", op, p)
				}
			}
		}
	}
	for _, p := range []string{"/Library/Keychains/System.keychain", "/private/var/db/dslocal/nodes/Default/users/root.plist", "/Users/other/.ssh/id_ed25519", "/private/var/root/.ssh/id_rsa"} {
		if allowed(t, rules, query{op: "file-read-data", path: p}) {
			t.Errorf("read %s: allowed", p)
		}
	}
	if allowed(t, rules, query{op: "mach-lookup", name: "com.apple.SecurityServer"}) || allowed(t, rules, query{op: "mach-lookup", name: "com.apple.securityd.xpc"}) {
		t.Error("the keychain's service can be looked up")
	}
	if allowed(t, rules, query{op: "sysctl-read", name: "kern.procargs2"}) {
		t.Error("another process's environment (kern.procargs2) can be read")
	}
	if !allowed(t, rules, query{op: "sysctl-read", name: "hw.ncpu"}) || !allowed(t, rules, query{op: "mach-lookup", name: "com.apple.system.opendirectoryd.libinfo"}) {
		t.Error("control: an ordinary sysctl or user lookup is refused")
	}
}

// TestSeatbeltNetwork: loopback only and no DNS; the model proxy's port
// alone; the host's network; UNIX sockets in the writable trees only.
func TestSeatbeltNetwork(t *testing.T) {
	t.Parallel()
	out := func(addr string) query { return query{op: "network-outbound", remote: addr} }
	bind := func(addr string) query { return query{op: "network-bind", local: addr} }
	for _, tc := range []struct {
		name    string
		p       Policy
		allowed []query
		denied  []query
	}{
		{"none", Policy{},
			[]query{out("localhost:8080"), bind("localhost:8080"), {op: "network-outbound", remote: "unix", path: devWork + "/run/app.sock"}, {op: "network-bind", local: "unix", path: devTmp + "/s"}},
			[]query{out("192.0.2.1:443"), out("localhost:53"), {op: "network-outbound", remote: "unix", path: "/private/var/run/mDNSResponder"},
				{op: "network-outbound", remote: "unix", path: devHome + "/.docker/run/docker.sock"}, {op: "mach-lookup", name: "com.apple.dnssd.service"}, {op: "system-socket", name: "AF_ROUTE"}}},
		{"proxy", Policy{Network: NetworkProxy, Proxy: &Proxy{Socket: "/srv/p/s", Port: 8119}},
			[]query{out("localhost:8119")},
			[]query{out("localhost:8080"), bind("localhost:8119"), out("192.0.2.1:443"), out("localhost:53"), {op: "mach-lookup", name: "com.apple.dnssd.service"}}},
		{"host", Policy{Network: NetworkHost},
			[]query{out("192.0.2.1:443"), out("localhost:53"), {op: "mach-lookup", name: "com.apple.dnssd.service"}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rules := mustProfile(t, devSpec(tc.p))
			for _, q := range tc.allowed {
				if !allowed(t, rules, q) {
					t.Errorf("%+v: refused", q)
				}
			}
			for _, q := range tc.denied {
				if allowed(t, rules, q) {
					t.Errorf("%+v: allowed", q)
				}
			}
		})
	}
}

// TestSeatbeltKeepsGitAndHidden: git metadata in a writable tree is
// readable and never writable (in any letter case), the folders above it
// cannot be moved away, and no hard link can be made; a path hidden inside
// the workdir is unreadable and pinned the same way; the workdir inside a
// hidden state folder stays the command's.
func TestSeatbeltKeepsGitAndHidden(t *testing.T) {
	t.Parallel()
	s := goldenSpecs()["exposed"]
	_, rules := mustProfile(t, s)
	for _, q := range []query{
		{op: "file-read-data", path: devWork + "/.git/config"},
		{op: "file-write-create", path: devWork + "/new.go"},
		{op: "file-write-unlink", path: devWork + "/lib/old.go"},
		{op: "file-read-data", path: devWork + "/vendor/x.go"},
		{op: "process-exec", path: devInit},
	} {
		if !allowed(t, rules, q) {
			t.Errorf("control %+v: refused", q)
		}
	}
	for _, q := range []query{
		{op: "file-write-data", path: devWork + "/.git/config"},
		{op: "file-write-create", path: devWork + "/lib/sub/.GIT/hooks/pre-commit"},
		{op: "file-write-unlink", path: devWork + "/lib/sub"},
		{op: "file-write-unlink", path: devWork + "/LIB"},
		{op: "file-write-unlink", path: devWork + "/.git"},
		{op: "file-write-data", path: "/Users/dev/cache/mirror.git/hooks/post-receive"},
		{op: "file-link", path: devWork + "/x"},
		{op: "file-read-data", path: devWork + "/secret/key"},
		{op: "file-read-data", path: devWork + "/SECRET/key"},
		{op: "file-write-unlink", path: devWork + "/secret"},
		{op: "file-write-data", path: devWork + "/vendor/x.go"},
		{op: "file-read-data", path: devHome + "/.forkbomb/workspaces/f2/tree/x"},
	} {
		if allowed(t, rules, q) {
			t.Errorf("%+v: allowed", q)
		}
	}
}

// TestSeatbeltPrograms: an allow-list lets only its programs and forkbomb
// (the init) run, and nothing in a writable tree be mapped executable;
// a deny wins in every letter case; forkbomb's own program cannot be
// denied (it is the init).
func TestSeatbeltPrograms(t *testing.T) {
	t.Parallel()
	exec := func(p string) query { return query{op: "process-exec", path: p} }
	_, rules := mustProfile(t, goldenSpecs()["programs"])
	for _, q := range []query{exec("/usr/bin/make"), exec("/bin/sh"), exec(devInit), {op: "file-map-executable", path: "/usr/lib/libz.dylib"}} {
		if !allowed(t, rules, q) {
			t.Errorf("%+v: refused", q)
		}
	}
	for _, q := range []query{exec("/usr/bin/python3"), exec("/usr/bin/curl"), exec(devWork + "/make"), {op: "file-map-executable", path: devWork + "/a.dylib"}, {op: "file-map-executable", path: devTmp + "/x"}} {
		if allowed(t, rules, q) {
			t.Errorf("%+v: allowed", q)
		}
	}
	_, rules = mustProfile(t, devSpec(Policy{DenyPrograms: []string{"/usr/bin/curl"}}))
	for _, p := range []string{"/usr/bin/curl", "/USR/BIN/CURL", "/usr/bin/Curl"} {
		if allowed(t, rules, exec(p)) {
			t.Errorf("exec %s: allowed", p)
		}
	}
	if !allowed(t, rules, exec("/usr/bin/git")) || !allowed(t, rules, query{op: "file-map-executable", path: devWork + "/a.dylib"}) {
		t.Error("control: a deny-list refuses what it does not name")
	}
	_, err := writeSeatbelt(devSpec(Policy{DenyPrograms: []string{"/usr/local/bin"}}))
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Field != "DenyPrograms" {
		t.Errorf("a deny-list holding forkbomb itself: %v", err)
	}
}

// TestSeatbeltProcesses: signals and process information within the
// sandbox only.
func TestSeatbeltProcesses(t *testing.T) {
	t.Parallel()
	_, rules := mustProfile(t, devSpec(Policy{}))
	for op, want := range map[query]bool{
		{op: "signal", target: "same-sandbox"}:                true,
		{op: "signal", target: "others"}:                      false,
		{op: "process-info-pidinfo", target: "others"}:        false,
		{op: "process-fork"}:                                  true,
		{op: "mach-lookup", name: "com.apple.pasteboard.1"}:   false,
		{op: "mach-lookup", name: "com.apple.cfprefsd.agent"}: false,
		{op: "user-preference-read"}:                          false,
		{op: "appleevent-send"}:                               false,
		{op: "lsopen"}:                                        false,
	} {
		if got := allowed(t, rules, op); got != want {
			t.Errorf("%+v: allowed %v, want %v", op, got, want)
		}
	}
}

// hostileNames are names a repository, a user or a fork may give a folder.
var hostileNames = []struct {
	name    string
	refused bool
}{
	{`quote"in"name`, false},
	{`back\slash\"`, false},
	{`paren)(allow default)(`, false},
	{`semi;colon ; (allow file-write*)`, false},
	{`#"regex"`, false},
	{`.*+?^$|[]{}()`, false},
	{`über café`, false},
	{"日本語", false},
	{"new\nline", true},
	{"carriage\rreturn", true},
	{"tab\tbed", true},
	{"del\x7f", true},
	{"nul\x00", true},
	{"not-utf8-\xff\xfe", true},
	{"half-\xe6\x97", true},
}

// TestSeatbeltHostileNames: a hostile name is written as exactly itself —
// the profile reads back to the same string, adds no rule, and grants the
// folder of that name and nothing else — or refused with a PolicyError
// naming the field, in every field a path comes from.
func TestSeatbeltHostileNames(t *testing.T) {
	t.Parallel()
	fields := map[string]func(string) seatbeltSpec{
		"Workdir": func(p string) seatbeltSpec { return devSpec(Policy{Workdir: p}) },
		"ReadOnly": func(p string) seatbeltSpec {
			return devSpec(Policy{Workdir: devHome + "/src/plain", ReadOnly: []string{p}})
		},
		"Hide": func(p string) seatbeltSpec {
			return devSpec(Policy{Workdir: devHome + "/src/plain", Hide: []string{p}})
		},
		"DenyPrograms": func(p string) seatbeltSpec {
			return devSpec(Policy{Workdir: devHome + "/src/plain", DenyPrograms: []string{p}})
		},
		"Init": func(p string) seatbeltSpec {
			s := devSpec(Policy{Workdir: devHome + "/src/plain"})
			s.Init = p
			return s
		},
	}
	for _, h := range hostileNames {
		for field, spec := range fields {
			t.Run(field+"/"+h.name, func(t *testing.T) {
				p := devHome + "/src/" + h.name
				profile, err := writeSeatbelt(spec(p))
				if h.refused {
					var pe *PolicyError
					if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPolicy) || pe.Field != field {
						t.Fatalf("refused with %v, want a PolicyError of %s", err, field)
					}
					return
				}
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				forms, err := parseSBPL(profile)
				if err != nil {
					t.Fatalf("the profile does not read back: %v", err)
				}
				if !slices.Contains(literals(forms), p) {
					t.Errorf("%q is not in the profile as itself", p)
				}
				rules := profileRules(t, profile)
				_, plain := mustProfile(t, spec(devHome+"/src/plain-name"))
				if len(rules) != len(plain) {
					t.Errorf("%d rules, %d with a plain name: the name made rules", len(rules), len(plain))
				}
				if field == "Workdir" {
					if !allowed(t, rules, query{op: "file-write-data", path: p + "/x"}) || allowed(t, rules, query{op: "file-write-data", path: devHome + "/src/plain/x"}) {
						t.Error("the hostile workdir is not the one writable tree")
					}
				}
			})
		}
	}
	// git metadata found in a tree: refused through the workdir.
	s := devSpec(Policy{})
	s.GitTargets = append(s.GitTargets, devWork+"/a\nb/.git")
	var pe *PolicyError
	if _, err := writeSeatbelt(s); !errors.As(err, &pe) || pe.Field != "Workdir" {
		t.Errorf("git metadata under a name with a line break: %v", err)
	}
}

// FuzzSeatbeltProfile: whatever the names of the workdir and of a hidden
// folder, the profile is refused with a PolicyError (a name that cannot be
// written safely) or reads back with the workdir as itself, writable, and
// nothing beside it writable, the hidden folder unreadable, the
// credentials denied.
func FuzzSeatbeltProfile(f *testing.F) {
	for _, h := range hostileNames {
		f.Add(h.name, "secret")
	}
	f.Add("repo", "a/b/c")
	f.Add("a/../b", "x")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, work, hide string) {
		w, h := devHome+"/w/"+work, devHome+"/h/"+hide
		profile, err := writeSeatbelt(devSpec(Policy{Workdir: w, Hide: []string{h}}))
		writable := func(p string) bool {
			return path.Clean(p) == p && utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f })
		}
		if !writable(w) || !writable(h) {
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("%q, %q: not refused (%v)", w, h, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q, %q: refused: %v", w, h, err)
		}
		forms, err := parseSBPL(profile)
		if err != nil {
			t.Fatalf("the profile does not read back: %v", err)
		}
		if !slices.Contains(literals(forms), w) {
			t.Fatalf("%q is not in the profile as itself", w)
		}
		rules := profileRules(t, profile)
		checks := map[query]bool{
			{op: "file-write-data", path: w + "/f"}:            !within(w+"/f", w+"/.git"),
			{op: "file-write-data", path: devHome + "/w/../x"}: false,
			{op: "file-write-data", path: devHome + "/x"}:      false,
			{op: "file-read-data", path: h + "/f"}:             false,
			{op: "file-read-data", path: devHome + "/.ssh/id"}: false,
		}
		for q, want := range checks {
			if got := allowed(t, rules, q); got != want {
				t.Errorf("%+v: allowed %v, want %v", q, got, want)
			}
		}
	})
}
