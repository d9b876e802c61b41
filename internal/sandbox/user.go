package sandbox

import "fmt"

// User is who the command is inside the sandbox's user namespace. The
// kernel decides every access by the host identity the namespace maps it
// to, which is always the caller's own: naming another uid here changes
// what the command sees of itself (getuid, the owner of its files), never
// what it may do. It exists for agent CLIs that refuse to run as uid 0
// (Claude Code will not bypass its permission prompts as root), so a root
// caller's command can be an ordinary user inside.
type User struct {
	UID, GID int
}

// maxInnerID bounds User's ids below the overflow ids (65534, "nobody"),
// which unmapped host owners are shown as.
const maxInnerID = 65533

// resolveUser checks Policy.User: ordinary ids only, and only where there
// is a user namespace to map them in.
func (r *resolved) resolveUser() error {
	u := r.User
	switch {
	case u == nil || r.NoSandbox:
		return nil
	case u.UID < 1 || u.UID > maxInnerID || u.GID < 1 || u.GID > maxInnerID:
		return policyErr("User", fmt.Sprintf("%d:%d", u.UID, u.GID), "ids must be between 1 and %d", maxInnerID)
	case r.Mode == ModeLandlock:
		return policyErr("User", fmt.Sprintf("%d:%d", u.UID, u.GID), "another uid inside needs a user namespace, which the landlock backend has not")
	}
	return nil
}

// idMaps maps the caller's uid and gid (host) to the ids the command has
// inside: the caller's own, or Policy.User's. One id each: every other
// host id is shown as the overflow id and grants nothing.
func idMaps(hostUID, hostGID int, u *User) (uid, gid int) {
	if u == nil {
		return hostUID, hostGID
	}
	return u.UID, u.GID
}
