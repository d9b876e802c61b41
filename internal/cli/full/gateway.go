package full

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/gateway"
	"github.com/forkbomb/forkbomb/internal/home"
)

func newGatewayCmd(k cli.Kit) *cobra.Command {
	var db, secretFile string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "The hosted side: workspaces, balances and a metered model proxy",
		Long: `The gateway keeps workspaces, API keys (stored only as HMACs under a secret
kept outside the database), integer micro-dollar balances, and a metered
proxy to the model providers. Credit comes from grants a person records here
or from verified burns of the project's token.

--db is a SQLite file (the default, in the state directory) or a
postgres:// URL; the secret file (default next to the SQLite file, created
on first use, mode 0600) must be the same on every server sharing a
database.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "SQLite file or postgres:// URL (default $FORKBOMB_HOME/gateway.db)")
	cmd.PersistentFlags().StringVar(&secretFile, "secret-file", "", "the HMAC secrets of API keys (default $FORKBOMB_HOME/gateway.secret)")
	open := func(ctx context.Context) (*gateway.DB, gateway.Secrets, error) {
		l, err := home.Default()
		if err != nil {
			return nil, nil, err
		}
		if db == "" || secretFile == "" {
			if err := os.MkdirAll(l.Root, 0o700); err != nil {
				return nil, nil, fmt.Errorf("state directory: %w", err)
			}
		}
		if db == "" {
			db = filepath.Join(l.Root, "gateway.db")
		}
		if secretFile == "" {
			secretFile = filepath.Join(l.Root, "gateway.secret")
		}
		s, err := gateway.LoadSecrets(secretFile, true)
		if err != nil {
			return nil, nil, err
		}
		d, err := gateway.Open(ctx, db)
		return d, s, err
	}
	cmd.AddCommand(newGatewayServeCmd(k, open), newGatewayGrantCmd(k, open), newGatewayReviewCmd(k, open))
	return cmd
}

type openFunc func(context.Context) (*gateway.DB, gateway.Secrets, error)

func newGatewayServeCmd(k cli.Kit, open openFunc) *cobra.Command {
	var (
		listen, anthropicURL, openaiURL, rpc, mint, jupiter, dex, capUSD string
		prices, proxies                                                  []string
		sampleEvery                                                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the gateway's API",
		Long: `Serve the gateway. It prints "listening on http://ADDR" once ready.

Upstream keys come only from the environment (FORKBOMB_GATEWAY_ANTHROPIC_KEY,
FORKBOMB_GATEWAY_OPENAI_KEY), never from flags another user could read in
the process list. Until --mint and --solana-rpc are set, POST /v1/burns
answers 503 not_configured and credit comes only from 'forkbomb gateway grant'.`,
		Example: `  forkbomb gateway serve
  forkbomb gateway serve --db postgres://gw@db.internal/gateway --listen 0.0.0.0:8787 --trusted-proxy 10.0.0.0/8`,
		Args: cli.ExactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			o := gateway.Options{
				Anthropic: gateway.Upstream{URL: anthropicURL, Key: os.Getenv("FORKBOMB_GATEWAY_ANTHROPIC_KEY")},
				OpenAI:    gateway.Upstream{URL: openaiURL, Key: os.Getenv("FORKBOMB_GATEWAY_OPENAI_KEY")},
				Prices:    map[string]gateway.Price{},
				Burns:     gateway.BurnOptions{RPC: rpc, Mint: mint},
				Log:       log.New(k.IO.Err, "gateway: ", log.LstdFlags),
			}
			for _, p := range prices {
				name, rest, ok := strings.Cut(p, "=")
				in, out, ok2 := strings.Cut(rest, ",")
				pin, err1 := gateway.ParseUSD(in)
				pout, err2 := gateway.ParseUSD(out)
				if !ok || !ok2 || err1 != nil || err2 != nil {
					return cli.Usagef("--price %q: MODEL=IN,OUT in dollars per million tokens", p)
				}
				o.Prices[name] = gateway.Price{In: pin, Out: pout}
			}
			for _, p := range proxies {
				_, n, err := net.ParseCIDR(p)
				if err != nil {
					return cli.Usagef("--trusted-proxy %q: %v", p, err)
				}
				o.TrustedProxies = append(o.TrustedProxies, n)
			}
			if capUSD != "" {
				v, err := gateway.ParseUSD(capUSD)
				if err != nil {
					return cli.Usagef("--burn-cap: %v", err)
				}
				o.Burns.CapMicroUSD = v
			}
			db, secrets, err := open(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			o.Secrets = secrets
			g, err := gateway.New(db, o)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			if mint != "" {
				go g.SampleLoop(ctx, []gateway.Feed{gateway.Jupiter(jupiter), gateway.DexScreener(dex)}, sampleEvery)
			}
			fmt.Fprintf(k.IO.Out, "listening on http://%s\n", ln.Addr())
			return g.Serve(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on (127.0.0.1:0 picks a free port)")
	f.StringVar(&anthropicURL, "anthropic-url", "https://api.anthropic.com", "upstream for POST /v1/messages (empty: not offered)")
	f.StringVar(&openaiURL, "openai-url", "https://api.openai.com/v1", "upstream for POST /v1/chat/completions (empty: not offered)")
	f.StringArrayVar(&prices, "price", []string{"*=15,75"}, "MODEL=IN,OUT dollars per million tokens; * prices every other model")
	f.StringArrayVar(&proxies, "trusted-proxy", nil, "CIDR whose X-Forwarded-For is believed (repeatable)")
	f.StringVar(&rpc, "solana-rpc", "", "Solana JSON-RPC endpoint for burn verification")
	f.StringVar(&mint, "mint", "", "the project's token mint")
	f.StringVar(&capUSD, "burn-cap", "100", "a burn worth more dollars waits for 'forkbomb gateway review'")
	f.StringVar(&jupiter, "jupiter-url", "https://lite-api.jup.ag", "Jupiter price API")
	f.StringVar(&dex, "dexscreener-url", "https://api.dexscreener.com", "DexScreener API (fallback)")
	f.DurationVar(&sampleEvery, "sample-every", time.Minute, "how often to record the token's price")
	return cmd
}

func newGatewayGrantCmd(k cli.Kit, open openFunc) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "grant WORKSPACE DOLLARS --reason TEXT",
		Short: "Credit a workspace (recorded in its ledger with the reason)",
		Args:  cli.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			amount, err := gateway.ParseUSD(args[1])
			if err != nil || amount <= 0 {
				return cli.Usagef("DOLLARS %q: a positive amount, at most six decimals", args[1])
			}
			if strings.TrimSpace(reason) == "" {
				return cli.Usagef("--reason is required")
			}
			db, secrets, err := open(c.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			g, err := gateway.New(db, gateway.Options{Secrets: secrets})
			if err != nil {
				return err
			}
			ref, err := g.Grant(c.Context(), args[0], amount, reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "granted %s micro-dollars to %s (%s)\n", fmt.Sprint(amount), args[0], ref)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the ledger)")
	return cmd
}

func newGatewayReviewCmd(k cli.Kit, open openFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review [approve SIGNATURE DOLLARS | reject SIGNATURE]",
		Short: "List burns waiting for a person, or decide one",
		Args:  cli.RangeArgs(0, 3),
		RunE: func(c *cobra.Command, args []string) error {
			db, secrets, err := open(c.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			g, err := gateway.New(db, gateway.Options{Secrets: secrets})
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0:
				bs, err := g.Review(c.Context())
				if err != nil {
					return err
				}
				for _, b := range bs {
					fmt.Fprintf(k.IO.Out, "%s\t%s\t%s base units (%d decimals)\t%d micro-dollars at the recorded price\t%s\n",
						b.Signature, b.Workspace, b.AmountRaw, b.Decimals, b.Credit, b.Reason)
				}
				return nil
			case len(args) == 3 && args[0] == "approve":
				amount, err := gateway.ParseUSD(args[2])
				if err != nil || amount <= 0 {
					return cli.Usagef("DOLLARS %q", args[2])
				}
				return g.Decide(c.Context(), args[1], true, amount)
			case len(args) == 2 && args[0] == "reject":
				return g.Decide(c.Context(), args[1], false, 0)
			}
			return cli.Usagef("review, review approve SIGNATURE DOLLARS, or review reject SIGNATURE")
		},
	}
	return cmd
}
