package ui

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// hostedRun records a finished hosted race whose fork 0 the gateway
// charged 3030 micro-dollars, leaving a balance of 4 996 970, as the
// hosted engine records it: the fork's cost in run.json, the charge and
// the balance in a gateway_usage event.
func hostedRun(t *testing.T, runs string) string {
	t.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := record.NewID()
	rec, err := record.Create(runs, record.Run{ID: id, Task: "fix it", Engine: "hosted", Model: "scripted", Forks: 1, Test: "true", Repo: "/repo", Base: "ab", Started: t0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range []event.Event{
		{Fork: event.RunLevel, Data: event.RunStartData{ID: id, Task: "fix it", Forks: 1, Engine: "hosted"}},
		{Fork: 0, Data: event.ForkStartData{Workspace: "w0"}},
		{Fork: 0, Data: event.ModelResponseData{Turn: 1, Text: "Fixed.", InputTokens: 10, OutputTokens: 200}},
		{Fork: 0, Data: event.GatewayUsageData{Source: event.SourceGateway, Tag: "fb-X/0", Calls: 1, Open: 0,
			ChargedMicroUSD: 3030, TokensIn: 10, TokensOut: 200, BalanceMicroUSD: 4_996_970}},
		{Fork: 0, Data: event.ForkExitData{State: event.ForkExited}},
		{Fork: event.RunLevel, Data: event.RunEndData{Status: event.RunNoWinner, Winner: -1}},
	} {
		ev.Time = t0.Add(time.Duration(i) * time.Second)
		if err := rec.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Update(func(r *record.Run) {
		r.Status, r.Seconds = event.RunNoWinner, 5
		r.Fork = []record.Fork{{N: 0, State: event.ForkExited, Verdict: event.Fail, TokensIn: 10, TokensOut: 200, CostMicroUSD: 3030}}
		r.TokensIn, r.TokensOut, r.CostMicroUSD = 10, 200, 3030
	}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestHostedCostServed: the UI's API hands the page the hosted fork's
// cost (run.json) and the gateway's charge and balance (the event), which
// is what the page shows.
func TestHostedCostServed(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	id := hostedRun(t, runs)
	s := serve(t, Options{RunsDir: runs})
	var run struct {
		Cost  int64 `json:"cost_micro_usd"`
		Forks []struct {
			Cost int64 `json:"cost_micro_usd"`
		} `json:"fork_results"`
	}
	get(t, base(s)+"api/run/"+id, &run)
	if run.Cost != 3030 || len(run.Forks) != 1 || run.Forks[0].Cost != 3030 {
		t.Errorf("run.json as served: %+v", run)
	}
	_, evs, _ := sse(t, base(s)+"api/run/"+id+"/stream", "", 100)
	found := false
	for _, ev := range evs {
		if ev.Type == "gateway_usage" {
			found = true
			if b, _ := ev.Data["balance_micro_usd"].(float64); b != 4_996_970 {
				t.Errorf("the balance as streamed: %v", ev.Data)
			}
		}
	}
	if !found {
		t.Errorf("no gateway_usage event streamed (of %d)", len(evs))
	}
}

func get(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v", url, resp.StatusCode, err)
	}
}

// TestBrowserHostedCost: the page shows the hosted fork's cost on its
// card and the gateway's balance in the run's header.
func TestBrowserHostedCost(t *testing.T) {
	ctx := tab(t)
	runs := t.TempDir()
	id := hostedRun(t, runs)
	s := serve(t, Options{RunsDir: runs, Run: id})
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("#fork-0"))); err != nil {
		t.Fatal(err)
	}
	var card, header string
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#fork-0 .cost').textContent.includes('$0.0030') &&
		document.querySelector('dl.meta').textContent.includes('balance$4.9970 (gateway)')`, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		card, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#fork-0 .cost').textContent`))
		header, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('dl.meta').textContent`))
		t.Errorf("cost and balance not shown: card %q, header %q (%v)", card, header, err)
	}
}
