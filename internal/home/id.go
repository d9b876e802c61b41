package home

import "fmt"

// MaxIDLen bounds ids: they become directory names.
const MaxIDLen = 64

// IDError says which id of which kind was refused.
type IDError struct {
	Kind string // "run", "workspace", ...
	ID   string
}

func (e *IDError) Error() string {
	return fmt.Sprintf("invalid %s name %q: use 1 to %d of A-Z a-z 0-9 _ -", e.Kind, e.ID, MaxIDLen)
}

// Is makes every IDError an ErrBadID.
func (e *IDError) Is(target error) bool { return target == ErrBadID }

// ValidateID is the one choke point for ids that become paths:
// [A-Za-z0-9_-], 1 to MaxIDLen characters, not starting with '-' (it would
// read as a flag). Nothing else is accepted, so no id can climb out of its
// folder ("..", "/"), hide (a leading '.') or carry a NUL.
func ValidateID(kind, id string) error {
	if id == "" || len(id) > MaxIDLen {
		return &IDError{Kind: kind, ID: id}
	}
	for i, c := range id {
		ok := c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok || i == 0 && c == '-' {
			return &IDError{Kind: kind, ID: id}
		}
	}
	return nil
}
