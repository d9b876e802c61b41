package cli

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/ui"
)

func newUICmd(stdio IO) *cobra.Command {
	var runsDir, addr string
	var open bool
	cmd := &cobra.Command{
		Use:   "ui [RUN]",
		Short: "Serve a run (running or finished), or the list of runs, to a browser on 127.0.0.1",
		Long: `Serve the web view of a run — running in another forkbomb, or finished — or,
without RUN, the list of every run. The page follows a running run as its
record grows and replays a finished one. Its "eval board" shows the
standings of 'forkbomb eval --tasks' ($FORKBOMB_HOME/lab/eval/board.json) with
the verifier's strength of each engine's solutions and its weak passes. The server listens on 127.0.0.1 only
and prints its URL once: the URL holds a random token that every request must
carry, so other local users and other web pages cannot read your runs. Ctrl-C
stops it.`,
		Args: rangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := runsDirOr(runsDir)
			if err != nil {
				return err
			}
			l, err := state()
			if err != nil {
				return err
			}
			o := ui.Options{RunsDir: dir, Addr: addr, Board: l.EvalBoard()}
			if len(args) == 1 {
				o.Run = args[0]
			}
			s, err := ui.Listen(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "forkbomb ui: %s\n(Ctrl-C to stop)\n", s.URL())
			if open {
				defer openBrowser(c.Context(), stdio, s.URL())()
			}
			return s.Serve(c.Context())
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", "runs directory (default $FORKBOMB_HOME/runs)")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "where to listen: a loopback IPv4 address and port (0: a free one)")
	cmd.Flags().BoolVar(&open, "open", false, "try to open the page in a browser")
	return cmd
}

func newExportCmd(stdio IO) *cobra.Command {
	var runsDir string
	cmd := &cobra.Command{
		Use:   "export RUN DIR",
		Short: "Write a static replay of a run: DIR/index.html works from disk, no server, no network",
		Long: `Write a static replay of a run to DIR (created, or empty): index.html, the page's
script and style, and data.js, the run's record bundled as a script. Open
DIR/index.html in a browser from disk; it needs no server and no network, so
it can be shared as a folder or an archive. The record holds no credential
(see docs/RECORD.md); it does hold the task, the models' words and the tools'
output.`,
		Args: exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := runsDirOr(runsDir)
			if err != nil {
				return err
			}
			if err := ui.Export(dir, args[0], args[1]); err != nil {
				return err
			}
			abs, _ := filepath.Abs(filepath.Join(args[1], "index.html"))
			fmt.Fprintf(stdio.Out, "replay of %s: file://%s\n", args[0], abs)
			return nil
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", "runs directory (default $FORKBOMB_HOME/runs)")
	return cmd
}

// uiFlags are --ui and --open of run and demo.
type uiFlags struct {
	on, open bool
	url      string
	stop     func() // stops the server; nil when none was started
}

func (u *uiFlags) add(f *pflag.FlagSet) {
	f.BoolVar(&u.on, "ui", false, "serve the live view of this run on 127.0.0.1 (prints the URL; stays up after the race until Ctrl-C)")
	f.BoolVar(&u.open, "open", false, "with --ui: try to open the page in a browser")
}

// start serves the live view of the race about to start, when --ui was
// given, and subscribes it to the race. Call close when done.
func (u *uiFlags) start(ctx context.Context, stdio IO, runsDir string, o *run.Options) error {
	if !u.on {
		return nil
	}
	live := ui.NewLive()
	s, err := ui.Listen(ui.Options{RunsDir: runsDir, Live: live})
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Serve(sctx) }()
	u.url = s.URL()
	fmt.Fprintf(stdio.Err, "forkbomb: live view at %s\n", u.url)
	closeOpen := func() {}
	if u.open {
		closeOpen = openBrowser(ctx, stdio, u.url)
	}
	u.stop = func() {
		stop()
		<-done
		closeOpen()
	}
	o.Subscribers = append(o.Subscribers, live)
	return nil
}

// hold keeps the page up after the race until ctx ends (Ctrl-C).
func (u *uiFlags) hold(ctx context.Context, stdio IO) {
	if u.stop != nil && ctx.Err() == nil {
		fmt.Fprintf(stdio.Err, "forkbomb: the race is over; the view stays at %s until Ctrl-C\n", u.url)
		<-ctx.Done()
	}
}

// close stops the server, if one was started.
func (u *uiFlags) close() {
	if u.stop != nil {
		u.stop()
		u.stop = nil
	}
}

// openBrowser asks the desktop to open url, without putting the token on
// a command line (other local users can read /proc/*/cmdline): the opener
// gets a file, readable by this user only, that redirects to url — as
// Jupyter does. The opener is waited for (10 s at most) and the file is
// removed by the returned function. The browser it starts is the user's
// own and is meant to outlive forkbomb.
func openBrowser(ctx context.Context, stdio IO, url string) func() {
	opener := os.Getenv("BROWSER")
	if opener == "" {
		opener = "xdg-open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		fmt.Fprintf(stdio.Err, "forkbomb: no browser opener (%s); open the URL above yourself\n", opener)
		return func() {}
	}
	dir, err := os.MkdirTemp("", "forkbomb-open-")
	if err != nil {
		return func() {}
	}
	page := filepath.Join(dir, "open.html")
	body := `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=` + html.EscapeString(url) + `"><title>forkbomb</title>`
	if err := os.WriteFile(page, []byte(body), 0o600); err == nil {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cmd := exec.CommandContext(octx, path, page)
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(stdio.Err, "forkbomb: %s: %v; open the URL above yourself\n", opener, err)
		}
		cancel()
	}
	return func() { os.RemoveAll(dir) }
}

// rangeArgs is cobra.RangeArgs with a usage error.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return fmt.Errorf("%w: %s takes %d to %d arguments, got %d (see '%s --help')", errUsage, c.Name(), lo, hi, len(args), c.CommandPath())
		}
		return nil
	}
}
