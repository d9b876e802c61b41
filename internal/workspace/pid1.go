package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NewOptions say what a pid 1 is a snapshot of.
type NewOptions struct {
	Repo        string // any folder inside the repository
	Rev         string // default HEAD
	WithChanges bool   // also the uncommitted tracked and untracked changes
	// Depth, when above 0, keeps the history to Rev and its ancestors fewer
	// than Depth commits from it (git fetch --depth): a bisect of a range
	// needs that range only, and a long history would cost its whole
	// transfer.
	Depth int
	// Temp makes a temporary pid 1, leased to this process until it is
	// removed: Store.Prune removes it once the process is gone (lease.go).
	Temp bool
}

// New makes a pid 1: a checkout of Rev whose history holds Rev and its
// ancestors only — no other branch, tag, stash or remote, so a fork can
// read neither a sibling's work nor the future. The user's repository is
// only read: git runs there with optional locks off, so not even the index
// is refreshed.
func (s *Store) New(ctx context.Context, name string, o NewOptions) (*Meta, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if o.Rev == "" {
		o.Rev = "HEAD"
	}
	if strings.HasPrefix(o.Rev, "-") {
		return nil, fmt.Errorf("%w: revision %q", ErrBadRepo, o.Rev)
	}
	top, base, err := s.resolve(ctx, o.Repo, o.Rev)
	if err != nil {
		return nil, err
	}
	user := gitCmd{dir: top}
	format := "sha1"
	if len(base) == 64 {
		format = "sha256"
	}
	var changes []byte
	var untracked []string
	if o.WithChanges {
		head, _ := user.text(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
		if head != base {
			return nil, fmt.Errorf("--with-changes snapshots the working tree, so it needs --rev HEAD")
		}
		if changes, err = user.run(ctx, nil, "diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", "HEAD", "--"); err != nil {
			return nil, err
		}
		out, err := user.run(ctx, nil, "ls-files", "-z", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		for _, p := range bytes.Split(out, []byte{0}) {
			if len(p) > 0 {
				untracked = append(untracked, string(p))
			}
		}
	}

	return s.createAlone(name, o.Temp, func(tmp, final string) (*Meta, error) {
		tree := filepath.Join(tmp, "tree")
		if err := os.Mkdir(tree, 0o755); err != nil {
			return nil, err
		}
		// No reflog is written (it would name where the snapshot came
		// from): nothing to expire after. reset on the unborn branch makes
		// it, at base, writing the files on every core (git's parallel
		// checkout, from 100 files up).
		g := gitCmd{dir: tree, env: []string{"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=core.logAllRefUpdates", "GIT_CONFIG_VALUE_0=false",
			"GIT_CONFIG_KEY_1=checkout.workers", "GIT_CONFIG_VALUE_1=0"}}
		// git keeps our GIT_GRAFT_FILE from the side that packs in the
		// user's repository (a local fetch's "remote"): it is given again
		// there, so that grafts in it do not ask for a history the
		// snapshot cannot have.
		fetch := []string{"fetch", "-q", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
			"--upload-pack=GIT_GRAFT_FILE=/nonexistent git-upload-pack"}
		if o.Depth > 0 {
			fetch = append(fetch, "--depth="+strconv.Itoa(o.Depth))
		}
		if _, err := g.run(ctx, nil, "init", "-q", "--object-format="+format, "--initial-branch=forkbomb"); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", o.Rev, err)
		}
		// A kept pid 1 of an ancestor gives the history it shares
		// (seed.go); the fetch then copies only the rest.
		var unref func()
		if o.Depth <= 0 {
			unref = s.seed(ctx, top, base, filepath.Join(tree, ".git"))
		}
		_, err := g.run(ctx, nil, append(fetch, top, base)...)
		if unref != nil {
			unref()
		}
		if err == nil {
			_, err = g.run(ctx, nil, "reset", "-q", "--hard", base)
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", o.Rev, err)
		}
		if o.WithChanges {
			if err := copyUntracked(top, tree, untracked); err != nil {
				return nil, err
			}
			if len(changes) > 0 {
				if _, err := g.run(ctx, changes, "apply", "--binary", "--whitespace=nowarn", "-"); err != nil {
					return nil, fmt.Errorf("apply uncommitted changes: %w", err)
				}
			}
			if _, err := g.run(ctx, nil, "add", "-A"); err != nil {
				return nil, err
			}
			if _, err := g.run(ctx, nil, "commit", "-q", "--allow-empty", "--no-verify", "-m", "forkbomb: uncommitted changes"); err != nil {
				return nil, err
			}
		}
		ignores, err := checkTree(tree)
		if err != nil {
			return nil, err
		}
		// Nothing of the user's repository but the snapshot: no sample
		// hooks (and, above, no reflog or message naming where it came
		// from).
		os.RemoveAll(filepath.Join(tree, ".git", "hooks"))
		os.Mkdir(filepath.Join(tree, ".git", "hooks"), 0o755)
		head := base
		if o.WithChanges {
			if head, err = g.text(ctx, "rev-parse", "HEAD"); err != nil {
				return nil, err
			}
		}
		return &Meta{Kind: KindPid1, Method: MethodSnapshot, Pid1: filepath.Base(final), Repo: top, Rev: o.Rev, Base: head, Ignores: ignores,
			Seed: o.Depth <= 0 && !o.WithChanges}, nil
	})
}

// ResolveBase returns the top of the repository holding dir and the
// commit rev names there, reading the repository only.
func ResolveBase(ctx context.Context, dir, rev string) (top, commit string, err error) {
	if rev == "" {
		rev = "HEAD"
	}
	if strings.HasPrefix(rev, "-") {
		return "", "", fmt.Errorf("%w: revision %q", ErrBadRepo, rev)
	}
	return (&Store{}).resolve(ctx, dir, rev)
}

func (s *Store) resolve(ctx context.Context, dir, rev string) (top, base string, err error) {
	repo, err := filepath.Abs(dir)
	if err == nil {
		repo, err = filepath.EvalSymlinks(repo)
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: %s: no such directory", ErrBadRepo, dir)
	}
	// One git process for both: the top, then (where rev names a commit)
	// the commit, one to a line; a work tree with no such commit prints
	// the top alone and fails.
	out, revErr := gitCmd{dir: repo}.text(ctx, "rev-parse", "--show-toplevel", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	top = out
	if i := strings.LastIndexByte(out, '\n'); i >= 0 && revErr == nil {
		top, base = out[:i], out[i+1:]
	} else if revErr == nil {
		top = "" // one line and no failure: not the two answers asked for
	}
	if top == "" {
		return "", "", fmt.Errorf("%w: %s is not inside a git work tree", ErrBadRepo, dir)
	}
	if c, err := filepath.EvalSymlinks(top); err == nil {
		top = c
	}
	if s.Root != "" && within(s.Root, top) {
		return "", "", fmt.Errorf("%w: %s is inside %s; set FORKBOMB_HOME elsewhere", ErrStateInRepo, s.Root, top)
	}
	if revErr != nil || !IsObjectName(base) {
		if rev == "HEAD" {
			return "", "", fmt.Errorf("%w: %s has no commits", ErrBadRepo, top)
		}
		return "", "", fmt.Errorf("%w: %s: no commit %q", ErrBadRepo, top, rev)
	}
	return top, base, nil
}

// copyUntracked copies the user's untracked files into the snapshot,
// opening them beneath the repository only (os.Root), so a path cannot
// lead out of it.
func copyUntracked(top, tree string, paths []string) error {
	src, err := os.OpenRoot(top)
	if err != nil {
		return err
	}
	defer src.Close()
	for _, p := range paths {
		fi, err := src.Lstat(p)
		if err != nil {
			return fmt.Errorf("untracked %s: %w", p, err)
		}
		dst := filepath.Join(tree, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := src.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			in, err := src.Open(p)
			if err != nil {
				return err
			}
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
			if err == nil {
				_, err = io.Copy(out, in)
				if cerr := out.Close(); err == nil {
					err = cerr
				}
			}
			in.Close()
			if err != nil {
				return fmt.Errorf("untracked %s: %w", p, err)
			}
		}
	}
	return nil
}

// checkTree refuses a tree holding a symlink that points outside it:
// inside a sandbox it would lead into the host's read-only view, and on
// the trusted side any code that followed it would leave the workspace.
// It returns the tree's .gitignore files (slash-separated, relative), the
// ones a diff reads its ignore rules from.
func checkTree(tree string) (ignores []string, err error) {
	err = filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && filepath.Dir(p) == tree {
			return filepath.SkipDir
		}
		if d.Name() == ".gitignore" && !d.IsDir() {
			rel, _ := filepath.Rel(tree, p)
			ignores = append(ignores, filepath.ToSlash(rel))
		}
		if d.Type()&os.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		resolved := filepath.Join(filepath.Dir(p), target)
		if filepath.IsAbs(target) || !within(resolved, tree) {
			return fmt.Errorf("%w: the symlink %s points outside the repository (%s)", ErrBadRepo, rel, target)
		}
		return nil
	})
	return ignores, err
}

// IsObjectName says whether s is a full object name: 40 (SHA-1) or 64
// (SHA-256) lowercase hex digits.
func IsObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+string(filepath.Separator))
}
