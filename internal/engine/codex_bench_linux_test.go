package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// BenchmarkCodexTurn measures what the codex engine costs over the api engine,
// in the same run on the same fork and scripted model: one op is a task
// of two model turns (one shell command, then an answer), each engine
// with its own shell tool. It reports wall time per op and per model
// turn, and the CPU of forkbomb and everything it started (the CLI, the
// sandboxes) per op.
//
//	go test -run '^$' -bench CodexTurn -benchtime 10x ./internal/engine
func BenchmarkCodexTurn(b *testing.B) {
	srv, err := engine.StartScripted(realKey, map[string][]engine.Step{
		"api":   {{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "true"}}}}, {Text: "Done."}},
		"codex": {{Tools: []engine.ToolCall{shell("true")}}, {Text: "Done."}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	api, err := engine.NewAPI(engine.Settings{Provider: "openai", Model: "scripted", APIKey: realKey, BaseURL: srv.URL + "/v1"})
	if err != nil {
		b.Fatal(err)
	}
	engines := []struct {
		name string
		a    engine.Agent
	}{{"api", api}, {"codex", codexFor(b, srv)}}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			w := codexFork(b, b.TempDir(), map[string]string{"a.txt": "a\n"})
			cpu0, t0 := testutil.CPUTime(), time.Now()
			b.ResetTimer()
			for range b.N {
				out := e.a.Run(context.Background(), w, engine.Task{Prompt: "[persona: " + e.name + "] go", Timeout: time.Minute})
				if out.State != event.ForkExited {
					b.Fatalf("%s: %+v", e.name, out)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((testutil.CPUTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(time.Since(t0).Milliseconds())/float64(2*b.N), "wall-ms/turn")
		})
	}
}
