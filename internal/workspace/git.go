package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// gitCmd runs git on the trusted side with everything that could run code
// or change output from the repository or the user's setup turned off:
// no system or global config, no hooks, no fsmonitor, no external diff or
// textconv, no pager, no opportunistic index writes (so reading the user's
// repository never writes to it), no prompts.
type gitCmd struct {
	gitDir   string // --git-dir, or "" to run in dir
	workTree string
	dir      string
	env      []string // extra variables
	maxOut   int64    // stdout over this many bytes is refused (0: no limit)
}

var gitSafety = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "diff.external=",
	"-c", "core.pager=cat",
	"-c", "safe.directory=*",
	"-c", "protocol.file.allow=always",
	"-c", "core.quotePath=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
	"-c", "user.name=forkbomb",
	"-c", "user.email=forkbomb@localhost",
	"-c", "commit.gpgSign=false",
}

func (g gitCmd) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{}, gitSafety...)
	if g.gitDir != "" {
		full = append(full, "--git-dir="+g.gitDir)
	}
	if g.workTree != "" {
		full = append(full, "--work-tree="+g.workTree)
	}
	full = append(full, args...)
	c := exec.CommandContext(ctx, "git", full...)
	c.Dir = g.dir
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/nonexistent",
		"LANG=C", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_GRAFT_FILE=/nonexistent", // a repository's grafts (deprecated) are not its history either
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
	}
	c.Env = append(env, g.env...)
	// git must not outlive forkbomb (a kill -9 included), nor hold a
	// Wait past its cancellation through a pipe a child kept open.
	c.SysProcAttr = procAttr()
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs git and returns its stdout; on failure the error carries the
// line of git's stderr that says why (reason).
func (g gitCmd) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	c := g.cmd(ctx, args...)
	var out bytes.Buffer
	errb := capBuffer{max: 64 << 10, quiet: true}
	c.Stdout, c.Stderr = &out, &errb
	if g.maxOut > 0 {
		c.Stdout = &capBuffer{buf: &out, max: g.maxOut}
	}
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if err := c.Run(); err != nil {
		if cw, ok := c.Stdout.(*capBuffer); ok && cw.over {
			return nil, &layerfs.LimitError{Path: "the patch", What: "bytes", Limit: g.maxOut}
		}
		return out.Bytes(), fmt.Errorf("git %s: %s (%w)", args[0], reason(errb.buf.String()), err)
	}
	return out.Bytes(), nil
}

// reason is the line of git's stderr that says why it failed: its first
// "fatal:" or "error:" line, else its first line that is not a hint or a
// warning (deprecation hints can come first), else its first line.
func reason(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") {
			return l
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "hint:") && !strings.HasPrefix(l, "warning:") && !strings.HasPrefix(l, "remote: warning:") {
			return l
		}
	}
	return strings.TrimSpace(lines[0])
}

// capBuffer keeps at most max bytes. Past that it fails the write (so
// the process writing gets EPIPE and exec stops copying), or with quiet
// drops the rest.
type capBuffer struct {
	buf   *bytes.Buffer
	max   int64
	quiet bool
	over  bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if c.buf == nil {
		c.buf = &bytes.Buffer{}
	}
	if room := c.max - int64(c.buf.Len()); int64(len(p)) > room {
		c.over = true
		if c.quiet {
			c.buf.Write(p[:max(room, 0)])
			return len(p), nil
		}
		return 0, errOutputCap
	}
	return c.buf.Write(p)
}

var errOutputCap = errors.New("output over its limit")

func (g gitCmd) text(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, args...)
	return strings.TrimSpace(string(out)), err
}
