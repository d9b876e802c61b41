package cli

import (
	"fmt"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// startModelProxy starts the run's model proxy for engine d, whose agent
// CLI runs in the forks: the real credential is read from forkbomb's own
// environment (d.Upstream) and never leaves the proxy. allow are the hosts
// of --network allow:, served by the same proxy to the agent's commands.
// getenv is os.Getenv outside tests.
func startModelProxy(d *engine.Descriptor, es engine.Settings, allow []string, getenv func(string) string) (*modelproxy.Proxy, error) {
	u, err := d.Upstream(getenv)
	if err != nil {
		return nil, err
	}
	o := modelproxy.Options{Upstreams: []modelproxy.Upstream{u}, Allow: allow}
	if es.PriceIn > 0 || es.PriceOut > 0 {
		o.Price = func(string) (float64, float64) { return es.PriceIn, es.PriceOut }
	}
	p, err := modelproxy.Start(o)
	if err != nil {
		return nil, fmt.Errorf("model proxy: %w", err)
	}
	return p, nil
}
