package engine

import (
	"strings"
	"testing"
)

func TestValidMCPName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"world", true},
		{"shell_1-x", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"a b", false},
		{"a/b", false},
		{"a.b", false},
		{"é", false},
		{"a\x00", false},
		{"a\n", false},
	} {
		if got := validMCPName(c.name); got != c.ok {
			t.Errorf("validMCPName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}
