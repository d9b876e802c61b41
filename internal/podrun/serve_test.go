package podrun

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sessionHost is the host's end of a server run by serve in the test.
type sessionHost struct {
	t      *testing.T
	in     *io.PipeWriter
	frames chan frame // the server's, read as they come (as the host does)
	done   chan int
}

type frame struct {
	kind byte
	p    []byte
	err  error
}

func (h *sessionHost) next() (byte, []byte, error) {
	f, ok := <-h.frames
	if !ok {
		return 0, nil, io.EOF
	}
	return f.kind, f.p, f.err
}

// exeSum is the test binary's SHA-256, read here by the test itself.
var exeSum = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
})

func selfSumOnce(t *testing.T) string {
	t.Helper()
	sum, err := exeSum()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestHello: a hello names the protocol's version and the server's own
// SHA-256; the host's parse refuses another version, and a sum that is
// not 64 hex digits.
func TestHello(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("ab", 32)
	if sum, err := ParseHello(Hello(good)); err != nil || sum != good {
		t.Fatalf("ParseHello(Hello(%s)) = %q, %v", good, sum, err)
	}
	for _, p := range []string{"", "1", "1 " + good, "2", "2 ", "2 -", "2 " + good[:63], "2 " + strings.ToUpper(good), "2 " + good + " ", "2 " + good + "\n", "3 " + good} {
		if sum, err := ParseHello([]byte(p)); err == nil {
			t.Errorf("ParseHello(%q) = %q, want an error", p, sum)
		}
	}
	if s := selfSum(); s != selfSumOnce(t) {
		t.Errorf("selfSum() = %s, want %s", s, selfSumOnce(t))
	}
}

func startServe(t *testing.T) *sessionHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &sessionHost{t: t, in: inW, frames: make(chan frame, 1024), done: make(chan int, 1)}
	go func() {
		code := Serve(inR, outW)
		outW.Close()
		inR.Close()
		h.done <- code
	}()
	go func() {
		defer close(h.frames)
		br := bufio.NewReader(outR)
		for {
			kind, p, err := ReadFrame(br)
			if err != nil {
				return
			}
			h.frames <- frame{kind, p, nil}
		}
	}()
	kind, p, err := h.next()
	if err != nil || kind != FrameHello {
		t.Fatalf("hello: %q %q %v", kind, p, err)
	}
	if sum, err := ParseHello(p); err != nil || sum != selfSumOnce(t) {
		t.Fatalf("hello %q: the sum %q (%v), want the executable's %s", p, sum, err, selfSumOnce(t))
	}
	t.Cleanup(func() { inW.Close() })
	return h
}

