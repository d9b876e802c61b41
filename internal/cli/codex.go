package cli

import (
	"errors"
	"os"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// codexProxy starts the run's model proxy for the codex engine: it alone
// holds OPENAI_API_KEY, forwards to OPENAI_BASE_URL (default OpenAI's),
// and serves the run's allowed hosts to the forks' codex.
func codexProxy(allow []string) (*modelproxy.Proxy, error) {
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
		return nil, errors.New("the codex engine needs OPENAI_API_KEY in your environment (the forks never see it: forkbomb's model proxy adds it)")
	}
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	return modelproxy.Start(modelproxy.Options{
		Upstreams: []modelproxy.Upstream{{Kind: modelproxy.OpenAI, BaseURL: base, APIKey: key}},
		Allow:     allow,
	})
}
