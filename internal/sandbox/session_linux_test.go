package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// Sessions: every per-command guarantee of sandbox.Run, attacked through
// one sandbox kept for many commands.

func startSession(t *testing.T, p sandbox.Policy) *sandbox.Session {
	t.Helper()
	if p.Init == "" {
		p.Init = testInit(t)
	}
	s, err := sandbox.Start(context.Background(), p)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if p.Mode != sandbox.ModeAuto && p.Mode != "" && s.Mode() != p.Mode {
		t.Fatalf("session backend %s, asked for %s", s.Mode(), p.Mode)
	}
	return s
}

func inSession(t *testing.T, s *sandbox.Session, c sandbox.Cmd) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	res, err := s.Run(ctx, c, sandbox.Stdio{Stdout: &out, Stderr: &errb})
	o := outcome{res: res, err: err, out: out.String(), err2: errb.String()}
	t.Logf("session %q → code %d err %v\n%s", c.Argv, o.code(), err, indent(o.all()))
	return o
}

func sh(script string) sandbox.Cmd {
	return sandbox.Cmd{Argv: []string{"/bin/sh", "-c", script}}
}

// viaSession runs p.Command as the second command of a session built for
// p, the first being a harmless one: the restrictions must hold for every
// command of a session, not only the first.
func viaSession(t *testing.T, p sandbox.Policy) outcome {
	t.Helper()
	if p.Init == "" {
		p.Init = testInit(t)
	}
	s := startSession(t, p)
	if o := inSession(t, s, sh("true")); o.err != nil || o.code() != 0 {
		t.Fatalf("first command: %v code %d", o.err, o.code())
	}
	o := inSession(t, s, sandbox.Cmd{Argv: p.Command})
	checkInitUsed(t, p, o.res)
	return o
}

func TestSessionCommands(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		wd := t.TempDir()
		s := startSession(t, sandbox.Policy{Workdir: wd, Mode: mode})
		steps := []struct {
			name string
			cmd  sandbox.Cmd
			code int
			out  string
			err  error
		}{
			{"write", sh("echo one > f; echo out; echo err >&2"), 0, "out\n", nil},
			{"state persists", sh("cat f; exit 3"), 3, "one\n", nil},
			{"not found", sandbox.Cmd{Argv: []string{"no-such-command-x"}}, -1, "", sandbox.ErrCommandNotFound},
			{"after not found", sh("pwd"), 0, wd + "\n", nil},
			// Only the three streams: the control socket, the received
			// descriptors of earlier commands, never.
			{"descriptors", sh("ls /proc/self/fd | wc -l"), 0, "4\n", nil},
			{"descriptors again", sh("ls /proc/self/fd | wc -l"), 0, "4\n", nil},
			{"own session", sh(`[ "$(ps -o sid= -p $$ 2>/dev/null || awk '{print $6}' /proc/$$/stat)" -eq $$ ] && echo leader`), 0, "leader\n", nil},
		}
		for _, st := range steps {
			o := inSession(t, s, st.cmd)
			if !errors.Is(o.err, st.err) || (st.err == nil && o.err != nil) {
				t.Fatalf("%s: error %v, want %v", st.name, o.err, st.err)
			}
			if st.err != nil {
				continue
			}
			if o.code() != st.code || strings.TrimLeft(o.out, " ") != st.out {
				t.Errorf("%s: code %d out %q, want %d %q", st.name, o.code(), o.out, st.code, st.out)
			}
		}
		if got := readFile(t, filepath.Join(wd, "f")); got != "one\n" {
			t.Errorf("workdir write: %q", got)
		}
	})
}

func TestSessionStdin(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s := startSession(t, sandbox.Policy{Workdir: t.TempDir(), Mode: mode})
		var out bytes.Buffer
		res, err := s.Run(context.Background(), sh("tr a-z A-Z"), sandbox.Stdio{Stdin: strings.NewReader("hello"), Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "HELLO" {
			t.Fatalf("stdin: %v %v %q", err, res, out.String())
		}
	})
}

