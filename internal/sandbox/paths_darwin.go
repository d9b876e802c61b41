package sandbox

// Where macOS keeps what a command must not reach, and what it needs: the
// facts the profile writer uses (seatbelt.go), so that a policy's checks
// and its profile name the same paths.
var (
	homeRootDirs        = seatbeltHomeRoots
	platformCredentials = seatbeltCredentials
	hiddenDirs          = seatbeltHiddenDirs
	systemDirs          = seatbeltSystemDirs
)
