package engine

import (
	"strings"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// ProxyRoutes are routes through forkbomb's model proxy: each fork gets an
// endpoint of its own, whose usage is read on the trusted side from the
// upstream's answers.
func ProxyRoutes(p *modelproxy.Proxy, kind string) Routes { return proxyRoutes{p: p, kind: kind} }

type proxyRoutes struct {
	p    *modelproxy.Proxy
	kind string
}

func (r proxyRoutes) Open(fork int, emit func(event.Kind, map[string]any)) (Route, error) {
	ep, err := r.p.Fork(fork, emit)
	if err != nil {
		return Route{}, err
	}
	var env []string
	for _, kv := range ep.Env(r.kind) {
		// The key goes in as a placeholder (Policy.Placeholders), never as
		// an ordinary variable.
		if !strings.Contains(strings.SplitN(kv, "=", 2)[0], "API_KEY") {
			env = append(env, kv)
		}
	}
	return Route{
		Socket: ep.Socket, Port: ep.Port, Placeholder: ep.Placeholder, Env: env,
		Usage: func() Usage {
			u := ep.Usage()
			return Usage{Turns: u.Requests, TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostMicroUSD: u.CostMicroUSD}
		},
		Close: ep.Close,
	}, nil
}
