package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestAttackSyscalls: the seccomp filter refuses namespace, mount, ptrace
// and kernel-attack-surface calls, including a raw clone(CLONE_NEWUSER).
func TestAttackSyscalls(t *testing.T) {
	denied := []string{"unshare-user", "unshare", "mount", "remount", "ptrace", "bpf", "io_uring",
		"keyctl", "perf", "userfaultfd", "process_vm_readv", "setns", "init_module"}
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		for _, name := range denied {
			o := runPolicy(t, attackPolicy(t, mode, t.TempDir(), "syscall", name))
			if o.code() != 3 {
				t.Errorf("LEAK: %s was not refused (code %d): %s", name, o.code(), o.out)
			}
		}
	})
	t.Run("control", func(t *testing.T) {
		// Harmless ones only: unconfined, these succeed — unless a filter
		// of the caller's own refuses them already (a container's
		// runtime's, as in a pod: internal/kube runs this suite there).
		for _, name := range []string{"unshare-user", "keyctl"} {
			if o := runPolicy(t, unconfinedPolicy(t, t.TempDir(), "syscall", name)); o.code() != 0 {
				if o.code() == 3 && callerFiltered() {
					testutil.SkipOrFail(t, "this process's own seccomp filter (a container runtime's) refuses %s unconfined: nothing to compare with", name)
				}
				t.Errorf("positive control: unconfined %s refused: %s", name, o.out)
			}
		}
	})
}

// callerFiltered reports whether this process already runs under a
// seccomp filter (Seccomp: 2 in its status).
func callerFiltered() bool {
	b, _ := os.ReadFile("/proc/self/status")
	return strings.Contains(string(b), "\nSeccomp:\t2\n")
}

// TestAttackForeignArch: a 32-bit syscall through int 0x80 kills the
// process instead of slipping past the filter's 64-bit syscall numbers.
func TestAttackForeignArch(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		o := runPolicy(t, attackPolicy(t, mode, t.TempDir(), "int80"))
		if !strings.Contains(o.out, "i386 getpid") && o.code() != 0 && o.code() != 128+31 && strings.Contains(o.err2, "SIGSEGV") {
			testutil.SkipNotApplicable(t, "this kernel refuses int 0x80 outright (no i386 emulation); TestFilterRules checks the rule")
		}
		if o.code() != 128+31 { // SIGSYS
			t.Fatalf("LEAK: the i386 syscall was not killed (code %d): %s", o.code(), o.out)
		}
	})
	t.Run("control", func(t *testing.T) {
		o := runPolicy(t, unconfinedPolicy(t, t.TempDir(), "int80"))
		if o.code() != 0 || !strings.Contains(o.out, "i386 getpid") {
			// Not a missing sandbox layer but a missing attack surface;
			// TestFilterRules checks the filter's rule regardless.
			testutil.SkipNotApplicable(t, "this kernel refuses int 0x80 even unconfined (no i386 emulation): there is nothing to bypass here")
		}
	})
}

// procStatus reads /proc/<pid>/status fields of a host process.
func procStatus(pid int) map[string]string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	m := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// TestConfinementSeenFromHost reads the running command's status from the
// host's /proc: seccomp in filter mode, no_new_privs, no capabilities.
func TestConfinementSeenFromHost(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		m := sleepMarker()
		done := make(chan outcome, 1)
		go func() {
			p := sandbox.Policy{Command: []string{"/bin/sleep", m}, Workdir: t.TempDir(), Mode: mode, Timeout: 2 * time.Minute}
			done <- runPolicy(t, p)
		}()
		var pids []int
		// a deadline, not a count of polls: a loaded machine's sandbox
		// start and /proc scans may take seconds
		for deadline := time.Now().Add(time.Minute); len(pids) == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			pids = hostProcsWith(m)
		}
		if len(pids) != 1 {
			t.Fatalf("expected one sandboxed sleep in the host process table, found %v", pids)
		}
		st := procStatus(pids[0])
		killAll(pids)
		<-done
		checks := map[string]string{"Seccomp": "2", "NoNewPrivs": "1", "CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapAmb": "0000000000000000"}
		if mode == sandbox.ModeNamespaces || os.Getuid() == 0 {
			checks["CapBnd"] = "0000000000000000"
		}
		for k, want := range checks {
			if st[k] != want {
				t.Errorf("%s = %q, want %q", k, st[k], want)
			}
		}
		t.Logf("host view: Seccomp=%s NoNewPrivs=%s CapEff=%s CapBnd=%s NSpid=%s", st["Seccomp"], st["NoNewPrivs"], st["CapEff"], st["CapBnd"], st["NSpid"])
	})
}

