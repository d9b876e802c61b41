package sandbox_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestPidsContinueTheCallers: in the namespaces backend the command's pid
// is not the 2 or 3 of a new pid namespace, which a gated fix could read
// with os.Getpid(): the namespace goes on from the caller's last pid. The
// counter is set before /proc is made read-only, and stays so.
func TestPidsContinueTheCallers(t *testing.T) {
	t.Parallel()
	requireLayer(t, "user namespace")
	read := func(p string) int {
		b, err := os.ReadFile(p)
		if err != nil {
			testutil.SkipOrFail(t, "%s: %v", p, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, max := read("/proc/sys/kernel/ns_last_pid"), read("/proc/sys/kernel/pid_max")
	o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, t.TempDir(),
		`echo "pid $$"; echo 7 > /proc/sys/kernel/ns_last_pid 2>/dev/null && echo WROTE; cat /proc/sys/kernel/ns_last_pid`))
	if o.code() != 0 {
		t.Fatalf("exit %d: %s", o.code(), o.all())
	}
	f := strings.Fields(o.out)
	if len(f) < 3 || f[0] != "pid" {
		t.Fatalf("unexpected output %q", o.out)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(o.out, "WROTE") {
		t.Errorf("LEAK: the command set its pid namespace's counter: /proc is writable")
	}
	if before+2000 >= max {
		t.Logf("the host's pids are about to wrap (%d of %d): pid %d inside not compared", before, max, pid)
		return
	}
	if pid <= before {
		t.Errorf("the command's pid is %d inside, the host's last pid before the run %d: the pid namespace counts from 1 again", pid, before)
	}
}
