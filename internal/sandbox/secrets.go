package sandbox

import (
	"path/filepath"
	"slices"
	"strings"
)

// Credential is an environment variable whose name looks like a
// credential's (see secretWords), with its value.
type Credential struct {
	Name, Value string
}

// CredentialEnv returns the variables of environ (NAME=VALUE pairs, as
// os.Environ gives them) whose names look like credentials and whose values
// are not empty: the values forkbomb holds that must never reach a fork or
// the run record. The list is deliberately wide (a wrong guess costs a
// redacted path, a missed key costs the key); the sandbox's environment
// allowlist, not this list, is what keeps keys out of a fork.
func CredentialEnv(environ []string) []Credential {
	var out []Credential
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if ok && val != "" && looksSecret(name) {
			out = append(out, Credential{Name: name, Value: val})
		}
	}
	return out
}

// Credential folders and files under a home directory. Inside the sandbox
// every home directory is replaced by an empty one, so these are hidden
// whether or not they are listed; the list exists so that no --ro, --rw or
// --workdir can bring one back, and so that docs/SECURITY.md can name them.
var homeCredentials = []string{
	".ssh", ".aws", ".azure", ".gnupg", ".config", ".netrc", ".docker", ".kube",
	".claude", ".claude.json", ".codex", ".npmrc", ".pypirc", ".gitconfig",
	".git-credentials", ".password-store", ".local/share/keyrings", ".vault-token",
	".terraform.d", ".bash_history", ".zsh_history", ".python_history",
	".node_repl_history", ".psql_history", ".mysql_history", ".lesshst",
	".viminfo", ".cargo/credentials", ".cargo/credentials.toml", ".cargo/config.toml", ".cargo/config", ".gem/credentials",
}

// ToolchainDirs are folders under home that --toolchains makes readable (never
// writable). Credential files inside them stay hidden (homeCredentials).
var ToolchainDirs = []string{
	"go/pkg/mod", ".cargo", ".rustup", ".nvm", ".pyenv", ".rbenv", ".volta", ".bun", ".deno", ".sdkman",
}

// rootOnlySecrets are host files that only root can read. A root caller's
// command runs as host uid 0 (without capabilities), so they are masked
// explicitly; see docs/SECURITY.md for what this list cannot cover.
var rootOnlySecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
	"/etc/ssh/ssh_host_dsa_key",
}

// hiddenDirs are host directories replaced by an empty read-only tmpfs
// besides the home directories: /run holds the sockets of system services
// (docker, dbus, systemd) that a read-only mount does not stop a client from
// connecting to.
var hiddenDirs = []string{"/run", "/var/run", "/var/tmp", "/var/lib/docker", "/var/lib/containerd"}

// credentialPaths lists the credential paths under home.
func credentialPaths(home string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, 0, len(homeCredentials))
	for _, c := range homeCredentials {
		out = append(out, filepath.Join(home, c))
	}
	return out
}

// homeRoots are the directories that hold home directories on this machine.
func homeRoots(home string) []string {
	roots := []string{"/home", "/root"}
	if home != "" && !slices.Contains(roots, home) && !slices.Contains(roots, filepath.Dir(home)) {
		roots = append(roots, home)
	}
	return roots
}
