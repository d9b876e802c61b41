package modelproxy

import (
	"net/http"
	"strings"
	"testing"
)

// TestKeyInjection: the upstream sees the real credential and none of the
// fork's: its placeholder, a real-looking key it made up under the real
// key's own header name, and every other credential header are stripped.
// The control: a header that is not a credential passes, and the path and
// query arrive as sent.
func TestKeyInjection(t *testing.T) {
	t.Parallel()
	smuggled := "sk-ant-api03-SMUGGLED-by-the-fork-000000000000"
	forkHeaders := func(ep *Endpoint) map[string]string {
		return map[string]string{
			"X-Api-Key": smuggled, "Authorization": "Bearer " + smuggled, "Anthropic-Api-Key": smuggled,
			"Openai-Api-Key": smuggled, "Proxy-Authorization": "Basic " + smuggled, "Cookie": "s=" + smuggled,
			"X-Auth-Token": ep.Placeholder, "Anthropic-Version": "2023-06-01", "X-Forwarded-For": "10.0.0.1",
		}
	}
	cases := []struct {
		name     string
		up       Upstream
		path     string
		wantName string
		wantVal  string
	}{
		{"anthropic api key", Upstream{Kind: Anthropic, APIKey: realAnthropicKey}, "/v1/messages?beta=true", "X-Api-Key", realAnthropicKey},
		{"anthropic oauth", Upstream{Kind: Anthropic, OAuthToken: realOAuthToken}, "/v1/messages", "Authorization", "Bearer " + realOAuthToken},
		{"openai responses", Upstream{Kind: OpenAI, APIKey: realOpenAIKey}, "/v1/responses", "Authorization", "Bearer " + realOpenAIKey},
		{"openai chat", Upstream{Kind: OpenAI, APIKey: realOpenAIKey}, "/v1/chat/completions", "Authorization", "Bearer " + realOpenAIKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, nil)
			c.up.BaseURL = up.URL
			if c.up.Kind == OpenAI {
				c.up.BaseURL += "/v1" // as OPENAI_BASE_URL is usually given
			}
			_, ep, rec := startProxy(t, Options{Upstreams: []Upstream{c.up}})
			resp, body := post(t, ep, c.path, `{"model":"m-1"}`, forkHeaders(ep))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			h, path := up.last()
			if path != c.path {
				t.Errorf("upstream path %q, want %q", path, c.path)
			}
			if got := h.Get(c.wantName); got != c.wantVal {
				t.Errorf("upstream %s = %q, want the real credential", c.wantName, got)
			}
			if h.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("control: a plain header was not forwarded: %v", h)
			}
			for name, vs := range h {
				for _, v := range vs {
					if strings.Contains(v, smuggled) || strings.Contains(v, ep.Placeholder) || strings.Contains(v, "10.0.0.1") {
						t.Errorf("LEAK: the fork's %s: %s reached the upstream", name, v)
					}
				}
			}
			if n := len(h.Values("Authorization")) + len(h.Values("X-Api-Key")); n != 1 {
				t.Errorf("upstream got %d credential headers, want 1: %v", n, h)
			}
			if u := ep.Usage(); u.Requests != 1 || u.TokensIn != 3 || u.TokensOut != 4 {
				t.Errorf("usage %+v, want 1 request, 3 in, 4 out", u)
			}
			scanEvents(t, rec, smuggled, ep.Placeholder)
		})
	}
}

// scanEvents fails if any event holds a credential or a secret.
func scanEvents(t *testing.T, rec *recorder, secrets ...string) {
	t.Helper()
	secrets = append(secrets, realAnthropicKey, realOpenAIKey, realOAuthToken)
	evs := rec.all()
	if len(evs) == 0 {
		t.Fatal("control: no events at all")
	}
	for _, e := range evs {
		for k, v := range fields(e.Data) {
			s, _ := v.(string)
			for _, sec := range secrets {
				if strings.Contains(s, sec) {
					t.Errorf("LEAK: event %s %s holds a credential", e.Kind(), k)
				}
			}
		}
	}
}
