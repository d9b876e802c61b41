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
	// --help lists them in this order; a new engine comes after
	if got := strings.Join(Names(), ","); !strings.HasPrefix(got, "command,api,claude-code,codex,hosted") {
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

// TestDescriptors: what every verb reads of an engine holds together —
// one name each, one default (an agent CLI: run picks it when installed),
// a canary only for an agent CLI, every flag once by name and bound to a
// setting a command line can fill, exactly one engine running --agent's
// program, and a loop that needs no proxy.
func TestDescriptors(t *testing.T) {
	t.Parallel()
	names, flags := map[string]bool{}, map[string]*Flag{}
	defaults, agents := 0, 0
	for _, d := range Descriptors() {
		if names[d.Name] || d.Name == "" || d.Summary == "" || d.Doc == "" || d.New == nil {
			t.Errorf("%q: a name used twice, or no summary, doc or constructor", d.Name)
		}
		names[d.Name] = true
		if d.Default {
			defaults++
			if d.Bin == "" {
				t.Errorf("the default engine %s has no CLI to look for", d.Name)
			}
		}
		if (d.Canary || d.Upstream != nil || d.MCP) && d.Bin == "" {
			t.Errorf("%s: a canary, a proxy or MCP without an agent CLI", d.Name)
		}
		if d.Loop && (d.Bin != "" || d.Upstream != nil) {
			t.Errorf("%s: forkbomb's loop with an agent CLI or a proxy", d.Name)
		}
		if d.Takes(FlagAgent) {
			agents++
		}
		for _, f := range d.Flags {
			if g, ok := flags[f.Name]; ok && g != f {
				t.Errorf("two flags named --%s", f.Name)
			}
			flags[f.Name] = f
			switch f.Field(&Settings{}).(type) {
			case *string, *int, *float64:
			default:
				t.Errorf("--%s: a setting no flag can fill", f.Name)
			}
		}
		if d2, err := Lookup(d.Name); err != nil || d2 != d {
			t.Errorf("Lookup(%q) = %v, %v", d.Name, d2, err)
		}
	}
	if defaults != 1 || agents != 1 {
		t.Errorf("%d default engines and %d taking --agent; want one each", defaults, agents)
	}
	if _, err := Lookup("worlds"); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("Lookup of an unknown name: %v", err)
	}
}

// TestFill: an engine's defaults and its keys from the environment fill
// only what the user left out; an engine reading no environment reads
// none.
func TestFill(t *testing.T) {
	t.Parallel()
	env := map[string]string{"ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "OPENAI_API_KEY": "ok",
		"FORKBOMB_GATEWAY_URL": "https://gw.example.com", "FORKBOMB_API_KEY": "gk"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		engine string
		in     Settings
		want   Settings
	}{
		{"api", Settings{}, Settings{Model: DefaultModel, APIKey: "ak", BaseURL: "http://127.0.0.1:1"}},
		{"api", Settings{Provider: "openai", Model: "m"}, Settings{Provider: "openai", Model: "m", APIKey: "ok"}},
		{"hosted", Settings{}, Settings{Model: DefaultModel, APIKey: "gk", BaseURL: "https://gw.example.com"}},
		{"hosted", Settings{APIKey: "given"}, Settings{Model: DefaultModel, APIKey: "given", BaseURL: "https://gw.example.com"}},
		{"claude-code", Settings{}, Settings{}},
		{"command", Settings{Agent: "a"}, Settings{Agent: "a"}},
	} {
		d, err := Lookup(c.engine)
		if err != nil {
			t.Fatal(err)
		}
		got := c.in
		d.Fill(&got, getenv)
		if got.Model != c.want.Model || got.APIKey != c.want.APIKey || got.BaseURL != c.want.BaseURL || got.Provider != c.want.Provider {
			t.Errorf("%s: Fill(%+v) = %+v, want %+v", c.engine, c.in, got, c.want)
		}
	}
}
