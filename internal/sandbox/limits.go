package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are the resource bounds a caller that runs many confined commands
// at once (a race, a judge) gives each of them. They are a view of
// Policy.Memory, Pids and CPUs that can say "the default" and "none" apart:
// a zero field means the default for the machine, a negative one (Unlimited)
// means no limit at all. A task or policy file fills one of these.
type Limits struct {
	Memory int64   `json:"memory,omitempty"` // bytes
	Pids   int     `json:"pids,omitempty"`   // processes and threads
	CPUs   float64 `json:"cpus,omitempty"`   // cores
}

// Unlimited, in a Limits field, means that resource is not bounded.
const Unlimited = -1

// Defaults for one of several commands running at once.
const (
	// DefaultPids is far above what a build or a test runner starts and far
	// below what lets a fork bomb starve the machine.
	DefaultPids = 2048
	// MinDefaultMemory and MaxDefaultMemory clamp the share of the machine's
	// memory each command gets by default.
	MinDefaultMemory = 512 << 20
	MaxDefaultMemory = 8 << 30
	// fallbackMemory is the default when the machine's memory is unknown.
	fallbackMemory = 2 << 30
)

// DefaultLimits are the limits of each of parallel commands running at
// once: an equal share of the memory this process may use (the machine's,
// or its cgroup's when that is smaller), clamped to [512 MiB, 8 GiB];
// DefaultPids processes; the CPUs unbounded (the scheduler shares them:
// CPUs 0 resolves to none).
func DefaultLimits(parallel int) Limits {
	if parallel < 1 {
		parallel = 1
	}
	mem := int64(fallbackMemory)
	if total := availableMemory(); total > 0 {
		mem = min(max(total/int64(parallel), MinDefaultMemory), MaxDefaultMemory)
	}
	return Limits{Memory: mem, Pids: DefaultPids}
}

// Resolve fills the zero fields of l from def; Unlimited stays Unlimited,
// so resolving twice changes nothing.
func (l Limits) Resolve(def Limits) Limits {
	if l.Memory == 0 {
		l.Memory = def.Memory
	}
	if l.Pids == 0 {
		l.Pids = def.Pids
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	return l
}

// Apply sets p's limits from l (resolved: zero and Unlimited both mean
// none to a Policy).
func (l Limits) Apply(p *Policy) {
	p.Memory, p.Pids, p.CPUs = max(l.Memory, 0), max(l.Pids, 0), max(l.CPUs, 0)
}

// String is l for a person: "memory 512 MiB, 2048 processes, CPUs unbounded".
func (l Limits) String() string {
	mem, pids, cpus := "memory unbounded", "processes unbounded", "CPUs unbounded"
	if l.Memory > 0 {
		mem = "memory " + FormatBytes(l.Memory)
	}
	if l.Pids > 0 {
		pids = strconv.Itoa(l.Pids) + " processes"
	}
	if l.CPUs > 0 {
		cpus = strconv.FormatFloat(l.CPUs, 'f', -1, 64) + " CPUs"
	}
	return mem + ", " + pids + ", " + cpus
}

// LimitReason says which limit ended a command, for a record or a verdict:
// res.Limit ("memory", "pids", "output") with the value p set. It is ""
// when no limit ended the command.
func LimitReason(res *Result, p Policy) string {
	if res == nil {
		return ""
	}
	switch res.Limit {
	case "memory":
		return fmt.Sprintf("memory limit (%s) reached", FormatBytes(p.Memory))
	case "pids":
		return fmt.Sprintf("process limit (%d) reached", p.Pids)
	case "output":
		return fmt.Sprintf("output limit (%s) reached", FormatBytes(p.MaxOutput))
	case "":
		return ""
	}
	return res.Limit + " limit reached"
}

// FormatBytes prints a byte count in binary units: 512 MiB, 1.5 GiB.
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + " " + units[i]
}
