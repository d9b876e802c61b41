package sandbox

import (
	"path/filepath"
	"slices"
)

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
