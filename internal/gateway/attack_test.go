package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestErrorsLeakNothing makes the upstream fail in every way with its
// URL, its key and a stack trace in its answer, and checks none of it
// reaches the client. The positive control reads the same upstream
// directly and finds them.
func TestErrorsLeakNothing(t *testing.T) {
	t.Parallel()
	const upKey = "sk-ant-upstream-SECRET-0123456789"
	var upURL string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := 500
		if strings.Contains(r.URL.RawQuery, "429") || r.Header.Get("x-api-key") == "" {
			status = 429
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"key %s at %s failed\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:12 +0x1d"}}`, upKey, upURL)
	}))
	defer up.Close()
	upURL = up.URL
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String()
	dead.Close()

	for _, upstream := range []string{up.URL, deadURL} {
		g, _, _ := newGateway(t, "sqlite", Options{Anthropic: Upstream{URL: upstream, Key: upKey},
			OpenAI: Upstream{URL: upstream, Key: upKey}, Prices: map[string]Price{"*": {In: 1, Out: 1}}})
		ws, key, _ := g.CreateWorkspace(context.Background())
		g.Grant(context.Background(), ws, 1_000_000, "t")
		url := serve(t, g)
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			code, body := call(t, url, key, path, `{"model":"m","max_tokens":10,"stream":true,"messages":[]}`)
			if code < 400 {
				t.Errorf("%s via %s: %d", path, upstream, code)
			}
			for _, secret := range []string{upKey, upstream, strings.TrimPrefix(upstream, "http://"), "goroutine", "main.go", "127.0.0.1"} {
				if strings.Contains(body, secret) {
					t.Errorf("%s via %s: the answer carries %q: %s", path, upstream, secret, body)
				}
			}
		}
		if b, _ := g.Balance(context.Background(), ws); b != 1_000_000 {
			t.Errorf("a failed call was charged: balance %d", b)
		}
	}
	// Positive control: the upstream's own answer has every one of them.
	resp, err := http.Post(up.URL+"/v1/messages", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, secret := range []string{upKey, up.URL, "goroutine"} {
		if !strings.Contains(string(raw), secret) {
			t.Fatalf("control: the upstream's answer lacks %q", secret)
		}
	}
}

// TestStolenRowIsNoKey reads every row the database holds, as a thief
// would, and tries to turn what is there into a working key.
func TestStolenRowIsNoKey(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g, db, _ := newGateway(t, kind, Options{})
			ctx := context.Background()
			_, key, err := g.CreateWorkspace(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(key) != len(KeyPrefix)+32 || !strings.HasPrefix(key, KeyPrefix) {
				t.Fatalf("key %q is not forkbomb_sk_ + 32 base62", key)
			}
			var dump strings.Builder
			for _, table := range []string{"workspaces", "api_keys", "ledger", "reservations", "burns"} {
				dumpTable(t, db.sql, table, &dump)
			}
			if strings.Contains(dump.String(), key[len(KeyPrefix):]) {
				t.Fatal("the key is stored in the database")
			}
			var digest string
			db.sql.QueryRow(`SELECT digest FROM api_keys`).Scan(&digest)
			// Positive control: the row the thief holds is this key's.
			m := hmac.New(sha256.New, testSecrets()[1])
			m.Write([]byte(key))
			if hex.EncodeToString(m.Sum(nil)) != digest {
				t.Fatal("control: the stored digest is not the key's HMAC")
			}
			if _, err := g.Authenticate(ctx, key); err != nil {
				t.Fatalf("control: the real key fails: %v", err)
			}
			for _, try := range []string{digest, KeyPrefix + digest[:32], KeyPrefix + digest[32:], "Bearer " + digest} {
				if ws, err := g.Authenticate(ctx, try); err == nil {
					t.Errorf("%q from the stolen row authenticates as %s", try, ws)
				}
			}
			// A server with another secret (the thief's own) accepts nothing.
			g2, _ := New(db, Options{Secrets: Secrets{1: []byte("another secret of thirty-two bytes!")}})
			if _, err := g2.Authenticate(ctx, key); err == nil {
				t.Error("the key works under a different secret")
			}
		})
	}
}

func dumpTable(t *testing.T, db *sql.DB, table string, w io.Writer) {
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		rows.Scan(ptrs...)
		fmt.Fprintln(w, vals...)
	}
}

// TestKeyRotation: a key made under version 1 works while version 1 is
// kept, new keys use version 2, and retiring version 1 ends the old key.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	g, db, _ := newGateway(t, "sqlite", Options{})
	ctx := context.Background()
	_, old, _ := g.CreateWorkspace(ctx)
	both := Secrets{1: testSecrets()[1], 2: []byte("version two secret, thirty-two bytes")}
	g2, _ := New(db, Options{Secrets: both})
	if _, err := g2.Authenticate(ctx, old); err != nil {
		t.Errorf("a version 1 key after adding version 2: %v", err)
	}
	_, fresh, _ := g2.CreateWorkspace(ctx)
	var v int
	db.sql.QueryRow(`SELECT MAX(key_version) FROM api_keys`).Scan(&v)
	if v != 2 {
		t.Errorf("new key under version %d, want 2", v)
	}
	g3, _ := New(db, Options{Secrets: Secrets{2: both[2]}})
	if _, err := g3.Authenticate(ctx, old); err == nil {
		t.Error("a version 1 key works after version 1 was retired")
	}
	if _, err := g3.Authenticate(ctx, fresh); err != nil {
		t.Errorf("a version 2 key: %v", err)
	}
}

// TestRateLimits: workspace creation per client address (X-Forwarded-For
// believed only from a trusted proxy) and model calls per workspace.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	_, lo, _ := net.ParseCIDR("127.0.0.2/32")
	g, url, _, key := modelGateway(t, "sqlite", 1_000_000_000, Options{Limits: Limits{CreatePerMinute: 3, ModelPerMinute: 5}, TrustedProxies: []*net.IPNet{lo}})
	// The buckets hold their bursts (3 and 5) and refill no more: at 3
	// and 5 a minute, a loaded machine slow enough to take 12 s over the
	// calls below would see a token come back and a 6th call answered.
	g.limits.mu.Lock()
	if c, m := g.limits.rate["create"], g.limits.rate["model"]; c != 3.0/60 || m != 5.0/60 {
		t.Errorf("refill rates %v and %v a second, want 3/60 and 5/60", c, m)
	}
	g.limits.rate["create"], g.limits.rate["model"] = 0, 0
	g.limits.mu.Unlock()
	post := func(xff string) int {
		req, _ := http.NewRequest("POST", url+"/v1/workspaces", nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 3 {
		if c := post(""); c != 201 {
			t.Fatalf("create %d: %d", i, c)
		}
	}
	// 127.0.0.1 is no trusted proxy: a forged X-Forwarded-For is ignored.
	if c := post(fmt.Sprintf("203.0.113.%d", 9)); c != 429 {
		t.Errorf("4th create with a forged X-Forwarded-For: %d, want 429", c)
	}
	if c := post(""); c != 429 {
		t.Errorf("4th create: %d, want 429", c)
	}
	// From a trusted proxy, the forwarded address is the client's.
	r := httptest.NewRequest("POST", "/v1/workspaces", nil)
	r.RemoteAddr = "127.0.0.2:1234"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	r2 := httptest.NewRequest("POST", "/v1/workspaces", nil)
	r2.RemoteAddr = "127.0.0.3:1234"
	r2.Header.Set("X-Forwarded-For", "198.51.100.7")
	r3 := httptest.NewRequest("POST", "/v1/workspaces", nil)
	r3.RemoteAddr = "198.51.100.7:9"
	if g.clientKey(r) != g.clientKey(r3) || g.clientKey(r2) == g.clientKey(r3) {
		t.Error("X-Forwarded-For believed from the wrong peers")
	}
	codes := map[int]int{}
	for range 8 {
		c, _ := call(t, url, key, "/v1/messages", anthropicBody)
		codes[c]++
	}
	if codes[200] != 5 || codes[429] != 3 {
		t.Errorf("model calls: %v, want 5 answered and 3 limited", codes)
	}
	// The refill, at its real rate: 13 s on, the bucket holds one token
	// (and a twelfth), so one more call is answered and, with the refill
	// stopped again, no second one.
	setRate := func(r float64, back time.Duration) {
		g.limits.mu.Lock()
		defer g.limits.mu.Unlock()
		g.limits.rate["model"] = r
		for k, b := range g.limits.buckets {
			if strings.HasPrefix(k, "model\x00") {
				b.at = b.at.Add(-back)
			}
		}
	}
	setRate(5.0/60, 13*time.Second)
	c, _ := call(t, url, key, "/v1/messages", anthropicBody)
	setRate(0, 0)
	if c != 200 {
		t.Errorf("a model call 13 s after the limit: %d, want 200 (one token back)", c)
	}
	if c, _ := call(t, url, key, "/v1/messages", anthropicBody); c != 429 {
		t.Errorf("a second model call: %d, want 429", c)
	}
}
