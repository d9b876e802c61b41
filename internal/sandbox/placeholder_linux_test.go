package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestPlaceholderCredential: a placeholder forkbomb made reaches the
// command under a credential's name, while the real credential of that
// name, in forkbomb's own environment, does not; and a real key planted in
// forkbomb's environment and handed back as a placeholder is refused
// before anything runs.
func TestPlaceholderCredential(t *testing.T) {
	key := canary(t)
	t.Setenv("ANTHROPIC_API_KEY", key)
	planted := sandbox.NewPlaceholder()
	t.Setenv("OPENAI_API_KEY", planted)

	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		ph := sandbox.NewPlaceholder()
		p := attackPolicy(t, mode, t.TempDir(), "env")
		p.Placeholders = map[string]string{"ANTHROPIC_API_KEY": ph}
		o := runPolicy(t, p)
		if o.err != nil || o.code() != 0 {
			t.Fatalf("code %d err %v", o.code(), o.err)
		}
		if strings.Contains(o.all(), key) {
			t.Errorf("LEAK: the real key reached the command")
		}
		if !strings.Contains(o.out, "ANTHROPIC_API_KEY="+ph+"\n") {
			t.Errorf("the placeholder did not reach the command: %s", o.out)
		}
		if strings.Contains(o.out, "OPENAI_API_KEY=") {
			t.Errorf("a variable of forkbomb's environment that no policy named reached the command")
		}
	})
	t.Run("planted", func(t *testing.T) {
		for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
			p := attackPolicy(t, sandbox.ModeAuto, t.TempDir(), "env")
			p.Placeholders = map[string]string{name: planted}
			o := runPolicy(t, p)
			if !errors.Is(o.err, sandbox.ErrNotPlaceholder) || !errors.Is(o.err, sandbox.ErrInvalidPolicy) {
				t.Errorf("%s=<the real OPENAI_API_KEY>: err %v, want ErrNotPlaceholder", name, o.err)
			}
			if strings.Contains(o.all(), planted) {
				t.Errorf("LEAK: the planted key reached the command or its refusal")
			}
		}
		// Control: a fresh placeholder under the same name is accepted, so
		// the refusal above is the planting's.
		p := attackPolicy(t, sandbox.ModeAuto, t.TempDir(), "env")
		p.Placeholders = map[string]string{"OPENAI_API_KEY": sandbox.NewPlaceholder()}
		if o := runPolicy(t, p); o.err != nil || o.code() != 0 {
			t.Errorf("control: an unplanted placeholder was refused: %v", o.err)
		}
	})
}
