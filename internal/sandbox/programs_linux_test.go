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

// execRoute is one way a command inside the sandbox can try to run the
// victim program. Each writes the file pwned-NAME in the workdir through
// the victim (a copy of touch), so the verdict is read from outside: the
// file exists or it does not.
type execRoute struct {
	name   string
	script string // $V the victim, $W the workdir, $A the attacker, $L the loader
	// under says what happens under a deny-list and an allow-list, per
	// backend: "blocked", "runs" (a documented gap) or "" (not asserted:
	// the attack may fail before it tries, e.g. a hard link across mounts).
	deny, allow map[sandbox.Mode]string
	control     string // "" is "runs"
}

func both(v string) map[sandbox.Mode]string {
	return map[sandbox.Mode]string{sandbox.ModeNamespaces: v, sandbox.ModeLandlock: v}
}

var execRoutes = []execRoute{
	{name: "direct", script: `"$V" "$W/pwned-direct"`, deny: both("blocked"), allow: both("blocked")},
	{name: "sh-c", script: `sh -c '"$V" "$W/pwned-sh-c"'`, deny: both("blocked"), allow: both("blocked")},
	{name: "xargs", script: `echo "$W/pwned-xargs" | xargs "$V"`, deny: both("blocked"), allow: both("blocked")},
	{name: "find-exec", script: `find "$W/seed" -exec "$V" "$W/pwned-find-exec" \;`, deny: both("blocked"), allow: both("blocked")},
	{name: "env", script: `env "$V" "$W/pwned-env"`, deny: both("blocked"), allow: both("blocked")},
	{name: "helper", script: `"$A" __forkbomb_attacker exec "$V" "$W/pwned-helper"`, deny: both("blocked"), allow: both("blocked")},
	{name: "symlink", script: `ln -s "$V" "$W/link" && "$W/link" "$W/pwned-symlink"`, deny: both("blocked"), allow: both("blocked")},
	// A copy is a new file: a deny-list never named it. With an
	// allow-list the writable tree has no execute right.
	{name: "copy", script: `cp "$V" "$W/copy" && "$W/copy" "$W/pwned-copy"`, deny: both("runs"), allow: both("blocked")},
	{name: "copy-in-tmp", script: `cp "$V" "$TMPDIR/copy" && "$TMPDIR/copy" "$W/pwned-copy-in-tmp"`, deny: both("runs"), allow: both("blocked")},
	// A hard link has the victim's inode, which is what a Landlock rule
	// names. One from outside the writable trees into them cannot be made
	// at all (EXDEV: another mount in the namespaces backend, Landlock's
	// refer right in both), so not even the control runs it.
	{name: "hardlink", script: `ln "$V" "$W/hard" && "$W/hard" "$W/pwned-hardlink"`, control: "blocked", deny: both("blocked"), allow: both("blocked")},
	// The dynamic loader maps the program with mmap, which Landlock does
	// not check: a denied (or unlisted) file on a mount that allows
	// execution runs. Documented in docs/SECURITY.md.
	{name: "ld.so", script: `"$L" "$V" "$W/pwned-ld.so"`, deny: both("runs"), allow: both("runs")},
	// Through the loader, a copy: the namespaces backend mounts the
	// writable trees noexec under an allow-list, so mmap(PROT_EXEC)
	// fails; the landlock backend has no such mount.
	{name: "ld.so-copy", script: `cp "$V" "$W/lcopy" && "$L" "$W/lcopy" "$W/pwned-ld.so-copy"`, deny: both("runs"), allow: map[sandbox.Mode]string{sandbox.ModeNamespaces: "blocked", sandbox.ModeLandlock: "runs"}},
	// Files with no name, made by an allowed program (the attacker
	// stands for an allowed interpreter). A memfd lives on the kernel's
	// internal mount, which Landlock does not see and which is not
	// noexec: memfd_create is refused under any program rule.
	{name: "memfd", script: anonExec("memfd"), deny: both("blocked"), allow: both("blocked")},
	{name: "memfd-execveat", script: anonExec("memfd-execveat"), deny: both("blocked"), allow: both("blocked")},
	{name: "memfd-ld.so", script: anonExec("memfd-ld.so"), deny: both("blocked"), allow: both("blocked")},
	// An O_TMPFILE or deleted file is judged where it was made (noexec
	// mount, Landlock's rule for its folder): under an allow-list a
	// writable tree has no execute right; under a deny-list it is a copy.
	{name: "tmpfile", script: anonExec("tmpfile"), deny: both("runs"), allow: both("blocked")},
	{name: "deleted", script: anonExec("deleted"), deny: both("runs"), allow: both("blocked")},
	{name: "deleted-execveat", script: anonExec("deleted-execveat"), deny: both("runs"), allow: both("blocked")},
	{name: "deleted-ld.so", script: anonExec("deleted-ld.so"), deny: both("runs"), allow: map[sandbox.Mode]string{sandbox.ModeNamespaces: "blocked", sandbox.ModeLandlock: "runs"}},
}

