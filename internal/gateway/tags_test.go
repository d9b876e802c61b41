package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// tagged posts an Anthropic call labelled tag ("" sends no header).
func tagged(t testing.TB, base, key, tag string) (int, string) {
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(anthropicBody))
	req.Header.Set("Authorization", "Bearer "+key)
	if tag != "" {
		req.Header.Set(TagHeader, tag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tagUsage asks GET /v1/usage?tag= as key's workspace.
func tagUsage(t testing.TB, base, key, tag string) (int, TagUsage, int64) {
	req, _ := http.NewRequest("GET", base+"/v1/usage?tag="+url.QueryEscape(tag), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		TagUsage
		Balance int64 `json:"balance_micro_usd"`
	}
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v.TagUsage, v.Balance
}

// TestTagTotals checks on both databases that two forks' concurrent calls
// are each charged to their own tag, that the tags' totals add up to
// exactly what the balance fell by, and that another workspace asking
// for the same tags sees nothing of them.
func TestTagTotals(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const start = 100_000_000
			g, base, ws, key := modelGateway(t, kind, start, Options{})
			tags := []string{"run_7Hx/0", "run_7Hx/1"}
			calls := []int{3, 5}
			var wg sync.WaitGroup
			for i, tag := range tags {
				for range calls[i] {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if code, body := tagged(t, base, key, tag); code != 200 {
							t.Errorf("%s: %d %s", tag, code, body)
						}
					}()
				}
			}
			// An untagged call is charged but belongs to no tag.
			if code, _ := tagged(t, base, key, ""); code != 200 {
				t.Fatalf("untagged call: %d", code)
			}
			wg.Wait()
			var sum int64
			for i, tag := range tags {
				code, u, bal := tagUsage(t, base, key, tag)
				if code != 200 || u.Calls != int64(calls[i]) || u.Open != 0 || u.Charged <= 0 || u.TokensIn <= 0 || u.TokensOut <= 0 {
					t.Errorf("%s: %d %+v", tag, code, u)
				}
				if b, _ := g.Balance(context.Background(), ws); bal != b {
					t.Errorf("%s: usage says balance %d, the ledger %d", tag, bal, b)
				}
				sum += u.Charged
			}
			// One settle per call: the per-call charge is the same for
			// every identical call, so the tags split 3:5.
			code, a, _ := tagUsage(t, base, key, tags[0])
			_, b, _ := tagUsage(t, base, key, tags[1])
			if code != 200 || a.Charged*5 != b.Charged*3 {
				t.Errorf("tags charged %d and %d, want 3:5", a.Charged, b.Charged)
			}
			var untagged int64
			g.db.sql.QueryRow(g.db.q(`SELECT SUM(charged) FROM reservations WHERE tag = ''`)).Scan(&untagged)
			after, _ := g.Balance(context.Background(), ws)
			if sum+untagged != start-after || untagged <= 0 {
				t.Errorf("tags %d + untagged %d, balance fell %d", sum, untagged, start-after)
			}
			var usageRows int64
			g.db.sql.QueryRow(g.db.q(`SELECT -SUM(amount) FROM ledger WHERE workspace_id = ? AND kind = 'usage'`), ws).Scan(&usageRows)
			if usageRows != start-after {
				t.Errorf("ledger usage rows %d, balance fell %d", usageRows, start-after)
			}

			// Another workspace: the same tags are empty to it.
			_, other, err := g.CreateWorkspace(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range tags {
				if code, u, bal := tagUsage(t, base, other, tag); code != 200 || u.Calls != 0 || u.Charged != 0 || bal != 0 {
					t.Errorf("another workspace sees %s: %d %+v balance %d", tag, code, u, bal)
				}
			}
			// Positive control of the auth: no key, no figures.
			if code, _, _ := tagUsage(t, base, "forkbomb_sk_nope", tags[0]); code != 401 {
				t.Errorf("a wrong key: %d, want 401", code)
			}
		})
	}
}

// TestTagRefused checks that a hostile tag is refused before anything is
// reserved, on the model call and on the usage query, and that a valid
// one (the positive control) passes.
func TestTagRefused(t *testing.T) {
	t.Parallel()
	g, base, ws, key := modelGateway(t, "sqlite", 10_000_000, Options{})
	hostile := []string{
		strings.Repeat("a", 65),
		"run 1/0",
		"run'; DROP TABLE ledger;--",
		"run%/0",
		"\x1b[31mred",
		"forkbomb_sk_" + strings.Repeat("x", 20) + "\n",
		"ü",
	}
	for _, tag := range hostile {
		t.Run(strings.ToValidUTF8(tag, "?"), func(t *testing.T) {
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(anthropicBody))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header[TagHeader] = []string{tag}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_tag") {
					t.Errorf("model call with tag %q: %d %s", tag, resp.StatusCode, b)
				}
			} // else the client itself refused the header: also nothing sent
			if code, _, _ := tagUsage(t, base, key, tag); code != 400 {
				t.Errorf("usage of tag %q: %d, want 400", tag, code)
			}
		})
	}
	var n int
	g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations`).Scan(&n)
	if b, _ := g.Balance(context.Background(), ws); n != 0 || b != 10_000_000 {
		t.Errorf("refused tags left %d reservations, balance %d", n, b)
	}
	// Two values of the header are refused too: which one would count?
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(anthropicBody))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header[TagHeader] = []string{"a", "b"}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("two tags: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _ := tagged(t, base, key, "run.ok_1-x/12"); code != 200 {
		t.Errorf("a valid tag: %d", code)
	}
	if code, u, _ := tagUsage(t, base, key, "run.ok_1-x/12"); code != 200 || u.Calls != 1 || u.Charged <= 0 {
		t.Errorf("a valid tag's usage: %d %+v", code, u)
	}
}
