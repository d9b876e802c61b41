package sandbox_test

import (
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestInitEnvStaysOutOfTheCommand: the race detector's options that a
// -race test binary gives its init (initenv.go) never reach the command,
// whose environment stays the allowlist; the control names GORACE in the
// policy and sees it arrive, so the probe can see the variable.
func TestInitEnvStaysOutOfTheCommand(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=0")
	for _, named := range []bool{false, true} {
		p := attackPolicy(t, sandbox.ModeAuto, t.TempDir(), "env")
		if named {
			p.Env = []string{"GORACE"}
		}
		o := runPolicy(t, p)
		if o.err != nil || o.code() != 0 {
			t.Fatalf("named %v: code %d err %v", named, o.code(), o.err)
		}
		got := strings.Contains("\n"+o.out, "\nGORACE=")
		switch {
		case !named && got:
			t.Errorf("the init's GORACE reached the command:\n%s", o.out)
		case named && !strings.Contains(o.out, "GORACE=halt_on_error=0\n"):
			t.Errorf("control: GORACE named in the policy did not reach the command:\n%s", o.out)
		}
	}
}
