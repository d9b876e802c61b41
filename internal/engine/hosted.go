package engine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Hosted is the api engine pointed at a forkbomb gateway
// (FORKBOMB_GATEWAY_URL) with a gateway key (FORKBOMB_API_KEY): the same
// tool loop, the same local sandbox for shell and editor, the model
// traffic metered by the gateway. The key goes only in the Authorization
// header (Config.Bearer, on both protocols), never into a fork, and is a
// secret of the record's redaction like any model key.
//
// Every model call carries a tag, "<engine id>/<fork>", so that at the
// fork's end the gateway can say what that fork cost: the fork's cost in
// the record is the gateway's debit, not a price forkbomb guesses.
type Hosted struct {
	api     *API
	gateway string
	id      string // this engine's random tag prefix: one run's forks
}

// tagHeader is the gateway's call tag header (gateway.TagHeader; the
// engine does not import the server).
const tagHeader = "X-Forkbomb-Tag"

// hostedEngine is the hosted engine's Descriptor.
var hostedEngine = Descriptor{
	Name:    "hosted",
	Summary: "the api engine through a forkbomb gateway: FORKBOMB_GATEWAY_URL, FORKBOMB_API_KEY",
	Doc: "forkbomb's own loop, its model reached through a forkbomb gateway that meters it; " +
		"each fork's cost is what the gateway charged.",
	Flags: []*Flag{FlagProvider, FlagModel, FlagMaxTurns, FlagPriceIn, FlagPriceOut},
	Model: DefaultModel,
	Env:   gatewayEnv,
	Loop:  true,
	Tools: ToolsShellEditor,
	New:   func(_ context.Context, s Settings) (Agent, error) { return NewHosted(s) },
}

// gatewayEnv reads the gateway and its key.
func gatewayEnv(s *Settings, getenv func(string) string) {
	if s.BaseURL == "" {
		s.BaseURL = getenv("FORKBOMB_GATEWAY_URL")
	}
	if s.APIKey == "" {
		s.APIKey = getenv("FORKBOMB_API_KEY")
	}
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
	// rand.Text is base32 (A-Z, 2-7): inside the gateway's tag charset.
	return &Hosted{api: api, gateway: gw, id: "fb-" + rand.Text()[:16]}, nil
}

// Info implements Agent.
func (h *Hosted) Info() Info {
	i := h.api.Info()
	i.Name = "hosted"
	return i
}

// Tag is the tag of fork n's model calls.
func (h *Hosted) Tag(n int) string { return h.id + "/" + strconv.Itoa(n) }

// Run implements Agent: the api engine's loop with every call tagged,
// then what the gateway charged under the tag and the balance left: the
// fork's usage is the gateway's, and a gateway_usage event records it.
func (h *Hosted) Run(ctx context.Context, w Workspace, t Task) Outcome {
	t.defaults()
	tag := h.Tag(t.Fork)
	out := h.api.run(ctx, w, t, func(c *Config) {
		c.Bearer = true
		c.Headers = map[string]string{tagHeader: tag}
	})
	// The fork may have been stopped: the charges are still owed, and
	// the question is the trusted side's, so it outlives ctx (bounded).
	u, err := h.Usage(context.WithoutCancel(ctx), tag)
	if err != nil {
		fmt.Fprintf(t.Log, "(gateway usage unavailable: %v)\n", err)
		return out
	}
	out.Usage.CostMicroUSD, out.Usage.TokensIn, out.Usage.TokensOut = u.Charged, u.TokensIn, u.TokensOut
	t.Emit(event.GatewayUsageData{Source: event.SourceGateway, Tag: tag, Calls: u.Calls, Open: u.Open,
		ChargedMicroUSD: u.Charged, TokensIn: u.TokensIn, TokensOut: u.TokensOut, BalanceMicroUSD: u.Balance})
	fmt.Fprintf(t.Log, "(gateway: %d calls charged %s, balance: %s)\n", u.Calls, dollars(u.Charged), dollars(u.Balance))
	return out
}

func dollars(m int64) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s$%d.%06d", sign, m/1_000_000, m%1_000_000)
}

// GatewayUsage is what the gateway reports for one tag: its settled
// charges and tokens, the calls not settled yet, and the balance.
type GatewayUsage struct {
	Calls     int64 `json:"calls"`
	Open      int64 `json:"open"`
	Charged   int64 `json:"charged_micro_usd"`
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	Balance   int64 `json:"balance_micro_usd"`
}

// Usage asks the gateway for tag's total. The gateway settles a call just
// after its answer's last byte, so a call can still be open when the
// loop has read its answer: Usage asks again, briefly, until none is
// open, and past 10 s reports what is settled.
func (h *Hosted) Usage(ctx context.Context, tag string) (GatewayUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	give := time.Now().Add(10 * time.Second)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var u GatewayUsage
		if err := h.get(ctx, "/v1/usage?tag="+url.QueryEscape(tag), &u); err != nil {
			return u, err
		}
		if u.Open == 0 || time.Now().After(give) {
			return u, nil
		}
		select {
		case <-ctx.Done():
			return u, nil
		case <-time.After(wait):
		}
	}
}

// Balance asks the gateway for the workspace's balance in micro-dollars.
func (h *Hosted) Balance(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var b struct {
		Balance int64 `json:"balance_micro_usd"`
	}
	err := h.get(ctx, "/v1/balance", &b)
	return b.Balance, err
}

// get reads one bounded JSON answer of the gateway into v. Its errors
// name the path and status, never the key or the gateway's text.
func (h *Hosted) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.gateway+path, nil)
	if err != nil {
		return fmt.Errorf("gateway %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+h.api.APIKey)
	resp, err := noRedirects.Do(req)
	if err != nil {
		return fmt.Errorf("gateway %s: unreachable", path)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(v) != nil {
		return fmt.Errorf("gateway %s: status %d", path, resp.StatusCode)
	}
	return nil
}
