package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// TestNewTakesContext: an agent CLI engine runs its CLI's --version under
// the caller's ctx, so an interrupted command stops it. With ctx live, a
// stub CLI's version is the engine's (the control); with ctx cancelled,
// New fails with the cancellation and no engine.
func TestNewTakesContext(t *testing.T) {
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.Anthropic, BaseURL: "http://127.0.0.1:9", APIKey: "sk-ant-unused-0123456789"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, d := range Descriptors() {
		if d.Bin == "" {
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), d.Bin)
			if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 1.2.3-stub\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := Settings{AgentBin: bin, Proxy: p}
			a, err := New(context.Background(), d.Name, s)
			if err != nil || a.Info().Version != "1.2.3-stub" {
				t.Fatalf("control: New = %v, %v; want the stub's version", a, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if a, err := New(ctx, d.Name, s); a != nil || !errors.Is(err, context.Canceled) {
				t.Errorf("New under a cancelled ctx = %v, %v; want context.Canceled", a, err)
			}
		})
	}
}
