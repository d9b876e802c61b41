package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestAttackHostProcesses: a host process of the same user can be neither
// killed nor inspected from inside.
func TestAttackHostProcesses(t *testing.T) {
	victim := func(t *testing.T) *exec.Cmd {
		v := exec.Command("/bin/sleep", sleepMarker())
		if err := v.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Process.Kill(); v.Wait() })
		return v
	}
	// exited waits up to limit for the victim to end. SIGKILL is only
	// pending when kill(2) returns, so the victim may still run a moment.
	exited := func(v *exec.Cmd, limit time.Duration) bool {
		for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
			var ws unix.WaitStatus
			if pid, _ := unix.Wait4(v.Process.Pid, &ws, unix.WNOHANG, nil); pid != 0 {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		v := victim(t)
		pid := fmt.Sprint(v.Process.Pid)
		o := runPolicy(t, attackPolicy(t, mode, t.TempDir(), "kill", pid))
		// The kernel refused the kill (the attacker says so), so no signal
		// is pending and the victim's state is final now.
		// (exit 3 is the attacker's "refused"; -1 would be no run at all)
		if o.code() != 3 || exited(v, 0) {
			t.Fatalf("LEAK: the sandbox killed host process %s (exit %d): %s", pid, o.code(), o.all())
		}
		if mode == sandbox.ModeNamespaces {
			o := runPolicy(t, attackPolicy(t, mode, t.TempDir(), "read", "/proc/"+pid+"/cmdline"))
			if o.code() != 3 {
				t.Errorf("LEAK: host process %s visible in /proc (exit %d): %s", pid, o.code(), o.all())
			}
		}
	})
	t.Run("control", func(t *testing.T) {
		v := victim(t)
		o := runPolicy(t, unconfinedPolicy(t, t.TempDir(), "kill", fmt.Sprint(v.Process.Pid)))
		if o.code() != 0 || !exited(v, time.Minute) {
			t.Fatal("positive control: unconfined kill not seen")
		}
	})
}

// daemonScript leaves behind processes of every kind a command can leave:
// background, nohup'ed, setsid'ed, double-forked daemons.
func daemonScript(t *testing.T, marker string) string {
	exe := attackerExe(t)
	return fmt.Sprintf(`
/bin/sleep %[1]s &
nohup /bin/sleep %[1]s >/dev/null 2>&1 &
setsid /bin/sleep %[1]s &
( /bin/sleep %[1]s & ) &
%[2]s %[3]s daemonize /bin/sleep %[1]s
sleep 0.2
true`, marker, exe, attackArg)
}

// TestAttackDescendantsDie: every descendant dies when the command exits.
func TestAttackDescendantsDie(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		m := sleepMarker()
		p := shPolicy(mode, t.TempDir(), daemonScript(t, m))
		p.ReadOnly = []string{dirOf(attackerExe(t))}
		o := runPolicy(t, p)
		if o.err != nil || o.code() != 0 {
			t.Fatalf("run: %v code %d", o.err, o.code())
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived the command: %v", len(s), s)
		}
	})
	t.Run("control", func(t *testing.T) {
		m := sleepMarker()
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), daemonScript(t, m))
		p.NoSandbox = true
		runPolicy(t, p)
		s := hostProcsWith(m)
		killAll(s)
		if len(s) == 0 {
			t.Fatal("positive control: unconfined daemons not seen in the host process table")
		}
	})
}

func dirOf(p string) string { return p[:strings.LastIndexByte(p, '/')] }

// TestTimeoutKillsEverything: on timeout every process dies and the status
// is 124.
func TestTimeoutKillsEverything(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		m := sleepMarker()
		p := shPolicy(mode, t.TempDir(), daemonScript(t, m)+"\necho daemons-started\n/bin/sleep "+m)
		p.ReadOnly = []string{dirOf(attackerExe(t))}
		p.Timeout = 10 * time.Second // room for the daemons' start on a loaded machine (the -race attacker among them)
		start := time.Now()
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if !o.res.TimedOut || o.code() != sandbox.ExitTimeout {
			t.Errorf("timed out = %v, code %d; want true, 124", o.res.TimedOut, o.code())
		}
		// (else nothing was there for the timeout to kill, and no survivor proves nothing)
		if !strings.Contains(o.out, "daemons-started") {
			t.Fatalf("the timeout came before the daemons were started: %s", o.all())
		}
		if s := survivors(m); len(s) > 0 {
			killAll(s)
			t.Fatalf("LEAK: %d processes outlived the timeout", len(s))
		}
		t.Logf("returned after %v", time.Since(start))
	})
}

// openPty returns a pseudo-terminal pair with the slave in raw mode.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testutil.SkipOrFail(t, "no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// pendingInput reads what is waiting in the terminal's input queue: what
// the user's shell would read next.
func pendingInput(s *os.File) string {
	n, _ := unix.IoctlGetInt(int(s.Fd()), unix.TIOCINQ)
	if n == 0 {
		return ""
	}
	buf := make([]byte, n)
	r, _ := unix.Read(int(s.Fd()), buf)
	return string(buf[:max(r, 0)])
}

// TestAttackTIOCSTI: the command cannot push keystrokes into the caller's
// terminal, neither with TIOCSTI nor with the high-word variant that slips
// past a 64-bit comparison.
func TestAttackTIOCSTI(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		for _, verb := range []string{"tiocsti", "tiocsti-hi"} {
			_, s := openPty(t)
			p := attackPolicy(t, mode, t.TempDir(), verb)
			var out strings.Builder
			res, err := sandbox.Run(t.Context(), p, sandbox.Stdio{Stdin: s, Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: code %d %s", verb, res.ExitCode, out.String())
			// refused by the kernel (the attacker's exit 3), not ended before the ioctl
			if res.ExitCode != 3 || !strings.Contains(out.String(), "operation not permitted") {
				t.Errorf("LEAK or no probe: %s was not refused with EPERM (exit %d): %s", verb, res.ExitCode, out.String())
			}
			if got := pendingInput(s); got != "" {
				t.Errorf("LEAK: %s injected %q into the terminal", verb, got)
			}
		}
	})
	t.Run("control", func(t *testing.T) {
		if os.Getuid() != 0 {
			testutil.SkipNotApplicable(t, "control needs CAP_SYS_ADMIN (the root run has it): without it the kernel refuses TIOCSTI on a terminal that is not the caller's own")
		}
		if data, _ := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); strings.TrimSpace(string(data)) == "0" {
			testutil.SkipNotApplicable(t, "control impossible: dev.tty.legacy_tiocsti=0 disables TIOCSTI on this kernel")
		}
		_, s := openPty(t)
		// Unconfined, the same ioctl lands in the queue.
		c := byte('X')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, s.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 || pendingInput(s) != "X" {
			t.Fatalf("positive control: unconfined TIOCSTI not seen (%v)", e)
		}
	})
}
