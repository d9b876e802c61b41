package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// stateLayout is forkbomb's state and a race's secrets laid out under base
// as FORKBOMB_HOME=base/home would hold them: the fork under attack
// ("me", an overlay over the pid 1's tree), a sibling fork's upper layer,
// another run's record, a judge baseline, hidden tests and the user's
// repository, each file holding its own canary.
type stateLayout struct {
	home, hidden, repo string
	pid1, me, visible  string
	secrets            map[string]string // what → canary
	targets            []string          // paths the attacker goes for
}

func newStateLayout(t *testing.T, base string) *stateLayout {
	l := &stateLayout{
		home: filepath.Join(base, "home"), hidden: filepath.Join(base, "hidden"), repo: filepath.Join(base, "repo"),
		secrets: map[string]string{},
	}
	ws := filepath.Join(l.home, "workspaces")
	l.pid1 = filepath.Join(ws, "run-x", "tree")
	l.me = filepath.Join(ws, "run-x-f1")
	l.visible = filepath.Join(l.home, "exposed")
	writeFile(t, filepath.Join(l.pid1, "base.txt"), "BASE-OK\n")
	writeFile(t, filepath.Join(l.visible, "tests.txt"), "EXPOSED-OK\n")
	for _, d := range []string{"upper", "work", "tree"} {
		if err := os.MkdirAll(filepath.Join(l.me, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for what, path := range map[string]string{
		"sibling upper layer": filepath.Join(ws, "run-x-f0", "upper", "lib.sh"),
		"other run's record":  filepath.Join(l.home, "runs", "old-run", "run.json"),
		"judge baseline":      filepath.Join(l.home, "judge", "bases", "base-0123456789abcdef", "baseline-0123.json"),
		"hidden test":         filepath.Join(l.hidden, "test_hidden.py"),
		"user's repository":   filepath.Join(l.repo, "uncommitted.txt"),
	} {
		c := "CANARY-" + strings.ReplaceAll(what, " ", "-") + "-" + fmt.Sprint(os.Getpid())
		l.secrets[what] = c
		writeFile(t, path, c+"\n")
	}
	l.targets = []string{l.home, ws, filepath.Join(ws, "run-x-f0", "upper"), filepath.Join(l.home, "runs"),
		filepath.Join(l.home, "judge"), l.hidden, l.repo}
	return l
}

// probe lists and reads every target, keeping what it got in its own tree
// ("loot") as a fork copying a sibling's fix would, then proves its own
// tree works: it reads the pid 1's file and writes one of its own.
func (l *stateLayout) probe() string {
	return fmt.Sprintf(`t=${TMPDIR:-/tmp}/loot
for p in %s; do ls -laR "$p"; find "$p" -type f -exec cat {} +; done > "$t" 2>&1
cp "$t" loot; cat loot; cat base.txt; cat %s/tests.txt; echo OWN-OK > own.txt`, strings.Join(l.targets, " "), l.visible)
}

func (l *stateLayout) leaks(s string) []string {
	var out []string
	for what, c := range l.secrets {
		if strings.Contains(s, c) {
			out = append(out, what)
		}
	}
	return out
}

// policy confines the probe in the fork "me": an overlay in the namespaces
// backend, the upper layer itself as a plain tree in the Landlock one
// (which has no overlay, as a copied fork has none).
func (l *stateLayout) policy(mode sandbox.Mode, hide bool) (p sandbox.Policy, ownTree string) {
	p = shPolicy(mode, filepath.Join(l.me, "tree"), l.probe())
	p.Timeout = time.Minute
	p.ReadOnly = []string{l.visible}
	if mode == sandbox.ModeLandlock {
		p.Workdir = filepath.Join(l.me, "upper")
		os.WriteFile(filepath.Join(p.Workdir, "base.txt"), []byte("BASE-OK\n"), 0o644)
	} else {
		p.Overlay = &sandbox.Overlay{Lower: []string{l.pid1}, Upper: filepath.Join(l.me, "upper"), Work: filepath.Join(l.me, "work")}
	}
	if hide {
		p.Hide = []string{l.home, l.hidden, l.repo}
	}
	return p, filepath.Join(l.me, "upper")
}

// TestAttackHide: a fork whose state lives outside the masked folders
// (FORKBOMB_HOME, --hidden and the repository under /srv) lists and reads
// a sibling's upper layer, the runs, the judge's baselines, the hidden
// tests and the repository, and copies what it finds into its own tree.
// Checked from outside — its output and the loot file in its upper layer
// — it gets none of it, on both backends, while its own tree (mounted
// inside the hidden FORKBOMB_HOME) and a path exposed below a hidden one
// work. Controls: unconfined, and confined without Hide, the same probe
// gets every canary.
func TestAttackHide(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		base, unmasked := testutil.OutsideDir(t)
		l := newStateLayout(t, base)
		p, upper := l.policy(mode, true)
		o := runPolicy(t, p)
		if o.err != nil || o.code() != 0 {
			t.Fatalf("the fork did not run in its own tree: code %d, %v", o.code(), o.err)
		}
		loot := readFile(t, filepath.Join(upper, "loot"))
		if leaked := l.leaks(o.all() + loot); len(leaked) > 0 {
			t.Errorf("LEAK: the fork read %v", leaked)
		}
		for _, want := range []string{"BASE-OK", "EXPOSED-OK"} {
			if !strings.Contains(o.out, want) {
				t.Errorf("the fork lost %s (its own tree or an exposed path under a hidden one)", want)
			}
		}
		if got := readFile(t, filepath.Join(upper, "own.txt")); got != "OWN-OK\n" {
			t.Errorf("the fork's own write did not land in its layer: %q", got)
		}

		t.Run("control-unconfined", func(t *testing.T) {
			os.RemoveAll(filepath.Join(upper, "loot"))
			p, _ := l.policy(mode, true)
			p.NoSandbox, p.Overlay, p.Workdir = true, nil, upper
			o := runPolicy(t, p)
			if leaked := l.leaks(o.all()); len(leaked) != len(l.secrets) {
				t.Fatalf("positive control: the probe saw only %v of %d secrets", leaked, len(l.secrets))
			}
		})
		t.Run("control-without-hide", func(t *testing.T) {
			if !unmasked {
				testutil.SkipNotApplicable(t, "the state is under a masked folder here; nothing to show without Hide")
			}
			p, _ := l.policy(mode, false)
			o := runPolicy(t, p)
			if leaked := l.leaks(o.all()); len(leaked) != len(l.secrets) {
				t.Fatalf("positive control: without Hide the fork saw only %v of %d secrets", leaked, len(l.secrets))
			}
		})
	})
}

// TestHideRefused: hiding the root or a system folder (or what holds one),
// or anything inside a kernel interface, is refused before anything runs,
// by the name given and by where a symlink leads. A missing path is
// nothing to hide.
func TestHideRefused(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "usr-link")
	if err := os.Symlink("/usr", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/", false}, {"/usr", false}, {"/etc", false}, {"/var", false}, {"/lib", false},
		{"/proc/1", false}, {"/dev/shm/x", false}, {"relative", false}, {link, false},
		{"/usr/share/doc/forkbomb-none", true}, {"/srv/forkbomb-no-such-dir", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := shPolicy(sandbox.ModeAuto, t.TempDir(), "true")
			p.Hide = []string{tc.path}
			o := runPolicy(t, p)
			if tc.ok && o.err != nil {
				t.Errorf("hiding %s refused: %v", tc.path, o.err)
			}
			if !tc.ok && !errors.Is(o.err, sandbox.ErrInvalidPolicy) {
				t.Errorf("hiding %s: got %v, want ErrInvalidPolicy", tc.path, o.err)
			}
		})
	}
}

