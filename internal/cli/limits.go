package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// limitFlags are --memory, --pids and --cpus of a verb that runs many
// confined commands at once (run, judge). Empty is the default share of the
// machine; "none" (or 0) is no limit.
type limitFlags struct {
	memory, pids, cpus string
}

// add registers the flags; each is a share of the machine per `per`.
func (lf *limitFlags) add(f *pflag.FlagSet, per string) {
	kube := ""
	if per == "fork" {
		kube = "; with --backend kubernetes, no more than lets every fork's pod fit the cluster's nodes at once, down to the same floor"
	}
	f.StringVar(&lf.memory, "memory", "", fmt.Sprintf("memory limit of each %s, e.g. 512M or 4G, or none (default: the machine's memory shared among the %ss at work, %s to %s%s)",
		per, per, sandbox.FormatBytes(sandbox.MinDefaultMemory), sandbox.FormatBytes(sandbox.MaxDefaultMemory), kube))
	f.StringVar(&lf.pids, "pids", "", fmt.Sprintf("processes and threads of each %s, or none (default %d)", per, sandbox.DefaultPids))
	f.StringVar(&lf.cpus, "cpus", "", fmt.Sprintf("CPU quota of each %s in cores, e.g. 1.5 (needs a cgroup; default none)", per))
}

// limits reads the flags into a Limits (zero fields: the default).
func (lf *limitFlags) limits() (sandbox.Limits, error) {
	var l sandbox.Limits
	none := func(s string) bool {
		s = strings.ToLower(strings.TrimSpace(s))
		return s == "none" || s == "0"
	}
	switch {
	case lf.memory == "":
	case none(lf.memory):
		l.Memory = sandbox.Unlimited
	default:
		m, err := parseSize(lf.memory)
		if err != nil {
			return l, fmt.Errorf("--memory: %w", err)
		}
		if m < 1<<20 {
			return l, fmt.Errorf("--memory %s: less than 1 MiB leaves nothing to run", lf.memory)
		}
		l.Memory = m
	}
	switch {
	case lf.pids == "":
	case none(lf.pids):
		l.Pids = sandbox.Unlimited
	default:
		n, err := strconv.Atoi(strings.TrimSpace(lf.pids))
		if err != nil || n < 1 {
			return l, fmt.Errorf("--pids %q: a number of processes, or none", lf.pids)
		}
		l.Pids = n
	}
	switch {
	case lf.cpus == "":
	case none(lf.cpus):
		l.CPUs = sandbox.Unlimited
	default:
		c, err := strconv.ParseFloat(strings.TrimSpace(lf.cpus), 64)
		if err != nil || c <= 0 {
			return l, fmt.Errorf("--cpus %q: a number of cores such as 1.5, or none", lf.cpus)
		}
		l.CPUs = c
	}
	return l, nil
}
