package cli

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// TestModelProxyAccountFromEnv: the codex engine's proxy bills the
// organisation and project of the user's environment (OPENAI_ORG_ID,
// OPENAI_PROJECT_ID), whatever the fork asks for. A scripted upstream on
// loopback records what arrives; the fork sends its own values. Without
// the variables, nothing of the kind arrives (the key's default).
func TestModelProxyAccountFromEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		env            map[string]string
		wantOrg, wantP string
	}{
		{"set", map[string]string{"OPENAI_ORG_ID": "org-USERS", "OPENAI_PROJECT_ID": "proj_USERS"}, "org-USERS", "proj_USERS"},
		{"unset", map[string]string{}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got http.Header
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = r.Header.Clone()
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{}`))
			}))
			defer up.Close()
			env := map[string]string{"OPENAI_API_KEY": "sk-proj-REALKEY-for-the-test", "OPENAI_BASE_URL": up.URL}
			for k, v := range c.env {
				env[k] = v
			}
			codex, err := engine.Lookup("codex")
			if err != nil {
				t.Fatal(err)
			}
			p, err := startModelProxy(codex, engine.Settings{}, nil, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ep, err := p.Fork(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			cl := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", ep.Socket)
			}}}
			req, _ := http.NewRequest(http.MethodPost, ep.BaseURL()+"/v1/responses", strings.NewReader(`{"model":"m"}`))
			req.Header.Set("OpenAI-Organization", "org-FORKCHOSEN")
			req.Header.Set("OpenAI-Project", "proj_FORKCHOSEN")
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if got == nil {
				t.Fatalf("control: the upstream got no request (status %d)", resp.StatusCode)
			}
			if o, pr := strings.Join(got.Values("Openai-Organization"), ","), strings.Join(got.Values("Openai-Project"), ","); o != c.wantOrg || pr != c.wantP {
				t.Errorf("upstream got organization %q, project %q; want the user's %q, %q", o, pr, c.wantOrg, c.wantP)
			}
		})
	}
}
