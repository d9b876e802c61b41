// Command forkbomb-pod is what forkbomb sends into a remote fork's pod (the
// kubernetes backend): the runner that starts each command there inside
// forkbomb's sandbox (internal/podrun) and the session that carries them,
// that sandbox's init, and the forwarder of the fork's tunnel to
// forkbomb's model proxy (internal/tunnel) — and nothing else, so that
// each pod receives a quarter of the core forkbomb's bytes. forkbomb finds
// it beside itself; without it, forkbomb sends its own binary, which serves
// as well.
package main

import (
	"fmt"
	"os"

	_ "github.com/forkbomb/forkbomb/internal/hugeheap" // first of all: the start's heap on huge pages

	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tunnel"
)

func main() {
	switch {
	case sandbox.IsInit():
		sandbox.InitMain() // never returns
	case podrun.IsRunner():
		podrun.Main() // never returns
	case podrun.IsServer():
		podrun.ServeMain() // never returns
	case tunnel.IsForwarder():
		tunnel.ForwarderMain() // never returns
	}
	fmt.Fprintln(os.Stderr, "forkbomb-pod is started by forkbomb in a remote fork's pod (run --backend kubernetes), not by hand")
	os.Exit(2)
}
