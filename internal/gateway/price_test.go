package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestPriceFeeds samples scripted Jupiter and DexScreener feeds (bodies
// shaped like their real answers): Jupiter first, DexScreener when
// Jupiter fails, prices kept as exact integers.
func TestPriceFeeds(t *testing.T) {
	t.Parallel()
	var jupDown atomic.Bool
	feeds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/price/v3":
			if jupDown.Load() || r.URL.Query().Get("ids") != testMint {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, `{"%s":{"usdPrice":0.0012345678901,"blockId":348000000,"decimals":6,"priceChange24h":-1.5}}`, testMint)
		case "/tokens/v1/solana/" + testMint:
			fmt.Fprint(w, `[{"chainId":"solana","dexId":"raydium","pairAddress":"P","baseToken":{"address":"`+testMint+`","name":"fb","symbol":"FB"},"priceNative":"0.00001","priceUsd":"0.0019","liquidity":{"usd":1000}}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer feeds.Close()
	g, _, _ := newGateway(t, "sqlite", Options{Burns: BurnOptions{Mint: testMint, RPC: "http://127.0.0.1:1"}})
	ctx := context.Background()
	list := []Feed{Jupiter(feeds.URL), DexScreener(feeds.URL)}
	now := time.Unix(1_800_000_000, 0)
	if err := g.SamplePrice(ctx, list, now); err != nil {
		t.Fatal(err)
	}
	jupDown.Store(true)
	if err := g.SamplePrice(ctx, list, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	rows, _ := g.db.sql.Query(`SELECT source, price_e12 FROM price_samples ORDER BY at`)
	var got []string
	for rows.Next() {
		var s string
		var p int64
		rows.Scan(&s, &p)
		got = append(got, fmt.Sprintf("%s=%d", s, p))
	}
	rows.Close()
	want := []string{"jupiter=1234567890", "dexscreener=1900000000"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
	// TWAP over [t-w, t+w] with a dip: the lowest of it and the neighbours.
	p, ok, _ := g.PriceAt(ctx, now.Unix()+30)
	if !ok || p != 1234567890 {
		t.Errorf("price at t+30: %d %v", p, ok)
	}
	if _, ok, _ := g.PriceAt(ctx, now.Unix()+120); ok {
		t.Error("a price with no sample after the time")
	}
}
