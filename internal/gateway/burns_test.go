package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// burnGateway is a gateway with burns configured against a scripted RPC,
// a workspace, and price samples of $0.002 around now.
func burnGateway(t *testing.T, kind string) (*Gateway, *rpcServer, string, int64) {
	rpc := newRPC(t)
	g, _, _ := newGateway(t, kind, Options{Burns: BurnOptions{RPC: rpc.URL, Mint: testMint, CapMicroUSD: 50_000_000}})
	ws, _, err := g.CreateWorkspace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix() - 3600
	for i, p := range []string{"0.0021", "0.0020", "0.0022"} {
		e12, _ := parsePriceE12(p)
		if err := g.RecordSample(context.Background(), "jupiter", now-600+int64(i)*600, e12); err != nil {
			t.Fatal(err)
		}
	}
	return g, rpc, ws, now
}

func TestBurnVerification(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g, rpc, ws, bt := burnGateway(t, kind)
			memo := "forkbomb:" + ws
			ok := fx{program: tokenProgram, kind: "burn", mint: testMint, amount: "5000000000", memos: []any{memo}, pre: "7000000000", post: "2000000000", blockTime: bt}
			with := func(f func(*fx)) fx { c := ok; f(&c); return c }
			cases := []struct {
				name   string
				tx     any
				status string // stored status, or the transient reason
				reason string
				credit int64
			}{
				// 5000 tokens at min(TWAP 0.00205, 0.0020 before, 0.0022 after) = $0.002 → $10.
				{"success", ok.tx(ws), "credited", "", 10_000_000},
				{"pending", nil, "transient", "not_finalized", 0},
				{"failed", with(func(f *fx) { f.failed = true }).tx(ws), "refused", "failed", 0},
				{"wrong mint", with(func(f *fx) { f.mint = otherMint }).tx(ws), "refused", "wrong_mint", 0},
				{"two memos", with(func(f *fx) { f.memos = []any{memo, "forkbomb:ws_other"} }).tx(ws), "refused", "memo_ambiguous", 0},
				{"no memo", with(func(f *fx) { f.memos = []any{"hello"} }).tx(ws), "refused", "memo_missing", 0},
				{"non-UTF-8 memo", with(func(f *fx) { f.memos = []any{[]byte{0xff, 0xfe}, memo} }).tx(ws), "refused", "memo_invalid", 0},
				{"unknown workspace", with(func(f *fx) { f.memos = []any{"forkbomb:ws_nobody"} }).tx(ws), "refused", "unknown_workspace", 0},
				{"inner burn", with(func(f *fx) { f.inner = true }).tx(ws), "credited", "", 10_000_000},
				{"burnChecked", with(func(f *fx) { f.kind = "burnChecked" }).tx(ws), "credited", "", 10_000_000},
				{"Token-2022", with(func(f *fx) { f.program = token2022Program }).tx(ws), "credited", "", 10_000_000},
				{"closed account", with(func(f *fx) { f.pre, f.post = "5000000000", "" }).tx(ws), "credited", "", 10_000_000},
				{"balance fell by less", with(func(f *fx) { f.post = "2500000000" }).tx(ws), "refused", "balance_mismatch", 0},
				{"unsupported version", "unsupported", "refused", "unsupported_version", 0},
				{"over the cap", with(func(f *fx) { f.amount, f.pre, f.post = "50000000000", "50000000000", "0" }).tx(ws), "review", "over_cap", 100_000_000},
			}
			var want int64
			for i, c := range cases {
				s := sig(i)
				rpc.set(s, c.tx)
				b, err := g.VerifyBurn(context.Background(), s)
				if c.status == "transient" {
					var ref *Refusal
					if !asRefusal(err, &ref) || ref.Reason != c.reason {
						t.Errorf("%s: got %v, want transient %s", c.name, err, c.reason)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				if b.Status != c.status || b.Reason != c.reason || b.Credit != c.credit {
					t.Errorf("%s: got %s/%s/%d, want %s/%s/%d", c.name, b.Status, b.Reason, b.Credit, c.status, c.reason, c.credit)
				}
				if c.status == "credited" {
					want += c.credit
				}
			}
			if got, _ := g.Balance(context.Background(), ws); got != want {
				t.Errorf("balance %d, want %d (only credited burns count)", got, want)
			}
			if rpc.bad.Load() != 0 {
				t.Errorf("%d RPC calls without finalized commitment, jsonParsed and a max supported version", rpc.bad.Load())
			}
			// Review: the over-cap burn waits; approval credits it once.
			rev, _ := g.Review(context.Background())
			if len(rev) != 1 || rev[0].Reason != "over_cap" {
				t.Fatalf("review queue %+v", rev)
			}
			if err := g.Decide(context.Background(), rev[0].Signature, true, 100_000_000); err != nil {
				t.Fatal(err)
			}
			if err := g.Decide(context.Background(), rev[0].Signature, true, 100_000_000); err == nil {
				t.Error("a reviewed burn was approved twice")
			}
			if got, _ := g.Balance(context.Background(), ws); got != want+100_000_000 {
				t.Errorf("balance after review %d, want %d", got, want+100_000_000)
			}
			// Verifying later changes nothing: a new sample after the fact
			// does not move a stored burn's price.
			g.RecordSample(context.Background(), "jupiter", bt+1, 1)
			b, _ := g.VerifyBurn(context.Background(), sig(0))
			if b.Credit != 10_000_000 {
				t.Errorf("replay after a new sample: credit %d", b.Credit)
			}
		})
	}
}

