package sandbox_test

import (
	"fmt"
	"net"
	"net/http"
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

// The seatbelt backend attacked on a real Mac: the probes of the Linux
// attack tests, each checked from outside the sandbox (files on disk,
// listeners that count, the host's process table), each with a positive
// control that runs the same attack unconfined and sees it land. Written,
// not yet run in this project's CI (docs/SECURITY.md, the macOS column).

// TestSeatbeltAttackWrites: the command writes only its workdir and its
// private temp dir and home; the workdir's siblings, the machine's temp
// folders, the caller's home and system folders are unchanged, and the
// private folders are gone afterwards.
func TestSeatbeltAttackWrites(t *testing.T) {
	requireSeatbelt(t)
	home := fakeHome(t, "x")
	parent := tempDir(t)
	wd, sib := filepath.Join(parent, "wd"), filepath.Join(parent, "sibling")
	writeFile(t, filepath.Join(sib, "file"), "original")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf("fb-write-%d", os.Getpid())
	outside := []string{"/tmp/" + m, "/private/var/tmp/" + m, "/usr/local/" + m, "/Library/" + m, filepath.Join(home, m), filepath.Join(home, "Library", m)}
	t.Cleanup(func() {
		for _, p := range outside {
			os.Remove(p)
		}
	})
	script := fmt.Sprintf(`
echo ok > inside; echo t > "$TMPDIR/%[3]s"; echo h > "$HOME/%[3]s"
echo escaped > %[1]s/escape
echo pwned > %[2]s/file
for p in %[4]s; do echo x > "$p"; done
true`, parent, sib, m, strings.Join(outside, " "))
	o := runPolicy(t, shPolicy(wd, script))
	if o.err != nil {
		t.Fatalf("run: %v", o.err)
	}
	if got := readFile(t, filepath.Join(wd, "inside")); got != "ok\n" {
		t.Errorf("the workdir write did not land: %q", got)
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); err == nil {
		t.Error("LEAK: wrote a sibling of the workdir")
	}
	if got := readFile(t, filepath.Join(sib, "file")); got != "original" {
		t.Errorf("LEAK: a sibling file changed to %q", got)
	}
	for _, p := range outside {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("LEAK: %s was written on the host", p)
		}
	}
	if !strings.Contains(o.all(), "Operation not permitted") {
		t.Errorf("the denials are not loud: %s", o.all())
	}

	t.Run("control", func(t *testing.T) {
		p := shPolicy(wd, fmt.Sprintf("echo escaped > %s/escape", parent))
		p.NoSandbox = true
		runPolicy(t, p)
		if _, err := os.Stat(filepath.Join(parent, "escape")); err != nil {
			t.Fatalf("positive control: an unconfined write beside the workdir not seen: %v", err)
		}
	})
}

