package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/forkbomb/forkbomb/internal/home"
)

// MaxNameLen bounds names: they become directory names.
const MaxNameLen = home.MaxIDLen

// ValidateName checks a workspace name at the state home's one choke point
// for ids that become paths (home.ValidateID): [A-Za-z0-9_-], 1 to
// MaxNameLen characters, not starting with '-' (it would read as a flag).
// A refusal is a *home.IDError and ErrBadName.
func ValidateName(name string) error {
	return home.ValidateID("workspace", name)
}

// BaseName is the name of the pid 1 forkbomb keeps of commit base of the
// repository whose top is top (both as ResolveBase gives them): the
// judge's clean copy of that base, which a local race's forks are made
// from too, so that a base is copied from the user's repository once,
// not once for each race and once more for its judge. It stays for the
// next race or judgement of that base ('forkbomb workspace rm' removes
// it).
func BaseName(top, base string) string {
	h := sha256.New()
	for _, p := range []string{top, base} {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return "base-" + hex.EncodeToString(h.Sum(nil))[:16]
}
