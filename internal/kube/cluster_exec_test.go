package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestExecProtocols: an exec goes over WebSocket where the API server
// takes it, and over SPDY where something in front of the API server
// refuses WebSocket's upgrade — the same command, its stdin whole and
// its exit status, either way, and the command run once. Through a proxy
// of the test's own that passes everything, or refuses WebSocket's
// upgrades.
func TestExecProtocols(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	// every exec and wait bounded: a stuck stream fails the test, not the package
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A proxy to the API server (its transport authenticates as cfg does)
	// that counts the upgrades it is asked for, refusing WebSocket's when
	// told.
	// (HTTP/1.1 to the API server: HTTP/2 carries no upgrade)
	tcfg := rest.CopyConfig(cfg)
	tcfg.NextProtos = []string{"http/1.1"}
	rt, err := rest.TransportFor(tcfg)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	var refuseWS atomic.Bool
	var spdy, ws atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(api)
	rp.Transport = rt
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch up := strings.ToLower(r.Header.Get("Upgrade")); {
		case strings.HasPrefix(up, "spdy/"):
			spdy.Add(1)
		case up == "websocket":
			ws.Add(1)
			if refuseWS.Load() {
				http.Error(w, "this proxy passes no WebSocket", http.StatusBadRequest)
				return
			}
		}
		testutil.WholeBody(rp).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	pcfg := &rest.Config{Host: proxy.URL, APIPath: cfg.APIPath}
	s := openStore(t, pcfg, Options{Namespace: ns})
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "exec-protocols"},
		"spec":     podSpec(PodOptions{Image: DefaultImage, DeadlineSeconds: 600})}}
	if _, err := s.dyn.Resource(podGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.waitRunning(ctx, "exec-protocols", ""); err != nil {
		t.Fatal(err)
	}

	// The command counts its runs and keeps its stdin in files of the
	// pod's, and exits 3; the files are read back by output, which resends
	// what the node loses (transfer.go).
	const script = `echo x >> /tmp/runs; cat > /tmp/got; exit 3`
	in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	sum := sha256.Sum256(in)
	for i, c := range []struct {
		name     string
		refuse   bool
		spdy, ws int32
	}{
		{"WebSocket taken", false, 0, 1},
		{"WebSocket refused", true, 1, 1},
	} {
		refuseWS.Store(c.refuse)
		spdy.Store(0)
		ws.Store(0)
		var errb bytes.Buffer
		code, err := s.stream(ctx, "exec-protocols", []string{"/bin/sh", "-c", script}, bytes.NewReader(in), nil, &errb)
		if err != nil || code != 3 {
			t.Fatalf("%s: exit %d, %v: %s", c.name, code, err, errb.String())
		}
		if spdy.Load() != c.spdy || ws.Load() != c.ws {
			t.Errorf("%s: %d SPDY and %d WebSocket upgrades asked for, want %d and %d", c.name, spdy.Load(), ws.Load(), c.spdy, c.ws)
		}
		out, code, err := s.output(ctx, "exec-protocols", `sha256sum < /tmp/got; wc -l < /tmp/runs`, nil, 4096)
		if err != nil || code != 0 {
			t.Fatalf("%s: read back: exit %d, %v", c.name, code, err)
		}
		want := hex.EncodeToString(sum[:]) + "  -\n" + strconv.Itoa(i+1) + "\n"
		if got := string(out); strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want), " ") {
			t.Errorf("%s: the pod has %q (its stdin's SHA-256, then the runs in all), want %q: stdin not whole, or a run twice", c.name, got, want)
		}
	}
}
