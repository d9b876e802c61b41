package judge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// gitCheckTimeout bounds each git run of the cross-check. Reading a patch
// is linear in its size; a patch that keeps git busy this long is refused.
const gitCheckTimeout = 60 * time.Second

// gitCheck asks git itself which paths text touches and refuses the patch
// when that differs from what the judge parsed: git apply is what applies
// the patch (in the judged copy, and on the user's branch), so whatever
// git would read, the strip rules must have seen. `git apply --numstat -z`
// names each file it would patch by its new path (its old one for a
// deletion); the same with -R names the old path (the new one for a
// creation), so both sides of renames and copies are compared, byte for
// byte. Git runs outside any repository on an empty folder, reading the
// patch from stdin, with no configuration, hooks or attributes, under a
// deadline, its output bounded, dying with forkbomb.
func gitCheck(ctx context.Context, text []byte, files []filePatch) error {
	if len(files) == 0 {
		return nil
	}
	var wantFwd, wantRev []string
	for _, f := range files {
		wantFwd = append(wantFwd, cmp(f.newPath, f.oldPath))
		wantRev = append(wantRev, cmp(f.oldPath, f.newPath))
	}
	// Both readings at once: each is a git process of its own.
	var got [2][]string
	var errs [2]error
	var wg sync.WaitGroup
	for i, reverse := range []bool{false, true} {
		wg.Go(func() { got[i], errs[i] = gitNumstat(ctx, text, reverse) })
	}
	wg.Wait()
	for i, want := range [][]string{wantFwd, wantRev} {
		if errs[i] != nil {
			return errs[i]
		}
		if !sameSet(got[i], want) {
			return fmt.Errorf("%w (git reads the paths %s where the judge read %s)", ErrUnattributed, quoteList(got[i]), quoteList(want))
		}
	}
	return nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) > 6 {
		q = append(q[:6], fmt.Sprintf("and %d more", len(l)-6))
	}
	return "[" + strings.Join(q, " ") + "]"
}

// gitNumstat runs git apply --numstat -z [-R] on text and returns the
// names it prints. A patch git cannot read is refused with git's reason;
// a git that cannot start is the judge's own failure.
func gitNumstat(ctx context.Context, text []byte, reverse bool) ([]string, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("%w: git not found: %v", ErrCannotJudge, err)
	}
	dir, err := os.MkdirTemp("", "forkbomb-patchcheck-")
	if err != nil {
		return nil, fmt.Errorf("%w: patch check: %v", ErrCannotJudge, err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, gitCheckTimeout)
	defer cancel()
	args := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false",
		"-c", "apply.whitespace=nowarn", "apply", "--numstat", "-z"}
	if reverse {
		args = append(args, "-R")
	}
	c := exec.CommandContext(ctx, gitBin, args...)
	c.Dir = dir
	c.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0",
	}
	c.Stdin = bytes.NewReader(text)
	out := &boundedBuffer{max: len(text) + 1<<20}
	errb := &boundedBuffer{max: 8 << 10, quiet: true}
	c.Stdout, c.Stderr = out, errb
	c.SysProcAttr = helperProcAttr()
	c.WaitDelay = 2 * time.Second
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("%w (git took over %s to read it)", ErrUnattributed, gitCheckTimeout)
		case out.over:
			return nil, fmt.Errorf("%w (git's reading of it is over its size bound)", ErrUnattributed)
		case errors.As(err, &ee):
			return nil, fmt.Errorf("the patch does not apply: %w (git cannot read it: %s)", ErrUnattributed, firstLine(errb.b.String()))
		}
		return nil, fmt.Errorf("%w: patch check: %v", ErrCannotJudge, err)
	}
	var names []string
	for _, rec := range bytes.Split(out.b.Bytes(), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		f := bytes.SplitN(rec, []byte("\t"), 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w (git's reading of it is malformed: %q)", ErrUnattributed, rec)
		}
		names = append(names, string(f[2]))
	}
	return names, nil
}

// boundedBuffer keeps at most max bytes; past that it fails the write
// (the writer sees EPIPE) or, when quiet, drops the rest.
type boundedBuffer struct {
	b     bytes.Buffer
	max   int
	quiet bool
	over  bool
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); len(p) > room {
		w.over = true
		if w.quiet {
			w.b.Write(p[:max(room, 0)])
			return len(p), nil
		}
		return 0, errors.New("output over its bound")
	}
	return w.b.Write(p)
}
