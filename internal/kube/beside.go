package kube

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tally"
)

// The store as the canary sees it (canary.Remote): a fork's tree is in its
// pod, so what is planted beside it, looked for beside it and listened for
// beside it is there, each by an exec of forkbomb's own outside the fork's
// sandbox.

// Where names where a store's forks run, as a canary's result is kept for
// it: the image (its CLI, its files) and the runtime class (its walls).
func Where(image, runtimeClass string) string {
	if image == "" {
		image = DefaultImage
	}
	w := "kubernetes, image " + image
	if runtimeClass != "" {
		w += ", runtime class " + runtimeClass
	}
	return w
}

// Where implements canary.Remote.
func (s *Store) Where() string { return Where(s.o.Image, s.o.RuntimeClass) }

// GitReadOnly implements canary.Remote: a fork's .git is read-only to its
// commands only where forkbomb's sandbox in its pod has the namespaces
// backend (a mount); Landlock alone cannot carve it out of the tree.
func (s *Store) GitReadOnly(fork string) bool {
	fs := s.fork(fork)
	return fs != nil && fs.mode == sandbox.ModeNamespaces
}

func (s *Store) fork(name string) *forkState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forks[name]
}

// beside is rel, relative to the fork's tree in its pod, when it lies
// outside the tree (the canary's paths: ../NAME).
func beside(rel string) (string, error) {
	p := path.Join(podRoot, rel)
	if p == podRoot || strings.HasPrefix(p, podRoot+"/") {
		return "", fmt.Errorf("%s is inside the fork's tree, not beside it", rel)
	}
	return p, nil
}

// startedPod is the fork's pod, made and sent its tree now if it was not:
// with the limits a fork's commands have on this store (a warm pod's),
// the first command's being to come.
func (s *Store) startedPod(ctx context.Context, fork string) (string, error) {
	fs := s.fork(fork)
	if fs == nil {
		return "", fmt.Errorf("%s: not a fork of this store", fork)
	}
	if err := s.ready(ctx, fork, fs, sandbox.Policy{Memory: s.o.WarmMemory, CPUs: s.o.WarmCPUs}); err != nil {
		return "", err
	}
	return fs.obj, nil
}

// PlantBeside implements canary.Remote: data written beside the fork's
// tree in its pod as the pod's user — the agent's own uid, so only
// forkbomb's sandbox keeps it out.
func (s *Store) PlantBeside(ctx context.Context, fork, rel string, data []byte) error {
	p, err := beside(rel)
	if err != nil {
		return err
	}
	pod, err := s.startedPod(ctx, fork)
	if err != nil {
		return err
	}
	_, _, err = s.output(ctx, pod, `umask 077; printf '%s' "$2" > "$1"`, []string{p, string(data)}, 1<<10)
	return err
}

// ExistsBeside implements canary.Remote.
func (s *Store) ExistsBeside(ctx context.Context, fork, rel string) (bool, error) {
	p, err := beside(rel)
	if err != nil {
		return false, err
	}
	pod, err := s.startedPod(ctx, fork)
	if err != nil {
		return false, err
	}
	out, _, err := s.output(ctx, pod, `if [ -e "$1" ] || [ -L "$1" ]; then echo yes; else echo no; fi`, []string{p}, 64)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == "yes", nil
}

