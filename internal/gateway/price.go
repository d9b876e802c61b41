package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// Prices of the token are integers too: price_e12 is dollars per whole
// token times 10^12 (pico-dollars), parsed from the feed's decimal text
// with big.Rat, never a float.
func parsePriceE12(s string) (int64, bool) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok || r.Sign() <= 0 {
		return 0, false
	}
	r.Mul(r, new(big.Rat).SetInt64(1_000_000_000_000))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() || n.Sign() <= 0 {
		return 0, false
	}
	return n.Int64(), true
}

// Feed is a price source the server samples itself.
type Feed struct {
	Name string
	URL  string // %s is replaced by the mint
	// Parse reads the USD price of mint from the feed's body as decimal text.
	Parse func(body []byte, mint string) (string, bool)
}

// Jupiter and DexScreener are the feeds: Jupiter first, DexScreener when
// Jupiter has no answer.
func Jupiter(base string) Feed {
	return Feed{Name: "jupiter", URL: base + "/price/v3?ids=%s", Parse: func(b []byte, mint string) (string, bool) {
		var m map[string]struct {
			USDPrice json.Number `json:"usdPrice"`
		}
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		if d.Decode(&m) != nil || m[mint].USDPrice == "" {
			return "", false
		}
		return m[mint].USDPrice.String(), true
	}}
}

// DexScreener is the fallback feed.
func DexScreener(base string) Feed {
	return Feed{Name: "dexscreener", URL: base + "/tokens/v1/solana/%s", Parse: func(b []byte, _ string) (string, bool) {
		var pairs []struct {
			PriceUSD string `json:"priceUsd"`
		}
		if json.Unmarshal(b, &pairs) != nil || len(pairs) == 0 || pairs[0].PriceUSD == "" {
			return "", false
		}
		return pairs[0].PriceUSD, true
	}}
}

// SamplePrice records one price sample at now from the first feed that
// answers.
func (g *Gateway) SamplePrice(ctx context.Context, feeds []Feed, now time.Time) error {
	for _, f := range feeds {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf(f.URL, g.opts.Burns.Mint), nil)
		if err != nil {
			continue
		}
		resp, err := g.client.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		s, ok := f.Parse(body, g.opts.Burns.Mint)
		if !ok {
			continue
		}
		p, ok := parsePriceE12(s)
		if !ok {
			continue
		}
		return g.RecordSample(ctx, f.Name, now.Unix(), p)
	}
	return fmt.Errorf("sample price: no feed answered")
}

// RecordSample stores one sample.
func (g *Gateway) RecordSample(ctx context.Context, source string, at, priceE12 int64) error {
	conflict := ` ON CONFLICT (source, at) DO NOTHING`
	if _, err := g.db.exec(ctx, nil, `INSERT INTO price_samples (source, at, price_e12) VALUES (?, ?, ?)`+conflict, source, at, priceE12); err != nil {
		return fmt.Errorf("record price sample: %w", err)
	}
	return nil
}

type sample struct{ at, p int64 }

// PriceAt is the token's price at t: the lowest of the time-weighted
// average over [t-w, t+w] and the samples either side of t. It needs a
// sample after t (else ok is false and the burn waits: asking later
// gives the same answer once one exists, since samples are only added
// in time order) and one at or before t.
func (g *Gateway) PriceAt(ctx context.Context, t int64) (price int64, ok bool, err error) {
	w := g.opts.Burns.PriceWindow
	if w <= 0 {
		w = 900
	}
	rows, err := g.db.sql.QueryContext(ctx, g.db.q(`SELECT at, MIN(price_e12) FROM price_samples WHERE at BETWEEN ? AND ? GROUP BY at ORDER BY at`), t-w, t+w)
	if err != nil {
		return 0, false, fmt.Errorf("price: %w", err)
	}
	defer rows.Close()
	var ss []sample
	for rows.Next() {
		var s sample
		if err := rows.Scan(&s.at, &s.p); err != nil {
			return 0, false, fmt.Errorf("price: %w", err)
		}
		ss = append(ss, s)
	}
	if err := rows.Err(); err != nil {
		return 0, false, fmt.Errorf("price: %w", err)
	}
	var before, after *sample
	for i := range ss {
		if ss[i].at <= t {
			before = &ss[i]
		} else if after == nil {
			after = &ss[i]
		}
	}
	if before == nil || after == nil {
		return 0, false, nil
	}
	// Time-weighted: each sample holds until the next.
	num, den := new(big.Int), int64(0)
	for i := 0; i+1 < len(ss); i++ {
		d := ss[i+1].at - ss[i].at
		num.Add(num, new(big.Int).Mul(big.NewInt(ss[i].p), big.NewInt(d)))
		den += d
	}
	price = min(before.p, after.p)
	if den > 0 {
		price = min(price, new(big.Int).Quo(num, big.NewInt(den)).Int64())
	}
	return price, true, nil
}

// creditFor converts a burn to micro-dollars, rounding down.
func creditFor(amount *big.Int, decimals int, priceE12 int64) int64 {
	n := new(big.Int).Mul(amount, big.NewInt(priceE12))
	d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)+6), nil)
	n.Quo(n, d)
	if !n.IsInt64() {
		return -1
	}
	return n.Int64()
}

// SampleLoop records a price sample every interval until ctx ends: the
// price a burn is credited at comes only from samples this server took.
func (g *Gateway) SampleLoop(ctx context.Context, feeds []Feed, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := g.SamplePrice(sctx, feeds, time.Now()); err != nil && ctx.Err() == nil {
			g.log.Printf("price: %v", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ParseUSD reads a dollar amount ("2.50") as micro-dollars, exactly:
// more than six decimals is refused, not rounded.
func ParseUSD(s string) (int64, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok || strings.ContainsAny(s, "eE/") {
		return 0, fmt.Errorf("amount %q: a decimal number of dollars", s)
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, fmt.Errorf("amount %q: at most six decimals", s)
	}
	return r.Num().Int64(), nil
}
