package world

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestContainment attacks from inside a world and checks from outside: host files a script
// must not read (their contents, names and existence), host files it must not write, host
// binaries it must not run, a loopback listener it must not reach, and the host environment
// it must not see. Every probe is also run by real bash on the host as the positive control:
// there, each one leaks, so the checks would notice a leak.
func TestContainment(t *testing.T) {
	host, _ := testutil.OutsideDir(t)
	secret := "SECRET-" + strconv.Itoa(os.Getpid()) + "-canary"
	if err := os.WriteFile(filepath.Join(host, "secret.txt"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "exe"), []byte("#!/bin/sh\necho ran-exe-"+secret+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln := testutil.CountLoopback(t)
	_, port, _ := net.SplitHostPort(ln.Addr())
	t.Setenv("FORKBOMB_WORLD_CANARY", secret)

	type probe struct {
		name, script string
		// wrote names a host file the probe tries to make.
		wrote string
		// net: the probe tries to connect to the listener.
		net bool
		// noControl: bash cannot show this leak the same way (the world's own shim).
		noControl bool
	}
	H := host
	probes := []probe{
		{name: "cat", script: "cat " + H + "/secret.txt"},
		{name: "cmdsubst file", script: `echo "$(<` + H + `/secret.txt)"`},
		{name: "redirect in", script: "read l < " + H + "/secret.txt; echo $l"},
		{name: "source", script: "source " + H + "/secret.txt"},
		{name: "glob", script: "echo " + H + "/secr*"},
		{name: "test -e", script: "[ -e " + H + "/secret.txt ] && echo " + secret},
		{name: "test -r", script: "[ -r " + H + "/secret.txt ] && echo " + secret},
		{name: "cd", script: "cd " + H + " && echo " + secret},
		{name: "command -v path", script: "command -v " + H + "/exe && echo " + secret},
		{name: "type path", script: "type " + H + "/exe >/dev/null 2>&1 && echo " + secret},
		{name: "run by path", script: H + "/exe"},
		{name: "awk getline", script: `awk 'BEGIN{while ((getline l < "` + H + `/secret.txt") > 0) print l}'`},
		{name: "awk file arg", script: "awk '{print}' " + H + "/secret.txt"},
		{name: "grep -r", script: "grep -r SECRET " + H},
		{name: "write redirect", script: "echo pwned > " + H + "/w1", wrote: "w1"},
		{name: "touch", script: "touch " + H + "/w2", wrote: "w2"},
		{name: "mkdir", script: "mkdir " + H + "/w3", wrote: "w3"},
		{name: "awk write", script: `awk 'BEGIN{print "x" > "` + H + `/w4"}'`, wrote: "w4"},
		{name: "fifo bypass", script: "echo x > " + noFifoDir + "/sh-interp-1; cat <(echo hi) > " + H + "/w5", wrote: "w5", noControl: true},
		{name: "sh -c", script: "sh -c 'touch " + H + "/x1'", wrote: "x1"},
		{name: "/bin/sh -c", script: "/bin/sh -c 'touch " + H + "/x2'", wrote: "x2"},
		{name: "exec", script: "exec /usr/bin/touch " + H + "/x3", wrote: "x3"},
		{name: "xargs", script: "echo " + H + "/x4 | xargs touch", wrote: "x4"},
		{name: "awk system", script: `awk 'BEGIN{system("touch ` + H + `/x5")}'`, wrote: "x5"},
		{name: "awk pipe", script: `awk 'BEGIN{print "touch ` + H + `/x6" | "sh"}'`, wrote: "x6"},
		{name: "env", script: "env; printenv; echo $FORKBOMB_WORLD_CANARY"},
		{name: "awk ENVIRON", script: `awk 'BEGIN{print ENVIRON["FORKBOMB_WORLD_CANARY"]}'`},
		{name: "dev tcp", script: "echo hi > /dev/tcp/127.0.0.1/" + port, net: true},
		{name: "tilde user", script: "echo ~root ~nobody; echo ~root | grep -q / && echo " + secret},
		{name: "tilde eval", script: "eval 'echo ~root' | grep -q / && echo " + secret},
		{name: "tilde assign", script: "x=a:~root; echo $x | grep -q / && echo " + secret},
		{name: "tilde source", script: "echo 'echo ~root' > s; source ./s | grep -q / && echo " + secret},
	}
	run := func(t *testing.T, p probe, world bool) string {
		if world {
			// The probe must reach the world's commands: a script its parser
			// refused (bash's may take it) would leak nothing and test nothing.
			if _, err := syntax.NewParser().Parse(strings.NewReader(p.script), ""); err != nil {
				t.Fatalf("the probe does not parse in a world: %v", err)
			}
			res, err := New().Exec(context.Background(), p.script, nil, Limits{})
			if err != nil || res.Failed != "" || res.Limit != "" {
				t.Fatalf("the probe did not run: %v %+v", err, res)
			}
			return string(res.Stdout) + string(res.Stderr)
		}
		c := exec.Command("bash", "-c", p.script)
		c.Dir = t.TempDir()
		out, _ := c.CombinedOutput()
		return string(out)
	}
	leaked := func(t *testing.T, p probe, out string, before int64) []string {
		var why []string
		if strings.Contains(out, secret) {
			why = append(why, "output holds the secret")
		}
		if strings.Contains(out, "secret.txt") && p.name == "glob" {
			why = append(why, "a host name was listed")
		}
		if p.wrote != "" {
			if _, err := os.Lstat(filepath.Join(host, p.wrote)); err == nil {
				why = append(why, "host file "+p.wrote+" exists")
			}
		}
		if p.net {
			time.Sleep(testutil.InFlight) // what the kernel may still be queueing
			if ln.Count(t) > before {
				why = append(why, "the listener was reached")
			}
		}
		return why
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			before := ln.Count(t)
			out := run(t, p, true)
			if why := leaked(t, p, out, before); len(why) > 0 {
				t.Errorf("world leaked: %v\noutput: %s", why, out)
			}
			if p.noControl {
				return
			}
			if _, err := exec.LookPath("bash"); err != nil {
				testutil.SkipOrFail(t, "no bash for the control: %v", err)
			}
			before = ln.Count(t)
			out = run(t, p, false)
			if why := leaked(t, p, out, before); len(why) == 0 {
				t.Errorf("control: bash on the host did not leak, so this probe proves nothing\noutput: %s", out)
			}
			if p.wrote != "" {
				os.RemoveAll(filepath.Join(host, p.wrote))
			}
		})
	}
}
