package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestHostedTagsAndCost runs the hosted engine on both protocols against
// a stand-in gateway (a recording proxy in front of the scripted model,
// answering /v1/usage itself): every model call carries the key only as
// a bearer token and the fork's tag, and the fork's cost, tokens and the
// gateway_usage event are the gateway's figures — asked again while a
// call is still open. The real gateway's side is
// internal/cli/testdata/gateway/hosted.txtar.
func TestHostedTagsAndCost(t *testing.T) {
	t.Parallel()
	const key = "forkbomb_sk_0123456789abcdefghijABCDEFGHIJ"
	for _, provider := range Providers() {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			srv, err := StartScripted(key, map[string][]Step{"hi": {{Text: "Done."}}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			up, _ := url.Parse(srv.URL)
			fwd := httputil.NewSingleHostReverseProxy(up)
			var mu sync.Mutex
			var seen []http.Header
			asked := 0
			gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/usage" {
					mu.Lock()
					asked++
					open := 0
					if asked == 1 {
						open = 1 // the first answer: a call not settled yet
					}
					mu.Unlock()
					if r.Header.Get("Authorization") != "Bearer "+key {
						http.Error(w, "{}", http.StatusUnauthorized)
						return
					}
					fmt.Fprintf(w, `{"tag":%q,"calls":1,"open":%d,"charged_micro_usd":%d,"tokens_in":7,"tokens_out":9,"balance_micro_usd":4990000}`,
						r.URL.Query().Get("tag"), open, 1234+open)
					return
				}
				mu.Lock()
				seen = append(seen, r.Header.Clone())
				mu.Unlock()
				testutil.WholeBody(fwd).ServeHTTP(w, r)
			}))
			defer gw.Close()
			h, err := NewHosted(Settings{Provider: provider, Model: "scripted", BaseURL: gw.URL, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			var evs []event.GatewayUsageData
			out := h.Run(context.Background(), dirWorkspace{t.TempDir()}, Task{Prompt: "[persona: hi] x", Fork: 3,
				Emit: func(d event.Payload) {
					if u, ok := d.(event.GatewayUsageData); ok {
						evs = append(evs, u)
					}
				}})
			if out.State != event.ForkExited || out.Err != nil {
				t.Fatalf("outcome %+v", out)
			}
			if len(seen) == 0 {
				t.Fatal("no model call reached the gateway")
			}
			for i, hd := range seen {
				if hd.Get("Authorization") != "Bearer "+key || hd.Get("x-api-key") != "" || hd.Get("X-Forkbomb-Tag") != h.Tag(3) {
					t.Errorf("call %d: Authorization %q, x-api-key %q, tag %q (want %q)", i,
						hd.Get("Authorization"), hd.Get("x-api-key"), hd.Get("X-Forkbomb-Tag"), h.Tag(3))
				}
			}
			if u := out.Usage; u.CostMicroUSD != 1234 || u.TokensIn != 7 || u.TokensOut != 9 || asked < 2 {
				t.Errorf("usage %+v after %d questions, want the gateway's settled figures", u, asked)
			}
			if len(evs) != 1 || evs[0].BalanceMicroUSD != 4990000 || evs[0].ChargedMicroUSD != 1234 || evs[0].Source != event.SourceGateway || evs[0].Tag != h.Tag(3) {
				t.Errorf("gateway_usage events %v", evs)
			}
		})
	}
}