// TestSessionDescendantsDie: nothing a command starts outlives it, and the
// session serves the next command.
func TestSessionDescendantsDie(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s := startSession(t, sandbox.Policy{Workdir: t.TempDir(), Mode: mode, ReadOnly: []string{dirOf(attackerExe(t))}})
		for i := 0; i < 2; i++ {
			m := sleepMarker()
			// The positive control is in the command: its daemons were
			// alive when it returned.
			o := inSession(t, s, sh(daemonScript(t, m)+"\nsetsid /bin/sleep "+m+" & p=$!; sleep 0.1; kill -0 $p && echo alive"))
			if o.err != nil || o.code() != 0 || !strings.Contains(o.out, "alive") {
				t.Fatalf("run: %v code %d", o.err, o.code())
			}
			if s := survivors(m); len(s) > 0 {
				killAll(s)
				t.Fatalf("LEAK: %d processes outlived command %d: %v", len(s), i, s)
			}
		}
	})
}

func TestSessionTimeout(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s := startSession(t, sandbox.Policy{Workdir: t.TempDir(), Mode: mode, ReadOnly: []string{dirOf(attackerExe(t))}})
		m := sleepMarker()
		c := sh(daemonScript(t, m) + "\necho daemons-started\n/bin/sleep " + m)
		c.Timeout = 10 * time.Second // room for the daemons' start on a loaded machine (the -race attacker among them)
		o := inSession(t, s, c)
		if o.err != nil || !o.res.TimedOut || o.code() != sandbox.ExitTimeout {
			t.Fatalf("timeout: err %v res %+v", o.err, o.res)
		}
		// (else nothing was there for the timeout to kill, and no survivor proves nothing)
		if !strings.Contains(o.out, "daemons-started") {
			t.Fatalf("the timeout came before the daemons were started: %s", o.all())
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived the timeout: %v", len(s), s)
		}
		if o := inSession(t, s, sh("echo next")); o.err != nil || o.out != "next\n" || o.res.TimedOut {
			t.Fatalf("the command after a timeout: %v %q", o.err, o.out)
		}
	})
}

func TestSessionCancel(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s := startSession(t, sandbox.Policy{Workdir: t.TempDir(), Mode: mode})
		m := sleepMarker()
		ctx, cancel := context.WithCancel(context.Background())
		// cancelled once both sleeps run (seen from the host: processes
		// whose program is /bin/sleep, not the shell whose script names m),
		// so that there is something for the cancel to kill
		sleeps := func() (n int) {
			for _, pid := range hostProcsWith(m) {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), "/bin/sleep\x00"+m) {
					n++
				}
			}
			return n
		}
		both := make(chan bool, 1)
		go func() {
			defer cancel()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if sleeps() >= 2 {
					both <- true
					return
				}
			}
			both <- false
		}()
		_, err := s.Run(ctx, sh("setsid /bin/sleep "+m+" & /bin/sleep "+m), sandbox.Stdio{})
		if !<-both {
			t.Fatal("the command's two sleeps were not seen running within a minute")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run: %v", err)
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived the cancel: %v", len(s), s)
		}
		if o := inSession(t, s, sh("echo next")); o.err != nil || o.out != "next\n" {
			t.Fatalf("the command after a cancel: %v %q", o.err, o.out)
		}
	})
}

func TestSessionOutputCap(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s := startSession(t, sandbox.Policy{Workdir: t.TempDir(), Mode: mode})
		m := sleepMarker()
		c := sh("setsid /bin/sleep " + m + " & yes")
		c.MaxOutput = 1000
		o := inSession(t, s, c)
		if o.err != nil || o.res.Limit != "output" || o.code() != sandbox.ExitKilledByLimit || len(o.all()) != 1000 {
			t.Fatalf("cap: err %v res %+v, %d bytes", o.err, o.res, len(o.all()))
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived the output cap: %v", len(s), s)
		}
		if o := inSession(t, s, sh("echo next")); o.err != nil || o.out != "next\n" || o.res.Limit != "" {
			t.Fatalf("the command after a cap: %v %q %+v", o.err, o.out, o.res)
		}
	})
}

