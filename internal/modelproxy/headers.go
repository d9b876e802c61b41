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

// accountHeader reports whether a request header may choose what the
// injected credential bills: OpenAI-Organization and OpenAI-Project
// (with a key in several, a fork would pick the organisation or project
// that pays, and see its data), ChatGPT-Account-Id (codex's), Google's
// X-Goog-User-Project, and any header naming an organisation, project,
// workspace, account, tenant or billing, or with "org" as a word. The
// user's own choice is set by inject from the configuration; the fork's
// never passes. Wide on purpose, as credentialHeader is: a feature flag
// (Anthropic-Beta, OpenAI-Beta) or a version passes, an account selector
// does not.
func accountHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"organization", "organisation", "project", "workspace", "account", "tenant", "billing"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	// "org" as a word of the name (X-Org-Id, Org_Id), not inside one.
	for _, w := range strings.FieldsFunc(n, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if w == "org" || w == "orgid" {
			return true
		}
	}
	return false
}

// copyRequestHeaders copies what a fork sent that is neither hop-by-hop
// nor possibly a credential or an account selector.
func copyRequestHeaders(dst, src http.Header) {
	drop := connectionTokens(src)
	for name, vs := range src {
		if hopByHop[name] || drop[name] || credentialHeader(name) || accountHeader(name) || name == "Host" || name == "Accept-Encoding" || name == "Content-Length" {
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