// TestSeatbeltAttackSecrets: the caller's credentials — ~/.ssh, ~/.aws,
// the login keychain, ~/.config — and the rest of the home cannot be read
// by any path: directly, in another letter case, through a symlink made in
// the workdir, or by moving them; the keychain's service is out of reach.
func TestSeatbeltAttackSecrets(t *testing.T) {
	requireSeatbelt(t)
	secret := "SECRET-" + strconv.Itoa(os.Getpid())
	home := fakeHome(t, secret)
	wd := tempDir(t)
	targets := []string{home + "/.ssh/id_ed25519", home + "/.aws/credentials", home + "/Library/Keychains/login.keychain-db",
		home + "/.config/gh/hosts.yml", home + "/notes.txt", strings.ToUpper(home) + "/.SSH/ID_ED25519", "link/id_ed25519"}
	if err := os.Symlink(home+"/.ssh", filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	o := runPolicy(t, attackPolicy(t, wd, append([]string{"read"}, targets...)...))
	if o.err != nil || o.code() < 0 {
		t.Fatalf("the probe did not run: %v: %s", o.err, o.all())
	}
	if strings.Contains(o.all(), secret) {
		t.Errorf("LEAK: a credential was read:\n%s", o.all())
	}
	mv := runPolicy(t, shPolicy(wd, "mv "+home+"/.ssh/id_ed25519 ./stolen; cat ./stolen; ls "+home+"; echo probed"))
	if mv.err != nil || !strings.Contains(mv.out, "probed") {
		t.Fatalf("the probe did not run: %v: %s", mv.err, mv.all())
	}
	if strings.Contains(mv.all(), secret) || strings.Contains(mv.all(), "notes.txt") {
		t.Errorf("LEAK: the home was listed or a credential moved out:\n%s", mv.all())
	}
	if _, err := os.Stat(home + "/.ssh/id_ed25519"); err != nil {
		t.Errorf("the credential was moved: %v", err)
	}
	kc := runPolicy(t, shPolicy(wd, "/usr/bin/security list-keychains; /usr/bin/security find-generic-password -s forkbomb-test"))
	if kc.err != nil || kc.code() <= 0 { // (-1: no run at all)
		t.Errorf("the keychain answered, or the probe did not run (exit %d, %v):\n%s", kc.code(), kc.err, kc.all())
	}

	t.Run("control", func(t *testing.T) {
		o := runPolicy(t, unconfinedPolicy(t, wd, append([]string{"read"}, targets...)...))
		if !strings.Contains(o.all(), secret) {
			t.Fatalf("positive control: the unconfined read did not see the credentials:\n%s", o.all())
		}
	})
}

// TestSeatbeltAttackEnvironment: no key of forkbomb's environment reaches
// the command — not in its own environment, not by reading forkbomb's
// (sysctl kern.procargs2, what ps -E shows).
func TestSeatbeltAttackEnvironment(t *testing.T) {
	requireSeatbelt(t)
	key := canary(t)
	t.Setenv("FORKBOMB_TEST_API_KEY", key)
	wd := tempDir(t)
	for _, args := range [][]string{{"env"}, {"procargs", strconv.Itoa(os.Getpid())}} {
		o := runPolicy(t, attackPolicy(t, wd, args...))
		if o.err != nil || o.code() < 0 {
			t.Fatalf("the probe %v did not run: %v: %s", args, o.err, o.all())
		}
		if strings.Contains(o.all(), key) {
			t.Errorf("LEAK: %v shows the key:\n%s", args, o.all())
		}
	}

	t.Run("control", func(t *testing.T) {
		o := runPolicy(t, unconfinedPolicy(t, wd, "procargs", strconv.Itoa(os.Getpid())))
		if !strings.Contains(o.all(), key) {
			t.Fatalf("positive control: unconfined, forkbomb's environment is not read:\n%s", o.all())
		}
	})
}

// TestSeatbeltAttackNetwork: loopback only and no DNS — a listener of the
// host on a non-loopback address is not reached, names do not resolve;
// the loopback is the host's (a listener there is reached: the documented
// difference from Linux). With a proxy network, the proxy's port alone.
func TestSeatbeltAttackNetwork(t *testing.T) {
	requireSeatbelt(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	// each count taken once a marker of the tally's own has reached the
	// listener after the attack's connections
	hits := testutil.CountAccepts(t, ln)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	external := externalIPv4(t)
	wd := tempDir(t)
	for _, args := range [][]string{{"tcp", external + ":" + port}, {"udp", "192.0.2.1:53"}, {"dns", "example.com"}} {
		o := runPolicy(t, attackPolicy(t, wd, args...))
		if o.code() != 3 {
			t.Errorf("LEAK: %v was not refused (code %d)", args, o.code())
		}
	}
	time.Sleep(testutil.InFlight)
	if n := hits.Count(t); n != 0 {
		t.Errorf("LEAK: the host's listener counted %d connections from the sandbox", n)
	}
	if o := runPolicy(t, attackPolicy(t, wd, "tcp", "127.0.0.1:"+port)); o.code() != 0 || hits.Count(t) != 1 {
		t.Errorf("the loopback is not reachable (code %d)", o.code())
	}

	t.Run("proxy", func(t *testing.T) {
		sockDir := tempDir(t)
		sock := filepath.Join(sockDir, "api.sock")
		ul, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ul.Close()
		go http.Serve(ul, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "proxied") }))
		p := attackPolicy(t, wd, "http", "http://127.0.0.1:18119/")
		p.Network, p.Proxy = sandbox.NetworkProxy, &sandbox.Proxy{Socket: sock, Port: 18119}
		if o := runPolicy(t, p); !strings.Contains(o.all(), "proxied") {
			t.Errorf("the proxy's port does not lead to its socket:\n%s", o.all())
		}
		before := hits.Count(t)
		p.Command = attackPolicy(t, wd, "tcp", "127.0.0.1:"+port).Command
		o := runPolicy(t, p)
		time.Sleep(testutil.InFlight)
		if o.code() != 3 || hits.Count(t) != before {
			t.Errorf("LEAK: with a proxy network another loopback port was reached (code %d)", o.code())
		}
	})

	t.Run("control", func(t *testing.T) {
		before := hits.Count(t)
		runPolicy(t, unconfinedPolicy(t, wd, "tcp", external+":"+port))
		if hits.Count(t) != before+1 {
			t.Fatal("positive control: the unconfined connection to the host's address was not counted")
		}
	})
}

// externalIPv4 is an address of this Mac off the loopback.
func externalIPv4(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	testutil.SkipOrFail(t, "no address off the loopback to listen on")
	return ""
}

