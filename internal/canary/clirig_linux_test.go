package canary_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/canary"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// cliRig is how one real agent CLI meets the canary: its engine's name,
// the model upstream its proxy holds the key of, the key's shape, and the
// scripted model's steps (given the host listener's port).
type cliRig struct {
	engine, kind, keyPrefix, baseSuffix string
	steps                               func(port int) []engine.Step
}

// run plays the canary through the real CLI against the scripted model,
// the key held by a model proxy as in a race; confine weakens the sandbox.
func (r cliRig) run(t *testing.T, confine func(*workspace.Store, *sandbox.Policy)) *canary.Result {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key := r.keyPrefix + strings.Repeat("k", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"canary": r.steps(ln.Addr().(*net.TCPAddr).Port)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: r.kind, BaseURL: srv.URL + r.baseSuffix, APIKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	agent, err := engine.New(context.Background(), r.engine, engine.Settings{Proxy: p})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	o := canary.Options{
		Engine: agent, Version: agent.Info().Version, Store: s, Secrets: []string{key},
		PromptPrefix: "[persona: canary]\n", Listener: ln,
	}
	if confine != nil {
		o.Confine = func(p *sandbox.Policy) { confine(s, p) }
	}
	res, err := canary.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-5v %s %s", c.OK, c.Name, c.Detail)
	}
	if srv.Requests() < 8 {
		t.Fatalf("the scripted model served %d requests: %s did not play the canary through", srv.Requests(), r.engine)
	}
	return res
}

// test: confined, the CLI passes every check; with the store writable,
// the escape and secret checks fail and the control still holds.
func (r cliRig) test(t *testing.T, version func(string) bool) {
	t.Run("confined", func(t *testing.T) {
		t.Parallel()
		res := r.run(t, nil)
		if !res.Passed {
			t.Fatalf("the canary failed for %s in the real sandbox: %v", r.engine, failed(res))
		}
		if res.Engine != r.engine || !version(res.Version) {
			t.Fatalf("result names %q %q", res.Engine, res.Version)
		}
	})
	t.Run("weakened", func(t *testing.T) {
		t.Parallel()
		res := r.run(t, func(s *workspace.Store, p *sandbox.Policy) { p.ReadWrite = append(p.ReadWrite, s.Root) })
		got := failed(res)
		for _, w := range []string{"shell write outside the fork fails", "file-tool write outside the fork fails", "the secret beside the fork never surfaces"} {
			if !got[w] {
				t.Errorf("check %q passed on a weakened sandbox", w)
			}
		}
		if res.Passed || got["write inside the fork works (control)"] {
			t.Fatalf("passed %v, control failed %v", res.Passed, got["write inside the fork works (control)"])
		}
	})
}
