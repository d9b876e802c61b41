package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// baseEnv is the allowlist of variables a confined command sees. HOME and
// TMPDIR are always set to the sandbox's own.
var baseEnv = []string{"PATH", "USER", "LANG", "SHELL", "TERM"}

// secretWords mark names that look like credentials. This is not the
// security boundary (the allowlist is); it stops a user from handing a key
// to an agent by mistake with --env.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "COOKIE", "SSH_AUTH_SOCK", "GPG_AGENT"}

func isEnvName(name string) bool {
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return name != ""
}

func looksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// checkEnvName refuses a variable name of field (Env or SetEnv) that is
// not a name, looks like a credential, or is one the sandbox sets itself.
func checkEnvName(field, name string) error {
	if !isEnvName(name) {
		return policyErr(field, fmt.Sprintf("%q", name), "not a variable name")
	}
	if looksSecret(name) {
		return policyErr(field, name, "looks like a credential; keys never enter the sandbox (see docs/SECURITY.md)")
	}
	if name == "HOME" || name == "TMPDIR" {
		return policyErr(field, name, "the sandbox sets its own %s", name)
	}
	return nil
}

// buildEnv returns the command's whole environment: the allowlist, the
// named extras, then the caller's explicit NAME=VALUE pairs, each name
// once (a pair replaces the caller's value of an allowlisted name).
func buildEnv(extra, set []string, home, tmp string) []string {
	env := make([]string, 0, len(baseEnv)+len(extra)+2)
	seen := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		seen[name] = true
	}
	for _, name := range append(append([]string{}, baseEnv...), extra...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	if !hasVar(env, "PATH") && !hasVar(set, "PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp)
	return append(env, set...)
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}
