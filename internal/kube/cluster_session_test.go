package kube

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// listServers is shell text that prints the pid of each session server in
// the pod, one a line.
const listServers = `for p in /proc/[0-9]*; do case "$(tr '\0' ' ' <$p/cmdline 2>/dev/null)" in "` + podBin + ` __forkbomb""_pod_serve ") echo ${p#/proc/};; esac; done`

// TestClusterSession: after a fork's start, its commands, its diff and the
// editor's calls ride one session — no exec of their own, counted — and
// the session's server is out of the fork's reach: a command cannot kill
// it (the control: the same kill from outside does, and the next command
// runs in a new session). A command cut by its output cap ends its
// session; what it left is killed, and nothing of it is left in the pod.
func TestClusterSession(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns})
	fork := newRun(t, s, "run-session")
	ctx := context.Background()
	run := func(cmd string) (string, *sandbox.Result) {
		t.Helper()
		var out bytes.Buffer
		res, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", cmd}, Timeout: time.Minute},
			sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out.String())
		}
		return out.String(), res
	}
	// from outside the sandbox, in an exec of its own
	outside := func(script string) string {
		t.Helper()
		var out bytes.Buffer
		if code, err := s.stream(ctx, s.forks[fork].obj, []string{"/bin/sh", "-c", script}, nil, &out, &out); err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v\n%s", script, code, err, out.String())
		}
		return out.String()
	}
	servers := func() []string { t.Helper(); return strings.Fields(outside(listServers)) }
	// noneLeft: every process in the pod is pid 1 or a session server,
	// besides the listing's own shell and its children
	noneLeft := func(t *testing.T, after string) {
		t.Helper()
		left := outside(`for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] && continue; c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue; case "$c" in ""|"tr "*|*lister*) ;; *) echo "$p $c";; esac; done # lister`)
		for _, l := range strings.Split(strings.TrimSpace(left), "\n") {
			if l != "" && !strings.Contains(l, "__forkbomb_pod_serve") {
				t.Errorf("left in the pod after %s: %s", after, l)
			}
		}
	}

	if out, res := run("echo 1 > value; cat value"); res.ExitCode != 0 || out != "1\n" {
		t.Fatalf("first command: exit %d\n%s", res.ExitCode, out)
	}
	if !s.forks[fork].scoped {
		testutil.SkipOrFail(t, "this node's kernel does not scope a sandbox's signals (Landlock ABI 6, Linux 6.12): a fork's pod gets no session there, each command an exec (SECURITY.md)")
	}
	first := servers()
	if len(first) != 1 {
		t.Fatalf("session servers in the pod after the first command: %q, want one", first)
	}

	t.Run("commands, diff and editor ride the session", func(t *testing.T) {
		before := s.execs.Load()
		for i := 2; i <= 6; i++ {
			if out, res := run("echo " + strconv.Itoa(i) + " >> value; tail -n1 value"); res.ExitCode != 0 || out != strconv.Itoa(i)+"\n" {
				t.Fatalf("command %d: exit %d\n%s", i, res.ExitCode, out)
			}
		}
		if out, res := run("exit 7"); res.ExitCode != 7 {
			t.Fatalf("exit 7: got %d\n%s", res.ExitCode, out)
		}
		d, err := s.Diff(ctx, fork, true)
		if err != nil || !strings.Contains(string(d.Patch), "+6") || !strings.Contains(d.Stat, "value") {
			t.Fatalf("diff: %v\n%s\n%s", err, d.Patch, d.Stat)
		}
		_, f, err := s.Files(ctx, fork)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Write(ctx, "edited", []byte("by the editor\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _, err := f.Read(ctx, "edited", 100); err != nil || string(b) != "by the editor\n" {
			t.Fatalf("read back: %q %v", b, err)
		}
		if n := s.execs.Load() - before; n != 0 {
			t.Fatalf("six commands, a diff and two editor calls took %d execs of their own, want 0", n)
		}
		if now := servers(); len(now) != 1 || now[0] != first[0] {
			t.Fatalf("session servers %q, want the first's %q alone", now, first)
		}
	})

	t.Run("the command cannot kill its session", func(t *testing.T) {
		out, res := run("kill -9 " + first[0] + "; echo status $?")
		if res.ExitCode != 0 || strings.Contains(out, "status 0") {
			t.Fatalf("the kill of the session's server was not refused: exit %d\n%s", res.ExitCode, out)
		}
		if now := servers(); len(now) != 1 || now[0] != first[0] {
			t.Fatalf("session servers %q, want the first's %q alone", now, first)
		}
	})

	t.Run("killed from outside, the next command runs in a new session", func(t *testing.T) {
		s.mu.Lock()
		old := s.sessions[s.forks[fork].obj].se
		s.mu.Unlock()
		outside("kill -9 " + first[0])
		// a command asked for before forkbomb sees the end would fail,
		// as a cut exec does (a command is never run twice)
		select {
		case <-old.ended:
		case <-time.After(time.Minute):
			t.Fatal("the killed server's session did not end")
		}
		out, res := run("tail -n1 value")
		if res.ExitCode != 0 || out != "6\n" {
			t.Fatalf("after the kill: exit %d\n%s", res.ExitCode, out)
		}
		if now := servers(); len(now) != 1 || now[0] == first[0] {
			t.Fatalf("session servers %q, want one other than %q", now, first)
		}
	})

	t.Run("a cut command leaves nothing", func(t *testing.T) {
		var out bytes.Buffer
		res, err := s.Exec(ctx, fork, sandbox.Policy{Command: []string{"/bin/sh", "-c", "sleep 300 & yes"}, Timeout: time.Minute, MaxOutput: 4096},
			sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil || res.Limit != "output" {
			t.Fatalf("the capped command: %v %+v", err, res)
		}
		noneLeft(t, "the cut command")
		if out, res := run("tail -n1 value"); res.ExitCode != 0 || out != "6\n" {
			t.Fatalf("after the cut: exit %d\n%s", res.ExitCode, out)
		}
	})

	t.Run("a cut diff or editor call leaves nothing", func(t *testing.T) {
		// what outputFrom runs (a diff, an editor call), cut by its
		// caller's cancel while a process it started left its process
		// group: the session's end kills the group, the kill after the
		// cut the rest
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, _, err := s.output(cctx, s.forks[fork].obj, `setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 300`, nil, 64); err == nil {
			t.Fatal("the cut call did not fail")
		}
		noneLeft(t, "the cut call")
		if out, res := run("tail -n1 value"); res.ExitCode != 0 || out != "6\n" {
			t.Fatalf("after the cut call: exit %d\n%s", res.ExitCode, out)
		}
	})
}