// anonExec is the route where the attacker runs the victim from a file
// with no name (attacker/anonexec.go), made in the workdir where it needs
// a folder.
func anonExec(kind string) string {
	return fmt.Sprintf(`"$A" __forkbomb_attacker anon-exec %s "$W" "$L" "$V" "$W/pwned-%s"`, kind, kind)
}

// TestAttackPrograms runs every route against a deny-list and an
// allow-list, on both backends, and checks from outside which pwned files
// exist. The control runs the same script confined but with no program
// rule and must see every route work.
func TestAttackPrograms(t *testing.T) {
	requireLayer(t, "landlock")
	loaders := sandbox.Loaders()
	if len(loaders) == 0 {
		t.Fatal("no dynamic loader found on this machine")
	}
	tools := []string{"sh", "xargs", "find", "env", "cp", "ln", "echo"}
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		for _, kind := range []string{"control", "deny", "allow"} {
			t.Run(kind, func(t *testing.T) {
				base, _ := testutil.OutsideDir(t)
				bin, work := filepath.Join(base, "bin"), filepath.Join(base, "work")
				for _, d := range []string{bin, work} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				victim := filepath.Join(bin, "victim")
				copyFile(t, "/usr/bin/touch", victim, 0o755)
				writeFile(t, filepath.Join(work, "seed"), "x")
				// The attacker stands for an allowed program: a copy outside
				// the private /tmp, which an allow-list mounts noexec (where
				// the test binary itself may be).
				exe := filepath.Join(bin, "attacker")
				copyFile(t, attackerExe(t), exe, 0o755)
				var script strings.Builder
				fmt.Fprintf(&script, "export V=%q W=%q A=%q L=%q\n", victim, work, exe, loaders[0])
				// Proof the allowed attacker starts: without it every route
				// through it would be blocked for the wrong reason.
				fmt.Fprintf(&script, "\"$A\" %s write \"$W/attacker-ran\" x\n", attackArg)
				for _, r := range execRoutes {
					fmt.Fprintf(&script, "( %s ) 2>&1 | sed 's/^/%s: /'\n", r.script, r.name)
				}
				p := shPolicy(mode, work, script.String())
				p.ReadOnly = []string{bin}
				switch kind {
				case "deny":
					p.DenyPrograms = []string{victim}
				case "allow":
					p.AllowPrograms = []string{exe}
					for _, tool := range append(tools, "sed") {
						p.AllowPrograms = append(p.AllowPrograms, lookPath(t, tool))
					}
				}
				o := runPolicy(t, p)
				if o.err != nil {
					t.Fatalf("run: %v", o.err)
				}
				if _, err := os.Lstat(filepath.Join(work, "attacker-ran")); err != nil {
					t.Fatalf("the attacker (an allowed program) did not run: every route through it proves nothing")
				}
				for _, r := range execRoutes {
					_, err := os.Lstat(filepath.Join(work, "pwned-"+r.name))
					ran := err == nil
					want := "runs"
					switch kind {
					case "control":
						if r.control != "" {
							want = r.control
						}
					case "deny":
						want = r.deny[mode]
					case "allow":
						want = r.allow[mode]
					}
					switch {
					case want == "blocked" && ran:
						t.Errorf("%s: the victim ran (pwned-%s exists)", r.name, r.name)
					case want == "runs" && !ran:
						t.Errorf("%s: expected to run (%s), but did not: the documentation of this route is out of date, or the control is broken", r.name, kind)
					}
				}
			})
		}
	})
}

// TestProgramsRefused: what a program rule cannot mean is refused before
// anything runs, never ignored.
func TestProgramsRefused(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "tool"), "#!/bin/sh\n")
	for _, tc := range []struct {
		name  string
		allow []string
		deny  []string
		want  string
	}{
		{"allow in the workdir", []string{filepath.Join(work, "tool")}, nil, "overlaps the writable tree"},
		{"allow holding the workdir", []string{filepath.Dir(work)}, nil, "overlaps the writable tree"},
		{"missing deny", nil, []string{"/usr/bin/forkbomb-no-such-program"}, "no such file"},
		{"relative", []string{"bin/sh"}, nil, "not an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sandbox.Policy{Command: []string{"true"}, Workdir: work, AllowPrograms: tc.allow, DenyPrograms: tc.deny}
			o := runPolicy(t, p)
			if o.err == nil || !strings.Contains(o.err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", o.err, tc.want)
			}
		})
	}
}

func lookPath(t *testing.T, name string) string {
	t.Helper()
	for _, d := range []string{"/usr/bin", "/bin"} {
		if p, err := filepath.EvalSymlinks(filepath.Join(d, name)); err == nil {
			return p
		}
	}
	t.Fatalf("%s not found", name)
	return ""
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
}
