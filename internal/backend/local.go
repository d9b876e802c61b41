package backend

import (
	"context"
	"encoding/json"
	"io"

	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Local is the local backend: forks in this machine's sandbox, in the
// state home's workspaces.
func Local() *Backend {
	return &Backend{
		Name:         "local",
		Summary:      "this machine's sandbox",
		HostPrograms: true,
		Flags:        func() (Config, []Flag) { return local{}, nil },
	}
}

type local struct{}

func (local) Store(_ context.Context, o *run.Options, ws *workspace.Store) (func(), error) {
	o.Store = ws
	return func() {}, nil
}

// Probe reports the sandbox's layers on this machine and the init that
// serves them (sandbox --probe).
func (local) Probe(ctx context.Context, out io.Writer, asJSON bool) error {
	rep, err := sandbox.Probe(ctx)
	if err != nil {
		return err
	}
	return WriteProbe(out, rep, asJSON)
}

// WriteProbe writes a backend's probe report as --probe does: indented
// JSON, or the report's own text.
func WriteProbe(out io.Writer, rep interface{ WriteText(io.Writer) }, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.WriteText(out)
	return nil
}
