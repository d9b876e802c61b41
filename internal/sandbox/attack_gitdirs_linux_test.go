package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// gitDirsFixture makes a workdir holding git directories that are not a
// working tree's .git, as git itself accepts them (setup.c,
// is_git_directory: HEAD, objects/ and refs/, the last two possibly in a
// "commondir"):
//
//	origin.git    a bare repository, the remote of clone/
//	storage       a bare repository not named *.git
//	meta          the gitdir of sepwt/ (sepwt/.git is a "gitdir:" file)
//	data/layout   a $GIT_DIR-style layout made by hand, one level down
//	wtdir         HEAD and a "commondir" naming commondata
//	commondata    objects/ and refs/ (no HEAD): git reads wtdir's config
//	              and hooks here
//	cdparent      objects/ and refs/, the common directory of cdparent/wt
//	              ("commondir" is ..), as a linked worktree's is
//
// It returns the workdir and the git directories in it, relative.
func gitDirsFixture(t *testing.T) (string, []string) {
	wd := filepath.Join(t.TempDir(), "wd")
	origin := filepath.Join(wd, "origin.git")
	testutil.Git(t, wd[:len(wd)-3], "init", "-q", "--bare", origin)
	testutil.Git(t, wd, "clone", "-q", origin, filepath.Join(wd, "clone"))
	writeFile(t, filepath.Join(wd, "clone", "main.go"), "package main\n")
	testutil.Git(t, filepath.Join(wd, "clone"), "add", "-A")
	testutil.Git(t, filepath.Join(wd, "clone"), "commit", "-qm", "base")
	testutil.Git(t, filepath.Join(wd, "clone"), "push", "-q", "origin", "HEAD:main")
	testutil.Git(t, wd, "init", "-q", "--bare", filepath.Join(wd, "storage"))
	testutil.Git(t, wd, "init", "-q", "--separate-git-dir", filepath.Join(wd, "meta"), filepath.Join(wd, "sepwt"))
	for _, d := range []string{"data/layout/objects", "data/layout/refs/heads", "commondata/objects", "commondata/refs/heads", "wtdir", "cdparent/objects", "cdparent/refs/heads", "cdparent/wt"} {
		if err := os.MkdirAll(filepath.Join(wd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(wd, "data/layout/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(wd, "wtdir/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(wd, "wtdir/commondir"), "../commondata\n")
	writeFile(t, filepath.Join(wd, "cdparent/wt/HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(wd, "cdparent/wt/commondir"), "..\n")
	for _, d := range []string{"commondata", "cdparent"} {
		writeFile(t, filepath.Join(wd, d, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
	}
	// The hand-made ones are repositories to git, or the test proves
	// nothing about what git would run.
	for _, d := range []string{"data/layout", "wtdir", "cdparent/wt"} {
		testutil.Git(t, wd, "--git-dir="+filepath.Join(wd, d), "rev-parse", "--git-common-dir")
	}
	return wd, []string{"origin.git", "storage", "meta", "data/layout", "wtdir", "commondata", "cdparent"}
}

// gitDirsAttack plants in each git directory what would run on the host
// at the user's next git command there: a hook, core.fsmonitor, a ref and
// an object.
func gitDirsAttack(dirs []string, hook string) string {
	var b strings.Builder
	for _, d := range dirs {
		fmt.Fprintf(&b, "mkdir -p %[1]s/hooks; printf '#!/bin/sh\\necho pwned > %[2]s\\n' > %[1]s/hooks/post-receive; chmod +x %[1]s/hooks/post-receive\n", d, hook)
		// Harmless to the push that follows, but a write all the same: a
		// config key (core.fsmonitor would be the real one), a ref (to a
		// commit origin.git has) and a file among the objects.
		fmt.Fprintf(&b, "printf '[pwned]\\n\\tby = sandbox\\n' >> %[1]s/config\n", d)
		fmt.Fprintf(&b, "cat origin.git/refs/heads/main > %[1]s/refs/pwned\n", d)
		fmt.Fprintf(&b, "echo evil > %[1]s/objects/pwned\n", d)
	}
	b.WriteString("echo fine > ok\n")
	return b.String()
}

// TestAttackGitDirsReadOnly: every git directory present when the command
// starts is read-only, not only those named .git — a bare repository (the
// remote of a clone beside it, where a planted post-receive hook runs on
// the host at the user's next push), one not named *.git, a "gitdir:"
// target, a hand-made $GIT_DIR layout, a "commondir". Checked from
// outside: no file in any of them changed, and a push from the host runs
// no planted hook. The control hands the sandbox only the .git entries
// (what the scan found before it looked for other git directories) and
// sees every write land and the hook run.
func TestAttackGitDirsReadOnly(t *testing.T) {
	requireLayer(t, "mount namespace")
	push := func(t *testing.T, wd string) {
		t.Helper()
		writeFile(t, filepath.Join(wd, "clone", "next.go"), "package main\n")
		testutil.Git(t, filepath.Join(wd, "clone"), "add", "-A")
		testutil.Git(t, filepath.Join(wd, "clone"), "commit", "-qm", "next")
		testutil.Git(t, filepath.Join(wd, "clone"), "push", "-q", "origin", "HEAD:main")
	}
	t.Run("scanned", func(t *testing.T) {
		hook := filepath.Join(t.TempDir(), "hook-ran")
		wd, dirs := gitDirsFixture(t)
		before := snapshot(t, wd)
		o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, wd, gitDirsAttack(dirs, hook)))
		if o.err != nil {
			t.Fatalf("the sandbox broke: %v", o.err)
		}
		if got := readFile(t, filepath.Join(wd, "ok")); got != "fine\n" {
			t.Fatalf("the workdir itself is not writable: %q", got)
		}
		after := snapshot(t, wd)
		delete(after, "ok")
		for _, k := range diffSnap(before, after) {
			t.Errorf("LEAK: %s changed", k)
		}
		push(t, wd)
		if _, err := os.Stat(hook); err == nil {
			t.Errorf("LEAK: a hook planted in the sandbox ran at the host's git push")
		}
	})
	t.Run("control", func(t *testing.T) {
		hook := filepath.Join(t.TempDir(), "hook-ran")
		wd, dirs := gitDirsFixture(t)
		found, err := sandbox.FindGitDirs(wd)
		if err != nil {
			t.Fatal(err)
		}
		var dotGit []string
		for _, g := range found {
			if filepath.Base(g) == ".git" {
				dotGit = append(dotGit, g)
			}
		}
		p := shPolicy(sandbox.ModeNamespaces, wd, gitDirsAttack(dirs, hook))
		p.GitDirs = dotGit
		if o := runPolicy(t, p); o.err != nil {
			t.Fatalf("the sandbox broke: %v", o.err)
		}
		for _, d := range dirs {
			if d == "meta" {
				continue // a gitdir: target was protected through its .git file already
			}
			if _, err := os.Stat(filepath.Join(wd, d, "hooks", "post-receive")); err != nil {
				t.Errorf("positive control: the hook write into %s did not land", d)
			}
		}
		push(t, wd)
		if _, err := os.Stat(hook); err != nil {
			t.Errorf("positive control: the planted post-receive did not run at the host's push")
		}
	})
}
