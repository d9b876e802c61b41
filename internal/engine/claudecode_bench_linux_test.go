package engine

import (
	"context"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// BenchmarkTurn is what a scripted turn costs each engine, in the same
// run against the same scripted model: a Bash tool call (`true`) and a
// final answer — two model turns. api is forkbomb's own loop (the command
// runs in a sandbox of its own); claude-code is the real CLI started in
// the fork's sandbox, through the model proxy. Reported: wall time per
// run and per model turn, and CPU (forkbomb and every process it waited
// for: sandboxes, the CLI) per run.
//
//	go test -run '^$' -bench Turn -benchtime 20x ./internal/engine
func BenchmarkTurn(b *testing.B) {
	script := map[string][]Step{"bench": {
		{Text: "Running.", Tools: []ToolCall{{Name: "Bash", Input: map[string]any{"command": "true"}}}},
		{Text: "Done."},
	}}
	apiScript := map[string][]Step{"bench": {
		{Text: "Running.", Tools: []ToolCall{{Name: "shell", Input: map[string]any{"command": "true"}}}},
		{Text: "Done."},
	}}
	b.Run("api", func(b *testing.B) {
		srv, err := StartScripted("sk-bench-0123456789", apiScript)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		a := &API{Provider: "anthropic", Model: "scripted", BaseURL: srv.URL, APIKey: "sk-bench-0123456789", MaxTurns: 5}
		benchTurns(b, a)
	})
	b.Run("claude-code", func(b *testing.B) {
		r := newClaudeRig(b, script)
		benchTurns(b, r.c)
	})
}

func benchTurns(b *testing.B, a Agent) {
	dir := b.TempDir()
	var turns int
	cpu0 := testutil.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := a.Run(context.Background(), dirWorkspace{dir}, Task{Prompt: "[persona: bench] go", Fork: 1, Timeout: time.Minute})
		if out.State != event.ForkExited {
			b.Fatalf("outcome %+v %v", out, out.Err)
		}
		turns += out.Usage.Turns
	}
	b.StopTimer()
	cpu := testutil.CPUTime() - cpu0
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	if turns > 0 {
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(turns), "wall-ms/turn")
		b.ReportMetric(float64(turns)/float64(b.N), "turns/op")
	}
}
