package sandbox_test

import (
	"fmt"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestAttackWrites: the command writes only to its workdir and its private
// temp dir; the workdir's siblings, the host's /tmp, the caller's home and
// system folders are unchanged, and the private temp dir is gone afterwards.
func TestAttackWrites(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		parent := t.TempDir()
		wd, sib := filepath.Join(parent, "wd"), filepath.Join(parent, "sibling")
		writeFile(t, filepath.Join(sib, "file"), "original")
		if err := os.Mkdir(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		m := fmt.Sprintf("fb-write-%d", os.Getpid())
		hostTmp := filepath.Join(os.TempDir(), m)
		home, _ := os.UserHomeDir()
		t.Cleanup(func() {
			for _, p := range []string{hostTmp, "/etc/" + m, "/usr/" + m, "/var/tmp/" + m, filepath.Join(home, m)} {
				os.Remove(p)
			}
		})
		script := fmt.Sprintf(`
echo ok > inside
echo escaped > %[1]s/escape
echo pwned > %[2]s/file
echo t > /tmp/%[3]s; echo t > "$TMPDIR/%[3]s-tmpdir"; echo h > "$HOME/%[3]s"
echo t > %[4]s
echo e > /etc/%[3]s; echo u > /usr/%[3]s; echo v > /var/tmp/%[3]s; echo h > %[5]s/%[3]s
true`, parent, sib, m, hostTmp, home)
		o := runPolicy(t, shPolicy(mode, wd, script))
		if o.err != nil {
			t.Fatalf("run: %v", o.err)
		}
		if got := readFile(t, filepath.Join(wd, "inside")); got != "ok\n" {
			t.Errorf("workdir write did not land: %q", got)
		}
		if _, err := os.Stat(filepath.Join(parent, "escape")); err == nil {
			t.Errorf("LEAK: wrote a sibling of the workdir")
		}
		if got := readFile(t, filepath.Join(sib, "file")); got != "original" {
			t.Errorf("LEAK: sibling file changed to %q", got)
		}
		for _, p := range []string{hostTmp, "/etc/" + m, "/usr/" + m, "/var/tmp/" + m, filepath.Join(home, m)} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("LEAK: %s was written on the host", p)
			}
		}
		// The private temp dir (and what the command left in it) is gone.
		if found := findName(os.TempDir(), m, 4); len(found) > 0 {
			t.Errorf("private temp files left behind: %v", found)
		}
	})

	t.Run("control", func(t *testing.T) {
		parent := t.TempDir()
		wd := filepath.Join(parent, "wd")
		os.Mkdir(wd, 0o755)
		p := shPolicy(sandbox.ModeAuto, wd, fmt.Sprintf("echo escaped > %s/escape", parent))
		p.NoSandbox = true
		runPolicy(t, p)
		if _, err := os.Stat(filepath.Join(parent, "escape")); err != nil {
			t.Fatalf("positive control: unconfined write to a sibling not seen: %v", err)
		}
	})
}

func findName(root, name string, maxDepth int) []string {
	var out []string
	base := strings.Count(root, "/")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.Count(p, "/")-base >= maxDepth {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), name) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// gitFixture makes a repository with a nested repository, .git/hooks as a
// symlink to a folder elsewhere in the workdir, and returns it.
func gitFixture(t *testing.T, hooksTarget string) string {
	wd := filepath.Join(t.TempDir(), "repo")
	writeFile(t, filepath.Join(wd, "main.go"), "package main\n")
	testutil.Git(t, wd, "init", "-q")
	testutil.Git(t, wd, "add", "-A")
	testutil.Git(t, wd, "commit", "-qm", "base")
	writeFile(t, filepath.Join(wd, "sub", "lib.go"), "package sub\n")
	testutil.Git(t, filepath.Join(wd, "sub"), "init", "-q")
	if hooksTarget != "" {
		if err := os.RemoveAll(filepath.Join(wd, ".git", "hooks")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(hooksTarget, filepath.Join(wd, ".git", "hooks")); err != nil {
			t.Fatal(err)
		}
	}
	return wd
}

func snapshot(t *testing.T, root string) map[string]string {
	m := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			m[rel] = "link:" + l
			return nil
		}
		if d.Type().IsRegular() {
			m[rel] = readFile(t, p)
		} else if d.IsDir() {
			m[rel] = "dir"
		}
		return nil
	})
	return m
}

func diffSnap(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "+"+k)
		}
	}
	return d
}

const gitAttack = `
echo '[core]
	fsmonitor = /tmp/evil' >> .git/config
echo evil > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
echo evil > githooks/post-checkout
echo evil > sub/.git/config
echo evil > sub/.git/hooks/pre-commit
rm -rf .git/objects
mv .git .git-moved
git status --short >/dev/null && git log --oneline >/dev/null && git diff --stat >/dev/null && echo GIT-READS-OK
echo fine > newfile
true`

