package ui

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// pageState is what the inertness checks read from the page's DOM.
type pageState struct {
	Pwned      string   `json:"pwned"`      // typeof window.__pwned: "undefined" unless injected code ran
	Scripts    []string `json:"scripts"`    // src of every script element
	Handlers   int      `json:"handlers"`   // elements with an inline event handler
	JSLinks    int      `json:"jslinks"`    // a[href^=javascript:]
	Images     int      `json:"images"`     // img elements in the page's content
	AsText     bool     `json:"asText"`     // the markup is shown, as text
	Blocked    int      `json:"blocked"`    // fork 1's stream items marked as contained escapes
	Unknown    bool     `json:"unknown"`    // an unknown event kind is shown
	WinnerDiff string   `json:"winnerDiff"` // the winning patch as shown
	Apply      string   `json:"apply"`      // the apply command shown
}

const readState = `({
	pwned: typeof window.__pwned,
	scripts: [...document.scripts].map((s) => s.getAttribute('src') || 'INLINE'),
	handlers: document.querySelectorAll('[onerror],[onload],[onclick]').length,
	jslinks: document.querySelectorAll('a[href^="javascript:" i]').length,
	images: document.querySelectorAll('main img, main svg[onload]').length,
	asText: document.body.textContent.includes('<script>window.__pwned="script"</script>'),
	blocked: document.querySelectorAll('#fork-1 .item.blocked').length,
	unknown: document.body.textContent.includes('something_new') || document.body.textContent.includes('something new'),
	winnerDiff: (document.querySelector('#winner-patch') || {}).textContent || '',
	apply: (document.querySelector('#winner code.cmd') || {}).textContent || '',
})`

// checkInert: the markup a model wrote is on the page as text, and none of
// it became an element or ran.
func checkInert(t *testing.T, ctx context.Context, runID string) {
	t.Helper()
	st := checkInertPage(t, ctx)
	if !strings.Contains(st.WinnerDiff, "+add() { echo $(($1 + $2)); }") {
		t.Errorf("winning patch shown: %q", st.WinnerDiff)
	}
	if st.Apply != "forkbomb apply "+runID {
		t.Errorf("apply command: %q", st.Apply)
	}
}

// checkInertPage is checkInert for any run, with or without a winner.
func checkInertPage(t *testing.T, ctx context.Context) pageState {
	t.Helper()
	// Give an injected handler (an img's onerror) time to fire, had it
	// become an element: wait for the page's own load to settle.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState === 'complete'`)); err != nil {
		t.Fatal(err)
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatal(err)
	}
	if st.Pwned != "undefined" {
		t.Errorf("INJECTED CODE RAN: window.__pwned is %s", st.Pwned)
	}
	if len(st.Scripts) != 2 || st.Scripts[0] != "data.js" || st.Scripts[1] != "app.js" {
		t.Errorf("script elements: %v, want data.js and app.js only", st.Scripts)
	}
	if st.Handlers != 0 || st.JSLinks != 0 || st.Images != 0 {
		t.Errorf("injected markup became elements: %d handlers, %d javascript: links, %d images", st.Handlers, st.JSLinks, st.Images)
	}
	if !st.AsText {
		t.Errorf("the injected markup is not shown as text")
	}
	if st.Blocked < 3 {
		t.Errorf("fork 1's escape attempts (a read-only write, an editor refusal, a refused connection): %d marked", st.Blocked)
	}
	if !st.Unknown {
		t.Errorf("an event of an unknown kind is not shown")
	}
	return st
}

