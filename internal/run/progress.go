package run

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/event"
)

// progress shows one line per fork — state, turns, last tool call,
// verdict — redrawn in place on a terminal, as plain lines otherwise. It
// is a subscriber of the race's events (Handle): it reads what happened
// from them and nothing else, so a later view (a web page) can be built
// the same way.
type progress struct {
	w      io.Writer
	tty    bool
	all    bool            // the race keeps the best of all forks
	header string          // the run's line, printed at run_start
	warned map[string]bool // the judge's warnings printed so far: each once
	mu     sync.Mutex
	forks  []forkLine
	drawn  int
}

type forkLine struct {
	state, tool, verdict string
	turns                int
}

func newProgress(w io.Writer, forks int, all bool, header string) *progress {
	p := &progress{w: w, forks: make([]forkLine, forks), all: all, header: header, warned: map[string]bool{}}
	if f, ok := w.(*os.File); ok {
		p.tty = isTerminal(f)
	}
	for i := range p.forks {
		p.forks[i].state = "waiting"
	}
	return p
}

// Handle implements event.Subscriber. A terminal that cannot be written
// is no reason to stop a race: its errors are not returned.
func (p *progress) Handle(ev event.Event) error {
	n := ev.Fork
	if n >= len(p.forks) {
		return nil
	}
	switch d := ev.Data.(type) {
	case event.RunStartData:
		p.logf("%s", p.header)
	case event.ForkStartData:
		p.update(n, func(l *forkLine) { l.state = "working" })
	case event.ToolCallData:
		p.toolCall(n, d.Tool, string(d.Input))
	case event.AgentToolCallData:
		in, _ := json.Marshal(d.Input)
		p.toolCall(n, d.Tool, string(in))
	case event.CodexToolCallData:
		p.toolCall(n, d.Tool, d.Name+d.Query)
	case event.ForkExitData:
		p.update(n, func(l *forkLine) {
			l.state = fmt.Sprintf("%s (exit %d, %.1fs)", d.State, d.Exit, d.Seconds)
			if d.Reason != "" {
				l.state = fmt.Sprintf("%s: %s (%.1fs)", d.State, d.Reason, d.Seconds)
			}
		})
	case event.VerdictData:
		for _, w := range d.Warnings {
			if p.firstTime(w) {
				p.logf("judge: warning: %s", w)
			}
		}
		p.update(n, func(l *forkLine) { l.verdict = fmt.Sprintf("%s: %s", d.Verdict, d.Reason) })
	case event.VerifiedData:
		p.logf("%s", verifiedLine(n, d))
	case event.ComparedData:
		p.logf("%s", strings.Join(d.Lines(), "\n  "))
	case event.WinnerData:
		if p.all {
			p.logf("winner: fork %d (best of all)", n)
		} else {
			p.logf("winner: fork %d", n)
		}
	default:
		if ev.Kind() == event.ModelResponse { // whichever source: the api loop, an agent CLI, the proxy
			p.update(n, func(l *forkLine) { l.turns++ })
		}
	}
	return nil
}

// firstTime says whether warning w is new to the view, and notes it.
func (p *progress) firstTime(w string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.warned[w]
	p.warned[w] = true
	return !seen
}

func (p *progress) toolCall(n int, tool, input string) {
	p.update(n, func(l *forkLine) { l.tool = fmt.Sprintf("%s %.60s", tool, input) })
}

// logf prints a run-level line above the fork lines (its own line breaks kept, each line
// printable: it may quote what a fork or its model wrote).
func (p *progress) logf(format string, a ...any) {
	lines := strings.Split(fmt.Sprintf(format, a...), "\n")
	for i, l := range lines {
		lines[i] = event.Printable(l)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintln(p.w, strings.Join(lines, "\n"))
	p.draw()
}

// update changes fork n's line; plain mode prints what changed.
func (p *progress) update(n int, f func(*forkLine)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.forks[n]
	f(&p.forks[n])
	if p.tty {
		p.clear()
		p.draw()
		return
	}
	after := p.forks[n]
	if after.state != before.state || after.verdict != before.verdict {
		fmt.Fprintf(p.w, "fork %d: %s\n", n, after.text())
	}
}

// text is the fork's line, printable: its tool call and verdict quote what the fork's model
// and tests wrote.
func (l forkLine) text() string {
	s := l.state
	if l.turns > 0 {
		s += fmt.Sprintf(", %d turns", l.turns)
	}
	if l.tool != "" && l.verdict == "" {
		s += ", last: " + l.tool
	}
	if l.verdict != "" {
		s += " — " + l.verdict
	}
	return event.Printable(s)
}

func (p *progress) clear() {
	if p.tty && p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
}

func (p *progress) draw() {
	if !p.tty {
		return
	}
	for n, l := range p.forks {
		fmt.Fprintln(p.w, event.Clip(fmt.Sprintf("fork %d: %s", n, l.text()), 120))
	}
	p.drawn = len(p.forks)
}

// verifiedLine is the verifier's word on fork n as progress prints it,
// read back from the event's data: "verifier: 7/9 mutants of fork 0's
// patch caught",
// then one line per survivor.
func verifiedLine(n int, d event.VerifiedData) string {
	line := "verifier: " + d.Summary(fmt.Sprintf("fork %d's patch", n))
	if d.Unverified {
		line += fmt.Sprintf(" — unverified: tests too weak (below --min-strength %g)", d.MinStrength)
	}
	for _, s := range d.Survivors {
		line += "\n  survivor: " + s.String()
	}
	return line
}