func TestSessionClose(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		s, err := sandbox.Start(context.Background(), sandbox.Policy{Workdir: t.TempDir(), Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		m := sleepMarker()
		done := make(chan error, 1)
		go func() {
			_, err := s.Run(context.Background(), sh("/bin/sleep "+m), sandbox.Stdio{})
			done <- err
		}()
		for i := 0; i < 1500 && len(hostProcsWith(m)) == 0; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		if len(hostProcsWith(m)) == 0 {
			t.Fatal("positive control: the command never ran")
		}
		s.Close()
		if err := <-done; !errors.Is(err, sandbox.ErrSessionClosed) {
			t.Errorf("a Run under way at Close: %v", err)
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived Close: %v", len(s), s)
		}
		if _, err := s.Run(context.Background(), sh("true"), sandbox.Stdio{}); !errors.Is(err, sandbox.ErrSessionClosed) {
			t.Errorf("Run after Close: %v", err)
		}
		s.Close() // twice is fine
	})
}

// TestSessionAttacks: the sandbox's key attacks — writes, secrets,
// network, host processes, syscalls — through the second command of a
// session.
func TestSessionAttacks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		t.Run("writes", func(t *testing.T) {
			parent := t.TempDir()
			wd, sib := filepath.Join(parent, "wd"), filepath.Join(parent, "sibling")
			writeFile(t, filepath.Join(sib, "file"), "original")
			if err := os.Mkdir(wd, 0o755); err != nil {
				t.Fatal(err)
			}
			m := fmt.Sprintf("fb-sess-write-%d", os.Getpid())
			t.Cleanup(func() { os.Remove("/etc/" + m); os.Remove(filepath.Join(os.TempDir(), m)) })
			o := viaSession(t, shPolicy(mode, wd, fmt.Sprintf(
				"echo ok > inside; echo p > %s/file; echo e > /etc/%s; echo t > %s; true", sib, m, filepath.Join(os.TempDir(), m))))
			if o.err != nil || readFile(t, filepath.Join(wd, "inside")) != "ok\n" {
				t.Fatalf("workdir write did not land: %v", o.err)
			}
			if readFile(t, filepath.Join(sib, "file")) != "original" {
				t.Errorf("LEAK: sibling written")
			}
			for _, p := range []string{"/etc/" + m, filepath.Join(os.TempDir(), m)} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("LEAK: %s written on the host", p)
				}
			}
		})
		t.Run("secrets", func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "alice")
			secret := canary(t)
			writeFile(t, filepath.Join(home, ".ssh/id_ed25519"), secret)
			wd := filepath.Join(home, "src", "repo")
			writeFile(t, filepath.Join(wd, "README"), "legit")
			t.Setenv("HOME", home)
			o := viaSession(t, attackPolicy(t, mode, wd, "read", filepath.Join(home, ".ssh/id_ed25519"), "/proc/1/root"+home+"/.ssh/id_ed25519", filepath.Join(wd, "README")))
			if o.err != nil || strings.Contains(o.all(), secret) || !strings.Contains(o.out, "legit") {
				t.Errorf("LEAK or broken: err %v, secret read %v, workdir read %v", o.err, strings.Contains(o.all(), secret), strings.Contains(o.out, "legit"))
			}
		})
		t.Run("network", func(t *testing.T) {
			l := startListeners(t)
			s := startSession(t, attackPolicy(t, mode, t.TempDir()))
			for _, a := range l.attacks() {
				o := inSession(t, s, sandbox.Cmd{Argv: append([]string{attackerExe(t), attackArg}, a...)})
				if o.err != nil {
					t.Fatal(o.err)
				}
				// the attack's own word beside the count (as TestAttackNetwork):
				// UDP's send succeeds on a loopback of the sandbox's own
				if a[0] != "udp" && o.code() != 3 {
					t.Errorf("LEAK or no probe: %v was not refused in the session (exit %d): %s", a, o.code(), o.all())
				}
			}
			if r := l.count(t); r.total() != 0 {
				t.Errorf("LEAK: host listeners were reached: %s", r)
			}
		})
		t.Run("host processes", func(t *testing.T) {
			v := osexec.Command("/bin/sleep", sleepMarker())
			if err := v.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { v.Process.Kill(); v.Wait() })
			o := viaSession(t, attackPolicy(t, mode, t.TempDir(), "kill", fmt.Sprint(v.Process.Pid)))
			if o.err != nil {
				t.Fatal(o.err)
			}
			// refused (the attacker says so, exit 3), so no signal is pending
			// and the victim's state is final now (TestAttackHostProcesses has
			// the unconfined control)
			var ws unix.WaitStatus
			if pid, _ := unix.Wait4(v.Process.Pid, &ws, unix.WNOHANG, nil); o.code() != 3 || pid != 0 {
				t.Fatalf("LEAK: the session killed host process %d (exit %d, victim ended: %v): %s", v.Process.Pid, o.code(), pid != 0, o.all())
			}
		})
		t.Run("syscalls", func(t *testing.T) {
			s := startSession(t, attackPolicy(t, mode, t.TempDir()))
			for _, name := range []string{"unshare-user", "unshare", "mount", "remount", "ptrace", "bpf", "io_uring",
				"keyctl", "perf", "userfaultfd", "process_vm_readv", "setns", "init_module"} {
				if o := inSession(t, s, sandbox.Cmd{Argv: []string{attackerExe(t), attackArg, "syscall", name}}); o.code() != 3 {
					t.Errorf("LEAK: %s was not refused in a session (code %d): %s", name, o.code(), o.out)
				}
			}
		})
	})
}

