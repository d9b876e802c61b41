package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// inPodAttacks are the sandbox's attack tests whose Landlock-backend run
// must pass inside a fork's pod, as on a laptop where user namespaces are
// refused: what forkbomb's own walls in a pod are made of. The others skip
// there with their reason — those of the namespaces backend (a read-only
// .git, mount-level hiding), which the test cluster's pods do not allow
// (SECURITY.md, the cluster column) — and TestAttackPrograms is left out:
// it needs a dynamically linked touch, and the agent image's tools are
// busybox.
var inPodAttacks = []string{
	"TestAttackWrites/landlock",
	"TestAttackSecrets/landlock",
	"TestAttackEnvironment/landlock",
	"TestAttackNetwork/landlock",
	"TestAttackSyscalls/landlock",
	"TestAttackHostProcesses/landlock",
	"TestAttackDescendantsDie/landlock",
	"TestAttackTIOCSTI/landlock",
	"TestAttackInheritedDescriptors/landlock",
	"TestAttackOtherTerminals/landlock",
	"TestAttackHide/landlock",
}

// TestSandboxAttacksInPod runs internal/sandbox's attack tests inside a
// fork's pod — the pod forkbomb makes, as the agent's user, under the
// pod's own walls — and requires the Landlock backend's to pass there
// (forkbomb's probe in the pod picks it, as the fork's commands get it),
// none to fail, and the pod's probe to have found a backend that
// confines.
func TestSandboxAttacksInPod(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	bin := sandboxTests(t)
	// forkbomb-pod from ConfigMaps, as a user's runs have it: the pod's
	// layout theirs (the binary's read-only mount in /work)
	s := openStore(t, cfg, Options{Namespace: ns, PodBin: podBinary(t)})
	if s.binParts.n == 0 {
		t.Fatal("forkbomb-pod is not kept as ConfigMaps")
	}
	fork := newRun(t, s, "run-attacks")
	ctx := context.Background()
	fs := s.forks[fork]
	if err := s.ready(ctx, fork, fs, sandbox.Policy{Command: []string{"true"}, Timeout: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if fs.mode != sandbox.ModeNamespaces && fs.mode != sandbox.ModeLandlock {
		t.Fatalf("the pod's probe found no backend: %q", fs.mode)
	}
	t.Logf("forkbomb's sandbox in the pod: %s backend", fs.mode)
	// The suite's folders: the binary's own (the attacks read it), the
	// tests' temp dirs, a folder outside the masked ones, and a HOME apart
	// from all three (a folder holding a home is never exposed).
	if code, err := s.stream(ctx, fs.obj, []string{"mkdir", "-p", "/work/bin", "/work/t", "/work/out", "/work/home"}, nil, nil, nil); err != nil || code != 0 {
		t.Fatalf("mkdir in the pod: %d %v", code, err)
	}
	if err := s.sendFile(ctx, fs.obj, bin, "/work/bin/sandbox.test"); err != nil {
		t.Fatal(err)
	}
	script := `cd /work/t && HOME=/work/home TMPDIR=/work/t FORKBOMB_TEST_OUTSIDE=/work/out /work/bin/sandbox.test -test.run '^TestAttack' -test.skip '^TestAttackPrograms$' -test.v -test.timeout 8m 2>&1; echo "exit: $?"`
	out, _, err := s.output(ctx, fs.obj, script, nil, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	results := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`).FindAllStringSubmatch(text, -1) {
		results[m[2]] = m[1]
	}
	var failed []string
	for name, r := range results {
		if r == "FAIL" {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 || !strings.Contains(text, "\nexit: 0\n") {
		t.Errorf("the attack tests failed in the pod: %v\n%s", failed, text)
	}
	for _, name := range inPodAttacks {
		if results[name] != "PASS" {
			t.Errorf("%s did not pass in the pod (%q)", name, results[name])
		}
	}
	var skipped []string
	for name, r := range results {
		if r == "SKIP" {
			skipped = append(skipped, name)
		}
	}
	t.Logf("in the pod: %d results, skipped %v", len(results), skipped)
}

// sandboxTests is internal/sandbox's test binary, static (the image has
// no Go and only git's libraries): the one scripts/test's unprivileged run
// built beside this package's (every package's binary in a folder named
// after it), else built here from the module.
func sandboxTests(t *testing.T) string {
	if b, err := filepath.Abs(filepath.Join("..", "sandbox", "sandbox.test")); err == nil {
		if fi, err := os.Stat(b); err == nil && fi.Mode().IsRegular() {
			return b
		}
	}
	bin := filepath.Join(t.TempDir(), "sandbox.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "github.com/forkbomb/forkbomb/internal/sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the sandbox's tests: %v\n%s", err, out)
	}
	return bin
}

// TestNoWallsNoCommand: where forkbomb's sandbox finds no backend that
// confines in a pod (here a stand-in binary whose probe says so), the
// fork's command is never run there — the fork fails with ErrNoWalls
// naming why — rather than run with the pod's walls alone.
func TestNoWallsNoCommand(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	fake := filepath.Join(t.TempDir(), "forkbomb")
	probe := `{"mode":"none","layers":[{"name":"landlock","status":"unavailable","detail":"refused by this test"}]}`
	// As the session's server it makes the tree's folder (so that a
	// command run there would leave its mark) and answers as the real one
	// would: its probe's report (the node's first pod's first command),
	// then the tree unpacked, were it asked for.
	// (nextRun reads the host's frames up to its next request.)
	serve := `nextRun() { while :; do set -- $(dd bs=5 count=1 iflag=fullblock status=none | od -An -tu1); [ $# = 5 ] || exit 0
  n=$(( ($2 << 24) + ($3 << 16) + ($4 << 8) + $5 )); [ "$n" = 0 ] || dd bs="$n" count=1 iflag=fullblock status=none >/dev/null
  [ "$1" = 114 ] && return; done; }
mkdir -p ` + podRoot + `
` + helloOfSelf() + `
nextRun; ` + printfFrames(frame{podrun.FrameAck, ""}, frame{podrun.FrameStdout, probe + "\n"}, frame{podrun.FrameExit, "0"}) + ` # the probe
nextRun; ` + printfFrames(frame{podrun.FrameAck, ""}, frame{podrun.FrameExit, "0"}) + ` # the tree's tar
exec cat >/dev/null`
	script := "#!/bin/sh\nif [ \"$1\" = __forkbomb_pod_serve ]; then\n" + serve + "\nfi\necho '" + probe + "'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, cfg, Options{Namespace: ns, PodBin: fake})
	fork := newRun(t, s, "run-nowalls")
	ctx := context.Background()
	_, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", "touch ran"}, Timeout: time.Minute}, sandbox.Stdio{})
	if !errors.Is(err, ErrNoWalls) || !strings.Contains(err.Error(), "refused by this test") {
		t.Fatalf("Exec: %v, want ErrNoWalls with the probe's reason", err)
	}
	// the pod runs and holds the tree; the command's mark is not there
	code, err := s.stream(ctx, s.forks[fork].obj, []string{"/bin/sh", "-c", "test -d /work/tree && ! test -e /work/tree/ran"}, nil, nil, nil)
	if err != nil || code != 0 {
		t.Errorf("the command ran in a pod without forkbomb's walls (or the pod has no tree): exit %d %v", code, err)
	}
}

// TestProgramRulesInPod: a policy's program rules hold for a fork's
// command in its pod (forkbomb's sandbox there checks each exec with
// Landlock): git, denied, does not run; the control, the same command
// without the rule, runs it.
func TestProgramRulesInPod(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns})
	fork := newRun(t, s, "run-programs")
	ctx := context.Background()
	// the verdict is read from a file (an exec's stdout can be lost on
	// the test cluster: transfer.go)
	cmd := []string{"/bin/sh", "-c", `/usr/bin/git --version >/dev/null 2>&1; echo "git: $?" > result`}
	for _, deny := range []bool{false, true} {
		p := sandbox.Policy{Command: cmd, Timeout: time.Minute}
		if deny {
			p.DenyPrograms = []string{"/usr/bin/git"}
		}
		res, err := s.Exec(ctx, fork, p, sandbox.Stdio{})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := s.output(ctx, s.forks[fork].obj, "cat "+podRoot+"/result", nil, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		ran := strings.Contains(string(out), "git: 0")
		if res.ExitCode != 0 || ran == deny {
			t.Errorf("deny %v: exit %d, git ran: %v: %s", deny, res.ExitCode, ran, out)
		}
	}
}

// TestNotOurBinary: a session server whose hello names a binary other
// than the one sent — here a stand-in that names a made-up SHA-256 and
// would take the tree's unpacking and anything after it — is closed and
// its pod used no further: each fork fails, its pod was asked for nothing
// but the probe sent ahead of the hello (the node's first pod's), got no
// tree and ran nothing of the fork's. Two forks start at once, so that
// one pod is the node's first and the other, as a rule, waits for its
// probe and would be sent its tree after the hello.
func TestNotOurBinary(t *testing.T) {
	t.Parallel()
	cfg, ns := cluster(t)
	fake := filepath.Join(t.TempDir(), "forkbomb")
	var hello bytes.Buffer
	podrun.WriteFrame(&hello, podrun.FrameHello, podrun.Hello(strings.Repeat("0", 64)))
	// It keeps a file for each session it serves, holding each request
	// it was sent, and takes them (acked, "done") without running them.
	serve := `m=/work/marks/$$; mkdir -p /work/marks && : > $m
` + printfFrames(frame{podrun.FrameHello, string(hello.Bytes()[5:])}) + `
while :; do set -- $(dd bs=5 count=1 iflag=fullblock status=none | od -An -tu1); [ $# = 5 ] || exit 0
  n=$(( ($2 << 24) + ($3 << 16) + ($4 << 8) + $5 ))
  if [ "$1" = 114 ]; then dd bs="$n" count=1 iflag=fullblock status=none >> $m; echo >> $m; ` + printfFrames(frame{podrun.FrameAck, ""}, frame{podrun.FrameExit, "0"}) + `
  elif [ "$n" != 0 ]; then dd bs="$n" count=1 iflag=fullblock status=none >/dev/null; fi
done`
	script := "#!/bin/sh\nif [ \"$1\" = __forkbomb_pod_serve ]; then\n" + serve + "\nfi\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, cfg, Options{Namespace: ns, PodBin: fake})
	fork := newRun(t, s, "run-notours")
	ctx := context.Background()
	forks := []string{fork, "run-notours-f1"}
	if _, err := s.Fork(ctx, "run-notours", forks[1]); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(forks))
	for _, f := range forks {
		go func() {
			_, err := s.Exec(ctx, f, sandbox.Policy{Command: []string{"/bin/sh", "-c", "touch ran"}, Timeout: time.Minute}, sandbox.Stdio{})
			errs <- err
		}()
	}
	for range forks {
		if err := <-errs; !errors.Is(err, errNotOurs) {
			t.Errorf("Exec: %v, want errNotOurs", err)
		}
	}
	probe, err := json.Marshal(podrun.Request{Argv: probeArgv})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forks {
		// one session was opened; nothing reached the tree's folder
		var out bytes.Buffer
		code, err := s.stream(ctx, s.forks[f].obj, []string{"/bin/sh", "-c", "ls /work/marks | wc -l; ls -A " + podRoot + " 2>/dev/null | wc -l; cat /work/marks/*"}, nil, &out, &out)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if err != nil || code != 0 || len(lines) < 2 || lines[0] != "1" || lines[1] != "0" {
			t.Errorf("%s: sessions opened, files in the tree: %q (exit %d, %v), want 1 and 0", f, out.String(), code, err)
			continue
		}
		// and it was asked for nothing but, maybe, the pipelined probe
		for _, rq := range lines[2:] {
			if rq != string(probe) {
				t.Errorf("%s: a pod whose server is not forkbomb's was sent %s", f, rq)
			}
		}
		// the fork's next command does not try the pod again
		if _, err := s.Exec(ctx, f, sandbox.Policy{Command: []string{"/bin/true"}, Timeout: time.Minute}, sandbox.Stdio{}); !errors.Is(err, errNotOurs) {
			t.Errorf("%s: the fork's next command: %v, want errNotOurs again", f, err)
		}
	}
}

// helloOfSelf is sh that writes a session server's hello naming the
// SHA-256 of the script running it ($0), as forkbomb's binary names its
// own.
func helloOfSelf() string {
	var b bytes.Buffer
	podrun.WriteFrame(&b, podrun.FrameHello, podrun.Hello(strings.Repeat("0", 64)))
	hdr := b.Bytes()[:5] // the frame's kind and length: a sum's length is fixed
	var q strings.Builder
	for _, c := range hdr {
		fmt.Fprintf(&q, "\\%03o", c)
	}
	return `printf '` + q.String() + podrun.SessionVersion + ` %s' "$(sha256sum <"$0" | cut -d' ' -f1)"`
}

type frame struct {
	kind byte
	p    string
}

// printfFrames is a printf command of sh that writes the frames.
func printfFrames(frames ...frame) string {
	var b bytes.Buffer
	for _, f := range frames {
		podrun.WriteFrame(&b, f.kind, []byte(f.p))
	}
	var q strings.Builder
	q.WriteString("printf '")
	for _, c := range b.Bytes() {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			q.WriteByte(c)
		} else {
			fmt.Fprintf(&q, "\\%03o", c)
		}
	}
	q.WriteString("'")
	return q.String()
}
