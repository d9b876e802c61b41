package sandbox

import (
	"slices"
	"testing"
)

// TestCredentialEnv checks which of forkbomb's variables count as
// credentials (their values must never reach the record).
func TestCredentialEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kv   string
		want bool
	}{
		{"ANTHROPIC_API_KEY=sk-ant-xxxxxxxx", true},
		{"GITHUB_TOKEN=ghp_xxxxxxxx", true},
		{"aws_secret_access_key=abcdefgh", true},
		{"DB_PASSWORD=hunter2hunter2", true},
		{"GOOGLE_APPLICATION_CREDENTIALS=/x/y.json", true},
		{"SESSION_COOKIE=abcdefgh", true},
		{"OPENAI_API_KEY=", false}, // empty: nothing to hide
		{"PATH=/usr/bin", false},
		{"KEY", false}, // not NAME=VALUE
	} {
		t.Run(tc.kv, func(t *testing.T) {
			t.Parallel()
			got := CredentialEnv([]string{tc.kv})
			if (len(got) == 1) != tc.want {
				t.Fatalf("CredentialEnv(%q) = %v, want credential %v", tc.kv, got, tc.want)
			}
			if tc.want && !slices.Contains([]string{tc.kv}, got[0].Name+"="+got[0].Value) {
				t.Errorf("got %+v", got[0])
			}
		})
	}
}
