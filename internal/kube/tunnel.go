package kube

// A command whose policy asks for the proxy network (sandbox.NetworkProxy:
// its 127.0.0.1:PORT reaches forkbomb's model proxy, nothing else) gets it
// in a pod through a tunnel over the Kubernetes API, so the pod needs no
// route to this machine and its NetworkPolicy denies all egress: forkbomb's
// own binary, sent into the pod once, runs there as a forwarder on
// 127.0.0.1:PORT for the command's life, and its connections are carried
// over the forwarder's exec stream to the endpoint's UNIX socket here
// (internal/tunnel). The key stays in the model proxy, on this side.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tunnel"
)

// podBin is where forkbomb's binary lives in a pod — the runner of every
// command (internal/podrun), its sandbox's init, and the tunnel's
// forwarder: in /work, an emptyDir of the pod's own (the root filesystem
// is read-only), beside the tree but outside it, so no command of the
// fork's — whose sandbox lets it write its tree and its own temp dir only
// — can replace it.
const (
	podBinName = ".forkbomb/forkbomb" // in the tar stream, under /work
	podBin     = "/work/" + podBinName
	// podScratchName is forkbomb's scratch folder in the pod, the pod
	// user's, outside the tree and hidden from every command (podHide)
	podScratchName = ".scratch"
	podScratch     = "/work/" + podScratchName
)

// Bounds of a tunnel's start and end.
const (
	helloTimeout  = 10 * time.Second
	tunnelStarts  = 3
	tunnelStopMax = 15 * time.Second
)

// ErrTunnelLost: a command's way to the model proxy broke while it ran;
// the command was stopped and its fork fails (never left waiting).
var ErrTunnelLost = tunnel.ErrLost

// podTunnel is one command's tunnel.
type podTunnel struct {
	cancel context.CancelFunc
	done   chan struct{} // Serve and the forwarder's exec have ended
	mu     sync.Mutex
	err    error         // why Serve ended before it was stopped
	lost   chan struct{} // closed when err is set
}

// podBinFile is the binary sent into each pod and its SHA-256, read once.
// One small enough for ConfigMaps (binInPodMax) is read whole and its
// bytes kept (s.binData): those hashed are those storeBin uploads.
func (s *Store) podBinFile() (string, string, error) {
	s.binOnce.Do(func() {
		bin := s.o.PodBin
		if bin == "" {
			var err error
			if bin, err = os.Executable(); err != nil {
				s.binErr = fmt.Errorf("find forkbomb's binary for the pods: %w", err)
				return
			}
		}
		f, err := os.Open(bin)
		if err != nil {
			s.binErr = fmt.Errorf("forkbomb's binary for the pods: %w", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		var keep bytes.Buffer
		// at most one byte past the limit: then it is too large to keep
		w := io.Writer(h)
		if !s.o.streamBin {
			w = io.MultiWriter(h, &limitWriter{w: &keep, n: binInPodMax + 1})
		}
		n, err := io.Copy(w, f)
		if err != nil {
			s.binErr = fmt.Errorf("forkbomb's binary for the pods: %w", err)
			return
		}
		if !s.o.streamBin && n <= binInPodMax {
			s.binData = keep.Bytes()
		}
		s.bin, s.binSum = bin, hex.EncodeToString(h.Sum(nil))
	})
	return s.bin, s.binSum, s.binErr
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(int64(len(p)), l.n); k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// sendFile copies a host file to path in the pod, again when the bytes
// that arrived are not those sent.
func (s *Store) sendFile(ctx context.Context, pod, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("send %s to %s: %w", src, pod, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("send %s to %s: %w", src, pod, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	script := `t="$1.$$"; rm -f "$t"; cat >"$t" || exit 1
[ "$(sha256sum <"$t" | cut -d' ' -f1)" = "$2" ] || { rm -f "$t"; exit 15; }
chmod 700 "$t" && mv -f "$t" "$1"`
	for try := 0; try < writeTries; try++ {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var errb limitedBuffer
		errb.max = 4 << 10
		code, err := s.stream(ctx, pod, []string{"/bin/sh", "-c", script, "sh", dst, sum}, f, nil, &errb)
		switch {
		case err != nil:
			return fmt.Errorf("send %s to %s: %w", src, pod, err)
		case code == 0:
			return nil
		case code != stBadSum:
			return fmt.Errorf("send %s to %s: exit %d: %s", src, pod, code, strings.TrimSpace(errb.String()))
		}
	}
	return fmt.Errorf("send %s to %s: the bytes that arrived were not those sent, %d times", src, pod, writeTries)
}

// openTunnel starts the forwarder in the fork's pod on the policy's port
// and carries its connections to the policy's socket; it returns once the
// forwarder listens.
func (s *Store) openTunnel(ctx context.Context, name string, fs *forkState, px *sandbox.Proxy) (*podTunnel, error) {
	if px == nil || px.Socket == "" || px.Port < 1024 || px.Port > 65535 {
		return nil, fmt.Errorf("exec in %s: %w: a proxy network needs Proxy.Socket and a Proxy.Port of 1024–65535", name, sandbox.ErrInvalidPolicy)
	}
	var last error
	for try := 0; try < tunnelStarts; try++ {
		t, err := s.startTunnel(ctx, fs.obj, px)
		if err == nil {
			return t, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("the model tunnel of %s did not start (%d tries): %w", name, tunnelStarts, last)
}

func (s *Store) startTunnel(ctx context.Context, pod string, px *sandbox.Proxy) (*podTunnel, error) {
	tctx, cancel := context.WithCancel(ctx)
	t := &podTunnel{cancel: cancel, done: make(chan struct{}), lost: make(chan struct{})}
	outR, outW := io.Pipe() // the forwarder's stdout: its frames
	inR, inW := io.Pipe()   // its stdin: ours
	ready := make(chan struct{})
	var errb limitedBuffer
	errb.max = 4 << 10
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		code, err := s.stream(tctx, pod, tunnel.Argv(podBin, px.Port), inR, outW, &errb)
		if err == nil {
			err = fmt.Errorf("the forwarder exited %d %s", code, strings.TrimSpace(errb.String()))
		}
		outW.CloseWithError(err)
	}()
	go func() {
		defer wg.Done()
		err := tunnel.Serve(tctx, outR, inW, tunnel.Options{
			Dial: func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", px.Socket)
			},
			Ready:        func() { close(ready) },
			HelloTimeout: helloTimeout,
		})
		// End the exec's stdin, and with it the forwarder, whatever
		// ended Serve.
		inW.Close()
		outR.Close()
		if err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			close(t.lost)
		}
	}()
	go func() { wg.Wait(); close(t.done) }()
	select {
	case <-ready:
		return t, nil
	case <-t.lost:
		t.stop()
		return nil, t.lostErr()
	case <-ctx.Done():
		t.stop()
		return nil, ctx.Err()
	}
}

// bind returns a context for the command that ends when the tunnel is
// lost.
func (t *podTunnel) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-t.lost:
			cancel()
		case <-cctx.Done():
		}
	}()
	return cctx, cancel
}

func (t *podTunnel) lostErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// stop ends the tunnel and waits (bounded) for its goroutines; it
// returns why the tunnel was lost before, if it was.
func (t *podTunnel) stop() error {
	err := t.lostErr()
	t.cancel()
	select {
	case <-t.done:
	case <-time.After(tunnelStopMax):
	}
	if err != nil && !errors.Is(err, tunnel.ErrLost) {
		err = fmt.Errorf("%w: %v", tunnel.ErrLost, err)
	}
	return err
}
