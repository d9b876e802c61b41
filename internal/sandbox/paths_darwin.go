package sandbox

// Where macOS keeps what a command must not reach, and what it needs: the
// facts the profile writer uses (seatbelt.go), so that a policy's checks
// and its profile name the same paths.
var (
	homeRootDirs        = seatbeltHomeRoots
	platformCredentials = seatbeltCredentials
	hiddenDirs          = seatbeltHiddenDirs
)

// systemDirs are what Policy.Hide may not hide (CheckHide): what a
// command needs to run at all, or what holds it.
var systemDirs = []string{
	"/Applications", "/Library", "/System", "/bin", "/cores", "/dev", "/etc", "/opt",
	"/private/etc", "/private/var", "/sbin", "/usr", "/var",
}
