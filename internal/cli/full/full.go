// Package full is what forkbomb-full links beyond the core forkbomb: the
// gateway verb, the world's mcp, race and drive verbs, and the kubernetes
// backend, whose dependencies (the MCP SDK and the engines' world
// drivers; SQLite and pgx; client-go) the core should not load. They reach
// the core only through cli.Options.
package full

import (
	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/cli"
)

// Options are every verb and backend: the full build.
func Options() cli.Options {
	return cli.Options{Verbs: []cli.Verb{newGatewayCmd}, WorldVerbs: []cli.Verb{newWorldMCPCmd, newWorldRaceCmd, newWorldDriveCmd},
		Backends: backend.Linked{Kubernetes: openCluster}}
}
