package mine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Runs is how many times the gold and the empty patch are each judged:
// a test whose outcome differs between runs is flaky, not a task.
const Runs = 3

// Options say what to mine.
type Options struct {
	Store *workspace.Store
	Lab   *lab.Store
	// CacheDir holds the judge's baselines (as a race's judge does).
	CacheDir string
	Repo     string // any folder inside the repository (only read)
	Rev      string // the newest commit walked; default HEAD
	Last     int    // first-parent commits walked back from Rev; default 20
	// Paths, when set, keep only commits that touch a file under one of
	// these folders or matching one of these globs.
	Paths   []string
	Test    string        // the test command; "" detects it per commit
	Timeout time.Duration // per judged test run; default 5 minutes
	// Parallel bounds the judged runs at once (default: one per core).
	Parallel int
	// Judge readies the judge of one base (nil: judge.Prepare). Tests
	// give one whose outcomes they choose.
	Judge func(ctx context.Context, o judge.Options) (Judger, error)
	// Progress gets a line as each commit is examined and decided.
	Progress io.Writer
}

// Judger judges patches against one base, as *judge.Judger does.
type Judger interface {
	Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error)
}

// Commit is one walked commit and what became of it.
type Commit struct {
	Commit  string `json:"commit"`
	Parent  string `json:"parent,omitempty"`
	Subject string `json:"subject"`
	// Task is the stored task's id when kept; Reason why not.
	Task       string   `json:"task,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Test       string   `json:"test,omitempty"`
	Hidden     []string `json:"hidden,omitempty"` // the test files hidden from agents
	FailToPass []string `json:"fail_to_pass,omitempty"`
	PassToPass int      `json:"pass_to_pass,omitempty"`
	// Warnings: the judge's about its verdicts on the commit's own code
	// (judge.Verdict.Warnings), each once — sentinels the parent gets
	// wrong too and that were not checked, hidden tests that add none.
	Warnings []string `json:"warnings,omitempty"`
}

// Result is a finished mining.
type Result struct {
	Repo    string   `json:"repo"`
	Kept    []Commit `json:"kept"`
	Skipped []Commit `json:"skipped"`
	Seconds float64  `json:"seconds"`
}

// Run mines. Its own snapshot, and the forks the judge makes, are removed
// when it returns; the judge keeps its pid 1 of each base, as a race's
// does, for the next judgement of that base.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Last < 1 {
		o.Last = 20
	}
	if o.Rev == "" {
		o.Rev = "HEAD"
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Judge == nil {
		o.Judge = func(ctx context.Context, jo judge.Options) (Judger, error) { return judge.Prepare(ctx, jo) }
	}
	top, head, err := workspace.ResolveBase(ctx, o.Repo, o.Rev)
	if err != nil {
		return nil, err
	}
	pid1 := "mine-" + lab.NewID()
	if _, err := o.Store.New(ctx, pid1, workspace.NewOptions{Repo: top, Rev: head, Temp: true}); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", o.Rev, err)
	}
	defer o.Store.Remove(context.WithoutCancel(ctx), pid1)
	h, err := o.Store.History(pid1)
	if err != nil {
		return nil, err
	}
	commits, err := walk(ctx, h, head, o.Last)
	if err != nil {
		return nil, err
	}
	m := &miner{o: o, h: h, top: top}
	res := &Result{Repo: top, Kept: []Commit{}, Skipped: []Commit{}}
	// Oldest first: each judged parent's pid 1 is then seeded from the one
	// before it, its ancestor (workspace/seed.go), and copies only the
	// commits between them, not the whole history each time. The result
	// lists them newest first.
	for i := range commits {
		c := commits[len(commits)-1-i]
		subject, _ := h.Subject(ctx, c)
		m.progress("[%d/%d] %s %s\n", i+1, len(commits), short(c), subject)
		got, err := m.commit(ctx, c, subject)
		if err != nil {
			return nil, fmt.Errorf("mine %s: %w", short(c), err)
		}
		if got.Task != "" {
			res.Kept = append(res.Kept, got)
			m.progress("      kept as task %s: %s fail on the parent and pass with the commit\n", got.Task, strings.Join(got.FailToPass, ", "))
		} else {
			res.Skipped = append(res.Skipped, got)
			m.progress("      skipped: %s\n", got.Reason)
		}
		for _, w := range got.Warnings {
			m.progress("      judge's warning: %s\n", event.Printable(w))
		}
	}
	slices.Reverse(res.Kept)
	slices.Reverse(res.Skipped)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// walk lists head and its first parents, newest first, at most n.
func walk(ctx context.Context, h *workspace.History, head string, n int) ([]string, error) {
	var out []string
	for c := head; c != "" && len(out) < n; {
		out = append(out, c)
		ps, err := h.Parents(ctx, c)
		if err != nil {
			return nil, err
		}
		c = ""
		if len(ps) > 0 {
			c = ps[0]
		}
	}
	return out, nil
}

type miner struct {
	o   Options
	h   *workspace.History
	top string
}

func (m *miner) progress(format string, args ...any) {
	if m.o.Progress != nil {
		fmt.Fprintf(m.o.Progress, format, args...)
	}
}

// commit examines one commit: the cheap reasons to skip it first (read
// from history), then the judged ones.
func (m *miner) commit(ctx context.Context, c, subject string) (Commit, error) {
	out := Commit{Commit: c, Subject: subject}
	skip := func(format string, args ...any) (Commit, error) {
		out.Reason = fmt.Sprintf(format, args...)
		return out, nil
	}
	ps, err := m.h.Parents(ctx, c)
	if err != nil {
		return out, err
	}
	switch {
	case len(ps) == 0:
		return skip("the root commit: no parent to start from")
	case len(ps) > 1:
		return skip("a merge commit")
	}
	out.Parent = ps[0]
	id := lab.MinedPrefix + slug(filepath.Base(m.top)) + "-" + short(c)
	if _, _, err := m.o.Lab.Read(lab.KindTask, id); err == nil {
		return skip("already stored as task %s", id)
	}
	changes, err := m.h.Changed(ctx, out.Parent, c)
	if err != nil {
		return out, err
	}
	if len(m.o.Paths) > 0 && !touches(changes, m.o.Paths) {
		return skip("touches none of --paths")
	}
	var tests, code []workspace.Change
	for _, ch := range changes {
		if judge.IsTestPath(ch.Path) {
			tests = append(tests, ch)
		} else {
			code = append(code, ch)
		}
	}
	switch {
	case len(tests) == 0:
		return skip("no test change")
	case len(code) == 0:
		return skip("no code change (only tests or their configuration)")
	}
	for _, t := range tests {
		switch {
		case t.Status == "D":
			return skip("deletes %s: hidden tests can add or replace files, never remove one", t.Path)
		case t.Mode != "100644" && t.Mode != "100755":
			return skip("%s is not a regular file (mode %s)", t.Path, t.Mode)
		}
		out.Hidden = append(out.Hidden, t.Path)
	}
	out.Test = m.o.Test
	if out.Test == "" {
		if out.Test = detect(ctx, m.h, c, out.Hidden); out.Test == "" {
			return skip("no test command detected for %s (give --test)", strings.Join(out.Hidden, ", "))
		}
	}
	staged, err := m.o.Lab.StagingDir()
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(staged) // a no-op once moved into place
	hidden := filepath.Join(staged, "hidden")
	if err := m.writeHidden(ctx, c, hidden, out.Hidden); err != nil {
		return out, err
	}
	if reason, err := m.check(ctx, &out, hidden); err != nil || reason != "" {
		out.Reason = reason
		return out, err
	}
	msg, err := m.h.Message(ctx, c)
	if err != nil {
		return out, err
	}
	dst, err := m.o.Lab.MinedDir(id)
	if err != nil {
		return out, err
	}
	task, err := taskFile(m.top, out, msg, filepath.Join(dst, "hidden"))
	if err != nil {
		return out, err
	}
	if err := writeProvenance(staged, out); err != nil {
		return out, err
	}
	if err := m.o.Lab.AddMined(id, task, staged); err != nil {
		if errors.Is(err, lab.ErrExists) {
			return skip("already stored as task %s", id)
		}
		return out, err
	}
	out.Task = id
	return out, nil
}

// writeHidden writes each test file as it is at commit c under dir,
// through an os.Root: the names come from the repository.
func (m *miner) writeHidden(ctx context.Context, c, dir string, files []string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range files {
		data, err := m.h.Blob(ctx, c, f)
		if err != nil {
			return fmt.Errorf("read %s: %w", f, err)
		}
		if d := path.Dir(f); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return fmt.Errorf("hidden test %s: %w", f, err)
			}
		}
		if err := root.WriteFile(filepath.FromSlash(f), data, 0o644); err != nil {
			return fmt.Errorf("hidden test %s: %w", f, err)
		}
	}
	return nil
}

// touches: a change under one of paths (a folder) or matching one (a glob).
func touches(changes []workspace.Change, paths []string) bool {
	for _, ch := range changes {
		for _, p := range paths {
			p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/...")
			p = strings.TrimSuffix(p, "/")
			if ok, _ := path.Match(p, ch.Path); ok || strings.HasPrefix(ch.Path, p+"/") || ch.Path == p {
				return true
			}
		}
	}
	return false
}

func short(c string) string { return c[:min(12, len(c))] }

// slug makes a folder name usable in an id ([A-Za-z0-9_-]).
func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		return "repo"
	}
	return string(b[:min(len(b), 40)])
}