// TestSessionLimits: the session's memory and pids limits stop a bomb in
// one command, nothing of it survives, and the next command runs.
func TestSessionLimits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		for _, c := range []struct {
			name  string
			args  []string
			limit string
			set   func(*sandbox.Policy)
		}{
			{"memory", []string{"alloc", "2147483648"}, "memory", func(p *sandbox.Policy) { p.Memory = 512 << 20 }},
			{"pids", []string{"forkbomb", "500", sleepMarker()}, "pids", func(p *sandbox.Policy) { p.Pids = 64 }},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.name == "pids" && mode == sandbox.ModeLandlock && !cgroupAvailable(t) {
					testutil.SkipNotApplicable(t, "without a cgroup or a user namespace, RLIMIT_NPROC counts every process of the user; documented in SECURITY.md")
				}
				p := attackPolicy(t, mode, t.TempDir())
				c.set(&p)
				if mode == sandbox.ModeLandlock && !cgroupAvailable(t) {
					// Refused: the rlimit stand-ins would bind the init.
					if _, err := sandbox.Start(context.Background(), p); !errors.Is(err, sandbox.ErrSessionUnsupported) {
						t.Fatalf("a landlock session without a cgroup under limits: %v", err)
					}
					return
				}
				s := startSession(t, p)
				o := inSession(t, s, sandbox.Cmd{Argv: append([]string{attackerExe(t), attackArg}, c.args...)})
				if !cgroupAvailable(t) && errors.Is(o.err, sandbox.ErrSessionClosed) {
					// Without a cgroup the rlimits bind the init too, and the
					// bomb may end it: the session ends, its pid namespace
					// with everything in it; a new one serves the next.
					s = startSession(t, p)
				} else {
					if o.err != nil {
						t.Fatal(o.err)
					}
					if o.code() == 0 {
						t.Fatalf("LEAK: %v succeeded under the limit", c.args)
					}
					if cgroupAvailable(t) && o.res.Limit != c.limit {
						t.Errorf("with a cgroup the limit should be reported: %q", o.res.Limit)
					}
				}
				if c.name == "pids" {
					if s := survivors(c.args[2]); len(s) > 0 {
						killAll(s)
						t.Errorf("LEAK: %d fork-bomb processes survived", len(s))
					}
				}
				if o := inSession(t, s, sh("echo next")); o.err != nil || o.out != "next\n" || o.res.Limit != "" {
					t.Fatalf("the command after a limit: %v %q", o.err, o.out)
				}
			})
		}
	})
}
