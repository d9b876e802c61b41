package podrun

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The session: one long-lived exec in a fork's pod that carries all of
// the fork's later commands (the host's side is internal/kube's session),
// so that each costs a few frames on an open stream rather than an exec of
// its own — the API server's, the kubelet's and the runtime's work for
// every command and every diff.
//
// Both directions are frames: one byte of kind, four of length (big
// endian), the payload. The server runs one command at a time, as its own
// child (argv as given: the runner, a shell, git's diff in the sandbox —
// what the host would otherwise have exec'd), with the environment and
// folder the exec gave the server, and answers with its output and exit
// status:
//
//	host → pod  FrameRun (a Request), FrameStdin…, FrameEOF; or FrameKill
//	pod → host  FrameHello once; then FrameAck, FrameStdout/FrameStderr…, FrameExit
//
// The ack comes before the command starts: a host that loses the stream
// before it knows the command never ran (and sends its stdin only after
// it, so none is lost to a command that never started).
// A command's bytes reach the host only inside frames the server makes, so
// nothing the command prints can pass for the server's word. When the
// host's stream ends the server kills its command's process group and
// exits.
const (
	FrameRun    = 'r' // host → pod: a Request, when no command runs
	FrameStdin  = 'i' // host → pod: bytes for the command's stdin
	FrameEOF    = 'e' // host → pod: the command's stdin ends
	FrameKill   = 'k' // host → pod: SIGKILL to every process the server may signal but itself and pid 1, when no command runs
	FrameHello  = 'h' // pod → host: the server is ready; the payload is Hello's
	FrameAck    = 'a' // pod → host: a FrameRun was taken, before its command starts
	FrameStdout = '1' // pod → host: the command's stdout
	FrameStderr = '2' // pod → host: the command's stderr
	FrameExit   = 'x' // pod → host: the command's exit status (decimal; 128+N for signal N), or the kill's (0)
)

// SessionVersion is the protocol's version, the hello's first word.
const SessionVersion = "2"

// Hello is a hello's payload: SessionVersion, a space, and sum — the
// SHA-256 (hex) of the server's own executable, which the host compares
// with the binary it sent (or pushed in a tree image). The server hashes
// itself with Go's SHA-256, which uses the CPU's SHA instructions: a few
// milliseconds, where a `sha256sum` in the pod's start script cost tens
// of them for each pod started at once.
func Hello(sum string) []byte { return []byte(SessionVersion + " " + sum) }

// ParseHello is the sum a hello's payload names; an error when it is of
// another version of the protocol or names no sum.
func ParseHello(p []byte) (string, error) {
	v, sum, _ := strings.Cut(string(p), " ")
	if v != SessionVersion {
		return "", fmt.Errorf("a session server of protocol %.16q, not %s", v, SessionVersion)
	}
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("a hello that names no SHA-256 (%.80q)", sum)
	}
	return sum, nil
}

// selfSum is the SHA-256 of the running executable; "-" when it cannot be
// read (the host then refuses the session: it is not the binary sent).
func selfSum() string {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return "-"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "-"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MaxFrame bounds a frame's payload either way.
const MaxFrame = 1 << 20

// Request is a FrameRun's payload.
type Request struct {
	Argv  []string `json:"argv"`
	Stdin bool     `json:"stdin,omitempty"` // FrameStdin frames follow; else the command's stdin is /dev/null
}

// serveArg is argv[1] of forkbomb's binary started as the session server.
const serveArg = "__forkbomb_pod_serve"

// ServeArgv is the command that starts the session server, bin being
// forkbomb's binary in the pod.
func ServeArgv(bin string) []string { return []string{bin, serveArg} }

// IsServer reports whether this process was started as the session
// server.
func IsServer() bool { return len(os.Args) == 2 && os.Args[1] == serveArg }

// ServeMain runs the session server on stdin and stdout and exits.
func ServeMain() { os.Exit(Serve(os.Stdin, os.Stdout)) }

// WriteFrame writes one frame in one Write.
func WriteFrame(w io.Writer, kind byte, p []byte) error {
	if len(p) > MaxFrame {
		return fmt.Errorf("frame of %d bytes: over %d", len(p), MaxFrame)
	}
	b := make([]byte, 5+len(p))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], uint32(len(p)))
	copy(b[5:], p)
	_, err := w.Write(b)
	return err
}

