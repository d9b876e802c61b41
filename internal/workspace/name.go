package workspace

import "fmt"

// MaxNameLen bounds names: they become directory names.
const MaxNameLen = 64

// ValidateName is the one choke point for names that become paths:
// [A-Za-z0-9_-], 1 to MaxNameLen characters, not starting with '-' (it
// would read as a flag).
func ValidateName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: use 1 to %d of A-Z a-z 0-9 _ -", ErrBadName, name, MaxNameLen)
	}
	for i, c := range name {
		ok := c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok || i == 0 && c == '-' {
			return fmt.Errorf("%w %q: use 1 to %d of A-Z a-z 0-9 _ -", ErrBadName, name, MaxNameLen)
		}
	}
	return nil
}
