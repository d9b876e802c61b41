package run_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// memStore is a fork store held in memory: a pid 1 is a map of files, a
// fork a copy of it, a patch the list of files that changed. It runs no
// command: nothing here needs a sandbox.
type memStore struct {
	base map[string]string // the pid 1's files
	// unified: Diff writes a git patch (each changed file one hunk of
	// all its lines) instead of a list of files.
	unified bool

	mu sync.Mutex
	ws map[string]*memWorkspace
}

type memWorkspace struct {
	meta  workspace.Meta
	files *memFiles
}

var _ run.Forks = (*memStore)(nil)

func newMemStore(base map[string]string) *memStore {
	return &memStore{base: base, ws: map[string]*memWorkspace{}}
}

func (s *memStore) Get(_ context.Context, name string) (*workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.ws[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, workspace.ErrNotFound)
	}
	m := w.meta
	return &m, nil
}

func (s *memStore) New(_ context.Context, name string, o workspace.NewOptions) (*workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ws[name]; ok {
		return nil, workspace.ErrExists
	}
	w := &memWorkspace{meta: workspace.Meta{Name: name, Kind: workspace.KindPid1, Pid1: name, Repo: o.Repo}, files: &memFiles{files: map[string]string{}}}
	for p, c := range s.base {
		w.files.files[p] = c
	}
	s.ws[name] = w
	m := w.meta
	return &m, nil
}

func (s *memStore) Fork(_ context.Context, src, dst string) (*workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, ok := s.ws[src]
	if !ok {
		return nil, workspace.ErrNotFound
	}
	w := &memWorkspace{meta: workspace.Meta{Name: dst, Kind: workspace.KindFork, Source: src, Pid1: from.meta.Pid1}, files: from.files.clone()}
	s.ws[dst] = w
	m := w.meta
	return &m, nil
}

func (s *memStore) Exec(context.Context, string, sandbox.Policy, sandbox.Stdio) (*sandbox.Result, error) {
	return nil, errors.New("the memory store runs no command")
}

func (s *memStore) Remove(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ws[name]; !ok {
		return workspace.ErrNotFound
	}
	delete(s.ws, name)
	return nil
}

func (s *memStore) Snapshot(_ context.Context, name string) (string, error) {
	return "", errors.New("the memory store has no folder on disk")
}

// Diff lists each changed file with its new content, sorted: enough of a
// patch for the fake judge.
func (s *memStore) Diff(_ context.Context, name string, _ bool) (*workspace.Diff, error) {
	s.mu.Lock()
	w, ok := s.ws[name]
	s.mu.Unlock()
	if !ok {
		return nil, workspace.ErrNotFound
	}
	w.files.mu.Lock()
	defer w.files.mu.Unlock()
	var out []string
	for p, c := range w.files.files {
		if s.base[p] != c {
			if s.unified {
				out = append(out, wholeFileDiff(p, s.base[p], c))
			} else {
				out = append(out, p+": "+c)
			}
		}
	}
	sort.Strings(out)
	if s.unified {
		return &workspace.Diff{Patch: []byte(strings.Join(out, ""))}, nil
	}
	return &workspace.Diff{Patch: []byte(strings.Join(out, "\n"))}, nil
}

// wholeFileDiff is a git patch of one file whose every line changed
// (both ending in a newline).
func wholeFileDiff(p, old, cur string) string {
	lines := func(s, sign string) (string, int) {
		ls := strings.SplitAfter(s, "\n")
		ls = ls[:len(ls)-1]
		if len(ls) == 0 {
			return "", 0
		}
		return sign + strings.Join(ls, sign), len(ls)
	}
	o, on := lines(old, "-")
	c, cn := lines(cur, "+")
	return fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1,%d +1,%d @@\n%s%s", p, p, p, p, on, cn, o, c)
}

func (s *memStore) Files(_ context.Context, name string) (string, workspace.Files, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.ws[name]
	if !ok {
		return "", nil, workspace.ErrNotFound
	}
	return "/mem/" + name, w.files, nil
}

func (s *memStore) List(context.Context) ([]*workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*workspace.Meta
	for _, w := range s.ws {
		m := w.meta
		out = append(out, &m)
	}
	return out, nil
}

// memFiles are a workspace's files in memory (workspace.Files).
type memFiles struct {
	mu    sync.Mutex
	files map[string]string
}

var _ workspace.Files = (*memFiles)(nil)

func (f *memFiles) clone() *memFiles {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &memFiles{files: make(map[string]string, len(f.files))}
	for p, s := range f.files {
		c.files[p] = s
	}
	return c
}

func (f *memFiles) Stat(_ context.Context, rel string) (fs.FileMode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[rel]; ok {
		return 0o644, nil
	}
	for p := range f.files {
		if rel == "." || strings.HasPrefix(p, rel+"/") {
			return fs.ModeDir | 0o755, nil
		}
	}
	return 0, fs.ErrNotExist
}

func (f *memFiles) Read(_ context.Context, rel string, max int64) ([]byte, fs.FileMode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.files[rel]
	if !ok {
		return nil, 0, fs.ErrNotExist
	}
	if int64(len(c)) > max {
		return nil, 0, errors.New("too large")
	}
	return []byte(c), 0o644, nil
}

func (f *memFiles) List(_ context.Context, rel string, max int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	for p := range f.files {
		if rel != "." {
			var ok bool
			if p, ok = strings.CutPrefix(p, rel+"/"); !ok {
				continue
			}
		}
		first, rest, dir := strings.Cut(p, "/")
		if dir && rest != "" {
			first += "/"
		}
		seen[first] = true
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out[:min(len(out), max)], nil
}

func (f *memFiles) Write(_ context.Context, rel string, data []byte, _ fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path.Clean(rel)] = string(data)
	return nil
}

// memAgent is an engine that is no process: each fork's behaviour is a
// function of its files, its task's events and its context.
type memAgent struct {
	act func(ctx context.Context, files workspace.Files, t engine.Task) engine.Outcome
}

func (a memAgent) Info() engine.Info { return engine.Info{Name: "memory"} }

func (a memAgent) Run(ctx context.Context, w engine.Workspace, t engine.Task) engine.Outcome {
	_, files, err := w.Files(ctx)
	if err != nil {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	return a.act(ctx, files, t)
}

// memJudge passes a patch that holds want, and fails the rest; judged
// counts the verdicts given.
type memJudge struct {
	want    string
	review  string // a passing patch that also holds this is "review", with a finding
	mu      sync.Mutex
	judged  int
	onJudge func(n int) // called with the count after each verdict
}

func (j *memJudge) Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*judge.Verdict
	for _, p := range patches {
		v := &judge.Verdict{Verdict: event.Fail, Reason: "the patch lacks the fix"}
		if strings.Contains(string(p), j.want) {
			v = &judge.Verdict{Verdict: event.Pass, Reason: "1 test fixed", Score: judge.Score{Value: 1}}
			if j.review != "" && strings.Contains(string(p), j.review) {
				v = &judge.Verdict{Verdict: event.Review, Reason: "needs review: the tests pass, but ...", Score: judge.Score{Value: 1},
					Findings: []judge.Finding{{File: "lib.sh", Line: 1, Rule: "sh-test-mode", Construct: "a test-mode check"}},
					Warnings: []string{"sentinel S is excused"}}
			}
		}
		out = append(out, v)
	}
	j.mu.Lock()
	j.judged++
	n := j.judged
	j.mu.Unlock()
	if j.onJudge != nil {
		j.onJudge(n)
	}
	return out, nil
}