// TestHideInsideExposed: a hidden path inside a tree the policy exposes
// is covered by the namespaces backend; the Landlock backend, which can
// only add access, refuses to run rather than show it. Control: without
// Hide the probe reads the file.
func TestHideInsideExposed(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		base, _ := testutil.OutsideDir(t)
		ro, secret := filepath.Join(base, "ro"), filepath.Join(base, "ro", "state", "secret")
		c := canary(t)
		writeFile(t, secret, c)
		writeFile(t, filepath.Join(ro, "open.txt"), "OPEN-OK")
		p := shPolicy(mode, t.TempDir(), fmt.Sprintf("cat %s/open.txt; cat %s", ro, secret))
		p.ReadOnly = []string{ro}
		ctl := runPolicy(t, p)
		if !strings.Contains(ctl.out, c) {
			t.Fatalf("positive control: without Hide the probe did not read %s", secret)
		}
		p.Hide = []string{filepath.Dir(secret)}
		o := runPolicy(t, p)
		if strings.Contains(o.all(), c) {
			t.Fatalf("LEAK: a hidden path inside an exposed tree was read")
		}
		switch mode {
		case sandbox.ModeNamespaces:
			if o.err != nil || !strings.Contains(o.out, "OPEN-OK") {
				t.Errorf("the rest of the exposed tree is gone: %v", o.err)
			}
		case sandbox.ModeLandlock:
			if !errors.Is(o.err, sandbox.ErrSetup) || !strings.Contains(o.err.Error(), "Landlock cannot hide") {
				t.Errorf("got %v, want a set-up refusal naming Landlock", o.err)
			}
		}
	})
}
