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

// credentialPaths lists the credential paths under home.
func credentialPaths(home string) []string { return credentialPathsOf(home, platformCredentials) }

// credentialPathsOf lists the credential paths under home: homeCredentials
// and a platform's extra ones.
func credentialPathsOf(home string, extra []string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, 0, len(homeCredentials)+len(extra))
	for _, c := range slices.Concat(homeCredentials, extra) {
		out = append(out, filepath.Join(home, c))
	}
	return out
}

// homeRoots are the directories that hold home directories on this machine.
func homeRoots(home string) []string {
	roots := slices.Clone(homeRootDirs)
	if home != "" && !slices.Contains(roots, home) && !slices.Contains(roots, filepath.Dir(home)) {
		roots = append(roots, home)
	}
	return roots
}
