package sandbox

import (
	"errors"
	"os/exec"
	"testing"
)

// TestRefusalOfSilentInit: a standalone init that ends without a word is
// refused (and the rest of the process falls back to the running binary)
// only when it exited by itself — as an init of another build, or a
// broken one, does; one killed by a signal before its word (a limit, a
// watcher, the OOM killer) is no fault of its file, and its start fails
// with the plain set-up error instead.
func TestRefusalOfSilentInit(t *testing.T) {
	t.Parallel()
	ended := func(script string) *initProc {
		cmd := exec.Command("/bin/sh", "-c", script)
		p := &initProc{b: &initBinary{path: "/x/forkbomb-init"}}
		if err := p.start(cmd, 0); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		return p
	}
	if err := ended("exit 0").refusal(nil, errNoStart); !errors.Is(err, errInitRefused) {
		t.Errorf("an init that exited without a word: %v, want a refusal", err)
	}
	if err := ended("exit 3").refusal(nil, errNoStart); !errors.Is(err, errInitRefused) {
		t.Errorf("an init that failed without a word: %v, want a refusal", err)
	}
	err := ended("kill -9 $$").refusal(nil, errNoStart)
	if errors.Is(err, errInitRefused) || !errors.Is(err, errNoStart) {
		t.Errorf("an init killed before its word: %v, want the set-up error, no refusal", err)
	}
	// the running binary's own init (b nil) is never refused
	p := ended("exit 0")
	p.b = nil
	if err := p.refusal(nil, errNoStart); errors.Is(err, errInitRefused) {
		t.Errorf("the running binary's init refused: %v", err)
	}
}
