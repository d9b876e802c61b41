package workerproc

import (
	"io"
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox/progfile"
)

// A worker started at init is handed over once, and only to the start that asks for the same
// slim worker; a refused or missing slim worker starts nothing.
func TestPrestartHandover(t *testing.T) {
	f, err := progfile.Open("/bin/echo") // any checked program: only the handover is under test
	if err != nil {
		t.Fatalf("open /bin/echo, which stands in for the worker: %v", err)
	}
	s := &Slim{Path: "/bin/echo", File: f}
	prestart(&Slim{Path: "/nonexistent"})
	prestart(&Slim{Path: "/bin/echo", File: f, Err: os.ErrPermission})
	if p := TakePrestarted(s); p != nil {
		t.Fatalf("a missing or refused slim worker was started")
	}
	prestart(s)
	if p := TakePrestarted(&Slim{Path: "/bin/echo", File: f}); p != nil {
		t.Fatalf("the prestarted worker was handed to another slim worker")
	}
	p := TakePrestarted(s)
	if p == nil {
		t.Fatalf("the prestarted worker was not handed over")
	}
	if TakePrestarted(s) != nil {
		t.Fatalf("the prestarted worker was handed over twice")
	}
	// It is the process Start starts, with the worker's argument.
	p.Stdin.Close()
	defer p.Stderr.Close()
	defer p.Stdout.Close()
	b, _ := io.ReadAll(p.Stdout)
	p.Process.Wait()
	if string(b) != Arg+"\n" {
		t.Fatalf("the prestarted process said %q", b)
	}
}
