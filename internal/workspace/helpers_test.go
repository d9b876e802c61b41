package workspace_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

var ctx = context.Background()

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// userRepo makes a repository with history, branches, a tag, a stash and a
// remote: everything a pid 1 must not carry.
func userRepo(t testing.TB) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(repo, "main.go"), "package main\n\nfunc main() {}\n")
	write(t, filepath.Join(repo, "lib", "lib.go"), "package lib\n")
	write(t, filepath.Join(repo, "docs", "a.md"), "a\n")
	write(t, filepath.Join(repo, ".gitignore"), "*.o\nbuild/\n")
	write(t, filepath.Join(repo, "tracked.o"), "tracked despite the ignore rule\n")
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "add", "-f", "tracked.o")
	testutil.Git(t, repo, "commit", "-qm", "one")
	write(t, filepath.Join(repo, "lib", "lib.go"), "package lib\n\nconst V = 2\n")
	testutil.Git(t, repo, "commit", "-qam", "two")
	return repo
}

func newStore(t *testing.T) *workspace.Store {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	// overlayfs leaves work/work mode 000; the owner may open it up so
	// that TempDir's cleanup can remove it when the tests run unprivileged.
	t.Cleanup(func() {
		filepath.WalkDir(s.Root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "work" {
				os.Chmod(filepath.Join(p, "work"), 0o700)
			}
			return nil
		})
	})
	return s
}

// execIn runs a shell script confined in a workspace.
func execIn(t *testing.T, s *workspace.Store, name, script string) string {
	t.Helper()
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), name, sandbox.Policy{Command: []string{"/bin/sh", "-c", script}}, sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec in %s: %v", name, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec in %s: exit %d\n%s", name, res.ExitCode, out.String())
	}
	return out.String()
}

// forkPatch forks pid1, runs script confined in the fork and returns the
// fork's patch.
func forkPatch(t *testing.T, s *workspace.Store, pid1, script string) []byte {
	t.Helper()
	fork := pid1 + "-f"
	if _, err := s.Fork(ctx, pid1, fork); err != nil {
		t.Fatal(err)
	}
	execIn(t, s, fork, script)
	d, err := s.Diff(ctx, fork, false)
	if err != nil {
		t.Fatal(err)
	}
	return d.Patch
}

// treeOf describes a tree: every path but .git, with its type, executable
// bit, and content or link target — what a patch must reproduce.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		fi, _ := d.Info()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "link:" + l
		case d.IsDir():
			// git does not track empty folders; folders show through their files
		default:
			data, _ := os.ReadFile(p)
			m[rel] = fmt.Sprintf("file x=%v %x", fi.Mode()&0o100 != 0, sha256.Sum256(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mergedTree extracts a workspace's tree as the command inside sees it.
func mergedTree(t *testing.T, s *workspace.Store, name string) string {
	t.Helper()
	dst := t.TempDir()
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), name, sandbox.Policy{Command: []string{"tar", "--exclude=./.git", "-cf", "-", "."}}, sandbox.Stdio{Stdout: &out, Stderr: os.Stderr})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("tar in %s: %v", name, err)
	}
	x := exec.Command("tar", "-xf", "-", "-C", dst)
	x.Stdin = &out
	if o, err := x.CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, o)
	}
	return dst
}

// applyToBase applies a patch to a fresh copy of the workspace's pid 1 with
// git apply and returns the result.
func applyToBase(t *testing.T, s *workspace.Store, pid1 string, patch []byte) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "applied")
	testutil.Git(t, t.TempDir(), "clone", "-q", filepath.Join(s.Root, pid1, "tree"), dst)
	if len(patch) == 0 {
		return dst
	}
	cmd := exec.Command("git", "apply", "--binary", "-")
	cmd.Dir = dst
	cmd.Stdin = bytes.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, patch)
	}
	return dst
}

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%q: %s | %s", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%q: <absent> | %s", k, v))
		}
	}
	sort.Strings(d)
	return d
}

// dirState records every file under dir with its size and mtime, to prove
// an operation left a directory (the user's repository) untouched.
func dirState(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return b.String()
}
