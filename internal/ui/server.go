package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/home"
)

// Options configure a Server.
type Options struct {
	// RunsDir is the runs directory the server reads.
	RunsDir string
	// Addr is where to listen: a literal loopback IPv4 address and a port
	// (default 127.0.0.1:0, a free port). Anything else is refused.
	Addr string
	// Run is the run the printed URL opens ("" for the list of runs).
	Run string
	// Live is the subscriber of a race of this process, if any: the page
	// of the URL follows that race once it has started.
	Live *Live
	// Board is eval's board ($FORKBOMB_HOME/lab/eval/board.json), which
	// the page shows at #board; "" for none.
	Board string
	// Poll is how often a stream looks for new lines of a run recorded by
	// another process (default 250ms); a Live race wakes it at once.
	Poll time.Duration
}

// Server serves the runs of one runs directory to one browser session.
type Server struct {
	o     Options
	ln    net.Listener
	srv   *http.Server
	token string
	mu    sync.Mutex
	logs  map[string]*eventLog
	done  chan struct{}
}

// Listen binds the server (127.0.0.1 only) and makes its token; Serve
// serves. The URL is printed once by the caller and holds the token.
func Listen(o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Run != "" {
		if err := home.ValidateID("run", o.Run); err != nil {
			return nil, err
		}
	}
	if err := checkAddr(o.Addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s := &Server{o: o, ln: ln, token: newToken(), logs: map[string]*eventLog{}, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           &guard{host: ln.Addr().String(), token: s.token, next: s.routes()},
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	return s, nil
}

// URL is the page's address, token included.
func (s *Server) URL() string {
	u := "http://" + s.ln.Addr().String() + "/" + s.token + "/"
	switch {
	case s.o.Run != "":
		u += "#run=" + s.o.Run
	case s.o.Live != nil:
		u += "#live"
	}
	return u
}

// Serve serves until ctx ends, then shuts down: open streams are closed
// at once, other requests get a moment to finish.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ui: %w", err)
	case <-ctx.Done():
	}
	close(s.done)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// log is the run's event index, made once per run and kept.
func (s *Server) log(id string) (*eventLog, string, error) {
	dir, err := home.Join(s.o.RunsDir, "run", id)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[id]
	if l == nil {
		l = &eventLog{path: filepath.Join(dir, "events.jsonl")}
		s.logs[id] = l
	}
	return l, dir, nil
}
