// Package full is what forkbomb-full links beyond the core forkbomb: the
// world and gateway verbs and the kubernetes backend, whose dependencies
// (mvdan.cc/sh, gojq, GoAWK, the MCP SDK; SQLite and pgx; client-go) the
// binary that starts every sandbox should not load. They reach the core
// only through cli.Options.
package full

import (
	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/cli"
)

// Options are every verb and backend: the full build.
func Options() cli.Options {
	return cli.Options{Verbs: []cli.Verb{newWorldCmd, newGatewayCmd}, Backends: backend.Linked{Kubernetes: openCluster}}
}
