package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// serveHere is a session's exec that runs podrun's server in this process
// (what the pod's would do); a closed session ends its stdin, as an exec's.
func serveHere(_ context.Context, stdin io.Reader, stdout io.Writer) error {
	podrun.Serve(stdin, stdout)
	return nil
}

// TestSession runs commands through one session as Store.run does: each
// with its own output, stdin and status; a second command while one runs
// is not taken (the caller execs it); a cut command ends the session and
// its server's command.
func TestSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	se, err := newSession(ctx, "pod", time.Minute, serveHere)
	if err != nil {
		t.Fatal(err)
	}
	defer se.close()

	var o, e bytes.Buffer
	code, err, sent := se.do(ctx, []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}, nil, &o, &e)
	if !sent || err != nil || code != 4 || o.String() != "out\n" || e.String() != "err\n" {
		t.Fatalf("first: sent %v, %v, exit %d, %q, %q", sent, err, code, o.String(), e.String())
	}
	o.Reset()
	code, err, sent = se.do(ctx, []string{"/bin/sh", "-c", "tr a-z A-Z"}, strings.NewReader(strings.Repeat("abc", 100000)), &o, nil)
	if !sent || err != nil || code != 0 || o.String() != strings.Repeat("ABC", 100000) {
		t.Fatalf("stdin: sent %v, %v, exit %d, %d bytes", sent, err, code, o.Len())
	}

	// busy: the second is not taken
	started := make(chan struct{})
	done := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() {
		_, err, _ := se.do(ctx, []string{"/bin/sh", "-c", "echo go; read x; echo $x"}, pr, &notify{w: io.Discard, c: started}, nil)
		done <- err
	}()
	<-started
	if _, _, sent := se.do(ctx, []string{"/bin/true"}, nil, nil, nil); sent {
		t.Fatal("a second command was taken while one ran")
	}
	pw.Write([]byte("x\n"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// cut: the context ends the command, and the session
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	code, err, sent = se.do(cctx, []string{"/bin/sleep", "300"}, nil, nil, nil)
	if !sent || !errors.Is(err, context.DeadlineExceeded) || code != -1 {
		t.Fatalf("cut: sent %v, %v, exit %d", sent, err, code)
	}
	select {
	case <-se.ended:
	case <-time.After(time.Minute):
		t.Fatal("the session outlived a cut command")
	}
	if _, _, sent := se.do(ctx, []string{"/bin/true"}, nil, nil, nil); sent {
		t.Fatal("an ended session took a command")
	}
}

type notify struct {
	w io.Writer
	c chan struct{}
}

func (n *notify) Write(p []byte) (int, error) {
	if n.c != nil {
		close(n.c)
		n.c = nil
	}
	return n.w.Write(p)
}

// fakePod is a session's exec whose pod answers as script says: its frames
// are written as given, whatever the host sends.
func fakePod(frames func(w io.Writer, r *bufio.Reader)) func(context.Context, io.Reader, io.Writer) error {
	return func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		frames(stdout, bufio.NewReader(stdin))
		<-ctx.Done()
		return ctx.Err()
	}
}

