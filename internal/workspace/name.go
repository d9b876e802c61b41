package workspace

import "github.com/forkbomb/forkbomb/internal/home"

// MaxNameLen bounds names: they become directory names.
const MaxNameLen = home.MaxIDLen

// ValidateName checks a workspace name at the state home's one choke point
// for ids that become paths (home.ValidateID): [A-Za-z0-9_-], 1 to
// MaxNameLen characters, not starting with '-' (it would read as a flag).
// A refusal is a *home.IDError and ErrBadName.
func ValidateName(name string) error {
	return home.ValidateID("workspace", name)
}
