// Package tunnel carries TCP connections made inside a Kubernetes pod to a
// socket on forkbomb's side over one byte stream — the API server's exec
// of a forwarder in the pod — so a pod reaches forkbomb's model proxy
// with no network route to this machine at all (its NetworkPolicy denies
// every egress).
//
// The pod side (Forward, run by re-executing forkbomb's own binary sent
// into the pod) listens on the pod's 127.0.0.1:PORT and writes what its
// connections send as frames to its stdout; the host side (Serve) reads
// them from the exec's stdout, dials one socket per connection (the fork's
// model-proxy endpoint) and sends the answers back as frames on the exec's
// stdin. A frame is a type byte, a connection id and a length (both
// 32-bit big-endian), then at most MaxPayload bytes.
//
// The stream is the pod's word: a process of the fork's can write into
// it. Serve therefore trusts nothing in it — every frame is bounded; each
// connection's bytes flow by credit (window frames, as in HTTP/2), so a
// slow reader stalls only its own connection, never the stream, and a side
// that sends past the credit it was given, or gives back more than it
// was sent, has that connection cut; at most MaxConns connections are
// open; and whatever a frame says, Serve dials only the one socket it was
// given.
// The stream can also die or go silent (on the test cluster about one
// exec in five loses its stdout): the forwarder says hello first and
// pings every PingEvery, and Serve fails closed (ErrLost) when the hello
// or a frame does not arrive in time, so nothing waits on a dead tunnel.
package tunnel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Frame types.
const (
	frameHello  = 'H' // pod → host, first: the protocol's name
	frameOpen   = 'O' // pod → host: a new connection
	frameData   = 'D' // either way: bytes of a connection
	frameClose  = 'C' // either way: no more bytes this way (EOF; the other way goes on)
	frameReset  = 'R' // either way: the connection is cut both ways
	frameWindow = 'W' // either way: credit for this many more bytes (4 bytes, big-endian)
	framePing   = 'P' // pod → host: the stream is alive
)

// Bounds of the protocol.
const (
	hello      = "forkbomb-tunnel/1"
	MaxPayload = 32 << 10
	MaxConns   = 64
	// Window is a connection's credit each way: what one side may send
	// before the other has written it on. 512 KiB, so a hostile pod holds
	// at most 32 MiB of forkbomb's memory per tunnel.
	Window    = 512 << 10
	PingEvery = time.Second
)

// ErrLost: the tunnel's stream ended, broke its protocol or went silent
// while it was needed.
var ErrLost = errors.New("the model tunnel to the fork's pod was lost")

type frame struct {
	typ  byte
	id   uint32
	data []byte
}

const headerLen = 9

func writeFrame(w io.Writer, f frame) error {
	var h [headerLen]byte
	h[0] = f.typ
	binary.BigEndian.PutUint32(h[1:5], f.id)
	binary.BigEndian.PutUint32(h[5:9], uint32(len(f.data)))
	if _, err := w.Write(append(h[:], f.data...)); err != nil {
		return err
	}
	return nil
}

// readFrame reads one frame, refusing one over MaxPayload or of an
// unknown type.
func readFrame(r io.Reader) (frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	f := frame{typ: h[0], id: binary.BigEndian.Uint32(h[1:5])}
	n := binary.BigEndian.Uint32(h[5:9])
	switch f.typ {
	case frameHello, frameOpen, frameData, frameClose, frameReset, frameWindow, framePing:
	default:
		return frame{}, fmt.Errorf("%w: unknown frame type %q", ErrLost, f.typ)
	}
	if n > MaxPayload {
		return frame{}, fmt.Errorf("%w: a frame of %d bytes (at most %d)", ErrLost, n, MaxPayload)
	}
	if n > 0 {
		f.data = make([]byte, n)
		if _, err := io.ReadFull(r, f.data); err != nil {
			return frame{}, err
		}
	}
	return f, nil
}
