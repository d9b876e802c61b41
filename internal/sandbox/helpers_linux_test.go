package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

var (
	probeOnce sync.Once
	probeRep  *sandbox.ProbeReport
	probeErr  error
)

func probe(t *testing.T) *sandbox.ProbeReport {
	t.Helper()
	probeOnce.Do(func() { probeRep, probeErr = sandbox.Probe(context.Background()) })
	if probeErr != nil {
		t.Fatalf("probe: %v", probeErr)
	}
	return probeRep
}

func requireLayer(t *testing.T, name string) {
	t.Helper()
	l := probe(t).Layer(name)
	if l == nil || l.Status != "ok" {
		detail := "not reported"
		if l != nil {
			detail = l.Detail
		}
		testutil.SkipOrFail(t, "layer %q unavailable on this machine: %s", name, detail)
	}
}

// modes are the backends a guarantee is tested on.
func modes(t *testing.T) []sandbox.Mode {
	t.Helper()
	p := probe(t)
	var out []sandbox.Mode
	if l := p.Layer("user namespace"); l != nil && l.Status == "ok" {
		out = append(out, sandbox.ModeNamespaces)
	}
	if l := p.Layer("landlock-only fallback"); l != nil && l.Status == "ok" {
		out = append(out, sandbox.ModeLandlock)
	}
	if len(out) < 2 && testutil.RequireAll() {
		t.Fatalf("%s=1 but only backends %v work here", testutil.RequireAllEnv, out)
	}
	if len(out) == 0 {
		testutil.SkipOrFail(t, "no sandbox backend works on this machine")
	}
	return out
}

func forEachMode(t *testing.T, f func(t *testing.T, mode sandbox.Mode)) {
	for _, m := range modes(t) {
		t.Run(string(m), func(t *testing.T) { f(t, m) })
	}
}

// runPolicy runs p — with the slim init, as forkbomb does, unless p names
// another — and checks that the init asked for is the one that ran.
func runPolicy(t *testing.T, p sandbox.Policy) outcome {
	t.Helper()
	if p.Init == "" && !p.NoSandbox {
		p.Init = testInit(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	res, err := sandbox.Run(ctx, p, sandbox.Stdio{Stdout: &out, Stderr: &errb})
	o := outcome{res: res, err: err, out: out.String(), err2: errb.String()}
	t.Logf("%v → code %d err %v\n%s", p.Command, o.code(), err, indent(o.all()))
	checkInitUsed(t, p, res)
	return o
}

// checkInitUsed fails a test whose sandbox fell back from the slim init
// it was given: it would attack the fallback, not what forkbomb runs.
func checkInitUsed(t *testing.T, p sandbox.Policy, res *sandbox.Result) {
	t.Helper()
	if res != nil && p.Init != "" && !p.NoSandbox && res.Init != p.Init {
		t.Errorf("the sandbox ran with init %s, not the slim init %s", res.Init, p.Init)
	}
}

// attackPolicy runs the attacker (this test binary) with args, confined by
// mode, with the binary's folder readable.
func attackPolicy(t testing.TB, mode sandbox.Mode, workdir string, args ...string) sandbox.Policy {
	exe := attackerExe(t)
	p := sandbox.Policy{
		Command:  append([]string{exe, attackArg}, args...),
		Workdir:  workdir,
		ReadOnly: []string{filepath.Dir(exe)},
		Mode:     mode,
		Init:     testInit(t),
	}
	if mode != sandbox.ModeLandlock {
		p.User = attackUser
	}
	return p
}

// attackUser, from FORKBOMB_TEST_INNER_UID=UID:GID, runs every attack as
// that user inside the namespaces backend (Policy.User), so the whole
// suite can be re-run to show that mapping the caller to another uid
// weakens nothing (scripts/test does once).
var attackUser = func() *sandbox.User {
	var u sandbox.User
	if _, err := fmt.Sscanf(os.Getenv("FORKBOMB_TEST_INNER_UID"), "%d:%d", &u.UID, &u.GID); err != nil {
		return nil
	}
	return &u
}()

// unconfinedPolicy is the positive control: the same attack, no sandbox.
func unconfinedPolicy(t *testing.T, workdir string, args ...string) sandbox.Policy {
	p := attackPolicy(t, sandbox.ModeAuto, workdir, args...)
	p.NoSandbox = true
	return p
}

func shPolicy(mode sandbox.Mode, workdir, script string) sandbox.Policy {
	return sandbox.Policy{Command: []string{"/bin/sh", "-c", script}, Workdir: workdir, Mode: mode}
}

// hostProcsWith lists host pids whose command line contains marker.
func hostProcsWith(marker string) []int { return testutil.ProcsWith(marker) }
