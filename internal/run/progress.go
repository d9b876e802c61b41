package run

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// progress shows one line per fork — state, turns, last tool call,
// verdict — redrawn in place on a terminal, as plain lines otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	forks []forkLine
	drawn int
}

type forkLine struct {
	state, tool, verdict string
	turns                int
}

func newProgress(w io.Writer, forks int) *progress {
	p := &progress{w: w, forks: make([]forkLine, forks)}
	if f, ok := w.(*os.File); ok {
		p.tty = isTerminal(f)
	}
	for i := range p.forks {
		p.forks[i].state = "waiting"
	}
	return p
}

// logf prints a run-level line above the fork lines.
func (p *progress) logf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format+"\n", a...)
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
	return s
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
		line := fmt.Sprintf("fork %d: %s", n, l.text())
		if len(line) > 120 {
			line = line[:117] + "..."
		}
		fmt.Fprintln(p.w, strings.ReplaceAll(line, "\n", " "))
	}
	p.drawn = len(p.forks)
}
