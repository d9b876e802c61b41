// Command forkbomb hands one coding task to several AI agents at once
// without trusting any of them. See README.md.
//
// This is the core binary, the one that starts sandboxes: world, gateway
// and --backend kubernetes are in forkbomb-full beside it, which it runs in
// its own place for them.
package main

import (
	"os"

	"github.com/forkbomb/forkbomb/internal/cli"

	_ "github.com/forkbomb/forkbomb/internal/hugeheap" // first of all: the start's heap on huge pages
)

func main() {
	os.Exit(cli.Main(cli.Options{}))
}
