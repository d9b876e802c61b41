package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// childEnv makes the test binary a gateway server (TestMain): the kill
// test needs a real process to SIGKILL.
const childEnv = "FORKBOMB_GATEWAY_TEST_CHILD"

func childServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := Open(ctx, os.Getenv("GW_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	ttl, err := time.ParseDuration(os.Getenv("GW_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g, err := New(db, Options{Secrets: testSecrets(), Anthropic: Upstream{URL: os.Getenv("GW_UPSTREAM"), Key: "k"},
		Prices: map[string]Price{"*": {In: 1_000_000, Out: 1_000_000}}, ReservationTTL: ttl, SweepEvery: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := g.Serve(ctx, ln); err != nil {
		return 1
	}
	return 0
}

// startChild starts a gateway server whose reservations last ttl (and
// whose upstream calls end at 9/10 of it).
func startChild(t *testing.T, dsn, upstream string, ttl time.Duration) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GW_DSN="+dsn, "GW_UPSTREAM="+upstream, "GW_TTL="+ttl.String())
	cmd.SysProcAttr = testutil.DieWithTest()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if u, ok := strings.CutPrefix(s.Text(), "listening on "); ok {
				line <- u
			}
		}
	}()
	select {
	case u := <-line:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway never said it was listening")
	}
	return nil, ""
}

// TestKilledServerReturnsReservations SIGKILLs a gateway process while a
// model call holds a reservation, restarts it on the same database, and
// checks the sweeper returns the reservation in full, once.
func TestKilledServerReturnsReservations(t *testing.T) {
	t.Parallel()
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dsn := newDSN(t, kind)
			// The upstream never answers: the request is mid-flight when
			// the server dies.
			hold := make(chan struct{})
			up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold })}
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			go up.Serve(ln)
			t.Cleanup(func() { close(hold); up.Close() })
			upstream := "http://" + ln.Addr().String()

			db, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			g, _ := New(db, Options{Secrets: testSecrets()})
			ws, key, _ := g.CreateWorkspace(context.Background())
			g.Grant(context.Background(), ws, 1_000_000_000, "test")

			// The reservation outlives the kill by far: a server that
			// settled it itself (its upstream call ending at 9/10 of a
			// short TTL) before a slow test killed it would prove nothing.
			child, url := startChild(t, dsn, upstream, 10*time.Minute)
			go func() {
				req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(`{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer "+key)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			open := func() (n int) {
				db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'open'`).Scan(&n)
				return n
			}
			deadline := time.Now().Add(60 * time.Second)
			for open() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no reservation was made")
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Positive control: the reservation took money.
			if b, _ := g.Balance(context.Background(), ws); b >= 1_000_000_000 {
				t.Fatalf("balance %d: the reservation took nothing", b)
			}
			child.Process.Signal(syscall.SIGKILL)
			child.Wait()
			if open() != 1 {
				t.Fatal("the reservation was closed by a server that was SIGKILLed")
			}
			// It was made to last the child's TTL, in seconds.
			var lasts int64
			if err := db.sql.QueryRow(`SELECT expires_at - created_at FROM reservations WHERE state = 'open'`).Scan(&lasts); err != nil || lasts != 600 {
				t.Fatalf("the reservation lasts %d s (%v), want the child's 600", lasts, err)
			}
			// Its time has come (as if ten minutes had passed): the
			// restarted server's sweeper must return it.
			if _, err := db.exec(context.Background(), nil, `UPDATE reservations SET expires_at = created_at`); err != nil {
				t.Fatal(err)
			}
			startChild(t, dsn, upstream, time.Second)
			for open() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the restarted server never returned the reservation")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if b, _ := g.Balance(context.Background(), ws); b != 1_000_000_000 {
				t.Errorf("balance %d after the sweep, want all 1000000000 back", b)
			}
			var expired int
			db.sql.QueryRow(`SELECT COUNT(*) FROM reservations WHERE state = 'expired' AND charged = 0`).Scan(&expired)
			if expired != 1 {
				t.Errorf("%d expired reservations, want 1", expired)
			}
		})
	}
}
