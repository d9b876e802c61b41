package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Apply puts a patch on a new branch of the user's repository: a commit on
// top of base holding the patch, made with plumbing and a scratch index,
// so the user's working tree, index and current branch are untouched. It
// refuses a branch that exists. This is the one place forkbomb writes to
// the user's repository.
func Apply(ctx context.Context, repo, base string, patch []byte, branch, message string) (string, error) {
	top, _, err := ResolveBase(ctx, repo, base)
	if err != nil {
		return "", err
	}
	g := gitCmd{dir: top}
	if _, err := g.run(ctx, nil, "check-ref-format", "--branch", branch); err != nil {
		return "", fmt.Errorf("%q is not a valid branch name", branch)
	}
	if _, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return "", fmt.Errorf("branch %s already exists; choose another with --branch", branch)
	}
	tmp, err := os.MkdirTemp("", "forkbomb-apply-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	now := time.Now().Format(time.RFC3339)
	g.env = []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"), "GIT_AUTHOR_DATE=" + now, "GIT_COMMITTER_DATE=" + now}
	if _, err := g.run(ctx, nil, "read-tree", base); err != nil {
		return "", err
	}
	if len(patch) > 0 {
		if _, err := g.run(ctx, patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
			return "", fmt.Errorf("the patch does not apply to %s: %w", base, err)
		}
	}
	tree, err := g.text(ctx, "write-tree")
	if err != nil {
		return "", err
	}
	commit, err := g.text(ctx, "commit-tree", tree, "-p", base, "-m", message)
	if err != nil {
		return "", err
	}
	zero := ""
	for range base {
		zero += "0"
	}
	// the old value "0…0" makes update-ref fail if the branch appeared meanwhile
	if _, err := g.run(ctx, nil, "update-ref", "refs/heads/"+branch, commit, zero); err != nil {
		return "", err
	}
	return commit, nil
}
