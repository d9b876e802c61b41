package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// checkAddr refuses every listen address but a literal loopback IPv4 one.
// A host name is refused too, even "localhost": what it resolves to is
// not ours to trust, and the Host check below compares literal text.
func checkAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen %q: %w", addr, ErrNotLoopback)
	}
	return nil
}

// newToken is the session's secret: 32 random bytes, URL-safe.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// guard is every request's gate, in this order:
//
//   - the method: GET or HEAD, nothing changes state;
//   - Host must be the address the server is bound to, literally. A DNS
//     rebinding page (evil.example resolving to 127.0.0.1) sends its own
//     name as Host and is refused before its token guess matters;
//   - Origin, when the browser sends one, must be the server's own, and
//     Sec-Fetch-Site must be same-origin or none (a typed URL): another
//     site's page, and another port of 127.0.0.1 (same-site, not same
//     origin), cannot read or even trigger a request;
//   - the token, as the first path element, compared in constant time.
//
// The token is in the path, not a cookie: cookies of 127.0.0.1 are sent
// to every port of it, so a cookie would reach any other local server
// the browser visits (another user's included); and EventSource cannot
// send a header. Referrer-Policy no-referrer keeps the path out of every
// request the page could make elsewhere (it makes none: CSP).
type guard struct {
	host  string // "127.0.0.1:PORT"
	token string
	next  http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.Host != g.host {
		http.Error(w, "wrong Host", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+g.host {
		http.Error(w, "foreign Origin", http.StatusForbidden)
		return
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		http.Error(w, "cross-site request", http.StatusForbidden)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/")
	tok, rest, _ := strings.Cut(rest, "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(g.token)) != 1 {
		http.Error(w, "no valid token: open the URL forkbomb printed", http.StatusForbidden)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rest
	g.next.ServeHTTP(w, r2)
}

// csp allows the page's own script and style files and its own server,
// nothing inline, nothing elsewhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