func (h *sessionHost) send(kind byte, p []byte) {
	h.t.Helper()
	if err := WriteFrame(h.in, kind, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *sessionHost) run(rq Request) {
	h.t.Helper()
	b, _ := json.Marshal(rq)
	h.send(FrameRun, b)
}

// result reads frames to the command's exit.
func (h *sessionHost) result() (stdout, stderr string, code int, frames int) {
	h.t.Helper()
	var o, e bytes.Buffer
	for {
		kind, p, err := h.next()
		if err != nil {
			h.t.Fatalf("read: %v", err)
		}
		frames++
		switch kind {
		case FrameAck:
			if frames != 1 {
				h.t.Fatalf("an ack after %d frames", frames)
			}
		case FrameStdout:
			o.Write(p)
		case FrameStderr:
			e.Write(p)
		case FrameExit:
			c, err := strconv.Atoi(string(p))
			if err != nil {
				h.t.Fatalf("exit frame %q", p)
			}
			return o.String(), e.String(), c, frames
		default:
			h.t.Fatalf("a frame of kind %q", kind)
		}
	}
}

// TestServe drives the session server as the host does: commands one
// after another on one stream, each with its output, its stdin and its
// exit status, exactly as an exec of its own would give them.
func TestServe(t *testing.T) {
	t.Parallel()
	h := startServe(t)

	h.run(Request{Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}})
	if o, e, c, _ := h.result(); o != "out\n" || e != "err\n" || c != 3 {
		t.Fatalf("first command: %q %q %d", o, e, c)
	}

	// stdin, in frames, to its EOF
	h.run(Request{Argv: []string{"/bin/cat"}, Stdin: true})
	h.send(FrameStdin, []byte("abc"))
	h.send(FrameStdin, []byte("def\n"))
	h.send(FrameEOF, nil)
	if o, _, c, _ := h.result(); o != "abcdef\n" || c != 0 {
		t.Fatalf("cat: %q %d", o, c)
	}

	// no stdin asked for: /dev/null
	h.run(Request{Argv: []string{"/bin/cat"}})
	if o, _, c, _ := h.result(); o != "" || c != 0 {
		t.Fatalf("cat of nothing: %q %d", o, c)
	}

	// a signal's status is the shell's: 128+N
	h.run(Request{Argv: []string{"/bin/sh", "-c", "kill -9 $$"}})
	if _, _, c, _ := h.result(); c != 137 {
		t.Fatalf("killed: %d", c)
	}

	// no such program: 127, said on stderr
	h.run(Request{Argv: []string{"/nonexistent/program"}})
	if _, e, c, _ := h.result(); c != 127 || !strings.Contains(e, "nonexistent") {
		t.Fatalf("missing program: %q %d", e, c)
	}

	// output over a frame's size comes whole, in several frames
	big := MaxFrame*2 + 12345
	h.run(Request{Argv: []string{"/bin/sh", "-c", "head -c " + strconv.Itoa(big) + " /dev/zero"}})
	if o, _, c, n := h.result(); len(o) != big || c != 0 || n < 5 { // ack, 3 of output, exit
		t.Fatalf("big output: %d bytes in %d frames, exit %d", len(o), n, c)
	}

	// stdin the command never reads: the stream goes on (its frames are
	// dropped once it ended), and the next command is not fed them
	h.run(Request{Argv: []string{"/bin/true"}, Stdin: true})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for i := 0; i < 64; i++ { // 4 MiB: more than any pipe holds
			if WriteFrame(h.in, FrameStdin, chunk) != nil {
				return
			}
		}
		WriteFrame(h.in, FrameEOF, nil)
	}()
	if _, _, c, _ := h.result(); c != 0 {
		t.Fatalf("true: %d", c)
	}
	<-fed // every frame of it is sent (and dropped)
	h.run(Request{Argv: []string{"/bin/cat"}, Stdin: true})
	h.send(FrameStdin, []byte("mine"))
	h.send(FrameEOF, nil)
	if o, _, c, _ := h.result(); o != "mine" || c != 0 {
		t.Fatalf("the next command's stdin: %q %d", o, c)
	}
}

// TestServeHostGone: when the host's stream ends while a command runs, the
// server kills the command's process group and returns.
func TestServeHostGone(t *testing.T) {
	t.Parallel()
	h := startServe(t)
	h.run(Request{Argv: []string{"/bin/sh", "-c", "sleep 300 & echo $!; wait"}})
	if kind, _, err := h.next(); err != nil || kind != FrameAck {
		t.Fatalf("the ack: %q %v", kind, err)
	}
	kind, p, err := h.next()
	if err != nil || kind != FrameStdout {
		t.Fatalf("the sleep's pid: %q %q %v", kind, p, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(p)))
	if err != nil {
		t.Fatal(err)
	}
	h.in.Close()
	select {
	case code := <-h.done:
		if code != 0 {
			t.Fatalf("the server returned %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server went on after its host left")
	}
	// the sleep was in the command's process group: killed (reaped by
	// whoever is its parent now; a zombie is dead too)
	deadline := time.Now().Add(time.Minute)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || zombie(pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestServeRefuses: a request while a command runs, a kill while a
// command runs, and a frame of no kind end the server.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	for name, send := range map[string]func(h *sessionHost){
		"two commands": func(h *sessionHost) {
			h.run(Request{Argv: []string{"/bin/sleep", "300"}})
			h.run(Request{Argv: []string{"/bin/true"}})
		},
		"a kill while a command runs": func(h *sessionHost) {
			h.run(Request{Argv: []string{"/bin/sleep", "300"}})
			h.send(FrameKill, nil)
		},
		"an unknown frame": func(h *sessionHost) { h.send('?', nil) },
		"no argv":          func(h *sessionHost) { h.run(Request{}) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := startServe(t)
			send(h)
			go func() {
				for range h.frames {
				}
			}()
			select {
			case code := <-h.done:
				if code != 2 {
					t.Fatalf("the server returned %d, want 2", code)
				}
			case <-time.After(time.Minute):
				t.Fatal("the server went on")
			}
		})
	}
}
