// Command forkbomb hands one coding task to several AI agents at once
// without trusting any of them. See README.md.
package main

import (
	"os"

	"github.com/forkbomb/forkbomb/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
