package workspace_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestAttackDiffReadsNoHostFile: whatever a fork names its files, the
// patch holds the link targets it made and the files it wrote — never a
// byte of a host file a link points to — and the diff returns. Checked on
// the patch itself and by applying it to a fresh copy of the base.
func TestAttackDiffReadsNoHostFile(t *testing.T) {
	for _, method := range []workspace.Method{workspace.MethodOverlay, workspace.MethodCopy} {
		t.Run(string(method), func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			s.ForkMethod = method
			if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Fork(ctx, "p1", "f"); err != nil {
				t.Fatal(err)
			}
			secret := plantTraps(t, s, "f", true)
			if method == workspace.MethodOverlay {
				// Positive control: handed the decoy's name, git's
				// --stdin-paths hashes the host file.
				want := testutil.Git(t, t.TempDir(), "hash-object", secret)
				c := exec.Command("git", "hash-object", "--stdin-paths")
				c.Stdin = strings.NewReader(filepath.Join(s.Root, "f", "upper", "foo\r") + "\n")
				out, err := c.Output()
				if err != nil || strings.TrimSpace(string(out)) != want {
					t.Fatalf("control: git did not read the host file through the decoy name (%v, %s)", err, out)
				}
			}
			d, err := diffWithin(t, s, "f")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(d.Patch, []byte(hostSecret)) || bytes.Contains(d.Patch, []byte("*.leak")) {
				t.Fatalf("LEAK: the patch holds a host file's content:\n%s", d.Patch)
			}
			if !bytes.Contains(d.Patch, []byte("x.leak")) {
				t.Errorf("x.leak missing: the .gitignore link was read as ignore rules")
			}
			applied := applyToBase(t, s, "p1", d.Patch)
			for name, want := range map[string]string{"foo\r": "decoy\n", "bar\n_": "decoy\n", "zero\r": "decoy\n", "pipe\r": "decoy\n"} {
				if got, err := os.ReadFile(filepath.Join(applied, name)); err != nil || string(got) != want {
					t.Errorf("%q after apply: %q, %v", name, got, err)
				}
			}
			for _, link := range []string{"foo", "bar", "bad\377name", ".gitignore"} {
				if target, err := os.Readlink(filepath.Join(applied, link)); err != nil || !strings.HasPrefix(target, filepath.Dir(secret)) {
					t.Errorf("%q after apply: want the planted link, got %q, %v", link, target, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(applied, "pipe")); err == nil {
				t.Errorf("a FIFO became part of the patch")
			}
			found := false
			for _, e := range d.Excluded {
				found = found || e == "pipe"
			}
			if !found {
				t.Errorf("the FIFO is not reported as left out: %q", d.Excluded)
			}
		})
	}
}

// TestDiffLimits: a sparse 6 GB file (no blocks on disk), changes over the
// total, a patch over its size and a diff past its deadline are refused
// with ErrPatchRefused and a message naming the limit; nothing is hashed
// in full.
func TestDiffLimits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sparse", "many", "ok"} {
		if _, err := s.Fork(ctx, "p1", f); err != nil {
			t.Fatal(err)
		}
	}
	execIn(t, s, "sparse", "truncate -s 6G big")
	execIn(t, s, "many", "head -c 3000 /dev/urandom > a; head -c 3000 /dev/urandom > b")
	execIn(t, s, "ok", "echo change >> main.go")
	cases := []struct {
		fork string
		lim  workspace.DiffLimits
		want string
	}{
		{"sparse", workspace.DiffLimits{}, `"big" is 6.0 GiB, over the limit of 32.0 MiB`},
		{"many", workspace.DiffLimits{Total: 5000}, "more than 4.9 KiB"},
		{"many", workspace.DiffLimits{Patch: 1000}, "the patch"},
		{"ok", workspace.DiffLimits{Timeout: time.Nanosecond}, "took longer than 1ns"},
		{"many", workspace.DiffLimits{Entries: 1}, "more than 1 files and folders"},
	}
	for _, c := range cases {
		s2 := &workspace.Store{Root: s.Root, ForkMethod: s.ForkMethod, DiffLimits: c.lim}
		_, err := diffWithin(t, s2, c.fork)
		if !errors.Is(err, workspace.ErrPatchRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %+v: %v; want ErrPatchRefused with %q", c.fork, c.lim, err, c.want)
		}
	}
	// Control: within the limits the same forks diff.
	if d, err := s.Diff(ctx, "many", false); err != nil || len(d.Patch) == 0 {
		t.Errorf("control: %v", err)
	}
}

// TestHelpersDieWithForkbomb: a git that forkbomb started dies when
// forkbomb is killed with SIGKILL (no deferred cleanup runs); the control
// shows a git started the ordinary way outlives its parent.
//
// Both parents are killed at the same moment. The control's git must still
// run after three times as long as forkbomb's git took to die (and at least
// two seconds): whatever killed forkbomb's git is then not something that
// befalls every git whose parent dies, without the test sleeping out a
// fixed 20 s for the control.
func TestHelpersDieWithForkbomb(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hold := func(mode string) (parent *exec.Cmd, gitPid int) {
		child := exec.Command(self, "__git_hold", mode)
		stdout, _ := child.StdoutPipe()
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			child.Process.Kill()
			child.Wait()
			t.Fatalf("%s: no pid from the child: %v", mode, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		return child, pid
	}
	fbParent, fbGit := hold("forkbomb")
	plainParent, plainGit := hold("plain")
	defer syscall.Kill(plainGit, syscall.SIGKILL)
	start := time.Now()
	fbParent.Process.Signal(syscall.SIGKILL)
	plainParent.Process.Signal(syscall.SIGKILL)
	fbParent.Wait()
	plainParent.Wait()
	if !waitGone(fbGit, 20*time.Second) {
		syscall.Kill(fbGit, syscall.SIGKILL)
		t.Fatalf("LEAK: git (pid %d) outlived the forkbomb that started it", fbGit)
	}
	took := time.Since(start)
	if waitGone(plainGit, max(3*took, 2*time.Second)-took) {
		t.Errorf("control: a plain git died with its parent (forkbomb's died within %v); the check proves nothing", took)
	}
}

// waitGone waits until pid no longer runs (a zombie counts as gone: its
// parent died, init reaps it).
func waitGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if f := strings.Fields(string(data)); len(f) > 2 && f[2] == "Z" {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
