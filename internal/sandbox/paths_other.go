//go:build !darwin

package sandbox

// Where Linux keeps what a command must not reach, and what it needs.
// macOS's are in paths_darwin.go.

// homeRootDirs hold the home directories.
var homeRootDirs = []string{"/home", "/root"}

// platformCredentials: Linux's credential folders under home are all in
// homeCredentials.
var platformCredentials []string

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

// systemDirs are the folders a command needs to run at all (its programs,
// libraries, configuration, kernel interfaces). Policy.Hide refuses to
// hide one of them, or anything holding one (the root): a policy that did
// would leave nothing to run, and is a mistake, not a wish.
var systemDirs = []string{
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/nix",
	"/opt", "/proc", "/sbin", "/snap", "/sys", "/usr", "/var",
}
