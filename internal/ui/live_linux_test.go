package ui

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// liveRepo has a bug (add subtracts) and a check that finds it.
func liveRepo(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "lib.sh"), []byte("add() { echo $(($1 - $2)); }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte(". ./lib.sh\np=0; f=0\n[ \"$(add 2 3)\" = 5 ] && p=$((p+1)) || f=$((f+1))\necho \"$p passed, $f failed\"\n[ $f = 0 ]\n"), 0o644)
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

// TestBrowserLive races four shell agents (the command engine, confined
// as in a real run) and watches the page of `forkbomb run --ui` while the
// race runs: the forks appear, fork 3 crashes and fork 1's cheat is
// rejected while fork 0 is still at work — forks 1 and 3 wait for a gate
// the test opens once the browser has shown the four forks, fork 0 for
// one it opens only once the browser has shown both — and the timeline
// grows; then fork 0 wins, its patch and the apply command show, and the
// slow fork 2 is killed.
func TestBrowserLive(t *testing.T) {
	ctx := tab(t)
	gateDir, unmasked := testutil.OutsideDir(t)
	if !unmasked {
		t.Log("no unmasked folder for the gate: fork 0 waits its deadline (20 s) instead")
	}
	gate, early := filepath.Join(gateDir, "open"), filepath.Join(gateDir, "early")
	wait := func(gate string) string {
		return `i=0; while [ ! -e '` + gate + `' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; `
	}
	agents := `case $FORKBOMB_FORK in
0) ` + wait(gate) + `sed -i 's/\$1 - \$2/$1 + $2/' lib.sh ;;
1) ` + wait(early) + `printf 'echo "1 passed, 0 failed"\n' > check.sh ;;
2) sleep 300 ;;
3) ` + wait(early) + `echo "giving up" >&2; exit 3 ;;
esac`
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, s.Root)
	runs := filepath.Join(t.TempDir(), "runs")
	live := NewLive()
	srv, err := Listen(Options{RunsDir: runs, Live: live})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	// The page is open before the race starts, as with `run --ui`.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL())); err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   any
		err error
	}
	raced := make(chan result, 1)
	go func() {
		r, _, err := run.Race(context.Background(), run.Options{
			Store: s, RunsDir: runs, CacheDir: filepath.Join(t.TempDir(), "cache"),
			Repo: liveRepo(t), Task: "make add add", Forks: 4, Timeout: 2 * time.Minute,
			Engine: engine.Command{Argv: []string{"/bin/sh", "-c", agents}}, Test: "/bin/sh check.sh",
			Subscribers: []event.Subscriber{live},
		})
		raced <- result{r, err}
	}()
	defer func() {
		os.WriteFile(early, nil, 0o644) // never leave a fork waiting
		os.WriteFile(gate, nil, 0o644)
		if res := <-raced; res.err != nil {
			t.Errorf("race: %v", res.err)
		}
	}()

	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second))); err != nil {
			screenshot(t, ctx, "failed")
			t.Fatalf("%s: %v", what, err)
		}
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+sel+`').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	poll("four fork cards", `document.querySelectorAll('.card').length === 4`)
	first := count("#timeline rect")
	if err := os.WriteFile(early, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll("fork 3 crashed and fork 1 rejected while fork 0 works",
		`(() => { const f = (n) => document.querySelector('#fork-' + n);
			return f(3).dataset.state === 'crashed' && f(1).querySelector('.badge.s-fail') !== null &&
				f(0).dataset.state === 'running' && f(0).dataset.phase === 'working' && !document.querySelector('#winner'); })()`)
	mid := count("#timeline rect")
	screenshot(t, ctx, "running")
	if mid <= first {
		t.Errorf("the timeline did not grow: %d segments, then %d", first, mid)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll("fork 0 wins and its patch shows",
		`(() => { const p = document.querySelector('#winner-patch'); return !!p && p.textContent.includes('+add() { echo $(($1 + $2)); }') &&
			document.querySelector('#fork-0').classList.contains('winner'); })()`)
	poll("fork 2 killed", `document.querySelector('#fork-2').dataset.state === 'killed'`)
	if end := count("#timeline rect"); end <= mid {
		t.Errorf("the timeline did not grow after the gate: %d segments, then %d", mid, end)
	}
	apply, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#winner code.cmd').textContent`))
	if err != nil || apply != "forkbomb apply "+live.RunID() {
		t.Errorf("apply command %q (%v), want for run %s", apply, err, live.RunID())
	}
	screenshot(t, ctx, "won")
}
