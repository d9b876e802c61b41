// Command forkbomb-world is the world's worker on its own: the world's
// interpreter (internal/world) and the sandbox code that confines it, and
// nothing else of forkbomb, so that an exec in a world pays for a small Go
// program rather than the whole of forkbomb a second time. forkbomb starts
// it (internal/world/workerbin_linux.go) when it lies beside the forkbomb
// binary and comes from the same build; build them together:
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/...
package main

import (
	"fmt"
	"os"

	"github.com/forkbomb/forkbomb/internal/world"

	_ "github.com/forkbomb/forkbomb/internal/hugeheap" // first of all: the start's heap on huge pages
)

func main() {
	world.WorkerMain() // returns only when this is not a worker's start
	fmt.Fprintf(os.Stderr, "%s: the world's worker; forkbomb starts it, it is not run by hand (see 'forkbomb world --help')\n", world.WorkerName)
	os.Exit(2)
}
