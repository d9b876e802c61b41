package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// modelGateway is a gateway in front of forkbomb's scripted model server
// (it streams Anthropic Messages and chat completions, with usage), and
// a workspace with balance.
func modelGateway(t testing.TB, kind string, balance int64, o Options) (*Gateway, string, string, string) {
	t.Helper()
	up, err := engine.StartScripted("upstream-secret-key", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	o.Anthropic = Upstream{URL: up.URL, Key: up.Key}
	o.OpenAI = Upstream{URL: up.URL + "/v1", Key: up.Key}
	if o.Prices == nil {
		o.Prices = map[string]Price{"*": {In: 3_000_000, Out: 15_000_000}}
	}
	g, _, _ := newGateway(t, kind, o)
	ws, key, err := g.CreateWorkspace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := g.Grant(context.Background(), ws, balance, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return g, serve(t, g), ws, key
}

func call(t testing.TB, url, key, path, body string) (int, string) {
	req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const anthropicBody = `{"model":"claude-x","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hello"}]}`

// TestProxyMeters checks each protocol is charged what the upstream
// reported, at the model's price, and the rest of the reservation
// returned.
func TestProxyMeters(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g, url, ws, key := modelGateway(t, kind, 100_000_000, Options{})
			cases := []struct{ path, body, want string }{
				{"/v1/messages", anthropicBody, "message_stop"},
				{"/v1/chat/completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hello"}]}`, "[DONE]"},
			}
			var total int64
			for i, c := range cases {
				before, _ := g.Balance(context.Background(), ws)
				code, body := call(t, url, key, c.path, c.body)
				if code != 200 || !strings.Contains(body, c.want) {
					t.Fatalf("%s: %d %s", c.path, code, body)
				}
				after, _ := g.Balance(context.Background(), ws)
				var charged, amount int64
				var n int
				g.db.sql.QueryRow(`SELECT COUNT(*), SUM(charged), SUM(amount) FROM reservations WHERE state = 'settled'`).Scan(&n, &charged, &amount)
				if fell := before - after; fell <= 0 || fell >= amount-charged+fell || n != i+1 {
					t.Errorf("%s: balance fell %d, %d settled, charged %d of %d reserved", c.path, fell, n, charged, amount)
				}
				total += before - after
				if total != charged {
					t.Errorf("%s: balance fell %d in all, reservations charged %d", c.path, total, charged)
				}
			}
		})
	}
}

// TestProxyNonStreaming meters a non-streaming Anthropic call from the
// usage in its body.
func TestProxyNonStreaming(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":200}}`)
	}))
	defer up.Close()
	g, _, _ := newGateway(t, "sqlite", Options{Anthropic: Upstream{URL: up.URL, Key: "k"}, Prices: map[string]Price{"claude-x": {In: 3_000_000, Out: 15_000_000}}})
	ws, key, _ := g.CreateWorkspace(context.Background())
	g.Grant(context.Background(), ws, 1_000_000, "test")
	url := serve(t, g)
	code, body := call(t, url, key, "/v1/messages", `{"model":"claude-x","max_tokens":1000,"messages":[{"role":"user","content":"hello"}]}`)
	if code != 200 || !strings.Contains(body, `"msg_1"`) {
		t.Fatalf("%d %s", code, body)
	}
	// 10 in at $3/M + 200 out at $15/M = 30 + 3000 micro-dollars.
	if b, _ := g.Balance(context.Background(), ws); b != 1_000_000-3030 {
		t.Errorf("balance %d, want %d", b, 1_000_000-3030)
	}
	if code, _ := call(t, url, key, "/v1/messages", `{"model":"unpriced","max_tokens":300,"messages":[]}`); code != 400 {
		t.Errorf("an unpriced model: %d, want 400", code)
	}
}

// TestProxyNeverNegative fires 200 concurrent model calls at a balance
// covering 20 worst cases: none drives it below zero, every reservation
// ends settled, and the ledger adds up to the balance.
func TestProxyNeverNegative(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			body := anthropicBody
			// The worst case the gateway reserves for body (as proxy computes it).
			var req map[string]json.RawMessage
			json.Unmarshal([]byte(body), &req)
			out, _ := json.Marshal(req)
			worst := Price{In: 3_000_000, Out: 15_000_000}.cost(int64(len(out))/2+1, 1000)
			g, url, ws, key := modelGateway(t, kind, 20*worst, Options{Limits: Limits{ModelPerMinute: 10000}})
			var wg sync.WaitGroup
			var mu sync.Mutex
			codes := map[int]int{}
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, _ := call(t, url, key, "/v1/messages", body)
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			var open, settled, bad int
			g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'open'`).Scan(&open)
			g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'settled'`).Scan(&settled)
			g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE charged > amount OR charged < 0`).Scan(&bad)
			var sum int64
			g.db.sql.QueryRow(g.db.q(`SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE workspace_id = ?`), ws).Scan(&sum)
			bal, _ := g.Balance(context.Background(), ws)
			t.Logf("answers %v; %d settled; balance %d of %d", codes, settled, bal, 20*worst)
			if bal < 0 || open != 0 || bad != 0 || codes[200] != settled || codes[200]+codes[402] != 200 || codes[200] < 20 {
				t.Errorf("balance %d, %d open, %d over-charged, answers %v, %d settled", bal, open, bad, codes, settled)
			}
			if sum != bal {
				t.Errorf("ledger sums to %d, balance is %d", sum, bal)
			}
			// The database itself refuses a negative balance (positive
			// control that the CHECK exists, not only the UPDATE's guard).
			if _, err := g.db.exec(context.Background(), nil, `UPDATE workspaces SET balance = -1 WHERE id = ?`, ws); err == nil {
				t.Error("the database accepted a negative balance")
			}
		})
	}
}

// TestSweepRacesSettle closes each of 50 expired reservations from a
// Settle and two sweepers at once: each is closed exactly once and the
// money adds up.
func TestSweepRacesSettle(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g, _, _ := newGateway(t, kind, Options{})
			ctx := context.Background()
			ws, _, _ := g.CreateWorkspace(ctx)
			g.Grant(ctx, ws, 50_000, "test")
			var ids []string
			for range 50 {
				id, err := g.Reserve(ctx, ws, "m", "", 1000)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if _, err := g.Reserve(ctx, ws, "m", "", 1); err != ErrInsufficient {
				t.Fatalf("a reservation past the balance: %v", err)
			}
			g.db.exec(ctx, nil, `UPDATE reservations SET expires_at = 0`)
			var wg sync.WaitGroup
			var mu sync.Mutex
			won := 0
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := g.Settle(ctx, id, 400, 0, 0)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						won++
						mu.Unlock()
					}
				}()
			}
			swept := make([]int, 2)
			for i := range swept {
				wg.Add(1)
				go func() { defer wg.Done(); swept[i], _ = g.Sweep(ctx) }()
			}
			wg.Wait()
			if won+swept[0]+swept[1] != 50 {
				t.Errorf("%d settled + %v swept, want 50 closes", won, swept)
			}
			bal, _ := g.Balance(ctx, ws)
			if bal != 50_000-int64(won)*400 {
				t.Errorf("balance %d, want %d", bal, 50_000-int64(won)*400)
			}
		})
	}
}
