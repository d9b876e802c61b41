package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// requireSeatbelt skips (or, under FORKBOMB_REQUIRE_ALL, fails) where the
// seatbelt backend does not confine: sandbox-exec missing, or its probe
// finding a layer that does not hold.
func requireSeatbelt(t *testing.T) {
	t.Helper()
	rep, err := sandbox.Probe(context.Background())
	if err != nil || rep.Mode != sandbox.ModeSeatbelt {
		testutil.SkipOrFail(t, "the seatbelt backend does not run here: %v %+v", err, rep)
	}
	for _, l := range rep.Layers {
		if l.Status != "ok" && l.Tier == "kernel" {
			t.Fatalf("the probe finds the kernel layer %q not holding: %s", l.Name, l.Detail)
		}
	}
}

// runPolicy runs p and logs what happened.
func runPolicy(t *testing.T, p sandbox.Policy) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	res, err := sandbox.Run(ctx, p, sandbox.Stdio{Stdout: &out, Stderr: &errb})
	o := outcome{res: res, err: err, out: out.String(), err2: errb.String()}
	t.Logf("%v → code %d err %v\n%s", p.Command, o.code(), err, indent(o.all()))
	return o
}

// attackPolicy runs the attacker (this test binary) with args, confined,
// with the binary's folder readable (it is in the machine's temp folders,
// which are hidden).
func attackPolicy(t testing.TB, workdir string, args ...string) sandbox.Policy {
	exe := attackerExe(t)
	return sandbox.Policy{
		Command:  append([]string{exe, attackArg}, args...),
		Workdir:  workdir,
		ReadOnly: []string{filepath.Dir(exe)},
	}
}

// unconfinedPolicy is the positive control: the same attack, no sandbox.
func unconfinedPolicy(t *testing.T, workdir string, args ...string) sandbox.Policy {
	p := attackPolicy(t, workdir, args...)
	p.NoSandbox = true
	return p
}

func shPolicy(workdir, script string) sandbox.Policy {
	return sandbox.Policy{Command: []string{"/bin/sh", "-c", script}, Workdir: workdir}
}

// tempDir is t.TempDir resolved: macOS's temp folders are under /var, a
// link to /private/var, and the profile names resolved paths.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fakeHome makes a home for the caller (HOME) with credentials in it, as
// a developer's Mac holds them; the test cannot run in parallel.
func fakeHome(t *testing.T, secret string) string {
	t.Helper()
	home := filepath.Join(tempDir(t), "home")
	for _, f := range []string{".ssh/id_ed25519", ".aws/credentials", "Library/Keychains/login.keychain-db", ".config/gh/hosts.yml", "notes.txt", ".cargo/credentials.toml"} {
		writeFile(t, filepath.Join(home, f), secret+"\n")
	}
	t.Setenv("HOME", home)
	return home
}

// hostProcsWith lists the pids of live processes whose command line holds
// marker, as ps sees them on the host.
func hostProcsWith(marker string) []int {
	out, _ := exec.Command("/bin/ps", "-axww", "-o", "pid=,stat=,command=").Output()
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.Contains(line, marker) || strings.HasPrefix(f[1], "Z") || strings.Contains(line, "/bin/ps") {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}