// TestAttackRootPowers: even when the caller is root, the command cannot
// remount the host read-write, write root-owned host files, write sysctls
// or read raw disks.
func TestAttackRootPowers(t *testing.T) {
	if os.Getuid() != 0 {
		testutil.SkipNotApplicable(t, "these attacks are about a root caller (the root run covers them); as an ordinary user the kernel refuses them regardless")
	}
	disk := ""
	if entries, _ := os.ReadDir("/sys/block"); len(entries) > 0 {
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "loop") && !strings.HasPrefix(e.Name(), "ram") {
				disk = "/dev/" + e.Name()
				break
			}
		}
	}
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		ro := t.TempDir()
		owned := filepath.Join(ro, "root-owned")
		writeFile(t, owned, "original")
		os.Chmod(owned, 0o600)
		m := fmt.Sprintf("fb-root-%d", time.Now().UnixNano())
		t.Cleanup(func() { os.Remove("/etc/" + m) })
		script := fmt.Sprintf(`
mount -o remount,rw / 2>&1; mount -t tmpfs none /mnt 2>&1
echo pwned > /etc/%[1]s
echo pwned > %[2]s
echo 1 > /proc/sys/vm/drop_caches
echo b > /proc/sysrq-trigger 2>&1 || true
if [ -n "%[3]s" ]; then head -c 512 %[3]s | od -An -tx1 | head -2; fi
true`, m, owned, disk)
		p := shPolicy(mode, t.TempDir(), script)
		p.ReadOnly = []string{ro}
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if _, err := os.Stat("/etc/" + m); err == nil {
			t.Errorf("LEAK: wrote /etc as root")
		}
		if got := readFile(t, owned); got != "original" {
			t.Errorf("LEAK: root-owned file changed: %q", got)
		}
		if disk != "" && strings.Count(o.out, " ") > 100 {
			t.Errorf("LEAK: raw disk %s was read", disk)
		}
	})
	t.Run("control", func(t *testing.T) {
		if disk == "" {
			testutil.SkipNotApplicable(t, "no block device to read")
		}
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), "head -c 512 "+disk+" | od -An -tx1 | head -2")
		p.NoSandbox = true
		if o := runPolicy(t, p); strings.Count(o.out, " ") < 16 {
			testutil.SkipNotApplicable(t, "the host refuses raw reads of %s even to unconfined root here; nothing to prove", disk)
		}
	})
}

// TestFallbackByTrial: where user namespaces are refused — here, inside a
// sandbox, whose seccomp filter refuses them — Run falls back to Landlock
// alone, says so, and still confines: the inner sandbox, run from a
// subfolder of the outer one's workdir, cannot write into that workdir,
// which the outer sandbox allows (the control).
func TestFallbackByTrial(t *testing.T) {
	requireLayer(t, "user namespace")
	requireLayer(t, "landlock-only fallback")
	parent := t.TempDir()
	wd := filepath.Join(parent, "wd")
	os.MkdirAll(filepath.Join(wd, "sub"), 0o755)
	// the attacker starts the inner sandbox in wd/sub (its workdir "."): ../escape is wd's
	p := attackPolicy(t, sandbox.ModeNamespaces, wd, "nested", "/bin/sh", "-c", "echo inner > inner.txt; echo x > ../escape; cat inner.txt")
	p.Command = append([]string{"/bin/sh", "-c", `cd sub && exec "$0" "$@"`}, p.Command...)
	o := runPolicy(t, p)
	if o.code() != 0 {
		t.Fatalf("nested run failed: %s", o.all())
	}
	if !strings.Contains(o.out, "mode=landlock") || !strings.Contains(o.out, "namespaces unavailable") {
		t.Errorf("the inner sandbox did not fall back to landlock with a warning: %s", o.out)
	}
	if !strings.Contains(o.out, `inner\n`) { // stderr and stdout share the buffer, in any order
		t.Errorf("the inner command did not run: %s", o.out)
	}
	if readFile(t, filepath.Join(wd, "sub", "inner.txt")) != "inner\n" {
		t.Errorf("the inner sandbox's workdir write did not land")
	}
	if _, err := os.Lstat(filepath.Join(wd, "escape")); err == nil {
		t.Errorf("LEAK: the fallback sandbox wrote outside its workdir (into the outer one's): %s", o.out)
	}
	t.Run("control", func(t *testing.T) {
		p := shPolicy(sandbox.ModeNamespaces, wd, "cd sub && echo x > ../escape")
		if o := runPolicy(t, p); o.code() != 0 || readFile(t, filepath.Join(wd, "escape")) != "x\n" {
			t.Fatalf("positive control: the outer sandbox alone did not let its command write ../escape: %s", o.all())
		}
	})
}
