package modelproxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// forkAccountHeaders are what a fork could send to choose what the user's
// key bills or whose data it sees: each value carries a marker the
// upstream's record is searched for.
var forkAccountHeaders = map[string]string{
	"OpenAI-Organization":      "org-FORKCHOSEN",
	"openai-project":           "proj_FORKCHOSEN",
	"ChatGPT-Account-Id":       "acct-FORKCHOSEN",
	"X-Goog-User-Project":      "gcp-FORKCHOSEN",
	"Anthropic-Workspace-Id":   "wrkspc_FORKCHOSEN",
	"Anthropic-Organization":   "ant-org-FORKCHOSEN",
	"X-Org-Id":                 "x-org-FORKCHOSEN",
	"X-Ms-Tenant":              "tenant-FORKCHOSEN",
	"X-Billing-Account":        "bill-FORKCHOSEN",
	"OpenAI-Organisation":      "org-FORKCHOSEN-uk",
	"X-Forkbomb-Project-Hint":  "hint-FORKCHOSEN",
	"Anthropic-Beta":           "prompt-caching-2024-07-31", // a feature flag: passes
	"OpenAI-Beta":              "responses=v1",              // likewise
	"Anthropic-Version":        "2023-06-01",                // likewise
	"X-Stainless-Package-Ver":  "1.2.3",                     // SDK telemetry: passes
	"Originator":               "codex_cli_rs",              // likewise
	"X-Forkbomb-Organ-Donor":   "passes",                    // "org" only inside a word
	"X-Forkbomb-Not-An-Orgasm": "passes",
}

// TestBillingHeaders: the headers that choose the account, organisation,
// project or billing of the injected key come from the user's
// configuration only. A fork sends every such header it can think of,
// for each provider the proxy injects a key for; a scripted upstream on
// loopback records what arrives: none of the fork's values, the user's
// organisation and project when configured (and nothing of the kind when
// not). The control: feature flags and other plain headers the fork sends
// arrive as sent, so the probe would see a forwarded header.
func TestBillingHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		up       Upstream
		path     string
		wantOrg  string
		wantProj string
	}{
		{"openai org+proj", Upstream{Kind: OpenAI, APIKey: realOpenAIKey, Organization: "org-USERS", Project: "proj_USERS"}, "/v1/responses", "org-USERS", "proj_USERS"},
		{"openai proj", Upstream{Kind: OpenAI, APIKey: realOpenAIKey, Project: "proj_USERS"}, "/v1/chat/completions", "", "proj_USERS"},
		{"openai none", Upstream{Kind: OpenAI, APIKey: realOpenAIKey}, "/v1/responses", "", ""},
		{"ant key", Upstream{Kind: Anthropic, APIKey: realAnthropicKey}, "/v1/messages", "", ""},
		{"ant oauth", Upstream{Kind: Anthropic, OAuthToken: realOAuthToken}, "/v1/messages", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, nil)
			c.up.BaseURL = up.URL
			_, ep, _ := startProxy(t, Options{Upstreams: []Upstream{c.up}})
			resp, body := post(t, ep, c.path, `{"model":"m-1"}`, forkAccountHeaders)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			h, _ := up.last()
			for name, vs := range h {
				for _, v := range vs {
					if strings.Contains(v, "FORKCHOSEN") {
						t.Errorf("LEAK: the fork's %s: %s reached the upstream beside the user's key", name, v)
					}
				}
			}
			for _, name := range []string{"Anthropic-Beta", "OpenAI-Beta", "Anthropic-Version", "X-Stainless-Package-Ver", "Originator", "X-Forkbomb-Organ-Donor", "X-Forkbomb-Not-An-Orgasm"} {
				if h.Get(name) == "" {
					t.Errorf("control: the plain header %s did not arrive: %v", name, h)
				}
			}
			if got := h.Values("Openai-Organization"); strings.Join(got, ",") != c.wantOrg {
				t.Errorf("upstream OpenAI-Organization %q, want the user's %q", got, c.wantOrg)
			}
			if got := h.Values("Openai-Project"); strings.Join(got, ",") != c.wantProj {
				t.Errorf("upstream OpenAI-Project %q, want the user's %q", got, c.wantProj)
			}
		})
	}
}

// TestAccountHeaderNames: the names refused as account selectors and the
// ones that pass.
func TestAccountHeaderNames(t *testing.T) {
	t.Parallel()
	for name := range forkAccountHeaders {
		want := strings.Contains(forkAccountHeaders[name], "FORKCHOSEN")
		if got := accountHeader(name); got != want {
			t.Errorf("accountHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestStartRefusesAccount: an organisation or project is for the openai
// upstream, and a value that could split a header is refused.
func TestStartRefusesAccount(t *testing.T) {
	t.Parallel()
	for _, u := range []Upstream{
		{Kind: Anthropic, APIKey: realAnthropicKey, BaseURL: "https://api.anthropic.com", Organization: "org-x"},
		{Kind: OpenAI, APIKey: realOpenAIKey, BaseURL: "https://api.openai.com", Project: "proj_x\r\nX-Evil: 1"},
		{Kind: OpenAI, APIKey: realOpenAIKey, BaseURL: "https://api.openai.com", Organization: "org x"},
	} {
		if _, err := Start(Options{Upstreams: []Upstream{u}, Dir: t.TempDir()}); !errors.Is(err, ErrUpstream) {
			t.Errorf("Start(%+v) = %v, want ErrUpstream", u, err)
		}
	}
}
