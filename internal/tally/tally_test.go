package tally

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// gated is a listener whose Accept waits until the test opens the gate: a server goroutine
// that a loaded machine runs late.
type gated struct {
	net.Listener
	gate chan struct{}
}

func (g gated) Accept() (net.Conn, error) {
	<-g.gate
	return g.Listener.Accept()
}

// TestCountWaitsForTheServer: connections made before a count are all in it, though the
// server's goroutine had accepted none when the count was asked for; the markers of earlier
// counts are never in one — over TCP, a path and an abstract UNIX socket.
func TestCountWaitsForTheServer(t *testing.T) {
	t.Parallel()
	cases := []struct{ network, addr string }{
		{"tcp", "127.0.0.1:0"},
		{"tcp", "[::1]:0"},   // a marker from ::1
		{"tcp", "0.0.0.0:0"}, // one listener for every address: the marker dials 127.0.0.1
		{"tcp", "[::]:0"},    // the same over both families
		{"unix", filepath.Join(t.TempDir(), "s.sock")},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct{ network, addr string }{"unix", fmt.Sprintf("@forkbomb-tally-test-%d", time.Now().UnixNano())})
	}
	for _, c := range cases {
		t.Run(c.network+" "+c.addr, func(t *testing.T) {
			ln, err := net.Listen(c.network, c.addr)
			if err != nil && strings.HasPrefix(c.addr, "[::") && os.Getenv("FORKBOMB_REQUIRE_ALL") != "1" {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			g := gated{ln, make(chan struct{})}
			n := Accepts(g)
			for range 3 {
				conn, err := net.Dial(c.network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				conn.Close()
			}
			got := make(chan int64, 1)
			go func() {
				k, err := n.Count(context.Background())
				if err != nil {
					t.Error(err)
				}
				got <- k
			}()
			select {
			case k := <-got:
				t.Fatalf("the count returned %d before the server accepted anything", k)
			case <-time.After(300 * time.Millisecond):
			}
			close(g.gate)
			if k := <-got; k != 3 {
				t.Errorf("count %d, want the 3 connections made before it", k)
			}
			for i := 2; i <= 3; i++ {
				if k, err := n.Count(context.Background()); err != nil || k != 3 {
					t.Errorf("count %d: %d, %v; want 3, no marker counted", i, k, err)
				}
			}
		})
	}
}

// TestCountDatagrams: datagrams sent before a count are all in it, however late the reader.
func TestCountDatagrams(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 4 {
		if _, err := conn.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the reader starts after the datagrams are queued
	n := Datagrams(pc)
	if k, err := n.Count(context.Background()); err != nil || k != 4 {
		t.Errorf("count %d, %v: want the 4 datagrams", k, err)
	}
	if k, err := n.Count(context.Background()); err != nil || k != 4 {
		t.Errorf("second count %d, %v: want 4, no marker counted", k, err)
	}
}

// TestCountGivesUp: a server that never reads its marker is an error once ctx ends, never a
// count of zero.
func TestCountGivesUp(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := New("tcp", ln.Addr().String()) // nothing accepts
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if k, err := n.Count(ctx); err == nil {
		t.Fatalf("count %d with no server reading: want an error", k)
	}
}
