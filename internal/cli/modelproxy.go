package cli

import (
	"fmt"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// engineUpstream is the model API an engine's agent CLI talks to through
// the run's model proxy; "" for engines that hold no agent CLI (the api
// engine keeps its key in forkbomb's own process; the command engine has
// no model).
func engineUpstream(eng string) string {
	switch eng {
	case "claude-code":
		return modelproxy.Anthropic
	case "codex":
		return modelproxy.OpenAI
	}
	return ""
}

// startModelProxy starts the run's model proxy for an engine whose agent
// runs in the forks: the real credential is read from forkbomb's own
// environment here and never leaves the proxy. allow are the hosts of
// --network allow:, served by the same proxy to the agent's commands.
// getenv is os.Getenv outside tests.
func startModelProxy(eng string, es engine.Settings, allow []string, getenv func(string) string) (*modelproxy.Proxy, error) {
	kind := engineUpstream(eng)
	u := modelproxy.Upstream{Kind: kind}
	switch kind {
	case modelproxy.Anthropic:
		u.BaseURL, u.APIKey, u.OAuthToken = getenv("ANTHROPIC_BASE_URL"), getenv("ANTHROPIC_API_KEY"), getenv("CLAUDE_CODE_OAUTH_TOKEN")
		if u.BaseURL == "" {
			u.BaseURL = "https://api.anthropic.com"
		}
		if u.APIKey == "" && u.OAuthToken == "" {
			return nil, fmt.Errorf("the %s engine needs ANTHROPIC_API_KEY (or a Claude subscription's CLAUDE_CODE_OAUTH_TOKEN) in forkbomb's environment: forkbomb's model proxy adds it to the agent's requests, the agent never holds it", eng)
		}
	case modelproxy.OpenAI:
		u.BaseURL, u.APIKey = getenv("OPENAI_BASE_URL"), getenv("OPENAI_API_KEY")
		// The organisation and project the key bills are the user's
		// choice, read where the OpenAI SDKs read them; a fork's own
		// OpenAI-Organization/OpenAI-Project never reach the upstream.
		u.Organization, u.Project = getenv("OPENAI_ORG_ID"), getenv("OPENAI_PROJECT_ID")
		if u.BaseURL == "" {
			u.BaseURL = "https://api.openai.com"
		}
		if u.APIKey == "" {
			return nil, fmt.Errorf("the %s engine needs OPENAI_API_KEY in forkbomb's environment: forkbomb's model proxy adds it to the agent's requests, the agent never holds it", eng)
		}
	default:
		return nil, nil
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
