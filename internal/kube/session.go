package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// A session is one long-lived exec in a fork's pod — forkbomb's binary
// there as podrun's session server — that carries the fork's commands
// after its start: each of its commands, its diff, the editor's reads and
// writes costs a few frames on the open stream instead of an exec of its
// own (the API server's, the kubelet's and the runtime's work, about half
// a CPU-second on the test cluster). The protocol is podrun's (serve.go).
//
// A pod gets sessions only where a command in forkbomb's sandbox there
// can signal nothing outside it (forkState.scoped): the server, a process
// of the pod's user outside the sandbox like each command's runner, is out
// of the fork's reach. It runs one command at a time; a command asked for
// while another runs, or when the session cannot be had, takes an exec of
// its own as before (Store.run). A command cut off (its context, the output
// cap) ends the session, as it would have cut its exec; the next command
// opens another.
type session struct {
	pod    string
	mu     sync.Mutex // one command at a time
	wmu    sync.Mutex // the frames written to the pod
	in     *io.PipeWriter
	out    *io.PipeReader
	cancel context.CancelFunc
	ended  chan struct{} // the exec ended
	read   chan struct{} // readFrames returned: every frame that came is handled
	closed atomic.Bool   // close was called: the exec is ending
	rmu    sync.Mutex
	cur    *sessionCmd // the command whose frames come; nil: none
	// sum is the SHA-256 of the server's binary, as its hello names it
	sum string
}

type sessionCmd struct {
	stdout, stderr io.Writer
	acked          chan struct{} // closed at the server's ack: the command was taken
	exit           chan int      // its status, once
}

// sessionSlot is a pod's sessions, one at a time.
type sessionSlot struct {
	mu      sync.Mutex
	se      *session
	opens   int
	opening bool // a session is being opened, outside mu: others take execs meanwhile
	gone    bool // the pod was deleted: no session any more
	// notOurs: a session's server named another binary than the one sent
	// (errNotOurs): the pod runs nothing more, by session or by exec
	notOurs error
}

// maxSessionOpens bounds the sessions a pod is given: a pod whose sessions
// keep ending is left to execs.
const maxSessionOpens = 4

// sessionHello bounds a session's start, to its server's hello.
const sessionHello = 30 * time.Second

var (
	errSessionEnded = errors.New("the session with the pod ended")
	errTarEnded     = errors.New("tar in the pod ended")
)

