// Command forkbomb-full is forkbomb with every verb and backend linked:
// the core forkbomb runs it in its own place for world, gateway and
// --backend kubernetes (build both: CGO_ENABLED=0 go build -o bin/ ./cmd/...).
package main

import (
	"os"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/cli/full"

	_ "github.com/forkbomb/forkbomb/internal/hugeheap" // first of all: the start's heap on huge pages
)

func main() {
	os.Exit(cli.Main(full.Options()))
}
