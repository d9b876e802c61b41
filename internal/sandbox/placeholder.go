package sandbox

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
)

// PlaceholderPrefix starts every placeholder credential forkbomb makes.
// An agent CLI that insists on an API key variable gets one of these; the
// real key is added outside the sandbox, by forkbomb's model proxy, on the
// way to the model host (see docs/SECURITY.md, "Keys never enter a fork").
const PlaceholderPrefix = "forkbomb-placeholder-"

// placeholderLen is the length of the random part: rand.Text's 26
// characters of base32, 128 bits.
const placeholderLen = 26

// NewPlaceholder returns a fresh placeholder credential value for
// Policy.Placeholders: PlaceholderPrefix and 128 random bits. It is random
// so that a value seen in one fork (or in a record) says nothing about
// another's.
func NewPlaceholder() string {
	return PlaceholderPrefix + rand.Text()
}

// isPlaceholder reports whether v has exactly the shape NewPlaceholder
// gives. The shape is strict so that a real key cannot be passed off as a
// placeholder by putting the prefix in front of it: every real key format
// forkbomb knows has a character or a length this one has not.
func isPlaceholder(v string) bool {
	rest, ok := strings.CutPrefix(v, PlaceholderPrefix)
	if !ok || len(rest) != placeholderLen {
		return false
	}
	for _, c := range rest {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// checkPlaceholders validates Policy.Placeholders against environ (the
// caller's own environment, as os.Environ gives it) and returns them as
// NAME=VALUE pairs in a stable order.
//
// A placeholder is sanctioned only if it carries forkbomb's shape and is
// none of the credentials forkbomb itself holds: the values of its
// credential-named variables (CredentialEnv), compared whole and as a part,
// so that a real key planted in forkbomb's environment and handed back as
// a "placeholder" is refused. This is a guard against mistakes in
// forkbomb's own code (the caller is trusted); the environment allowlist
// remains what keeps every other variable out.
func checkPlaceholders(placeholders map[string]string, environ []string, taken []string) ([]string, error) {
	if len(placeholders) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(placeholders))
	for name := range placeholders {
		names = append(names, name)
	}
	sort.Strings(names)
	held := CredentialEnv(environ)
	out := make([]string, 0, len(names))
	for _, name := range names {
		v := placeholders[name]
		if !isEnvName(name) {
			return nil, fmt.Errorf("%w: placeholder %q is not a variable name", ErrInvalidPolicy, name)
		}
		if name == "HOME" || name == "TMPDIR" {
			return nil, fmt.Errorf("%w: placeholder %s: the sandbox sets its own %s", ErrInvalidPolicy, name, name)
		}
		for _, t := range taken {
			if t == name {
				return nil, fmt.Errorf("%w: placeholder %s is also passed as an ordinary variable", ErrInvalidPolicy, name)
			}
		}
		if !isPlaceholder(v) {
			return nil, fmt.Errorf("%w: %w: $%s must be a value NewPlaceholder made (%s…)", ErrInvalidPolicy, ErrNotPlaceholder, name, PlaceholderPrefix)
		}
		for _, c := range held {
			// Every value counts for equality; only values long enough to
			// be a key count as a part (a one-letter value is in anything).
			if v == c.Value || len(c.Value) >= 8 && strings.Contains(v, c.Value) {
				return nil, fmt.Errorf("%w: %w: $%s is the value of $%s in forkbomb's own environment, a credential; keys never enter the sandbox", ErrInvalidPolicy, ErrNotPlaceholder, name, c.Name)
			}
		}
		out = append(out, name+"="+v)
	}
	return out, nil
}
