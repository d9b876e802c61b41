package tunnel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// Options say where Serve sends the pod's connections and how long it
// waits on the stream.
type Options struct {
	// Dial opens the socket one of the pod's connections is carried to:
	// always the same one (the fork's model-proxy endpoint), whatever
	// the stream says.
	Dial func(ctx context.Context) (net.Conn, error)
	// Ready is called once the forwarder has said hello (it listens).
	Ready func()
	// HelloTimeout bounds the wait for the hello (default 20s);
	// IdleTimeout the silence after it (default 10s: ten missed pings).
	HelloTimeout, IdleTimeout time.Duration
}

// Serve is the host side of one tunnel: it reads the forwarder's frames
// from podOut and writes its own to podIn until ctx ends (nil), or the
// stream ends, breaks the protocol or goes silent (ErrLost). Every
// carried connection is cut when it returns. The caller ends the stream
// (the exec) after Serve returns; a read blocked on it ends then.
func Serve(ctx context.Context, podOut io.Reader, podIn io.Writer, o Options) error {
	if o.HelloTimeout <= 0 {
		o.HelloTimeout = 20 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 10 * PingEvery
	}
	ctx, cancel := context.WithCancel(ctx)
	m := newMux(podIn)
	defer func() {
		cancel() // dials in progress end first
		m.closeAll()
	}()
	frames := make(chan frame)
	errc := make(chan error, 1)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	go func() {
		r := bufio.NewReaderSize(podOut, MaxPayload+headerLen)
		for {
			fr, err := readFrame(r)
			if err != nil {
				errc <- err
				return
			}
			last.Store(time.Now().UnixNano())
			select {
			case frames <- fr:
			case <-ctx.Done():
				return
			}
		}
	}()
	helloed := false
	wait := time.NewTimer(o.HelloTimeout)
	defer wait.Stop()
	tick := time.NewTicker(PingEvery / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrLost) {
				return err
			}
			return fmt.Errorf("%w: its stream ended (%v)", ErrLost, err)
		case <-wait.C:
			if !helloed {
				return fmt.Errorf("%w: the forwarder in the pod did not answer within %s", ErrLost, o.HelloTimeout)
			}
		case <-tick.C:
			if helloed && time.Since(time.Unix(0, last.Load())) > o.IdleTimeout {
				return fmt.Errorf("%w: nothing came from the pod for %s", ErrLost, o.IdleTimeout)
			}
		case fr := <-frames:
			if !helloed {
				if fr.typ != frameHello || string(fr.data) != hello {
					return fmt.Errorf("%w: the pod did not speak %s", ErrLost, hello)
				}
				helloed = true
				if o.Ready != nil {
					o.Ready()
				}
				continue
			}
			switch fr.typ {
			case frameHello:
				return fmt.Errorf("%w: a second hello", ErrLost)
			case framePing:
			case frameOpen:
				open(ctx, m, fr.id, o.Dial)
			default:
				m.apply(fr)
			}
		}
	}
}

// open starts a pod connection: registered at once (its data may follow
// before the dial ends, and waits in its bounded queue), then dialled
// without holding up the stream.
func open(ctx context.Context, m *mux, id uint32, dial func(context.Context) (net.Conn, error)) {
	c := newConn(id, nil)
	if !m.add(c) {
		go m.send(frame{typ: frameReset, id: id})
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		nc, err := dial(dctx)
		cancel()
		if err != nil {
			m.reset(c)
			return
		}
		if !c.attach(nc) {
			return
		}
		m.start(c)
	}()
}
