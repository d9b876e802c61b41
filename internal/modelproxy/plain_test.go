package modelproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPlainEarlyAnswer: an allowed plain-http host that starts its answer
// before it has read the request's body (as a server refusing early, or
// one streaming as it reads, does) gets the whole body, and the fork the
// whole answer, every time. Before the handler asked for full duplex,
// the server closed the incoming body (which the outgoing request
// streams) when the answer's header was written, the transport's last
// read of it could come after that, and about 1 answer in 100 was cut
// ("unexpected EOF"). A body declared over MaxRequestBytes is refused
// before the host is dialled.
func TestPlainEarlyAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var requests atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					requests.Add(1)
					// the head and the first bytes of the answer, then the body
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nearly")
					n, _ := io.Copy(io.Discard, req.Body)
					fmt.Fprintf(c, "%8d", n)
				}
			}()
		}
	}()
	const max = 4096
	host := ln.Addr().String()
	_, ep, _ := startProxy(t, Options{Allow: []string{host}, RatePerMinute: 1 << 20, MaxRequestBytes: max})
	cl := client(ep)
	cl.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, ep.ProxyURL()))
	const rounds = 1000
	cut := 0
	for i := range rounds {
		size := 1 + i*37%max
		resp, err := cl.Post("http://"+host+"/x", "text/plain", strings.NewReader(strings.Repeat("x", size)))
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("early%8d", size); string(b) != want || err != nil || resp.StatusCode != http.StatusOK {
			cut++
			if cut <= 3 {
				t.Errorf("round %d: status %d, answer %q (%v); want %q", i, resp.StatusCode, b, err, want)
			}
		}
	}
	if cut > 0 {
		t.Errorf("%d answers of %d were not whole", cut, rounds)
	}
	if n := requests.Load(); n != rounds {
		t.Errorf("control: the host answered %d requests, want %d", n, rounds)
	}

	resp, err := cl.Post("http://"+host+"/x", "text/plain", strings.NewReader(strings.Repeat("x", max+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over MaxRequestBytes: status %d, want 413", resp.StatusCode)
	}
	if n := requests.Load(); n != rounds {
		t.Errorf("a body over MaxRequestBytes reached the host")
	}
}
