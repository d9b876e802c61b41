package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestUserInside: Policy.User changes who the command is inside, and
// nothing else. Checked from outside: a file it writes in the workdir is
// the caller's on the host, a file beside the workdir is still unwritable,
// and a root caller's command no longer sees uid 0 (the control: without
// User it does, for a root caller).
func TestUserInside(t *testing.T) {
	requireLayer(t, "user namespace")
	outside := t.TempDir()
	wd := filepath.Join(outside, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `id -u; id -g; echo made > mine; echo escaped > ../escaped; touch /tmp/t && echo tmp-ok; echo $HOME; touch "$HOME/h" && echo home-ok`
	p := shPolicy(sandbox.ModeNamespaces, wd, script)
	p.User = &sandbox.User{UID: 1000, GID: 1000}
	o := runPolicy(t, p)
	if o.err != nil {
		t.Fatalf("err %v\n%s", o.err, o.all())
	}
	lines := strings.Split(o.out, "\n")
	if len(lines) < 2 || lines[0] != "1000" || lines[1] != "1000" {
		t.Errorf("ids inside %q, want 1000 1000\n%s", lines, o.all())
	}
	for _, want := range []string{"tmp-ok", "home-ok"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("no %s: the private temp and home must stay writable\n%s", want, o.all())
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(wd, "mine"), &st); err != nil {
		t.Fatalf("the command could not write its workdir: %v\n%s", err, o.all())
	}
	if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		t.Errorf("host owner %d:%d, want the caller %d:%d", st.Uid, st.Gid, os.Getuid(), os.Getgid())
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("LEAK: the mapped user wrote beside its workdir")
	}

	// Control: the same script without User sees the caller's own ids.
	o = runPolicy(t, shPolicy(sandbox.ModeNamespaces, t.TempDir(), "id -u"))
	if strings.TrimSpace(o.out) != strconv.Itoa(os.Getuid()) {
		t.Errorf("without User the command is uid %q, want the caller's %d", o.out, os.Getuid())
	}
}

// TestUserRefused: no uid 0 or overflow id, and no User where there is no
// user namespace to map it in.
func TestUserRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode sandbox.Mode
		user sandbox.User
	}{
		{"root", sandbox.ModeAuto, sandbox.User{UID: 0, GID: 1000}},
		{"root group", sandbox.ModeAuto, sandbox.User{UID: 1000, GID: 0}},
		{"nobody", sandbox.ModeAuto, sandbox.User{UID: 65534, GID: 65534}},
		{"negative", sandbox.ModeAuto, sandbox.User{UID: -1, GID: 1000}},
		{"landlock", sandbox.ModeLandlock, sandbox.User{UID: 1000, GID: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := shPolicy(tc.mode, t.TempDir(), "echo ran")
			p.User = &tc.user
			o := runPolicy(t, p)
			var pe *sandbox.PolicyError
			if !errors.As(o.err, &pe) || pe.Field != "User" {
				t.Errorf("err %v, want a PolicyError on User", o.err)
			}
			if strings.Contains(o.out, "ran") {
				t.Errorf("the command ran")
			}
		})
	}
}