func asRefusal(err error, ref **Refusal) bool {
	r, ok := err.(*Refusal)
	*ref = r
	return ok
}

// TestBurnReplayedConcurrently credits a burn once under 50 concurrent
// replays through the HTTP API.
func TestBurnReplayedConcurrently(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g, rpc, ws, bt := burnGateway(t, kind)
			g.opts.Limits.BurnPerMinute = 1000
			g.limits = newLimiter(g.opts.Limits)
			rpc.gate, rpc.arrived = 50, make(chan struct{})
			s := sig(77)
			rpc.set(s, fx{program: tokenProgram, kind: "burn", mint: testMint, amount: "1000000000", memos: []any{"forkbomb:" + ws}, pre: "1000000000", post: "0", blockTime: bt}.tx(ws))
			url := serve(t, g)
			var wg sync.WaitGroup
			credits := make([]int64, 50)
			for i := range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Post(url+"/v1/burns", "application/json", strings.NewReader(`{"signature":"`+s+`"}`))
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					var b Burn
					json.NewDecoder(resp.Body).Decode(&b)
					if resp.StatusCode != 200 || b.Status != "credited" {
						t.Errorf("replay %d: %d %+v", i, resp.StatusCode, b)
					}
					credits[i] = b.Credit
				}()
			}
			wg.Wait()
			for _, c := range credits {
				if c != 2_000_000 {
					t.Errorf("a replay answered credit %d, want the stored 2000000", c)
				}
			}
			if got, _ := g.Balance(context.Background(), ws); got != 2_000_000 {
				t.Errorf("balance %d after 50 replays, want one credit of 2000000", got)
			}
			var n int
			g.db.sql.QueryRow(g.db.q(`SELECT COUNT(*) FROM ledger WHERE kind = 'burn' AND ref = ?`), s).Scan(&n)
			if n != 1 {
				t.Errorf("%d ledger rows for the burn", n)
			}
		})
	}
}

func TestBurnNotConfigured(t *testing.T) {
	t.Parallel()
	g, _, _ := newGateway(t, "sqlite", Options{})
	url := serve(t, g)
	resp, err := http.Post(url+"/v1/burns", "application/json", strings.NewReader(`{"signature":"`+sig(1)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var e errBody
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 503 || e.Error.Type != "not_configured" {
		t.Errorf("got %d %q, want 503 not_configured", resp.StatusCode, e.Error.Type)
	}
}
