package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hangupPrice makes the charges tell apart: 1000 in and 500 out cost
// 2000 micro-dollars, the input alone 1000, the worst case far more.
var hangupPrice = Price{In: 1_000_000, Out: 2_000_000}

const usageCost = 1000*1 + 500*2

// TestHangupStillCharged is a client that hangs up at every stage of a
// model call, on both APIs and both databases, against a scripted
// upstream that only goes on once the gateway has seen the hang-up. The
// charge is read back from the database: the upstream's reported usage
// when it came (and the upstream says it was read to the end), the
// reservation's worst case when it did not (cut, malformed, past the
// deadline, more than the gateway reads on for, a client that stops
// reading) — never 0, never the input alone. The control case is the
// same call with a client that stays: it is charged the usage, so the
// script's usage is one the gateway reads.
func TestHangupStillCharged(t *testing.T) {
	t.Parallel()
	type tc struct {
		name   string
		s      func(a api) script
		client string // "read" to the end, "hangup" at the script's hangAt, "stall": stop reading after the first event
		want   string // "usage" or "worst"
		// the upstream deadline, where it is under test: it starts before
		// the reservation, so it must leave a loaded machine time for the
		// reservation and the first event to reach the client
		timeout time.Duration
	}
	const pad = 8 << 20
	cases := []tc{
		{"control_no_hangup", func(a api) script { return script{true, a.events, -1, pad, ""} }, "read", "usage", 0},
		{"before_headers", func(a api) script { return script{true, a.events, 0, pad, ""} }, "hangup", "usage", 0},
		{"after_first_chunk", func(a api) script { return script{true, a.events, 1, pad, ""} }, "hangup", "usage", 0},
		{"before_usage_chunk", func(a api) script { return script{true, a.events, a.usageAt, pad, ""} }, "hangup", "usage", 0},
		{"not_streamed_before_headers", func(a api) script { return script{false, []string{a.body}, 0, pad, ""} }, "hangup", "usage", 0},
		{"cut_before_usage", func(a api) script { return script{true, a.events[:a.usageAt], 1, pad, "cut"} }, "hangup", "worst", 0},
		{"ended_without_usage", func(a api) script { return script{true, a.events[:a.usageAt], 1, pad, ""} }, "hangup", "worst", 0},
		{"malformed_usage", func(a api) script {
			return script{true, append(a.events[:a.usageAt:a.usageAt], a.malformed), 1, pad, ""}
		}, "hangup", "worst", 0},
		{"upstream_stalls_past_deadline", func(a api) script { return script{true, a.events[:1], 1, 0, "stall"} }, "hangup", "worst", 6 * time.Second},
		{"endless_after_hangup", func(a api) script { return script{true, a.events[:1], 1, 0, "endless"} }, "hangup", "worst", 0},
		{"client_stops_reading", func(a api) script { return script{true, a.events[:1], -1, 0, "endless"} }, "stall", "worst", 6 * time.Second},
	}
	for _, kind := range backends {
		for _, a := range apis {
			for _, c := range cases {
				t.Run(kind+"/"+a.name+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					s := c.s(a)
					h := startHangup(t, kind, s, c.timeout)
					h.call(t, a, s, c.client)
					state, charged, amount := h.settled(t)
					rep := h.upstreamReport(t)
					bal, err := h.g.Balance(context.Background(), h.ws)
					if err != nil {
						t.Fatal(err)
					}
					want := int64(usageCost)
					if c.want == "worst" {
						want = amount
						if amount <= usageCost {
							t.Fatalf("control: the worst case %d is not above the usage %d", amount, usageCost)
						}
					}
					if state != "settled" || charged != want {
						t.Errorf("reservation %s, charged %d of %d reserved; want settled and charged %d (%s)", state, charged, amount, want, c.want)
					}
					if bal != grant-charged {
						t.Errorf("balance %d, want %d less the charge %d", bal, grant, charged)
					}
					var sum int64
					h.g.db.sql.QueryRow(h.g.db.q(`SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE workspace_id = ?`), h.ws).Scan(&sum)
					if sum != bal {
						t.Errorf("ledger sums to %d, balance is %d", sum, bal)
					}
					switch {
					case c.want == "usage" && (!rep.wroteAll || rep.dropped):
						t.Errorf("the upstream was not read to the end: %+v", rep)
					case s.ending == "stall" || s.ending == "endless":
						if !rep.dropped {
							t.Errorf("the gateway never ended the exchange: %+v", rep)
						}
					}
				})
			}
		}
	}
}

const grant = 1_000_000_000

// hangup is one gateway on one database in front of one scripted
// upstream, served on loopback behind an observer that closes gone when
// the gateway's server has seen the client leave.
type hangup struct {
	g    *Gateway
	url  string
	ws   string
	key  string
	up   *scriptedUpstream
	gone chan struct{}
}

