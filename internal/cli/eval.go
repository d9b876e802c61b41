package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
)

func newEvalCmd(stdio IO) *cobra.Command {
	var (
		o        eval.Options
		engines  string
		provider string
		maxTurns int
		priceIn  float64
		priceOut float64
		asJSON   bool
		runsDir  string
	)
	cmd := &cobra.Command{
		Use:   `eval --engines ENGINE,... --faults N --test "COMMAND" [--paths GLOB]... [--json]`,
		Short: "Rank agents and models by the faults of your own repository they fix",
		Long: `Turn mutants of your code that your tests kill into faults, and race each
engine, alone in a confined fork, to fix each: the judge scores a patch with
your tests (the ones that caught the mutant among them; edits to tests are
stripped), as it judges any run. Prints a table per engine — faults fixed,
median time, median turns, tokens, cost — best first; --json prints it all.
Every attempt is an ordinary run ('forkbomb show ID', the UI).

--engines is a comma-separated list: api:MODEL (forkbomb's own loop over
--provider, key and endpoint from ANTHROPIC_* or OPENAI_*), or the name of
an engine 'forkbomb run --engine' knows.

The faults come from 'forkbomb mutants' (--paths, --forks): only killed
mutants are used, spread over the source. Your repository is only read.

` + exitHelp("eval"),
		Example: `  forkbomb eval --engines api:claude-sonnet-5-5,api:claude-haiku-5 --faults 10 --test "go test ./..."`,
		Args:    exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if engines == "" || o.Test == "" {
				return fmt.Errorf("%w: --engines and --test are required (see 'forkbomb eval --help')", errUsage)
			}
			for _, name := range strings.Split(engines, ",") {
				name = strings.TrimSpace(name)
				es := engine.Settings{Provider: provider, MaxTurns: maxTurns, PriceIn: priceIn, PriceOut: priceOut}
				kind := name
				if model, ok := strings.CutPrefix(name, "api:"); ok {
					kind, es.Model = "api", model
					p := strings.ToUpper(provider)
					es.APIKey, es.BaseURL = os.Getenv(p+"_API_KEY"), os.Getenv(p+"_BASE_URL")
				}
				if engineUpstream(kind) != "" {
					// An agent CLI: its model through the run's proxy,
					// and only once its canary has passed.
					var err error
					if es.Proxy, err = startModelProxy(kind, es, nil, os.Getenv); err != nil {
						return fmt.Errorf("--engines %s: %w", name, err)
					}
					defer es.Proxy.Close()
				}
				a, err := engine.New(kind, es)
				if err != nil {
					return fmt.Errorf("--engines %s: %w", name, err)
				}
				if needsCanary(kind) {
					if err := checkCanary(c.Context(), stdio, kind, es, a.Info(), false); err != nil {
						return fmt.Errorf("--engines %s: %w", name, err)
					}
				}
				o.Engines = append(o.Engines, eval.Entry{Name: name, Agent: a})
			}
			l, err := state()
			if err != nil {
				return err
			}
			if o.Store, err = openStore(); err != nil {
				return err
			}
			o.CacheDir = l.Judge()
			if o.RunsDir, err = runsDirOr(runsDir); err != nil {
				return err
			}
			o.Progress = stdio.Err
			o.Mutants.Progress = func(done, total int, r mutant.Result) {
				fmt.Fprintf(stdio.Err, "finding faults [%d/%d] %s: %s\n", done, total, r.ID, r.Status)
			}
			res, err := eval.Run(c.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			res.WriteTable(stdio.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&engines, "engines", "", "the contenders, comma-separated: api:MODEL or an engine name")
	f.IntVar(&o.Faults, "faults", 5, "faults to make from killed mutants")
	f.StringVar(&o.Test, "test", "", "the test command (it must pass on the untouched code)")
	f.StringVar(&o.Repo, "repo", ".", "the repository (only read)")
	f.StringArrayVar(&o.Mutants.Paths, "paths", nil, "files to make faults in (as forkbomb mutants --paths)")
	f.IntVar(&o.Mutants.Forks, "forks", 2, "mutants tested at once while finding faults")
	f.IntVar(&o.Mutants.Max, "max-mutants", 0, "mutants tested while finding faults (default: all covered ones)")
	f.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "limit for each attempt's agent")
	enumVar(f, &provider, "provider", "anthropic", "api engines' provider: anthropic or openai", "anthropic", "openai")
	f.IntVar(&maxTurns, "max-turns", 30, "api engines: turns per attempt")
	f.Float64Var(&priceIn, "price-in", 0, "api engines: dollars per million input tokens, for the cost column")
	f.Float64Var(&priceOut, "price-out", 0, "api engines: dollars per million output tokens, for the cost column")
	f.StringVar(&runsDir, "runs-dir", "", "where attempts are recorded (default $FORKBOMB_HOME/runs)")
	f.BoolVar(&asJSON, "json", false, "print faults, attempts and the table as JSON")
	return cmd
}