// TestSeatbeltAttackDescendantsDie: a daemon the command leaves — its own
// session, its parent gone, adopted by launchd — dies when the command
// ends.
func TestSeatbeltAttackDescendantsDie(t *testing.T) {
	requireSeatbelt(t)
	wd := tempDir(t)
	marker := sleepMarker()
	o := runPolicy(t, attackPolicy(t, wd, "daemonize", "/bin/sleep", marker))
	if o.err != nil || o.code() != 0 {
		t.Fatalf("run: %v (code %d)", o.err, o.code())
	}
	if left := survivors(marker); len(left) > 0 {
		killAll(left)
		t.Errorf("LEAK: the daemon outlived the sandbox: %v", left)
	}

	t.Run("control", func(t *testing.T) {
		marker := sleepMarker()
		runPolicy(t, unconfinedPolicy(t, wd, "daemonize", "/bin/sleep", marker))
		left := hostProcsWith(marker)
		killAll(left)
		if len(left) == 0 {
			t.Fatal("positive control: the unconfined daemon was not seen running")
		}
	})
}

// TestSeatbeltTimeoutKillsEverything: at the timeout every process of the
// sandbox dies and the status is 124.
func TestSeatbeltTimeoutKillsEverything(t *testing.T) {
	requireSeatbelt(t)
	marker := sleepMarker()
	p := shPolicy(tempDir(t), "/bin/sleep "+marker+" & exec /bin/sleep 300")
	p.Timeout = 2 * time.Second
	o := runPolicy(t, p)
	if o.err != nil || !o.res.TimedOut || o.code() != sandbox.ExitTimeout {
		t.Fatalf("want a timeout (124), got %v %+v", o.err, o.res)
	}
	if left := survivors(marker); len(left) > 0 {
		killAll(left)
		t.Errorf("LEAK: a process outlived the timeout: %v", left)
	}
}

// TestSeatbeltOutputCap: the output stops at the cap, not a byte more, and
// the command is killed.
func TestSeatbeltOutputCap(t *testing.T) {
	requireSeatbelt(t)
	p := shPolicy(tempDir(t), "exec /usr/bin/yes")
	p.MaxOutput = 1000
	o := runPolicy(t, p)
	if o.err != nil || o.res.Limit != "output" || o.code() != sandbox.ExitKilledByLimit || len(o.out) != 1000 {
		t.Fatalf("want 1000 bytes and the output limit, got %d bytes, %v %+v", len(o.out), o.err, o.res)
	}
}

// TestSeatbeltAttackGitReadOnly: the workdir's .git and a nested
// repository's stay unchanged whatever the command tries — writes, their
// letter case changed, a hard link, moving .git or its folder away — while
// the rest of the tree is written.
func TestSeatbeltAttackGitReadOnly(t *testing.T) {
	requireSeatbelt(t)
	wd := filepath.Join(tempDir(t), "repo")
	writeFile(t, filepath.Join(wd, "main.go"), "package main\n")
	testutil.Git(t, wd, "init", "-q")
	writeFile(t, filepath.Join(wd, "sub", "lib.go"), "package sub\n")
	testutil.Git(t, filepath.Join(wd, "sub"), "init", "-q")
	before := map[string]string{}
	for _, f := range []string{".git/config", "sub/.git/config"} {
		before[f] = readFile(t, filepath.Join(wd, f))
	}
	script := `
echo pwned >> .git/config; echo '#!/bin/sh' > .git/hooks/pre-commit
echo pwned >> .GIT/config; echo pwned >> sub/.Git/config
ln .git/config cfg-link && echo pwned >> cfg-link
mv .git moved; mv sub sub2; mv sub/.git sub/moved
echo ok > written.go`
	o := runPolicy(t, shPolicy(wd, script))
	if o.err != nil {
		t.Fatal(o.err)
	}
	for f, want := range before {
		if got := readFile(t, filepath.Join(wd, f)); got != want {
			t.Errorf("LEAK: %s changed to %q", f, got)
		}
	}
	for _, f := range []string{".git/hooks/pre-commit", "moved", "sub2", "sub/moved", "cfg-link"} {
		if _, err := os.Lstat(filepath.Join(wd, f)); err == nil {
			t.Errorf("LEAK: %s exists", f)
		}
	}
	if got := readFile(t, filepath.Join(wd, "written.go")); got != "ok\n" {
		t.Errorf("the tree around .git is not writable: %q", got)
	}

	t.Run("control", func(t *testing.T) {
		p := shPolicy(wd, "echo pwned >> .git/config")
		p.NoSandbox = true
		runPolicy(t, p)
		if !strings.Contains(readFile(t, filepath.Join(wd, ".git/config")), "pwned") {
			t.Fatal("positive control: the unconfined write to .git/config not seen")
		}
	})
}

