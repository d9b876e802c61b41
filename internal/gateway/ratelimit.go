package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits are requests per minute, by class, per workspace (model calls,
// burns with a key) or per client IP (workspace creation, burns without).
type Limits struct {
	CreatePerMinute int // default 10
	BurnPerMinute   int // default 30
	ModelPerMinute  int // default 600
}

func (l *Limits) defaults() {
	if l.CreatePerMinute <= 0 {
		l.CreatePerMinute = 10
	}
	if l.BurnPerMinute <= 0 {
		l.BurnPerMinute = 30
	}
	if l.ModelPerMinute <= 0 {
		l.ModelPerMinute = 600
	}
}

// limiter is a token bucket per (class, key): a burst of a minute's worth,
// refilled continuously. It lives in one server's memory: several servers
// each enforce it, so the fleet's limit is the sum (docs/SECURITY.md).
type limiter struct {
	mu      sync.Mutex
	rate    map[string]float64 // tokens per second by class
	burst   map[string]float64
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(l Limits) *limiter {
	per := map[string]int{"create": l.CreatePerMinute, "burn": l.BurnPerMinute, "model": l.ModelPerMinute}
	lm := &limiter{rate: map[string]float64{}, burst: map[string]float64{}, buckets: map[string]*bucket{}}
	for c, n := range per {
		lm.rate[c], lm.burst[c] = float64(n)/60, float64(n)
	}
	return lm
}

func (l *limiter) allow(class, key string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Forget full buckets now and then, so a flood of addresses cannot
	// grow the map without bound.
	if now.Sub(l.sweep) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.at) > 2*time.Minute {
				delete(l.buckets, k)
			}
		}
		l.sweep = now
	}
	k := class + "\x00" + key
	b := l.buckets[k]
	if b == nil {
		b = &bucket{tokens: l.burst[class], at: now}
		l.buckets[k] = b
	}
	b.tokens = min(l.burst[class], b.tokens+now.Sub(b.at).Seconds()*l.rate[class])
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// clientKey is an HMAC of the client's address under a key made at
// start-up: limits need no address kept in memory as it came. The
// address is the peer's, or the last X-Forwarded-For hop a trusted proxy
// appended.
func (g *Gateway) clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && g.trusted(ip) {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if h := strings.TrimSpace(hops[len(hops)-1]); net.ParseIP(h) != nil {
				host = h
			}
		}
	}
	m := hmac.New(sha256.New, g.ipKey)
	m.Write([]byte(host))
	return "ip:" + hex.EncodeToString(m.Sum(nil))
}

func (g *Gateway) trusted(ip net.IP) bool {
	for _, n := range g.opts.TrustedProxies {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
