package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// realKey is the upstream's key: the scripted server accepts only it, the
// model proxy adds it outside the sandbox, and no fork may ever hold it.
const realKey = "sk-codex-REAL-upstream-key-0123456789"

// storeFork is one fork of a store as an agent gets it.
type storeFork struct {
	s    *workspace.Store
	name string
}

func (f storeFork) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	return f.s.Exec(ctx, f.name, p, stdio)
}
func (f storeFork) Files(ctx context.Context) (string, workspace.Files, error) {
	return f.s.Files(ctx, f.name)
}

// codexFork makes a fork of a git repository holding files, in a store
// under base (an outside folder, so a planted file beside it is one the
// sandbox would show were it not confined).
func codexFork(t testing.TB, base string, files map[string]string) storeFork {
	t.Helper()
	repo := filepath.Join(base, "repo")
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")
	s, err := workspace.Open(filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, filepath.Join(base, "state"))
	ctx := context.Background()
	if _, err := s.New(ctx, "pid1", workspace.NewOptions{Repo: repo, Rev: "HEAD"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "pid1", "f0"); err != nil {
		t.Fatal(err)
	}
	return storeFork{s: s, name: "f0"}
}

// codexFor builds the engine on the installed CLI (failing under
// FORKBOMB_REQUIRE_ALL=1 when it is missing), its forks reaching srv
// through a real model proxy that holds realKey.
func codexFor(t testing.TB, srv *engine.Scripted) *engine.Codex {
	t.Helper()
	testutil.Need(t, "codex", "node")
	p, err := modelproxy.Start(modelproxy.Options{
		Upstreams: []modelproxy.Upstream{{Kind: modelproxy.OpenAI, BaseURL: srv.URL + "/v1", APIKey: realKey}},
		Price:     func(string) (float64, float64) { return 3, 15 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, err := engine.NewCodex(context.Background(), engine.Settings{Proxy: p})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorded keeps a run's events.
type recorded struct {
	mu  sync.Mutex
	evs []string
}

func (r *recorded) emit(d event.Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, string(d.Kind())+" "+jsonString(d))
}

func (r *recorded) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.evs, "\n")
}
