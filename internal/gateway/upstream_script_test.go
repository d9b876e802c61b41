package gateway

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

// script is what a scripted upstream answers one model call with. It
// speaks HTTP/1.1 by hand on loopback, so it can cut a stream mid-chunk,
// stall, pour out bytes, and tell whether the gateway read its answer to
// the end: it writes pad bytes of SSE comments after the hang-up, more
// than loopback's socket buffers hold, so its last write returns only if
// the gateway kept reading.
type script struct {
	stream bool
	events []string // SSE events (stream) or the whole JSON body (one element)
	// hangAt is how many events go out before the test's client hangs up
	// (0: before the headers); the rest wait until the gateway has seen
	// the hang-up. -1: the client never hangs up.
	hangAt int
	pad    int    // bytes of SSE comments sent after the hang-up, before the rest
	ending string // "": the stream ends cleanly; "cut": closed mid-chunk; "stall": no more bytes; "endless": comments until a write fails
}

// upstreamReport is what the scripted upstream saw.
type upstreamReport struct {
	wroteAll bool  // every byte, to the stream's end, was taken by the gateway
	dropped  bool  // the gateway closed the connection before the stream's end
	written  int64 // body bytes the gateway took
}

type scriptedUpstream struct {
	url    string
	got    chan struct{}       // closed when the request has arrived
	report chan upstreamReport // one report when the exchange is over
}

// startUpstream serves s once on loopback. gone is closed when the
// gateway has seen the test's client hang up.
func startUpstream(t *testing.T, s script, gone <-chan struct{}) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &scriptedUpstream{url: "http://" + ln.Addr().String(), got: make(chan struct{}), report: make(chan upstreamReport, 1)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			u.report <- upstreamReport{}
			return
		}
		defer c.Close()
		u.report <- serveScript(c, s, u.got, gone)
	}()
	return u
}

func serveScript(c net.Conn, s script, got chan struct{}, gone <-chan struct{}) upstreamReport {
	var rep upstreamReport
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		close(got)
		return rep
	}
	io.Copy(io.Discard, req.Body)
	close(got)
	// The gateway sends nothing more on this connection: a read that
	// returns means it closed it.
	var closed atomic.Bool
	closedCh := make(chan struct{})
	go func() { br.ReadByte(); closed.Store(true); close(closedCh) }()
	w := &countingWriter{w: c}
	if s.hangAt == 0 {
		<-gone
	}
	if !s.stream {
		body := strings.Replace(s.events[0], "PAD", strings.Repeat("x", s.pad), 1)
		early := closed.Load() // as below: a close after the whole body is not a drop
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		rep.wroteAll = w.err == nil
		rep.dropped, rep.written = early, w.n
		return rep
	}
	fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
	chunk := func(b string) { fmt.Fprintf(w, "%x\r\n%s\r\n", len(b), b) }
	for i, ev := range s.events {
		if i == s.hangAt && i > 0 {
			<-gone
		}
		if i == max(s.hangAt, 0) {
			for sent := 0; sent < s.pad; sent += 16 << 10 {
				chunk(": " + strings.Repeat("p", 16<<10-3) + "\n")
			}
		}
		chunk(ev)
	}
	switch s.ending {
	case "cut":
		rep.dropped = closed.Load()
		rep.written = w.n
		return rep
	case "stall":
		<-closedCh
		return upstreamReport{dropped: true, written: w.n}
	case "endless":
		for w.err == nil {
			chunk(": " + strings.Repeat("e", 16<<10-3) + "\n")
		}
		return upstreamReport{dropped: true, written: w.n}
	}
	// Dropped is a close before the stream's end: once the terminator is
	// written, a gateway that read it may close at once (Connection: close),
	// and that is not a drop — a load seen after the write was (a flake).
	early := closed.Load()
	fmt.Fprint(w, "0\r\n\r\n")
	return upstreamReport{wroteAll: w.err == nil, dropped: early, written: w.n}
}

// countingWriter stops at the first failed write and counts what went.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}

// The two APIs' streams, usage in the same place: 1000 tokens in, 500
// out. usageAt is the index of the event carrying the final usage.
var (
	anthropicEvents = []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello\"}}\n\n",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":500}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	anthropicMalformed = "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tok\n\n"
	anthropicBodyJSON  = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"PAD"}],"stop_reason":"end_turn","usage":{"input_tokens":1000,"output_tokens":500}}`

	openaiEvents = []string{
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500,\"total_tokens\":1500}}\n\n",
		"data: [DONE]\n\n",
	}
	openaiMalformed = "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10\n\n"
	openaiBodyJSON  = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"PAD"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`
)

// api is one model API as the hang-up tests drive it.
type api struct {
	name, path string
	events     []string
	usageAt    int
	malformed  string
	body       string // a non-streaming answer
}

var apis = []api{
	{"anthropic", "/v1/messages", anthropicEvents, 4, anthropicMalformed, anthropicBodyJSON},
	{"openai", "/v1/chat/completions", openaiEvents, 3, openaiMalformed, openaiBodyJSON},
}
