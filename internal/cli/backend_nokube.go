//go:build nokube

package cli

import (
	"context"
	"errors"

	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

const defaultImage = "forkbomb.local/agent:v2"

var errNoKube = errors.New("--backend kubernetes: this forkbomb was built without the kubernetes backend (-tags nokube)")

func (b *backendFlags) store(ctx context.Context, o *run.Options, local *workspace.Store) (func(), error) {
	o.Store = local
	if b.backend != "kubernetes" {
		return func() {}, nil
	}
	return nil, errNoKube
}

func (b *backendFlags) probe(ctx context.Context, stdio IO, asJSON bool) error {
	return &exitError{code: ExitSetup, msg: "probe: " + errNoKube.Error(), err: errNoKube}
}