// TestBrowserInertAndExport opens a finished run whose model and tools
// wrote <script>, event-handler and javascript: markup into every string,
// first from the server, then as an export from file:// with the server
// stopped. In both the markup shows as text and nothing of it runs; the
// export replays with the scrubber. The positive control proves the probe
// sees injected code run when the same markup is parsed as HTML.
func TestBrowserInertAndExport(t *testing.T) {
	ctx := tab(t)
	runs := t.TempDir()
	id := writeRun(t, runs, hostileEvents())

	t.Run("control", func(t *testing.T) {
		// The same markup given to innerHTML on a page without our CSP
		// runs: the check below would see it.
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		js := `document.body.innerHTML = ` + jsString(inject) + `; 1`
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](js)); err != nil {
			t.Fatal(err)
		}
		pwned, err := chromedp.Run(ctx, chromedp.Poll[string](`window.__pwned`, chromedp.WithPollingTimeout(20*time.Second)))
		if err != nil || pwned == "" {
			t.Fatalf("control: injected markup did not run under innerHTML (%q, %v): the probe cannot see a leak", pwned, err)
		}
	})

	sctx, stop := context.WithCancel(context.Background())
	s, err := Listen(Options{RunsDir: runs, Run: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx) }()
	t.Run("served", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("#winner-patch .diff"))); err != nil {
			t.Fatal(err)
		}
		checkInert(t, ctx, id)
		// Expand fetches the whole output the stream cut.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#fork-0 .item button"))); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#fork-0').textContent.includes('THE-END-OF-BIG-OUTPUT')`)); err != nil {
			t.Errorf("expand did not show the whole output: %v", err)
		}
		screenshot(t, ctx, "served")
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	t.Run("export", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "replay")
		if err := Export(runs, id, dir); err != nil {
			t.Fatal(err)
		}
		u := (&url.URL{Scheme: "file", Path: filepath.Join(dir, "index.html")}).String()
		if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("#winner-patch .diff"))); err != nil {
			t.Fatal(err)
		}
		checkInert(t, ctx, id)
		// Scrub back to the start of the race: one event shown, no winner.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const r = document.querySelector('#scrubber'); r.value = 3; r.dispatchEvent(new Event('input')); return true; })()`)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.textContent.includes('3 / 20') && !document.querySelector('#winner')`)); err != nil {
			t.Errorf("scrubbing back: %v", err)
		}
		screenshot(t, ctx, "export-scrubbed")
		// Play at 64×: the replay reaches the winner again.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector('#speed'); s.value = '64'; s.dispatchEvent(new Event('change')); return true; })()`)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#play"))); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.textContent.includes('20 / 20') && !!document.querySelector('#winner-patch .diff')`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
			t.Errorf("replay did not reach the end: %v", err)
		}
		checkInert(t, ctx, id)
		screenshot(t, ctx, "export-replayed")
	})
}

