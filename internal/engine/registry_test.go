package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestNew: a name becomes an engine in one place; an unknown name lists
// the valid ones, settings an engine cannot use say which.
func TestNew(t *testing.T) {
	t.Parallel()
	const key = "sk-test-0123456789"
	tests := []struct {
		name    string
		engine  string
		s       Settings
		want    string // the engine's Info().Name, or "" for an error
		setting string // the SettingsError's setting
		msg     string // in the error
	}{
		{"command", "command", Settings{Argv: []string{"true"}}, "command", "", ""},
		{"command without an agent", "command", Settings{}, "", "Argv", "needs --agent"},
		{"api, default provider", "api", Settings{APIKey: key, Model: "m"}, "api", "", ""},
		{"api, openai", "api", Settings{Provider: "openai", APIKey: key}, "api", "", ""},
		{"api without a key", "api", Settings{Provider: "openai"}, "", "APIKey", "OPENAI_API_KEY"},
		{"api, unknown provider", "api", Settings{Provider: "acme", APIKey: key}, "", "Provider", `provider "acme"`},
		{"api, plain http elsewhere", "api", Settings{APIKey: key, BaseURL: "http://api.example.com"}, "", "", "plain http only to loopback"},
		{"claude-code without a proxy", "claude-code", Settings{}, "", "Proxy", "model proxy"},
		{"hosted", "hosted", Settings{APIKey: "forkbomb_sk_x", BaseURL: "https://gw.example.com"}, "hosted", "", ""},
		{"hosted without a gateway", "hosted", Settings{APIKey: "forkbomb_sk_x"}, "", "BaseURL", "FORKBOMB_GATEWAY_URL"},
		{"hosted without a key", "hosted", Settings{BaseURL: "https://gw.example.com"}, "", "APIKey", "FORKBOMB_API_KEY"},
		{"hosted, plain http elsewhere", "hosted", Settings{APIKey: "k", BaseURL: "http://gw.example.com"}, "", "BaseURL", "plain http only to loopback"},
		{"hosted, credentials in the URL", "hosted", Settings{APIKey: "k", BaseURL: "https://u:p@gw.example.com"}, "", "BaseURL", "credentials are refused"},
		{"unknown engine", "worlds", Settings{}, "", "", `unknown engine "worlds" (valid: command, api, claude-code, codex, hosted`},
		{"empty name", "", Settings{}, "", "", "valid: command, api, claude-code, codex, hosted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := New(context.Background(), tt.engine, tt.s)
			if tt.want != "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := a.Info().Name; got != tt.want {
					t.Errorf("Info().Name = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error for %+v", tt.s)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
			var se *SettingsError
			if errors.As(err, &se) != (tt.setting != "") || (se != nil && se.Setting != tt.setting) {
				t.Errorf("error %#v, want a SettingsError on %q", err, tt.setting)
			}
			if !slices.Contains(Names(), tt.engine) && !errors.Is(err, ErrUnknownEngine) {
				t.Errorf("an unknown engine's error is not ErrUnknownEngine: %v", err)
			}
		})
	}
	if got := strings.Join(Names(), ","); got != "command,api,claude-code,codex,hosted" {
		t.Errorf("Names() = %s", got)
	}
}

// TestAPIKeyIsASecret: the record learns the key from the engine itself.
func TestAPIKeyIsASecret(t *testing.T) {
	t.Parallel()
	a, err := New(context.Background(), "api", Settings{APIKey: "sk-test-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Info().Secrets; len(s) != 1 || s[0] != "sk-test-0123456789" {
		t.Errorf("secrets %q", s)
	}
}