// openSession starts the session server in pod and waits for its hello
// (bounded by ctx too; the session itself outlives ctx), which must name
// the binary the store sent (ours).
func (s *Store) openSession(ctx context.Context, pod string) (*session, error) {
	_, sum, err := s.podBinFile()
	if err != nil {
		return nil, err
	}
	se, err := newSession(ctx, pod, sessionHello, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		_, err := s.stream(ctx, pod, podrun.ServeArgv(podBin), stdin, stdout, &limitedBuffer{max: 4 << 10})
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := se.ours(sum); err != nil {
		se.close()
		return nil, err
	}
	return se, nil
}

// errNotOurs: a session server's hello names a binary other than the one
// sent.
var errNotOurs = errors.New("forkbomb's binary in the pod is not the one sent")

// ours checks that the session's server runs the binary whose SHA-256 is
// sum.
func (se *session) ours(sum string) error {
	if se.sum != sum {
		return fmt.Errorf("session in %s: %w: its SHA-256 is %s, not %s", se.pod, errNotOurs, se.sum, sum)
	}
	return nil
}

// newSession runs the session server by exec (until its ctx ends) and
// waits for its hello, at most hello long.
func newSession(wait context.Context, pod string, hello time.Duration, exec func(ctx context.Context, stdin io.Reader, stdout io.Writer) error) (*session, error) {
	return newSessionWith(wait, pod, hello, nil, exec)
}

// newSessionWith is newSession whose first command, pre, was sent with
// the exec's stdin, ahead of the server's hello (pipelined): the frames
// after the hello are pre's.
func newSessionWith(wait context.Context, pod string, hello time.Duration, pre *sessionCmd, exec func(ctx context.Context, stdin io.Reader, stdout io.Writer) error) (*session, error) {
	ctx, cancel := context.WithCancel(context.Background()) // the session's life: ended by close
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	se := &session{pod: pod, in: inW, out: outR, cancel: cancel, ended: make(chan struct{}), read: make(chan struct{}), cur: pre}
	go func() {
		defer close(se.ended)
		err := exec(ctx, inR, outW)
		if err == nil {
			err = errSessionEnded
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	br := bufio.NewReaderSize(outR, 64<<10)
	helloc := make(chan error, 1)
	go func() {
		kind, p, err := podrun.ReadFrame(br)
		if err == nil && kind != podrun.FrameHello {
			err = fmt.Errorf("no hello from the pod's session server (a frame %q %.80q)", kind, p)
		}
		if err == nil {
			se.sum, err = podrun.ParseHello(p) // read by the caller after helloc
		}
		helloc <- err
	}()
	t := time.NewTimer(hello)
	defer t.Stop()
	select {
	case err := <-helloc:
		if err != nil {
			se.close()
			return nil, fmt.Errorf("session in %s: %w", pod, err)
		}
	case <-t.C:
		se.close()
		return nil, fmt.Errorf("session in %s: no hello in %s", pod, hello)
	case <-wait.Done():
		se.close()
		return nil, wait.Err()
	}
	go se.readFrames(br)
	return se, nil
}

// read hands the pod's frames to the command they belong to. A frame
// with no command, of an unknown kind or unreadable ends the session: the
// server's word is not trusted further.
func (se *session) readFrames(br *bufio.Reader) {
	defer close(se.read)
	for {
		kind, p, err := podrun.ReadFrame(br)
		se.rmu.Lock()
		c := se.cur
		if kind == podrun.FrameExit {
			se.cur = nil
		}
		se.rmu.Unlock()
		if err != nil || c == nil {
			se.close()
			return
		}
		switch kind {
		case podrun.FrameAck:
			select {
			case <-c.acked: // a second ack
				se.close()
				return
			default:
				close(c.acked)
			}
		case podrun.FrameStdout:
			c.stdout.Write(p)
		case podrun.FrameStderr:
			c.stderr.Write(p)
		case podrun.FrameExit:
			code, err := strconv.Atoi(string(p))
			if err != nil {
				se.close()
				return
			}
			c.exit <- code
		default:
			se.close()
			return
		}
	}
}

// close ends the session's exec; the server, seeing its stdin end, kills
// its command and exits.
func (se *session) close() {
	se.closed.Store(true)
	se.cancel()
	se.in.CloseWithError(errSessionEnded)
	se.out.CloseWithError(errSessionEnded)
}

func (se *session) isEnded() bool {
	if se.closed.Load() {
		return true
	}
	select {
	case <-se.ended:
		return true
	default:
		return false
	}
}

// write writes one frame unless stop is closed (nil: always).
func (se *session) write(stop <-chan struct{}, kind byte, p []byte) bool {
	se.wmu.Lock()
	defer se.wmu.Unlock()
	if stop != nil {
		select {
		case <-stop:
			return false
		default:
		}
	}
	return podrun.WriteFrame(se.in, kind, p) == nil
}

// do runs argv in the pod through the session as s.stream would through
// an exec of its own. sent is false when the pod never took the command
// (the session busy with another, or ended before the server's ack): the
// caller then execs it.
func (se *session) do(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (code int, err error, sent bool) {
	if !se.mu.TryLock() {
		return -1, nil, false
	}
	defer se.mu.Unlock()
	if se.isEnded() || ctx.Err() != nil {
		return -1, nil, false
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	g := newGate() // nothing of this command's is written after do returns
	defer func() {
		if !g.close() { // a write still stuck in the caller's writer holds the frames up
			se.close()
		}
	}()
	c := &sessionCmd{stdout: g.wrap(stdout), stderr: g.wrap(stderr), acked: make(chan struct{}), exit: make(chan int, 1)}
	se.rmu.Lock()
	se.cur = c
	se.rmu.Unlock()
	req, err := json.Marshal(podrun.Request{Argv: argv, Stdin: stdin != nil})
	if err != nil {
		return -1, err, true
	}
	if len(req) > podrun.MaxFrame {
		return -1, fmt.Errorf("exec in %s: a command of %d bytes", se.pod, len(req)), true
	}
	if !se.write(nil, podrun.FrameRun, req) {
		// the pipe into the exec is closed: the pod has no whole request
		se.close()
		return -1, nil, false
	}
	// From here the command counts as sent, run or not: a command is
	// never run twice. (The server's ack, before it starts the command,
	// only holds its stdin back until it was taken.)
	stop := make(chan struct{})
	defer func() {
		se.wmu.Lock() // no frame of this command's stdin after it
		close(stop)
		se.wmu.Unlock()
	}()
	if stdin != nil {
		go func() {
			select { // not a byte read before the command was taken
			case <-c.acked:
			case <-stop:
				return
			}
			select { // taken, but over already
			case <-stop:
				return
			default:
			}
			buf := make([]byte, 32<<10)
			for {
				n, err := stdin.Read(buf)
				if n > 0 && !se.write(stop, podrun.FrameStdin, buf[:n]) {
					return
				}
				if err != nil {
					se.write(stop, podrun.FrameEOF, nil)
					return
				}
			}
		}()
	}
	code, err = se.await(ctx, c)
	return code, err, true
}

// await waits for c's status. A cut ends the session; a session that ends
// first is waited on, bounded, until every frame that came before its end
// is handled (a status that came just before it).
func (se *session) await(ctx context.Context, c *sessionCmd) (int, error) {
	select {
	case code := <-c.exit:
		return code, nil
	case <-ctx.Done():
		se.close()
		return -1, fmt.Errorf("exec in %s: %w", se.pod, ctx.Err())
	case <-se.ended:
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case <-se.read:
	case <-t.C:
	}
	select {
	case code := <-c.exit:
		return code, nil
	default:
		return -1, fmt.Errorf("exec in %s: %w", se.pod, errSessionEnded)
	}
}

// kill has the server SIGKILL every other process of the pod's user but
// pid 1 (killAll).
func (se *session) kill(ctx context.Context) (int, error, bool) {
	if !se.mu.TryLock() {
		return -1, nil, false
	}
	defer se.mu.Unlock()
	if se.isEnded() {
		return -1, nil, false
	}
	c := &sessionCmd{stdout: io.Discard, stderr: io.Discard, acked: make(chan struct{}), exit: make(chan int, 1)}
	se.rmu.Lock()
	se.cur = c
	se.rmu.Unlock()
	if !se.write(nil, podrun.FrameKill, nil) {
		se.close()
		return -1, nil, false
	}
	code, err := se.await(ctx, c)
	return code, err, true
}

// slot is pod's session slot: made if create is set, else nil when none.
func (s *Store) slot(pod string, create bool) *sessionSlot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.sessions[pod]
	if sl == nil && create {
		if s.sessions == nil {
			s.sessions = map[string]*sessionSlot{}
		}
		sl = &sessionSlot{}
		s.sessions[pod] = sl
	}
	return sl
}

// endSession ends pod's session, if any, and gives it no more.
func (s *Store) endSession(pod string) {
	sl := s.slot(pod, true) // a start still under way adopts nothing
	sl.mu.Lock()
	if sl.se != nil {
		sl.se.close()
	}
	sl.gone = true
	sl.mu.Unlock()
}

// session returns pod's open session, opening one if it may; nil: none.
// The open (up to the server's hello) runs outside the slot's lock, so
// calls to the pod meanwhile take execs rather than wait for it, and a
// deletion meanwhile closes what it opened.
func (s *Store) session(ctx context.Context, pod string) *session {
	sl := s.slot(pod, false)
	if sl == nil {
		return nil
	}
	sl.mu.Lock()
	if sl.gone || sl.opening {
		sl.mu.Unlock()
		return nil
	}
	if sl.se != nil && !sl.se.isEnded() {
		se := sl.se
		sl.mu.Unlock()
		return se
	}
	if sl.opens >= maxSessionOpens {
		sl.mu.Unlock()
		return nil
	}
	sl.opens++
	sl.opening = true
	sl.mu.Unlock()
	open := s.openSession
	if s.opener != nil {
		open = s.opener
	}
	se, err := open(ctx, pod)
	sl.mu.Lock()
	sl.opening = false
	if errors.Is(err, errNotOurs) {
		sl.gone, sl.notOurs = true, err
	}
	if err == nil && sl.gone { // deleted while it opened
		sl.mu.Unlock()
		se.close()
		return nil
	}
	if err == nil && sl.se != nil && !sl.se.isEnded() { // one adopted meanwhile
		kept := sl.se
		sl.mu.Unlock()
		se.close()
		return kept
	}
	if err == nil {
		sl.se = se
	}
	sl.mu.Unlock()
	if err != nil {
		return nil
	}
	return se
}

// run runs argv in pod: through its session where it has one free, else
// in an exec of its own (stream).
func (s *Store) run(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	for try := 0; try < 2; try++ {
		se := s.session(ctx, pod)
		if se == nil {
			break
		}
		if code, err, sent := se.do(ctx, argv, stdin, stdout, stderr); sent {
			return code, err
		}
		if !se.isEnded() {
			break // busy with another command
		}
		// it had ended unseen: the next try opens another
	}
	if err := s.notOurs(pod); err != nil {
		return -1, err
	}
	return s.stream(ctx, pod, argv, stdin, stdout, stderr)
}

// notOurs is errNotOurs, wrapped, once a session of pod named another
// binary than the one sent: forkbomb's runner there is not forkbomb's.
func (s *Store) notOurs(pod string) error {
	sl := s.slot(pod, false)
	if sl == nil {
		return nil
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.notOurs
}

// startInSession is sendTree's work in one exec that becomes the pod's
// session: its shell checks that the pod is fresh, receives forkbomb's
// binary (startSession), and execs it as the session server. In the
// node's first pod the probe rides the start exec's stdin behind the
// binary, sent without waiting for the hello (pipelined), and its answer
// frees the node's other pods as soon as it comes. The tree follows
// through the session as a tar stream unpacked by the pod's tar — only
// once the hello has come, so after the fresh check passed and the
// server named the binary sent: its bytes never wait in the stdin of a
// pod that may not be fresh. Where the probe finds that a command cannot
// be kept from signalling outside its sandbox, the session ends there
// and the fork's commands take execs of their own.
func (s *Store) startInSession(ctx context.Context, fs *forkState, tree, bin, sum string, first bool, np *nodeProbe, node string) (sandbox.Mode, bool, error) {
	var pre *pipelined
	if first {
		var err error
		if pre, err = pipelineProbe(); err != nil {
			return "", false, err
		}
	}
	se, err := s.startSession(ctx, fs, bin, sum, pre)
	if err != nil {
		return "", false, err
	}
	keep := false
	defer func() {
		if !keep {
			se.close()
		}
	}()
	var mode sandbox.Mode
	var scoped bool
	if pre != nil {
		code, err := pre.await(ctx, se)
		mode, scoped, err = probeOutcome(pre.out, pre.errb, code, err, true)
		s.resolveProbe(node, np, mode, scoped, err)
		if err != nil {
			return "", false, err
		}
	}
	if fs.image == "" {
		pr, pw := io.Pipe()
		sent := make(chan error, 1)
		go func() {
			err := writeTar(ctx, pw, tree, "")
			sent <- err
			pw.CloseWithError(err)
		}()
		errb := &limitedBuffer{max: 4 << 10}
		code, err, taken := se.do(ctx, []string{"tar", "-x", "-f", "-", "-C", "/work"}, pr, nil, errb)
		// the writer stops, if it has not: tar may end at the archive's
		// end before it reads the last zero blocks
		pr.CloseWithError(errTarEnded)
		if terr := <-sent; err == nil && terr != nil && !errors.Is(terr, errTarEnded) {
			err = terr // a tree cut short here, whatever tar made of it
		}
		switch {
		case !taken:
			return "", false, fmt.Errorf("send the tree: %w", errSessionEnded)
		case err != nil:
			return "", false, fmt.Errorf("send the tree: %w", err)
		case code != 0:
			return "", false, fmt.Errorf("send the tree: tar in the pod: exit %d: %s", code, strings.TrimSpace(errb.String()))
		}
	}
	if !first {
		select {
		case <-np.done:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
		if mode, scoped, err = np.mode, np.scoped, np.err; err != nil {
			// that pod's probe failed: this one asks for itself
			out, errb := &limitedBuffer{max: 1 << 20}, &limitedBuffer{max: 4 << 10}
			code, err, sent := se.do(ctx, probeArgv, nil, out, errb)
			if mode, scoped, err = probeOutcome(out, errb, code, err, sent); err != nil {
				return "", false, err
			}
		}
	}
	keep = scoped
	if keep {
		s.adoptSession(fs.obj, se)
	}
	return mode, scoped, nil
}

// probeOutcome reads the probe's run (probeResult).
func probeOutcome(out, errb *limitedBuffer, code int, err error, sent bool) (sandbox.Mode, bool, error) {
	switch {
	case !sent:
		err = errSessionEnded
	case err == nil && out.over:
		err = errors.New("its report is over 1 MiB")
	case err == nil && code != 0:
		err = errors.New(strings.TrimSpace(errb.String()))
	}
	return probeResult(out.Bytes(), code, err)
}

// pipelined is a session's first command, whose frames ride the start
// exec's stdin behind forkbomb's binary (frames), and its output — gated
// as do's is: nothing is written to it after await returns.
type pipelined struct {
	frames io.Reader
	cmd    *sessionCmd
	gate   *gate
	out    *limitedBuffer
	errb   *limitedBuffer
}

func newPipelined(frames io.Reader) *pipelined {
	p := &pipelined{frames: frames, gate: newGate(), out: &limitedBuffer{max: 1 << 20}, errb: &limitedBuffer{max: 4 << 10}}
	p.cmd = &sessionCmd{stdout: p.gate.wrap(p.out), stderr: p.gate.wrap(p.errb), acked: make(chan struct{}), exit: make(chan int, 1)}
	return p
}

// pipelineProbe is the probe as a session's first command: it holds
// nothing of the run's.
func pipelineProbe() (*pipelined, error) {
	var b bytes.Buffer
	req, err := json.Marshal(podrun.Request{Argv: probeArgv})
	if err != nil {
		return nil, err
	}
	if err := podrun.WriteFrame(&b, podrun.FrameRun, req); err != nil {
		return nil, err
	}
	return newPipelined(&b), nil
}

// await waits for the pipelined command's status in session se, holding
// the session as do would.
func (p *pipelined) await(ctx context.Context, se *session) (int, error) {
	se.mu.Lock()
	defer se.mu.Unlock()
	code, err := se.await(ctx, p.cmd)
	if !p.gate.close() { // a write still stuck holds the frames up
		se.close()
	}
	return code, err
}

// startSession runs a pod's start exec, which becomes its session: the
// fresh check (freshCheck), then forkbomb's binary — read from stdin to
// its exact size (dd's full blocks, so not a byte of what follows is
// taken) —, or in a tree image's pod the tree in place, or in a pod that
// has the binary from its start (binmap.go) nothing more; then the binary
// is exec'd as the session server, whose hello ends the start. The hello
// names the binary's SHA-256 (podrun.Hello), which must be sum: the
// bytes sent, or those pushed in the image.
func (s *Store) startSession(ctx context.Context, fs *forkState, bin, sum string, pre *pipelined) (*session, error) {
	serve := shellLine(podrun.ServeArgv(podBin))
	var script string
	var args []string
	var prefix io.Reader
	switch {
	case fs.image != "":
		script = freshCheck(true, false) + `[ -d ` + podRoot + `/.git ] || exit ` + strconv.Itoa(stTarFailed) + `
exec ` + serve
	case s.binInPod(fs):
		// the pod has it from its start (binmap.go): the hello's sum says
		// it is the one the parts were made of
		script = freshCheck(false, true) + `exec ` + serve
	default:
		f, err := os.Open(bin)
		if err != nil {
			return nil, fmt.Errorf("forkbomb's binary for the pods: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("forkbomb's binary for the pods: %w", err)
		}
		n := st.Size()
		script = freshCheck(false, false) + `mkdir -m 700 /work/` + path.Dir(podBinName) + ` || exit ` + strconv.Itoa(stTarFailed) + `
{ dd bs=65536 count="$1" iflag=fullblock status=none && { [ "$2" = 0 ] || dd bs="$2" count=1 iflag=fullblock status=none; }; } >` + podBin + ` || exit ` + strconv.Itoa(stTarFailed) + `
chmod 700 ` + podBin + ` || exit ` + strconv.Itoa(stTarFailed) + `
exec ` + serve
		args = []string{strconv.FormatInt(n/65536, 10), strconv.FormatInt(n%65536, 10)}
		// exactly n bytes, whatever the file holds by now (a file cut
		// short would leave dd waiting; the hello's sum tells)
		prefix = io.LimitReader(io.MultiReader(f, zeros{}), n)
	}
	var first *sessionCmd
	if pre != nil {
		first = pre.cmd
		if prefix == nil {
			prefix = pre.frames
		} else {
			prefix = io.MultiReader(prefix, pre.frames)
		}
	}
	code := -1
	errb := &limitedBuffer{max: 4 << 10}
	done := make(chan struct{})
	se, err := newSessionWith(ctx, fs.obj, treeTimeout, first, func(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
		defer close(done)
		if prefix != nil {
			stdin = io.MultiReader(prefix, stdin)
		}
		c, err := s.stream(ctx, fs.obj, append([]string{"/bin/sh", "-c", script, "sh"}, args...), stdin, stdout, errb)
		code = c
		return err
	})
	if err == nil {
		if err = se.ours(sum); err == nil {
			return se, nil
		}
		// Not the binary sent (or pushed): what ran is not forkbomb's,
		// so the pod is used no further — the fork fails (a warm pod's
		// fork starts a pod of its own) and its pod goes with it.
		se.close()
		if fs.image != "" {
			return nil, fmt.Errorf("forkbomb's binary in the pod's image %s is not the one pushed: %w", fs.image, err)
		}
		return nil, err
	}
	<-done // ended by newSession
	switch code {
	case stNotEmpty:
		return nil, errors.New("the pod's /work or /tmp was not empty before its tree: something other than forkbomb wrote to it")
	case stNotAlone:
		return nil, errors.New("a process other than the pod's own ran in it before its tree: something other than forkbomb started it")
	case stTarFailed:
		if fs.image != "" {
			return nil, fmt.Errorf("the pod's image %s holds no tree at %s", fs.image, podRoot)
		}
		return nil, fmt.Errorf("send forkbomb's binary: %s", strings.TrimSpace(errb.String()))
	case -1:
		return nil, fmt.Errorf("start the pod: %w", err)
	}
	return nil, fmt.Errorf("start the pod: exit %d: %s (%v)", code, strings.TrimSpace(errb.String()), err)
}

// zeros reads as zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// adoptSession makes se pod's session.
func (s *Store) adoptSession(pod string, se *session) {
	sl := s.slot(pod, true)
	sl.mu.Lock()
	old := sl.se
	if sl.gone { // deleted while it started
		old = se
	} else {
		sl.se = se
		sl.opens++
	}
	sl.mu.Unlock()
	if old != nil {
		old.close()
	}
}

// closeSessions ends every session of the store (Close).
func (s *Store) closeSessions() {
	s.mu.Lock()
	var pods []string
	for pod := range s.sessions {
		pods = append(pods, pod)
	}
	s.mu.Unlock()
	for _, pod := range pods {
		s.endSession(pod)
	}
}
