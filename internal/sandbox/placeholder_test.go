package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestNewPlaceholder: every placeholder forkbomb makes passes its own
// check, and no two are alike.
func TestNewPlaceholder(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		v := NewPlaceholder()
		if !isPlaceholder(v) {
			t.Fatalf("NewPlaceholder() = %q, which isPlaceholder refuses", v)
		}
		if seen[v] {
			t.Fatalf("NewPlaceholder() repeated %q", v)
		}
		seen[v] = true
	}
}

// TestCheckPlaceholders: a placeholder forkbomb made is let through under
// any name, a credential-looking one included; a real credential is
// refused whatever it is dressed as: without the prefix, with the prefix in
// front of it, or planted in forkbomb's own environment and handed back as
// a "placeholder".
func TestCheckPlaceholders(t *testing.T) {
	t.Parallel()
	good, planted := NewPlaceholder(), NewPlaceholder()
	realKey := "sk-ant-api03-" + strings.Repeat("x", 40)
	environ := []string{
		"ANTHROPIC_API_KEY=" + realKey,
		"OPENAI_API_KEY=" + planted, // the planted real key, placeholder-shaped
		"GITHUB_TOKEN=" + strings.TrimPrefix(good, PlaceholderPrefix)[:12],
		"PATH=" + good, // not a credential name: not forkbomb's secret
	}
	for _, tc := range []struct {
		name     string
		ph       map[string]string
		taken    []string
		environ  []string
		wantErr  error // nil: accepted
		wantPair string
	}{
		{"placeholder", map[string]string{"ANTHROPIC_API_KEY": good}, nil, nil, nil, "ANTHROPIC_API_KEY=" + good},
		{"placeholder beside real keys", map[string]string{"CLAUDE_API_KEY": NewPlaceholder()}, nil, []string{"ANTHROPIC_API_KEY=" + realKey}, nil, "CLAUDE_API_KEY="},
		{"real key", map[string]string{"ANTHROPIC_API_KEY": realKey}, nil, environ, ErrNotPlaceholder, ""},
		{"real key with the prefix", map[string]string{"ANTHROPIC_API_KEY": PlaceholderPrefix + realKey}, nil, environ, ErrNotPlaceholder, ""},
		{"prefix alone", map[string]string{"ANTHROPIC_API_KEY": PlaceholderPrefix}, nil, nil, ErrNotPlaceholder, ""},
		{"lower-case tail", map[string]string{"ANTHROPIC_API_KEY": strings.ToLower(good)}, nil, nil, ErrNotPlaceholder, ""},
		{"planted under its own name", map[string]string{"OPENAI_API_KEY": planted}, nil, environ, ErrNotPlaceholder, ""},
		{"planted under another name", map[string]string{"ANTHROPIC_API_KEY": planted}, nil, environ, ErrNotPlaceholder, ""},
		{"holds a real key", map[string]string{"ANTHROPIC_API_KEY": good}, nil, environ, ErrNotPlaceholder, ""},
		{"not a name", map[string]string{"A=B": good}, nil, nil, ErrInvalidPolicy, ""},
		{"sandbox's own HOME", map[string]string{"HOME": good}, nil, nil, ErrInvalidPolicy, ""},
		{"also an ordinary variable", map[string]string{"MODEL_KEY": good}, []string{"MODEL_KEY"}, nil, ErrInvalidPolicy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pairs, err := checkPlaceholders(tc.ph, tc.environ, tc.taken)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrInvalidPolicy) {
					t.Fatalf("err %v, want %v (and ErrInvalidPolicy)", err, tc.wantErr)
				}
				for _, v := range tc.ph {
					if tail := strings.TrimPrefix(v, PlaceholderPrefix); tail != "" && strings.Contains(err.Error(), tail) {
						t.Errorf("the refusal repeats the value: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !slices.ContainsFunc(pairs, func(kv string) bool { return strings.HasPrefix(kv, tc.wantPair) }) {
				t.Errorf("pairs %q hold no %q", pairs, tc.wantPair)
			}
		})
	}
}
