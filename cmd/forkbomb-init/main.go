// Command forkbomb-init is forkbomb's sandbox init on its own: the code of
// internal/sandbox and nothing else, so that a confined start pays for a
// small Go program rather than the whole of forkbomb a second time.
// forkbomb starts it (see internal/sandbox/initbin_linux.go) when it lies
// beside the forkbomb binary and comes from the same build; build both
// together:
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/...
package main

import (
	"fmt"
	"os"

	"github.com/forkbomb/forkbomb/internal/sandbox"

	_ "github.com/forkbomb/forkbomb/internal/hugeheap" // first of all: the start's heap on huge pages
)

func main() {
	if !sandbox.IsInit() {
		fmt.Fprintf(os.Stderr, "%s: forkbomb's sandbox init; forkbomb starts it, it is not run by hand (see 'forkbomb sandbox --help')\n", sandbox.InitName)
		os.Exit(2)
	}
	sandbox.InitMain()
}