// TestAttackGitReadOnly: .git stays read-only inside a writable workdir —
// the workdir's, a nested repository's, and the folder a .git/hooks symlink
// points to — while git can still read the repository.
func TestAttackGitReadOnly(t *testing.T) {
	requireLayer(t, "mount namespace")
	for name, target := range map[string]string{
		"hooks-symlink-in-workdir":      "../githooks",
		"hooks-symlink-outside-workdir": "OUTSIDE",
		"hooks-symlink-dangling":        "/nonexistent/hooks",
		"plain":                         "",
	} {
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			if target == "OUTSIDE" {
				target = outside
			}
			wd := gitFixture(t, target)
			if err := os.MkdirAll(filepath.Join(wd, "githooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, wd)
			beforeOutside := snapshot(t, outside)
			o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, wd, gitAttack))
			if o.err != nil {
				t.Fatalf("the sandbox broke: %v", o.err)
			}
			if !strings.Contains(o.out, "GIT-READS-OK") {
				t.Errorf("git status/log/diff failed inside the sandbox")
			}
			if got := readFile(t, filepath.Join(wd, "newfile")); got != "fine\n" {
				t.Errorf("the workdir itself is not writable: %q", got)
			}
			after := snapshot(t, wd)
			delete(after, "newfile")
			if target != "../githooks" {
				delete(after, "githooks/post-checkout") // an ordinary folder then
			}
			for _, k := range diffSnap(before, after) {
				t.Errorf("LEAK: %s changed", k)
			}
			for _, k := range diffSnap(beforeOutside, snapshot(t, outside)) {
				t.Errorf("LEAK: hooks target outside the workdir changed: %s", k)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		wd := gitFixture(t, "../githooks")
		os.MkdirAll(filepath.Join(wd, "githooks"), 0o755)
		p := shPolicy(sandbox.ModeAuto, wd, gitAttack)
		p.NoSandbox = true
		runPolicy(t, p)
		if !strings.Contains(readFile(t, filepath.Join(wd, "githooks", "post-checkout")), "evil") {
			t.Fatal("positive control: unconfined write through .git/hooks not seen")
		}
	})
}

// TestAttackSecrets: with the workdir inside the caller's home, nothing
// under that home but the workdir is reachable, by any path.
func TestAttackSecrets(t *testing.T) {
	secretFiles := []string{
		".ssh/id_ed25519", ".aws/credentials", ".gnupg/private-keys-v1.d/key", ".config/gh/hosts.yml",
		".netrc", ".docker/config.json", ".kube/config", ".claude.json", ".claude/.credentials.json",
		".bash_history", ".zsh_history", "notes.txt",
	}
	setup := func(t *testing.T) (home, wd, secret string) {
		home = filepath.Join(t.TempDir(), "alice")
		secret = canary(t)
		for _, f := range secretFiles {
			writeFile(t, filepath.Join(home, f), secret)
		}
		wd = filepath.Join(home, "src", "repo")
		writeFile(t, filepath.Join(wd, "README"), "legit")
		t.Setenv("HOME", home)
		return home, wd, secret
	}
	paths := func(home, wd string) []string {
		var ps []string
		for _, f := range secretFiles {
			ps = append(ps,
				filepath.Join(home, f),
				"/proc/self/root"+filepath.Join(home, f),
				"/proc/1/root"+filepath.Join(home, f),
				"/proc/1/cwd/../../"+f,
				filepath.Join(wd, "..", "..", f),
			)
		}
		return append(ps, filepath.Join(wd, "README"))
	}
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		home, wd, secret := setup(t)
		o := runPolicy(t, attackPolicy(t, mode, wd, append([]string{"read"}, paths(home, wd)...)...))
		if o.err != nil {
			t.Fatal(o.err)
		}
		if strings.Contains(o.all(), secret) {
			t.Errorf("LEAK: a credential file was read")
		}
		if !strings.Contains(o.out, "legit") {
			t.Errorf("the workdir inside home was not readable")
		}
		// A listing of home shows nothing of the caller's.
		l := runPolicy(t, shPolicy(mode, wd, `ls -A "$HOME"; ls -A `+home+`; find / -xdev -name 'id_ed25519' 2>/dev/null; ls; true`))
		if l.err != nil || l.code() != 0 || !strings.Contains(l.out, "README") { // the workdir's own listing: the probe ran
			t.Fatalf("the listing did not run: %v, exit %d: %s", l.err, l.code(), l.all())
		}
		if strings.Contains(l.out, ".ssh") || strings.Contains(l.out, "id_ed25519") {
			t.Errorf("LEAK: credential folders visible:\n%s", l.out)
		}
	})
	t.Run("control", func(t *testing.T) {
		home, wd, secret := setup(t)
		o := runPolicy(t, unconfinedPolicy(t, wd, append([]string{"read"}, paths(home, wd)...)...))
		if !strings.Contains(o.out, secret) {
			t.Fatal("positive control: unconfined read of ~/.ssh not seen")
		}
	})
}

// TestAttackEnvironment: no API key reaches the command, neither in its own
// environment nor in the environment of any process it can read (the
// sandbox init, the caller, another agent holding a key).
func TestAttackEnvironment(t *testing.T) {
	key := canary(t)
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("GITHUB_TOKEN", key)
	t.Setenv("FORKBOMB_TEST_PASSED", "visible-"+key[:10])
	// A process of the same user holding the key in its initial
	// environment, as another agent or the user's shell would.
	holder := exec.Command("/bin/sleep", sleepMarker())
	holder.Env = append(os.Environ(), "OPENAI_API_KEY="+key)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	environs := fmt.Sprintf(`env; for f in /proc/[0-9]*/environ /proc/%d/environ; do echo "== $f"; tr '\0' '\n' < "$f"; done 2>&1; true`, holder.Process.Pid)

	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		p := shPolicy(mode, t.TempDir(), environs)
		p.Env = []string{"FORKBOMB_TEST_PASSED"}
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if strings.Contains(o.all(), key) {
			t.Errorf("LEAK: an API key reached the command")
		}
		if !strings.Contains(o.out, "FORKBOMB_TEST_PASSED=visible-") {
			t.Errorf("--env did not pass the variable it names")
		}
		for _, v := range []string{"HOME=", "TMPDIR=", "PATH="} {
			if !strings.Contains(o.out, v) {
				t.Errorf("allowlisted %s missing", v)
			}
		}
	})
	t.Run("control", func(t *testing.T) {
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), environs)
		p.NoSandbox = true
		o := runPolicy(t, p)
		if !strings.Contains(o.out, key) {
			t.Fatal("positive control: unconfined read of another process's environment not seen")
		}
	})
}