// ReadFrame reads one frame; a payload over MaxFrame is an error.
func ReadFrame(r *bufio.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes: over %d", n, MaxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}

// frameWriter writes whole frames from goroutines that share one stream.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) write(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return WriteFrame(f.w, kind, p)
}

// stream is an io.Writer of one kind of frame, cut to MaxFrame.
type frameStream struct {
	f    *frameWriter
	kind byte
}

func (s frameStream) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += MaxFrame {
		if err := s.f.write(s.kind, p[off:min(off+MaxFrame, len(p))]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// serveRun is the command running.
type serveRun struct {
	cmd  *exec.Cmd
	in   chan []byte   // its stdin's frames; nil: none, or ended
	done chan struct{} // closed once it ended, before its FrameExit
}

// waitDelay bounds how long a command's output is read after it exited
// (a process it left holding the pipes).
const waitDelay = 2 * time.Second

// Serve is the session server on in and out; it returns when in ends (0)
// or the host breaks the protocol (2).
func Serve(in io.Reader, out io.Writer) int {
	fw := &frameWriter{w: out}
	if fw.write(FrameHello, Hello(selfSum())) != nil {
		return 1
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var cur *serveRun
	defer func() { // the host is gone, or broke the protocol: its command ends too
		if cur != nil {
			cur.kill()
			<-cur.done
		}
	}()
	for {
		kind, p, err := ReadFrame(br)
		if cur != nil {
			select {
			case <-cur.done:
				if cur.in != nil {
					close(cur.in)
				}
				cur = nil
			default:
			}
		}
		if err != nil {
			return 0
		}
		switch kind {
		case FrameRun:
			var rq Request
			if cur != nil || json.Unmarshal(p, &rq) != nil || len(rq.Argv) == 0 {
				fmt.Fprintln(os.Stderr, "forkbomb pod server: a bad request")
				return 2
			}
			if fw.write(FrameAck, nil) != nil {
				return 1
			}
			cur = start(rq, fw)
		case FrameStdin:
			if cur != nil && cur.in != nil {
				select {
				case cur.in <- p:
				case <-cur.done:
				}
			}
		case FrameEOF:
			if cur != nil && cur.in != nil {
				close(cur.in)
				cur.in = nil
			}
		case FrameKill:
			if cur != nil {
				fmt.Fprintln(os.Stderr, "forkbomb pod server: a kill while a command runs")
				return 2
			}
			code := "0"
			// kill(-1) spares pid 1 and the caller: every other process
			// this user may signal in the pod ends
			if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				code = "1"
			}
			if fw.write(FrameExit, []byte(code)) != nil {
				return 1
			}
		default:
			fmt.Fprintf(os.Stderr, "forkbomb pod server: a frame of kind %q\n", kind)
			return 2
		}
	}
}

// start starts rq's command; its FrameExit follows its output.
func start(rq Request, fw *frameWriter) *serveRun {
	r := &serveRun{done: make(chan struct{})}
	cmd := exec.Command(rq.Argv[0], rq.Argv[1:]...)
	cmd.Stdout = frameStream{fw, FrameStdout}
	cmd.Stderr = frameStream{fw, FrameStderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed whole when the host goes
	cmd.WaitDelay = waitDelay
	r.cmd = cmd
	var stdin io.WriteCloser
	if rq.Stdin {
		stdin, _ = cmd.StdinPipe() // closed by Wait once the command exits
		r.in = make(chan []byte)
	}
	err := cmd.Start()
	if stdin != nil {
		go func(in chan []byte) {
			ok := err == nil
			for b := range in {
				if ok {
					_, werr := stdin.Write(b)
					ok = werr == nil
				}
			}
			stdin.Close()
		}(r.in)
	}
	go func() {
		code := 0
		if err != nil {
			frameStream{fw, FrameStderr}.Write([]byte("forkbomb pod server: " + err.Error() + "\n"))
			code = 127
		} else {
			cmd.Wait()
			code = exitCode(cmd.ProcessState)
		}
		close(r.done)
		fw.write(FrameExit, []byte(strconv.Itoa(code)))
	}()
	return r
}

// kill ends the command's process group.
func (r *serveRun) kill() {
	if p := r.cmd.Process; p != nil {
		syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}

func exitCode(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