// TestSessionDistrust: the pod's server is believed only in protocol —
// no hello, a frame before any command, a status that is not a number:
// the session is refused or ended, and a command never gets another's
// bytes or a made-up status.
func TestSessionDistrust(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sum := strings.Repeat("5a", 32)
	hello := func(w io.Writer) { podrun.WriteFrame(w, podrun.FrameHello, podrun.Hello(sum)) }

	if _, err := newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, _ *bufio.Reader) {
		io.WriteString(w, "not a frame at all")
	})); err == nil {
		t.Fatal("a session without a hello")
	}
	if _, err := newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, _ *bufio.Reader) {
		podrun.WriteFrame(w, podrun.FrameHello, []byte("99"))
	})); err == nil {
		t.Fatal("a session of another protocol's version")
	}
	if _, err := newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, _ *bufio.Reader) {
		podrun.WriteFrame(w, podrun.FrameHello, []byte(podrun.SessionVersion))
	})); err == nil {
		t.Fatal("a session whose hello names no binary")
	}
	// a hello that names another binary: the session is not ours
	se, err := newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, _ *bufio.Reader) { hello(w) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := se.ours(sum); err != nil {
		t.Errorf("the hello's own sum: %v", err)
	}
	if err := se.ours(strings.Repeat("5b", 32)); !errors.Is(err, errNotOurs) {
		t.Errorf("another binary's sum: %v, want errNotOurs", err)
	}
	se.close()

	// a frame before any command ends the session
	se, err = newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, _ *bufio.Reader) {
		hello(w)
		podrun.WriteFrame(w, podrun.FrameStdout, []byte("planted"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-se.ended:
	case <-time.After(time.Minute):
		t.Fatal("a stray frame did not end the session")
	}
	var o bytes.Buffer
	if _, _, sent := se.do(ctx, []string{"/bin/true"}, nil, &o, nil); sent || o.Len() > 0 {
		t.Fatalf("after a stray frame: sent %v, %q", sent, o.String())
	}

	// a status that is not a number ends it, and the command has an error
	se, err = newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, r *bufio.Reader) {
		hello(w)
		podrun.ReadFrame(r)
		podrun.WriteFrame(w, podrun.FrameAck, nil)
		podrun.WriteFrame(w, podrun.FrameExit, []byte("0; rm"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	if code, err, sent := se.do(ctx, []string{"/bin/true"}, nil, nil, nil); !sent || err == nil || code != -1 {
		t.Fatalf("a bad status: sent %v, %v, exit %d", sent, err, code)
	}

	// a session that ends after the request reached it, before any ack:
	// the command counts as sent (it is never run twice), its stdin unread
	se, err = newSession(ctx, "pod", time.Minute, func(_ context.Context, stdin io.Reader, stdout io.Writer) error {
		hello(stdout)
		podrun.ReadFrame(bufio.NewReader(stdin))
		return errors.New("the exec ended") // before any ack
	})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader("stdin")
	if code, err, sent := se.do(ctx, []string{"/bin/cat"}, in, nil, nil); !sent || !errors.Is(err, errSessionEnded) || code != -1 || in.Len() != 5 {
		t.Fatalf("ended before the ack: sent %v, %v, exit %d, %d bytes of stdin left", sent, err, code, in.Len())
	}

	// a status that came just before the exec's end is the command's
	for i := 0; i < 200; i++ {
		se, err = newSession(ctx, "pod", time.Minute, func(_ context.Context, stdin io.Reader, stdout io.Writer) error {
			hello(stdout)
			podrun.ReadFrame(bufio.NewReader(stdin))
			podrun.WriteFrame(stdout, podrun.FrameAck, nil)
			podrun.WriteFrame(stdout, podrun.FrameStdout, []byte("done"))
			podrun.WriteFrame(stdout, podrun.FrameExit, []byte("5"))
			return nil // and the exec ends at once
		})
		if err != nil {
			t.Fatal(err)
		}
		var o bytes.Buffer
		if code, err, sent := se.do(ctx, []string{"/bin/true"}, nil, &o, nil); !sent || err != nil || code != 5 || o.String() != "done" {
			t.Fatalf("try %d: a status just before the end: sent %v, %v, exit %d, %q", i, sent, err, code, o.String())
		}
	}

	// the kill: its frame and status
	got := make(chan byte, 1)
	se, err = newSession(ctx, "pod", time.Minute, fakePod(func(w io.Writer, r *bufio.Reader) {
		hello(w)
		kind, _, _ := podrun.ReadFrame(r)
		got <- kind
		podrun.WriteFrame(w, podrun.FrameExit, []byte("0"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	if code, err, sent := se.kill(ctx); !sent || err != nil || code != 0 || <-got != podrun.FrameKill {
		t.Fatalf("kill: sent %v, %v, exit %d", sent, err, code)
	}
	se.close()
}

// TestSessionOpenUnlocked: a session being opened holds up no other call
// to its pod (they take execs: Store.session gives them none), and a pod
// deleted while its session opened keeps nothing of it.
func TestSessionOpenUnlocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	opened := make(chan *session, 1)
	s := &Store{sessions: map[string]*sessionSlot{"pod": {}}}
	s.opener = func(ctx context.Context, pod string) (*session, error) {
		<-release
		se, err := newSession(ctx, pod, time.Minute, serveHere)
		opened <- se
		return se, err
	}
	first := make(chan *session, 1)
	go func() { first <- s.session(ctx, "pod") }()
	// while it opens, others get none, at once (no wait on the open)
	deadline := time.Now().Add(time.Minute)
	for {
		s.sessions["pod"].mu.Lock()
		opening := s.sessions["pod"].opening
		s.sessions["pod"].mu.Unlock()
		if opening {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the open never began")
		}
		time.Sleep(time.Millisecond)
	}
	other := make(chan *session, 1)
	go func() { other <- s.session(ctx, "pod") }()
	select {
	case se := <-other:
		if se != nil {
			t.Fatal("a second caller got a session while the first was opening")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a second caller waited for the open")
	}
	// deleted while it opens: the open's session is closed, none kept
	gone := make(chan struct{})
	go func() { s.endSession("pod"); close(gone) }()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the pod's deletion waited for the open")
	}
	close(release)
	if se := <-first; se != nil {
		t.Fatal("a session opened for a deleted pod was handed out")
	}
	se := <-opened
	deadline = time.Now().Add(time.Minute)
	for !se.isEnded() {
		if time.Now().After(deadline) {
			t.Fatal("the session opened for a deleted pod was left open")
		}
		time.Sleep(time.Millisecond)
	}
	if s.sessions["pod"].se != nil || s.session(ctx, "pod") != nil {
		t.Fatal("a deleted pod has a session")
	}
}

// TestNotOursRunsNothing: once a pod's session names another binary than
// the one sent, the pod runs nothing more — no session, and no exec of
// forkbomb's runner there either.
func TestNotOursRunsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &Store{sessions: map[string]*sessionSlot{"pod": {}}}
	s.opener = func(ctx context.Context, pod string) (*session, error) {
		return nil, fmt.Errorf("session in %s: %w", pod, errNotOurs)
	}
	for i := 0; i < 2; i++ {
		if _, err := s.run(ctx, "pod", []string{"/bin/true"}, nil, nil, nil); !errors.Is(err, errNotOurs) {
			t.Fatalf("run %d: %v, want errNotOurs", i, err)
		}
	}
	if sl := s.sessions["pod"]; !sl.gone || sl.opens != 1 {
		t.Fatalf("the slot: gone %v, opens %d; want gone after one open", sl.gone, sl.opens)
	}
}

// TestResolveProbe: a node's probe is answered once — by its pod's probe
// as soon as it is known, or else by that pod's start's end — and wakes
// the node's other pods; a failed one is forgotten, so that the node's
// next pod asks again.
func TestResolveProbe(t *testing.T) {
	t.Parallel()
	s := &Store{probes: map[string]*nodeProbe{}}
	np := &nodeProbe{done: make(chan struct{})}
	s.probes["n1"] = np
	s.resolveProbe("n1", np, sandbox.ModeLandlock, true, nil)
	s.resolveProbe("n1", np, "", false, errors.New("the tree failed later")) // the start's end: no second answer
	<-np.done
	if np.mode != sandbox.ModeLandlock || !np.scoped || np.err != nil || s.probes["n1"] != np {
		t.Fatalf("after the probe's answer: %q %v %v, kept %v", np.mode, np.scoped, np.err, s.probes["n1"] == np)
	}
	bad := &nodeProbe{done: make(chan struct{})}
	s.probes["n2"] = bad
	s.resolveProbe("n2", bad, "", false, ErrNoWalls)
	<-bad.done
	if !errors.Is(bad.err, ErrNoWalls) || s.probes["n2"] != nil {
		t.Fatalf("a failed probe: %v, forgotten: %v", bad.err, s.probes["n2"] == nil)
	}
}

// TestPipelined: a session's first command sent ahead of the server's
// hello, its stdin behind it, is the server's first request — its output
// and status are its own — and the session's later commands follow it.
func TestPipelined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b bytes.Buffer
	req, _ := json.Marshal(podrun.Request{Argv: []string{"/bin/sh", "-c", "tr a-z A-Z; echo err >&2; exit 3"}, Stdin: true})
	podrun.WriteFrame(&b, podrun.FrameRun, req)
	podrun.WriteFrame(&b, podrun.FrameStdin, []byte(strings.Repeat("abc", 10000)))
	podrun.WriteFrame(&b, podrun.FrameStdin, []byte(strings.Repeat("abc", 10000)))
	podrun.WriteFrame(&b, podrun.FrameEOF, nil)
	pre := newPipelined(&b)
	se, err := newSessionWith(ctx, "pod", time.Minute, pre.cmd, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		return serveHere(ctx, io.MultiReader(pre.frames, stdin), stdout)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer se.close()
	code, err := pre.await(ctx, se)
	if err != nil || code != 3 || pre.out.String() != strings.Repeat("ABC", 20000) || pre.errb.String() != "err\n" {
		t.Fatalf("the pipelined command: exit %d, %v, %d bytes out, %q", code, err, len(pre.out.String()), pre.errb.String())
	}
	var o bytes.Buffer
	if code, err, sent := se.do(ctx, []string{"/bin/echo", "next"}, nil, &o, nil); !sent || err != nil || code != 0 || o.String() != "next\n" {
		t.Fatalf("the next command: sent %v, %v, exit %d, %q", sent, err, code, o.String())
	}
}
