package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Hosted is the api engine pointed at a forkbomb gateway
// (FORKBOMB_GATEWAY_URL) with a gateway key (FORKBOMB_API_KEY): the same
// tool loop, the same local sandbox for shell and editor, the model
// traffic metered by the gateway. The key goes only in the Authorization
// header (the SDK's WithAPIKey sends it as a bearer token), never into a
// fork, and is a secret of the record's redaction like any model key.
type Hosted struct {
	api     *API
	gateway string
}

// NewHosted checks s for the hosted engine: BaseURL is the gateway, https
// only (plain http only to loopback), with no credentials in it.
func NewHosted(s Settings) (*Hosted, error) {
	if s.BaseURL == "" {
		return nil, &SettingsError{Engine: "hosted", Setting: "BaseURL", Msg: "the hosted engine needs FORKBOMB_GATEWAY_URL in your environment"}
	}
	if s.APIKey == "" {
		return nil, &SettingsError{Engine: "hosted", Setting: "APIKey", Msg: "the hosted engine needs FORKBOMB_API_KEY in your environment"}
	}
	if err := CheckEndpoint(s.BaseURL); err != nil {
		return nil, &SettingsError{Engine: "hosted", Setting: "BaseURL", Msg: err.Error()}
	}
	gw := strings.TrimSuffix(s.BaseURL, "/")
	base := gw
	if s.Provider == "openai" {
		base += "/v1"
	}
	api, err := NewAPI(Settings{Provider: s.Provider, Model: s.Model, BaseURL: base, APIKey: s.APIKey,
		MaxTurns: s.MaxTurns, PriceIn: s.PriceIn, PriceOut: s.PriceOut})
	if err != nil {
		return nil, err
	}
	return &Hosted{api: api, gateway: gw}, nil
}

// Info implements Agent.
func (h *Hosted) Info() Info {
	i := h.api.Info()
	i.Name = "hosted"
	return i
}

// Run implements Agent: the api engine's loop, then the workspace's
// balance as the gateway reports it, into the fork's log.
func (h *Hosted) Run(ctx context.Context, w Workspace, t Task) Outcome {
	t.defaults()
	out := h.api.Run(ctx, w, t)
	if b, err := h.Balance(ctx); err == nil {
		fmt.Fprintf(t.Log, "(gateway balance: $%d.%06d)\n", b/1_000_000, b%1_000_000)
	} else {
		fmt.Fprintf(t.Log, "(gateway balance unavailable: %v)\n", err)
	}
	return out
}

// Balance asks the gateway for the workspace's balance in micro-dollars.
func (h *Hosted) Balance(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.gateway+"/v1/balance", nil)
	if err != nil {
		return 0, fmt.Errorf("gateway balance: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+h.api.APIKey)
	resp, err := noRedirects.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gateway balance: unreachable")
	}
	defer resp.Body.Close()
	var b struct {
		Balance int64 `json:"balance_micro_usd"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&b) != nil {
		return 0, fmt.Errorf("gateway balance: status %d", resp.StatusCode)
	}
	return b.Balance, nil
}
