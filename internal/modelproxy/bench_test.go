package modelproxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkRequest compares a small streamed model request made directly
// to a loopback upstream with the same request through an endpoint (its
// UNIX socket, header filtering, key injection, metering): the ratio is
// the proxy's overhead per model call, without the sandbox's forwarder.
func BenchmarkRequest(b *testing.B) {
	up := newUpstream(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		sse(w, anthropicStream...)
	})
	p, err := Start(Options{Upstreams: []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}}, Dir: b.TempDir(), RatePerMinute: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ep, err := p.Fork(0, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 20000) + `"}]}`
	run := func(b *testing.B, c *http.Client, base string) {
		for b.Loop() {
			resp, err := c.Post(base+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, &http.Client{Transport: &http.Transport{}}, up.URL) })
	b.Run("proxy", func(b *testing.B) { run(b, client(ep), ep.BaseURL()) })
}
