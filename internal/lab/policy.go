package lab

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Policy is what a fork may do, as a person writes it. Every field is
// spelt as the flag of the same name (network = "none", memory = "4G",
// timeout = "10m"), and an empty field is that flag left out: so the
// zero Policy — the built-in "default" — is exactly today's flags.
type Policy struct {
	// Network: "none", "host" (sandbox only) or "allow:HOST[,HOST…]"
	// (run only: forks reach those hosts through forkbomb's proxy).
	Network string `toml:"network" json:"network,omitempty"`
	// Readable and Writable are extra host paths (--ro, --rw).
	Readable []string `toml:"readable" json:"readable,omitempty"`
	Writable []string `toml:"writable" json:"writable,omitempty"`
	// Env names variables passed from the caller's environment (--env);
	// credential-like names are refused by the sandbox.
	Env []string `toml:"env" json:"env,omitempty"`
	// AllowedPrograms and DeniedPrograms: files or folders; with an
	// allow-list nothing else executes; deny wins (--allow-program,
	// --deny-program).
	AllowedPrograms []string `toml:"allowed_programs" json:"allowed_programs,omitempty"`
	DeniedPrograms  []string `toml:"denied_programs" json:"denied_programs,omitempty"`
	Memory          string   `toml:"memory" json:"memory,omitempty"`         // "512M", "4G", "none"
	Pids            int      `toml:"pids" json:"pids,omitempty"`             // 0: the command's default
	CPUs            float64  `toml:"cpus" json:"cpus,omitempty"`             // cores; 0: the default
	Timeout         string   `toml:"timeout" json:"timeout,omitempty"`       // "10m"
	MaxOutput       string   `toml:"max_output" json:"max_output,omitempty"` // "1M"
	Toolchains      bool     `toml:"toolchains" json:"toolchains,omitempty"`
}

// DefaultPolicy is the id of the built-in policy: the zero Policy.
const DefaultPolicy = "default"

// PolicyFields are the policy's keys, in the order show prints them.
var PolicyFields = []string{"network", "readable", "writable", "env", "allowed_programs", "denied_programs", "memory", "pids", "cpus", "timeout", "max_output", "toolchains"}

func (p *Policy) check() (key, reason string) {
	switch n := p.Network; {
	case n == "", n == "none", n == "host":
	case strings.HasPrefix(n, "allow:"):
		for _, h := range strings.Split(strings.TrimPrefix(n, "allow:"), ",") {
			if strings.TrimSpace(h) == "" || strings.TrimSpace(h) == "host" {
				return "network", fmt.Sprintf("%q: want allow:HOST[,HOST…] with no empty host and not host", n)
			}
		}
	default:
		return "network", fmt.Sprintf("%q: want none, host or allow:HOST[,HOST…]", n)
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"readable", p.Readable}, {"writable", p.Writable}, {"allowed_programs", p.AllowedPrograms}, {"denied_programs", p.DeniedPrograms}} {
		for _, path := range l.paths {
			if !filepath.IsAbs(path) {
				return l.key, fmt.Sprintf("%q is not an absolute path", path)
			}
		}
	}
	for _, e := range p.Env {
		if e == "" || strings.ContainsAny(e, "= \t") {
			return "env", fmt.Sprintf("%q is not a variable name", e)
		}
	}
	if m := p.Memory; m != "" && m != "none" {
		if _, err := sandbox.ParseBytes(m); err != nil {
			return "memory", err.Error()
		}
	}
	if p.Pids < 0 {
		return "pids", "must not be negative"
	}
	if p.CPUs < 0 {
		return "cpus", "must not be negative"
	}
	if p.Timeout != "" {
		if d, err := time.ParseDuration(p.Timeout); err != nil || d < 0 {
			return "timeout", fmt.Sprintf("%q is not a duration (try 30s or 10m)", p.Timeout)
		}
	}
	if p.MaxOutput != "" {
		if _, err := sandbox.ParseBytes(p.MaxOutput); err != nil {
			return "max_output", err.Error()
		}
	}
	return "", ""
}

// ParsePolicy reads a policy file's bytes strictly; file names it in errors.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	var p Policy
	if err := decodeStrict(file, data, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
