package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
	}
	c.Env = append(env, g.env...)
	return c
}

// run runs git and returns its stdout; on failure the error carries git's
// first line of stderr.
func (g gitCmd) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	c := g.cmd(ctx, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		return out.Bytes(), fmt.Errorf("git %s: %s (%w)", args[0], msg, err)
	}
	return out.Bytes(), nil
}

func (g gitCmd) text(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, args...)
	return strings.TrimSpace(string(out)), err
}