// TestSeatbeltAttackHostProcesses: a process of the caller outside the
// sandbox cannot be signalled.
func TestSeatbeltAttackHostProcesses(t *testing.T) {
	requireSeatbelt(t)
	victim := exec.Command("/bin/sleep", "300")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	exited := make(chan struct{})
	go func() { victim.Wait(); close(exited) }()
	wd := tempDir(t)
	// the attacker's own word (the kill refused), and the victim's state
	if o := runPolicy(t, attackPolicy(t, wd, "kill", strconv.Itoa(victim.Process.Pid))); o.code() != 3 { // the attacker's "refused"
		t.Errorf("LEAK: the sandbox's kill of a process of the host was not refused (exit %d): %s", o.code(), o.all())
	}
	select {
	case <-exited:
		t.Error("LEAK: the sandbox killed a process of the host")
	case <-time.After(time.Second):
	}

	t.Run("control", func(t *testing.T) {
		if o := runPolicy(t, unconfinedPolicy(t, wd, "kill", strconv.Itoa(victim.Process.Pid))); o.code() != 0 {
			t.Errorf("positive control: the unconfined kill was refused: %s", o.all())
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Fatal("positive control: the unconfined kill did not end the victim")
		}
	})
}

// TestSeatbeltAttackPrograms: a denied program does not run, directly or
// through a shell, in any letter case; with an allow-list nothing else
// runs, not even a copy of an allowed program made in the workdir or temp.
func TestSeatbeltAttackPrograms(t *testing.T) {
	requireSeatbelt(t)
	wd := tempDir(t)
	// (each script ends with "probed": it ran to its end, so what did not run was refused)
	deny := shPolicy(wd, "/usr/bin/touch direct; touch via-path; /USR/BIN/TOUCH upper; echo probed")
	deny.DenyPrograms = []string{"/usr/bin/touch"}
	if o := runPolicy(t, deny); o.err != nil || !strings.Contains(o.out, "probed") {
		t.Fatalf("the deny probe did not run: %v: %s", o.err, o.all())
	}
	allow := shPolicy(wd, `/usr/bin/touch unlisted; cp /usr/bin/touch "$TMPDIR/t"; "$TMPDIR/t" copy-in-tmp; cp /usr/bin/touch ./t; ./t copy-in-workdir; echo probed`)
	allow.AllowPrograms = []string{"/bin/sh", "/bin/cp"}
	if o := runPolicy(t, allow); o.err != nil || !strings.Contains(o.out, "probed") {
		t.Fatalf("the allow probe did not run: %v: %s", o.err, o.all())
	}
	for _, f := range []string{"direct", "via-path", "upper", "unlisted", "copy-in-tmp", "copy-in-workdir"} {
		if _, err := os.Stat(filepath.Join(wd, f)); err == nil {
			t.Errorf("LEAK: %s ran", f)
		}
	}

	t.Run("control", func(t *testing.T) {
		runPolicy(t, shPolicy(wd, "/usr/bin/touch direct"))
		if _, err := os.Stat(filepath.Join(wd, "direct")); err != nil {
			t.Fatal("positive control: confined without a program rule, touch did not run")
		}
	})
}

// TestSeatbeltAttackHide: a path the policy hides inside the workdir is
// unreadable and cannot be moved out of hiding.
func TestSeatbeltAttackHide(t *testing.T) {
	requireSeatbelt(t)
	wd := tempDir(t)
	secret := canary(t)
	writeFile(t, filepath.Join(wd, "hidden", "secret"), secret)
	p := shPolicy(wd, "cat hidden/secret; cat HIDDEN/secret; mv hidden out; cat out/secret; echo probed")
	p.Hide = []string{filepath.Join(wd, "hidden")}
	if o := runPolicy(t, p); o.err != nil || !strings.Contains(o.out, "probed") || strings.Contains(o.all(), secret) {
		t.Errorf("LEAK or no probe (%v): the hidden file read, or the script did not run:\n%s", o.err, o.all())
	}

	t.Run("control", func(t *testing.T) {
		if o := runPolicy(t, shPolicy(wd, "cat hidden/secret")); !strings.Contains(o.all(), secret) {
			t.Fatalf("positive control: confined without Hide, the file was not read:\n%s", o.all())
		}
	})
}

// TestSeatbeltProbe: the probe names the backend and a tier for every
// layer, and every kernel layer holds.
func TestSeatbeltProbe(t *testing.T) {
	requireSeatbelt(t)
	rep, err := sandbox.Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != sandbox.ModeSeatbelt || rep.Notice == "" {
		t.Errorf("backend %s, notice %q", rep.Mode, rep.Notice)
	}
	for _, l := range rep.Layers {
		if l.Tier == "" {
			t.Errorf("layer %s names no tier", l.Name)
		}
	}
}
