package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// pathCounter is a web server on the host's loopback that counts the
// paths asked of it, and the connections made to it (a proxy that dials a
// host and then refuses to pass a request on shows in the second only).
type pathCounter struct {
	*httptest.Server
	conns *testutil.Tally
	mu    sync.Mutex
	hits  map[string]int
}

func newPathCounter(t *testing.T) *pathCounter {
	c := &pathCounter{hits: map[string]int{}}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.hits[r.URL.Path]++
		c.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	c.conns = testutil.NewTally("tcp", c.Listener.Addr().String())
	c.Listener = c.conns.Listener(c.Listener)
	c.Start()
	t.Cleanup(c.Close)
	return c
}

func (c *pathCounter) count(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[p]
}

func (c *pathCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.hits {
		n += v
	}
	return n
}

// TestRaceNetworkAllow: with Allow (--network allow:), each fork's agent
// reaches the allowed host through HTTPS_PROXY and nothing else — not
// another host through the proxy, nor either host directly — and every
// attempt through the proxy is a net_connect event in the record. The
// judge's test run stays offline (it asks the allowed host too: no hit).
// Counts are read on the servers. The control: the same requests made
// unconfined reach both servers.
func TestRaceNetworkAllow(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "curl")
	rep, err := sandbox.Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Layer("network namespace"); l == nil || l.Status != "ok" {
		testutil.SkipOrFail(t, "no network namespace here: --network allow: needs one")
	}
	allowed, other := newPathCounter(t), newPathCounter(t)
	a, b := strings.TrimPrefix(allowed.URL, "http://"), strings.TrimPrefix(other.URL, "http://")
	// NO_PROXY names 127.0.0.1 (the proxy itself), where these test hosts
	// live too; --noproxy '' makes curl use the proxy for them.
	agent := `P="curl -sS --max-time 10 --noproxy '' -p -x $HTTPS_PROXY"
$P http://` + a + `/agent
$P http://` + b + `/agent-connect
curl -sS --max-time 10 --noproxy '' -x "$HTTP_PROXY" http://` + b + `/agent-absolute
curl -sS --max-time 5 --noproxy '*' http://` + b + `/agent-direct
curl -sS --max-time 5 --noproxy '*' http://` + a + `/agent-direct
sed -i 's/\$1 - \$2/$1 + $2/' lib.sh`
	dir := repo(t)
	o := options(t, dir)
	o.Forks = 2
	o.All = true
	o.Allow = []string{a}
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", agent}}
	o.Test = "curl -sS --max-time 5 --noproxy '' -p -x http://127.0.0.1:8119 http://" + a + "/judge; curl -sS --max-time 5 http://" + a + "/judge; /bin/sh check.sh"
	r, recDir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon {
		t.Errorf("status %s: %+v", r.Status, r.Fork)
	}
	if n := allowed.count("/agent"); n != 2 {
		t.Errorf("the allowed host saw %d agent requests, want 2 (one per fork)", n)
	}
	if n := other.total(); n != 0 {
		t.Errorf("LEAK: the host not allowed was reached %d times", n)
	}
	if n := allowed.count("/agent-direct") + allowed.count("/judge"); n != 0 {
		t.Errorf("LEAK: the allowed host was reached directly or by the judge (%d)", n)
	}
	// the connections, each one's own: the agents' two through the proxy
	// to the allowed host, none to the other
	time.Sleep(testutil.InFlight)
	if n := other.conns.Count(t); n != 0 {
		t.Errorf("LEAK: %d connections were made to the host not allowed", n)
	}
	if n := allowed.conns.Count(t); n != 2 {
		t.Errorf("the allowed host saw %d connections, want 2 (the agents' through the proxy)", n)
	}
	var yes, no int
	f, err := os.Open(filepath.Join(recDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev record.Event
		var d event.NetConnectData
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Decode(&d) == nil {
			if d.Allowed {
				yes++
			} else {
				no++
			}
		}
	}
	if yes != 2 || no != 4 {
		t.Errorf("net_connect events: %d allowed, %d refused; want 2 and 4", yes, no)
	}

	// Control: unconfined, the same requests reach both.
	for _, u := range []string{other.URL + "/control", allowed.URL + "/control"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if other.count("/control") != 1 || allowed.count("/control") != 1 || other.conns.Count(t) != 1 {
		t.Fatalf("positive control: the servers did not count an unconfined request")
	}
}