// TestBrowserUnverified: a run whose passing fork the verifier found too
// weakly tested shows the share and the survivors on the fork's card, as
// text, says the run is unverified, and crowns no fork.
func TestBrowserUnverified(t *testing.T) {
	ctx := tab(t)
	runs := t.TempDir()
	id := writeRunAs(t, runs, unverifiedEvents(), func(r *record.Run) {
		r.Status, r.Seconds = event.RunUnverified, 13
		r.Fork = []record.Fork{{N: 0, State: "exited", Verdict: "pass", Score: 1}, {N: 1, State: "exited", Verdict: "fail", Reason: "tests failed"}}
	})
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	s, err := Listen(Options{RunsDir: runs, Run: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx) }()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("#unverified"))); err != nil {
		t.Fatal(err)
	}
	if st := checkInertPage(t, ctx); st.WinnerDiff != "" || st.Apply != "" {
		t.Errorf("a winner is shown in an unverified run: %q %q", st.WinnerDiff, st.Apply)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const note = document.querySelector('#unverified').textContent;
		const st = document.querySelector('#fork-0 .strength');
		return note.includes('fork(s) 0') && !!st && st.dataset.caught === '2' && st.dataset.judged === '3' &&
			st.textContent.includes('verifier: 2/3 mutants caught') && st.textContent.includes('unverified: tests too weak') &&
			st.textContent.includes('survivor: grade.go:5: >= ') && !document.querySelector('#fork-1 .strength') &&
			!document.querySelector('.card.winner');
	})()`))
	if err != nil || !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Logf("page: %s", text)
		t.Fatalf("the unverified run is not shown as such (%v): %v", ok, err)
	}
	screenshot(t, ctx, "unverified")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBrowserCompared: two passing forks compared on each other's tests
// show the comparison on both cards, as text: the disagreement with the
// test's name and place, the survivor the other fork's test catches, the
// notes.
func TestBrowserCompared(t *testing.T) {
	ctx := tab(t)
	runs := t.TempDir()
	zero := 0
	id := writeRunAs(t, runs, comparedEvents(), func(r *record.Run) {
		r.Status, r.Winner, r.Seconds = event.RunWon, &zero, 13
		r.Fork = []record.Fork{{N: 0, State: event.ForkExited, Verdict: event.Pass, Score: 1}, {N: 1, State: event.ForkExited, Verdict: event.Pass, Score: 1}}
		r.Compared = []event.ComparedData{comparedData()}
	})
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	s, err := Listen(Options{RunsDir: runs, Run: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx) }()
	openShowing(t, ctx, s.URL(), "#fork-1 .compared", "#winner-patch .diff")
	checkInert(t, ctx, id)
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const a = document.querySelector('#fork-0 .compared'), b = document.querySelector('#fork-1 .compared');
		const line = "forks 0 and 1 disagree: fork 1 fails fork 0's grade.TestBoundary <script>";
		return !!a && !!b && a.dataset.with === '1' && b.dataset.with === '0' && a.dataset.disagreements === '1' &&
			a.textContent.startsWith('compared with fork 1') && b.textContent.startsWith('compared with fork 0') &&
			a.textContent.includes(line) && b.textContent.includes(line) && a.textContent.includes('(boundary_test.go:5); the suite does not cover it') &&
			a.textContent.includes("fork 1's grade.TestFail catches fork 0's survivor grade.go:7: \"fail\" → \"\" (RETURN_VALUE); the suite does not") &&
			a.textContent.includes("note: fork 1's <script>") && !a.textContent.includes('no difference');
	})()`))
	if err != nil || !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Logf("page: %s", text)
		t.Fatalf("the comparison is not shown on both cards (%v): %v", ok, err)
	}
	screenshot(t, ctx, "compared")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBrowserNeedsReview: a run that ended needs-review says so, names the
// fork, shows its findings and the judge's warnings as text, and crowns no
// fork.
func TestBrowserNeedsReview(t *testing.T) {
	ctx := tab(t)
	runs := t.TempDir()
	id := writeRunAs(t, runs, reviewEvents(), func(r *record.Run) {
		r.Status, r.Seconds = event.RunNeedsReview, 13
		r.Fork = []record.Fork{{N: 0, State: event.ForkExited, Verdict: event.Review, Score: 1, Findings: []string{"lib.go:3: testing.Testing() call (go-testing-mode)"}},
			{N: 1, State: event.ForkExited, Verdict: event.Fail, Reason: "tests failed"}}
	})
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	s, err := Listen(Options{RunsDir: runs, Run: id})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx) }()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("#needs-review"))); err != nil {
		t.Fatal(err)
	}
	if st := checkInertPage(t, ctx); st.WinnerDiff != "" || st.Apply != "" {
		t.Errorf("a winner is shown in a run that needs review: %q %q", st.WinnerDiff, st.Apply)
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const note = document.querySelector('#needs-review').textContent;
		const card = document.querySelector('#fork-0').textContent;
		return note.includes('fork(s) 0') && note.includes('forkbomb apply') &&
			card.includes('finding: lib.go:3: testing.Testing() call') && card.includes('judge warning: the untouched base, run with the sentinels') &&
			!document.querySelector('#winner') &&
			!document.querySelector('.card.winner');
	})()`))
	if err != nil || !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Logf("page: %s", text)
		t.Fatalf("the needs-review run is not shown as such (%v): %v", ok, err)
	}
	screenshot(t, ctx, "needs-review")
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "<", `\x3c`)
	return "'" + r.Replace(s) + "'"
}