func startHangup(t *testing.T, kind string, s script, timeout time.Duration) *hangup {
	t.Helper()
	h := &hangup{gone: make(chan struct{})}
	h.up = startUpstream(t, s, h.gone)
	o := Options{Anthropic: Upstream{URL: h.up.url, Key: "k"}, OpenAI: Upstream{URL: h.up.url + "/v1", Key: "k"},
		Prices: map[string]Price{"*": hangupPrice}, UpstreamTimeout: timeout}
	h.g, _, _ = newGateway(t, kind, o)
	var err error
	h.ws, h.key, err = h.g.CreateWorkspace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.g.Grant(context.Background(), h.ws, grant, "test"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw := h.g.Handler()
	var once sync.Once
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() { <-r.Context().Done(); once.Do(func() { close(h.gone) }) }()
		gw.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.url = "http://" + ln.Addr().String()
	return h
}

// call makes the model call and leaves as client says.
func (h *hangup) call(t *testing.T, a api, s script, client string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body := fmt.Sprintf(`{"model":"m","max_tokens":4000,"stream":%v,"messages":[{"role":"user","content":"hello"}]}`, s.stream)
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url+a.path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+h.key)
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	type answer struct {
		resp *http.Response
		err  error
	}
	ans := make(chan answer, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Do(req)
		ans <- answer{resp, err}
	}()
	if client == "hangup" && s.hangAt == 0 {
		<-h.up.got
		cancel()
		return
	}
	r := <-ans
	if r.err != nil {
		t.Fatalf("call: %v", r.err)
	}
	t.Cleanup(func() { r.resp.Body.Close() })
	if r.resp.StatusCode != 200 {
		b, _ := io.ReadAll(r.resp.Body)
		t.Fatalf("call: %d %s", r.resp.StatusCode, b)
	}
	switch client {
	case "read":
		io.Copy(io.Discard, r.resp.Body)
	case "hangup", "stall":
		n := s.hangAt
		if client == "stall" {
			n = 1
		}
		br := bufio.NewReader(r.resp.Body)
		for seen := 0; seen < n; {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream ended after %d events: %v", seen, err)
			}
			if line == "\n" {
				seen++
			}
		}
		if client == "hangup" {
			cancel()
		}
	}
}

// settled waits until the call's one reservation is closed and reads
// it back from the database.
func (h *hangup) settled(t *testing.T) (state string, charged, amount int64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var n int
		h.g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations`).Scan(&n)
		if n > 1 {
			t.Fatalf("%d reservations for one call", n)
		}
		if n == 1 {
			h.g.db.sql.QueryRow(`SELECT state, charged, amount FROM reservations`).Scan(&state, &charged, &amount)
			if state != "open" {
				return state, charged, amount
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reservation is still %q: the call never settled", state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *hangup) upstreamReport(t *testing.T) upstreamReport {
	t.Helper()
	select {
	case r := <-h.up.report:
		return r
	case <-time.After(90 * time.Second):
		t.Fatal("the upstream exchange never ended")
	}
	return upstreamReport{}
}

// TestShutdownEndsUpstream stops a gateway while a call streams from an
// upstream that has stalled, its client still connected: the grace over,
// Serve ends the upstream exchange (the upstream sees its connection
// closed) and returns only once the call has settled, at its worst case
// — not left open for a sweeper, which would return it in full.
func TestShutdownEndsUpstream(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		for _, a := range apis {
			t.Run(kind+"/"+a.name, func(t *testing.T) {
				t.Parallel()
				s := script{true, a.events[:1], -1, 0, "stall"}
				h := startHangup(t, kind, s, 0)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				served := make(chan error, 1)
				go func() { served <- h.g.Serve(ctx, ln) }()
				h.url = "http://" + ln.Addr().String()
				h.call(t, a, script{true, nil, 1, 0, ""}, "stall")
				// Positive control: the call holds its reservation.
				var open int
				h.g.db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'open'`).Scan(&open)
				if open != 1 {
					t.Fatalf("control: %d open reservations mid-stream, want 1", open)
				}
				stop()
				select {
				case err := <-served:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(90 * time.Second):
					t.Fatal("Serve never returned")
				}
				var state string
				var charged, amount int64
				h.g.db.sql.QueryRow(`SELECT state, charged, amount FROM reservations`).Scan(&state, &charged, &amount)
				if state != "settled" || charged != amount {
					t.Errorf("when Serve returned the reservation was %s, charged %d of %d; want settled at the worst case", state, charged, amount)
				}
				if rep := h.upstreamReport(t); !rep.dropped {
					t.Errorf("the upstream exchange was not ended: %+v", rep)
				}
			})
		}
	}
}
