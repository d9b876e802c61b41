package modelproxy

import (
	"io"
	"log"
	"net/http"
	"net/textproto"
	"strings"
)

// discardLog silences the servers' own logging: a fork's malformed
// requests would otherwise land on forkbomb's stderr.
var discardLog = log.New(io.Discard, "", 0)

// hopByHop are the headers that belong to one connection (RFC 9110
// 7.6.1), never forwarded either way; names a Connection header lists are
// dropped too.
var hopByHop = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
}

// credentialHeader reports whether a request header may carry a
// credential. The list is wide on purpose — a header name with any of
// these words is dropped from what a fork sends — since the fork's only
// credential is a placeholder and the proxy adds the real one itself.
// Forwarding headers go too: they would tell the upstream about the fork.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "session", "password", "credential", "forwarded", "x-real-ip", "via"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// copyRequestHeaders copies what a fork sent that is neither hop-by-hop
// nor possibly a credential.
func copyRequestHeaders(dst, src http.Header) {
	drop := connectionTokens(src)
	for name, vs := range src {
		if hopByHop[name] || drop[name] || credentialHeader(name) || name == "Host" || name == "Accept-Encoding" || name == "Content-Length" {
			continue
		}
		dst[name] = append([]string(nil), vs...)
	}
}

// copyResponseHeaders copies the upstream's headers but hop-by-hop ones and
// cookies (a fork has no business with the upstream's session).
func copyResponseHeaders(dst, src http.Header) {
	drop := connectionTokens(src)
	for name, vs := range src {
		if hopByHop[name] || drop[name] || name == "Set-Cookie" || name == "Set-Cookie2" {
			continue
		}
		dst[name] = append([]string(nil), vs...)
	}
}

// copyPlainHeaders is for plain-http proxying to an allowed host: only
// hop-by-hop headers go (the tunnelled case passes everything anyway).
func copyPlainHeaders(dst, src http.Header) {
	drop := connectionTokens(src)
	for name, vs := range src {
		if hopByHop[name] || drop[name] || name == "Host" {
			continue
		}
		dst[name] = append([]string(nil), vs...)
	}
}

// connectionTokens are the header names listed in Connection.
func connectionTokens(h http.Header) map[string]bool {
	m := map[string]bool{}
	for _, v := range h["Connection"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				m[textproto.CanonicalMIMEHeaderKey(t)] = true
			}
		}
	}
	return m
}