// ListenBeside implements canary.Remote: a listener in the fork's pod, on
// its 127.0.0.1, outside the fork's sandbox — where a command of the
// fork's with the pod's walls alone would connect. It accepts one
// connection (busybox nc), prints what it read and then ends.
//
// hits, called once the fork's commands have ended, connects to it with a
// marker of its own from the pod, after tally.InFlight for what the kernel
// may still be queueing. A listen queue hands out connections in the order
// they were made, so the listener reads the marker first only when no
// command connected before it: hits is 0 then, and 1 when it read anything
// else first (or nothing: a connection that sent no bytes). A listener that
// fails, or does not end within a minute of the marker, is an error, never
// a 0.
//
// stop ends the listener: cancelling its exec would leave nc running in
// the pod (an exec's end does not end what it started), so stop kills it
// by its pid too, unless it has ended.
func (s *Store) ListenBeside(ctx context.Context, fork string) (string, func() (int, error), func(), error) {
	pod, err := s.startedPod(ctx, fork)
	if err != nil {
		return "", nil, nil, err
	}
	for try := 0; try < 5; try++ {
		port := 20000 + rand.IntN(20000)
		if s.besidePort != 0 {
			port = s.besidePort
		}
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan int, 1)
		out := &limitedBuffer{max: 64 << 10} // written by the exec until it returns, read after done
		pid := &firstLine{got: make(chan struct{})}
		var ended atomic.Bool           // the exec returned whole: nc itself ended
		returned := make(chan struct{}) // the exec returned, whole or not
		go func() {
			defer close(returned)
			// The shell tells nc's pid (its own, kept through exec), for stop.
			code, err := s.stream(lctx, pod, []string{"/bin/sh", "-c", `echo $$ >&2; exec /bin/nc -l -p "$1"`, "sh", strconv.Itoa(port)}, nil, out, pid)
			if err != nil {
				code = -1
			} else {
				ended.Store(true)
			}
			done <- code
		}()
		stop := sync.OnceFunc(func() {
			// The pid first (a cancelled exec drops what it had not yet
			// passed on), unless the exec has returned without it.
			select {
			case <-pid.got:
			case <-returned:
			case <-time.After(5 * time.Second):
			}
			cancel()
			if !ended.Load() {
				s.killListener(ctx, pod, port, pid)
			}
		})
		if s.listening(ctx, pod, port, done) {
			var once sync.Once
			var n int
			var herr error
			hits := func() (int, error) {
				once.Do(func() { n, herr = s.besideHits(ctx, pod, port, done, out) })
				return n, herr
			}
			return "127.0.0.1:" + strconv.Itoa(port), hits, stop, nil
		}
		stop()
	}
	return "", nil, nil, fmt.Errorf("no listener started in pod %s", pod)
}

// besideHits is ListenBeside's count: the marker sent to the listener on
// port, then what it read, once it has ended.
func (s *Store) besideHits(ctx context.Context, pod string, port int, done <-chan int, out *limitedBuffer) (int, error) {
	select {
	case <-time.After(tally.InFlight):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	marker := fmt.Sprintf("forkbomb-marker-%016x", rand.Uint64())
	code := -1
	select {
	case code = <-done: // it ended before the marker: something connected
	default:
		// The marker is the client's stdin before it starts (a here-doc): the
		// listener, whose stdin is empty, shuts its side as it accepts, and a
		// client whose stdin came later through a pipe could see that end
		// first and send nothing. The marker's own exit is not the count:
		// refused when the listener had already taken a connection, which
		// its output then shows.
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		s.stream(mctx, pod, []string{"/bin/sh", "-c", "/bin/nc 127.0.0.1 \"$2\" <<EOF\n$1\nEOF\n", "sh", marker, strconv.Itoa(port)}, nil, nil, nil)
		cancel()
		select {
		case code = <-done:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Minute):
			return 0, fmt.Errorf("the listener in pod %s did not end within a minute of the count's marker", pod)
		}
	}
	if code != 0 {
		return 0, fmt.Errorf("the listener in pod %s failed (exit %d), so its connections cannot be counted", pod, code)
	}
	if out.String() == marker+"\n" {
		return 0, nil
	}
	return 1, nil
}

// killListener kills the listener on port by the pid its shell told, if
// it came, once it is sure the pid is still that listener's (not a pid
// reused). A listener whose pid never came (an exec that never started) is
// left.
func (s *Store) killListener(ctx context.Context, pod string, port int, pid *firstLine) {
	select {
	case <-pid.got:
	default: // stop waited for it already
		return
	}
	if _, err := strconv.Atoi(pid.line); err != nil {
		return
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	s.stream(kctx, pod, []string{"/bin/sh", "-c", `[ "$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null)" = "/bin/nc -l -p $2 " ] && kill "$1"; true`,
		"sh", pid.line, strconv.Itoa(port)}, nil, nil, nil)
}

// firstLine keeps the first line written to it, if it comes within the
// first 64 bytes or so; got is closed once it has it. line is read only
// after got.
type firstLine struct {
	buf  []byte
	line string
	done bool
	got  chan struct{}
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.done || len(f.buf) > 64 {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.line, f.done = string(f.buf[:i]), true
		close(f.got)
	}
	return len(p), nil
}

// listening waits up to 5 s for port to be in LISTEN state (0A) in the
// pod's /proc/net/tcp or tcp6 (busybox's nc listens on IPv6 where it can); false when the listener ended first (the port was
// taken) or never listened.
func (s *Store) listening(ctx context.Context, pod string, port int, done <-chan int) bool {
	check := fmt.Sprintf(`grep -qiE ':%04X 0+:0000 0A' /proc/net/tcp /proc/net/tcp6`, port)
	for i := 0; i < 50; i++ {
		if code, err := s.stream(ctx, pod, []string{"/bin/sh", "-c", check}, nil, nil, nil); err == nil && code == 0 {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}
