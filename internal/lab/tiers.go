package lab

import (
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Tiers are the words of docs/SECURITY.md: how strongly a rule holds.
const (
	TierKernel    = "kernel"
	TierForkbomb  = "forkbomb"
	TierRequested = "requested"
	TierNone      = "none"
)

// TierTag is how strongly one policy setting holds on each backend, and
// the test that attacks it. docs/SECURITY.md's "Policies" table holds the
// same rows; TestTiersMatchSecurityDoc fails when the two drift.
type TierTag struct {
	Setting    string // a policy key, or key=value where the value decides
	Namespaces string // tier under the namespaces backend
	Landlock   string // tier under the landlock backend
	// Seatbelt is the tier on macOS (the seatbelt backend), which has no
	// cgroups: what it enforces, as its attack tests would prove on a Mac
	// (docs/SECURITY.md).
	Seatbelt string
	// NoCgroup is the tier on each backend (namespaces/landlock) where no
	// cgroup can be made; "" is as above.
	NoCgroup string
	Test     string // the test that proves it ("—": none)
	Note     string // what the tier does not cover
}

// Tags is the code's side of the table.
var Tags = []TierTag{
	{Setting: "network=none", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackNetwork", Note: "landlock backend: no socket at all, not even a loopback of its own; macOS: the loopback is the host's, so what listens on it is reachable"},
	{Setting: "network=host", Namespaces: TierNone, Landlock: TierNone, Seatbelt: TierNone, Test: "—", Note: "the host's network"},
	{Setting: "network=allow", Namespaces: TierKernel, Landlock: TierNone, Seatbelt: TierKernel, Test: "TestRaceNetworkAllow", Note: "races only; refused on the landlock backend (TestProxyRefusedWithoutNetns); macOS: the proxy's port is on the host's loopback"},
	{Setting: ".git read-only", Namespaces: TierKernel, Landlock: TierNone, Seatbelt: TierKernel, Test: "TestAttackGitReadOnly", Note: "implicit: every git directory present at start (.git, bare repositories, gitdir and commondir targets); Landlock cannot carve a read-only folder out of a writable one"},
	{Setting: "readable", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackWrites", Note: "read-only"},
	{Setting: "writable", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackWrites"},
	{Setting: "env", Namespaces: TierForkbomb, Landlock: TierForkbomb, Seatbelt: TierForkbomb, Test: "TestAttackEnvironment", Note: "an allowlist; credential-like names refused"},
	{Setting: "allowed_programs", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackPrograms", Note: "every exec, and no file without a name (memfd_create refused; O_TMPFILE and deleted files judged where they were made); not an allowed interpreter running a script or loading code into its own memory, nor the dynamic loader mapping a readable file of the read-only host; landlock backend: nor a copy run through the loader (no noexec mounts)"},
	{Setting: "denied_programs", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackPrograms", Note: "every exec of that file, and no memfd (memfd_create refused); a deny-list alone cannot stop a copy made inside the fork (named, O_TMPFILE or deleted), an interpreter running a script, or the dynamic loader running the file"},
	{Setting: "memory", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierNone, NoCgroup: "kernel/kernel", Test: "TestMemoryLimit", Note: "without a cgroup: RLIMIT_DATA per process, not the whole; macOS: not enforced"},
	{Setting: "pids", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierNone, NoCgroup: "kernel/none", Test: "TestPidsLimit", Note: "without a cgroup: RLIMIT_NPROC under namespaces, none under landlock; macOS: not enforced"},
	{Setting: "cpus", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierNone, NoCgroup: "none/none", Test: "—"},
	{Setting: "timeout", Namespaces: TierForkbomb, Landlock: TierForkbomb, Seatbelt: TierForkbomb, Test: "TestTimeoutKillsEverything"},
	{Setting: "max_output", Namespaces: TierForkbomb, Landlock: TierForkbomb, Seatbelt: TierForkbomb, Test: "TestOutputCap"},
	{Setting: "toolchains", Namespaces: TierKernel, Landlock: TierKernel, Seatbelt: TierKernel, Test: "TestAttackWrites", Note: "read-only; their credential files stay hidden"},
}

// Machine is what decides a tier here: the backend and whether a cgroup
// can be made (from sandbox.Probe).
type Machine struct {
	Backend sandbox.Mode // namespaces, landlock, seatbelt, or none
	Cgroup  bool
}

// MachineFrom reads a probe report.
func MachineFrom(rep *sandbox.ProbeReport) Machine {
	m := Machine{Backend: rep.Mode}
	if l := rep.Layer("cgroup"); l != nil && l.Status == "ok" {
		m.Cgroup = true
	}
	return m
}

// Row is one line of `policy show`.
type Row struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	Tier    string `json:"tier"`
	Test    string `json:"test"`
	Note    string `json:"note,omitempty"`
}

// Show lists every setting of p with its tier on m.
func Show(p *Policy, m Machine) []Row {
	tag := func(setting string) TierTag {
		for _, t := range Tags {
			if t.Setting == setting {
				return t
			}
		}
		panic("lab: no tier tag for " + setting) // TestShowEverySetting
	}
	tier := func(t TierTag) string {
		switch {
		case m.Backend == sandbox.ModeSeatbelt:
			return t.Seatbelt
		case m.Backend != sandbox.ModeNamespaces && m.Backend != sandbox.ModeLandlock:
			return TierNone // no backend: forkbomb refuses to run
		case !m.Cgroup && t.NoCgroup != "":
			ns, ll, _ := strings.Cut(t.NoCgroup, "/")
			if m.Backend == sandbox.ModeNamespaces {
				return ns
			}
			return ll
		case m.Backend == sandbox.ModeNamespaces:
			return t.Namespaces
		}
		return t.Landlock
	}
	list := func(v []string) string {
		if len(v) == 0 {
			return "(none)"
		}
		return strings.Join(v, ", ")
	}
	or := func(v, unset string) string {
		if v == "" {
			return unset
		}
		return v
	}
	netKey := "network=none"
	switch {
	case p.Network == "host":
		netKey = "network=host"
	case strings.HasPrefix(p.Network, "allow:"):
		netKey = "network=allow"
	}
	values := map[string]string{
		netKey:             or(p.Network, "none"),
		".git read-only":   "always",
		"readable":         list(p.Readable),
		"writable":         list(p.Writable),
		"env":              list(p.Env),
		"allowed_programs": list(p.AllowedPrograms),
		"denied_programs":  list(p.DeniedPrograms),
		"memory":           or(p.Memory, "(default)"),
		"pids":             "(default)",
		"cpus":             "(default)",
		"timeout":          or(p.Timeout, "(default)"),
		"max_output":       or(p.MaxOutput, "(none)"),
		"toolchains":       fmt.Sprint(p.Toolchains),
	}
	if p.Pids > 0 {
		values["pids"] = fmt.Sprint(p.Pids)
	}
	if p.CPUs > 0 {
		values["cpus"] = fmt.Sprint(p.CPUs)
	}
	order := append([]string{netKey, ".git read-only"}, PolicyFields[1:]...)
	rows := make([]Row, 0, len(order))
	for _, s := range order {
		t := tag(s)
		r := Row{Setting: s, Value: values[s], Tier: tier(t), Test: t.Test, Note: t.Note}
		if s == netKey {
			r.Setting = "network"
		}
		if s == "allowed_programs" && len(p.AllowedPrograms) > 0 && len(sandbox.Loaders()) > 0 {
			r.Note += "; the dynamic loaders are allowed with the list: " + strings.Join(sandbox.Loaders(), ", ")
		}
		if s == "denied_programs" && len(p.DeniedPrograms) > 0 && len(p.AllowedPrograms) == 0 {
			r.Note = "DENY-LIST ONLY: a copy of a denied program made inside the fork runs; " + r.Note
		}
		rows = append(rows, r)
	}
	return rows
}
