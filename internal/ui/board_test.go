package ui

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
)

// writeBoard writes an eval board with the real writer: careful's two
// passes well tested (8/8, 7/8), sloppy's two weak (2/8 with survivors
// whose text, from a fork's patch, is markup; and one with no mutant at
// all), lazy's one failure. It returns the board's path.
func writeBoard(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lab", "eval", "board.json")
	b := &eval.Board{Path: path}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sv := []event.Survivor{{File: "version.go", Line: 31, Operator: "CONDITIONALS_BOUNDARY", Original: ">= " + inject, Replacement: ">"}}
	for i, a := range []eval.Attempt{
		{Engine: "api:careful", Task: "mined-semver-1", Fixed: true, Verdict: event.Pass, Run: "20260102-030405-aaaaaa", Seconds: 10, Tokens: 100, CostUSD: 0.01,
			Strength: &event.VerifiedData{Mutants: 8, Judged: 8, Caught: 8, Survivors: []event.Survivor{}}},
		{Engine: "api:careful", Task: "mined-semver-2", Fixed: true, Verdict: event.Pass, Run: "20260102-030405-bbbbbb", Seconds: 12, Tokens: 100, CostUSD: 0.01,
			Strength: &event.VerifiedData{Mutants: 9, Judged: 8, Caught: 7, Survivors: []event.Survivor{{File: "version.go", Line: 20, Operator: "ARITHMETIC_BASE", Original: "+", Replacement: "-"}}}},
		{Engine: "api:sloppy", Task: "mined-semver-1", Fixed: true, Verdict: event.Pass, Run: "20260102-030405-cccccc", Seconds: 8, Tokens: 50, CostUSD: 0.005,
			Strength: &event.VerifiedData{Mutants: 20, Judged: 8, Caught: 2, Survivors: sv}},
		{Engine: "api:sloppy", Task: "mined-semver-2", Fixed: true, Verdict: event.Pass, Run: "20260102-030405-dddddd", Seconds: 8, Tokens: 50, CostUSD: 0.005,
			Strength: &event.VerifiedData{Survivors: []event.Survivor{}}},
		{Engine: "api:lazy", Task: "mined-semver-1", Verdict: event.Fail, Run: "20260102-030405-eeeeee", Seconds: 2, Tokens: 10, CostUSD: 0.001},
	} {
		a.At = at.Add(time.Duration(i) * time.Minute)
		if err := b.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// boardJSON is what /api/board answers, as far as the tests read it.
type boardJSON struct {
	MinStrength float64 `json:"min_strength"`
	Total       int     `json:"total"`
	Table       []struct {
		Engine         string   `json:"engine"`
		Solved         int      `json:"solved"`
		Verified       int      `json:"verified"`
		WeakPasses     int      `json:"weak_passes"`
		MedianStrength *float64 `json:"median_strength"`
	} `json:"table"`
	Attempts []struct {
		Run  string `json:"run"`
		Weak bool   `json:"weak"`
	} `json:"attempts"`
}

// TestBoardServed: the API hands the page eval's standings with their
// strength columns, weak passes counted against ?min_strength= (eval's
// default without it), the newest attempt first with the table's word on
// whether it is weak. A board not yet written is an empty one, and
// reading it makes no folder; a view given no board has none; a share
// outside 0..1 is refused.
func TestBoardServed(t *testing.T) {
	t.Parallel()
	path := writeBoard(t)
	s := serve(t, Options{RunsDir: t.TempDir(), Board: path})
	var b boardJSON
	get(t, base(s)+"api/board", &b)
	if b.MinStrength != eval.DefaultMinStrength || b.Total != 5 || len(b.Table) != 3 || len(b.Attempts) != 5 {
		t.Fatalf("board: %+v", b)
	}
	weak := map[string]int{}
	for _, r := range b.Table {
		weak[r.Engine] = r.WeakPasses
		if r.Engine == "api:sloppy" && (r.Solved != 2 || r.Verified != 2 || r.MedianStrength == nil || *r.MedianStrength != 0.25) {
			t.Errorf("sloppy: %+v", r)
		}
		if r.Engine == "api:lazy" && r.MedianStrength != nil {
			t.Errorf("lazy has a strength: %+v", r)
		}
	}
	if weak["api:careful"] != 0 || weak["api:sloppy"] != 2 {
		t.Errorf("weak passes at 0.8: %v", weak)
	}
	if b.Attempts[0].Run != "20260102-030405-eeeeee" || b.Attempts[1].Run != "20260102-030405-dddddd" || !b.Attempts[1].Weak || b.Attempts[3].Weak {
		t.Errorf("attempts, newest first, sloppy's weak: %+v", b.Attempts)
	}
	// A stricter verifier: careful's 7/8 is weak at 0.95.
	get(t, base(s)+"api/board?min_strength=0.95", &b)
	for _, r := range b.Table {
		if r.Engine == "api:careful" && r.WeakPasses != 1 {
			t.Errorf("careful at 0.95: %+v", r)
		}
	}
	for _, q := range []string{"2", "-0.1", "x"} {
		resp, err := http.Get(base(s) + "api/board?min_strength=" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("min_strength=%s: %d, want 400", q, resp.StatusCode)
		}
	}

	dir := t.TempDir()
	none := serve(t, Options{RunsDir: dir, Board: filepath.Join(dir, "lab", "eval", "board.json")})
	var empty boardJSON
	get(t, base(none)+"api/board", &empty)
	if empty.Table == nil || len(empty.Table) != 0 || empty.Attempts == nil || len(empty.Attempts) != 0 {
		t.Errorf("a board not yet written: %+v", empty)
	}
	if _, err := os.Stat(filepath.Join(dir, "lab")); err == nil {
		t.Errorf("reading a board that does not exist made its folder")
	}
	resp, err := http.Get(base(serve(t, Options{RunsDir: dir})) + "api/board")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a view with no board: %d, want 404", resp.StatusCode)
	}
}

// TestBrowserBoard: the board page, reached from the runs list, shows
// each engine's median strength and weak passes, and the verifier's word
// on each attempt with its survivors as text (markup from a fork's patch
// stays inert). A stricter share typed into the page counts more passes
// weak; an attempt's row opens its run. A view with no board says so.
func TestBrowserBoard(t *testing.T) {
	ctx := tab(t)
	s := serve(t, Options{RunsDir: t.TempDir(), Board: writeBoard(t)})
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("#board-link")),
		chromedp.Click(chromedp.CSS("#board-link")), chromedp.WaitVisible(chromedp.CSS("#board"))); err != nil {
		t.Fatal(err)
	}
	// cells reads engine → [strength, weak] from the table.
	const cells = `Object.fromEntries([...document.querySelectorAll('#board tr[data-engine]')].map((r) =>
		[r.dataset.engine, [r.querySelector('.strength').textContent, r.querySelector('.weak').textContent]]))`
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string][]string](cells))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"api:careful": {"0.94", "0/2"}, "api:sloppy": {"0.25", "2/2"}, "api:lazy": {"—", "0/0"}}
	for e, w := range want {
		if g := got[e]; len(g) != 2 || g[0] != w[0] || g[1] != w[1] {
			t.Errorf("%s: strength and weak %q, want %q", e, g, w)
		}
	}
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const head = document.querySelector('#board tr').textContent;
		const sloppy = document.querySelector('#attempts tr[data-run="20260102-030405-cccccc"] .verifier');
		const careful = document.querySelector('#attempts tr[data-run="20260102-030405-bbbbbb"] .verifier');
		return head.includes('strength') && head.includes('weak<0.8') &&
			sloppy.classList.contains('weak') && sloppy.textContent.includes('2/8 mutants caught') &&
			sloppy.textContent.includes('survivor: version.go:31: >= <script>window.__pwned="script"</script>') &&
			!careful.classList.contains('weak') && careful.textContent.includes('7/8 mutants caught');
	})()`))
	if err != nil || !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the board's attempts (%v, %v): %s", ok, err, text)
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatal(err)
	}
	if st.Pwned != "undefined" || st.Handlers != 0 || st.JSLinks != 0 || st.Images != 0 || !st.AsText {
		t.Errorf("a survivor's markup was not kept inert: %+v", st)
	}
	screenshot(t, ctx, "board")

	// A stricter verifier, typed in: careful's 7/8 pass is weak too.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const i = document.querySelector('#min-strength'); i.value = '0.95'; i.dispatchEvent(new Event('change')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`location.hash === '#board=0.95' && !!document.querySelector('#board') &&
		document.querySelector('#board tr[data-engine="api:careful"] .weak').textContent === '1/2' &&
		document.querySelector('#board tr').textContent.includes('weak<0.95')`, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Errorf("at 0.95: %v", err)
	}
	// An attempt's row opens its run.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#attempts tr[data-run="20260102-030405-cccccc"]`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`location.hash === '#run=20260102-030405-cccccc'`, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Errorf("the attempt's row did not open its run: %v", err)
	}
	// A view with no board (run --ui's) says so.
	none := serve(t, Options{RunsDir: t.TempDir()})
	if err := chromedp.Do(ctx, chromedp.Navigate(none.URL()+"#board"), chromedp.WaitVisible(chromedp.CSS("#no-board"))); err != nil {
		t.Errorf("a view with no board: %v", err)
	}
}
