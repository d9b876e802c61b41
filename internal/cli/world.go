package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/world"
	"github.com/forkbomb/forkbomb/internal/world/early"
)

// fullWorldVerbs are the world's verbs only forkbomb-full links (the MCP SDK, the engines),
// with the one-line help the core lists for them; the full build adds them through
// Options.WorldVerbs, and the core hands them on.
var fullWorldVerbs = []struct{ name, short string }{
	{"mcp", "MCP stdio server exposing one tool, \"shell\", bound to WORLD"},
	{"race", "Fork a world N times, drive an agent in each, keep the first whose check passes"},
	{"drive", "One Claude Code turn whose only tool is this world's shell"},
}

func newWorldCmd(k Kit, b build) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "world",
		Short: "A whole agent workspace in one file, run by a shell with no access to the host",
		Long: `A world is one file holding a workspace: a virtual filesystem under /work and the
state of a shell (working directory, variables, functions, aliases, options). Its
shell is mvdan.cc/sh's interpreter with every file, directory, stat and exec hook
routed to the world and every command written in Go, run in a worker process the
kernel confines: no host file, host binary or socket is reachable from it. A fork
is a copy of the file. WORLD is a file path. The format is described in
docs/WORLDS.md.`,
	}
	cmd.AddCommand(newWorldInitCmd(k), newWorldForkCmd(k), newWorldExecCmd(k),
		newWorldCatCmd(k), newWorldInfoCmd(k), newWorldExportCmd(k), newWorldImportCmd(k),
		newWorldMCPConfigCmd(k))
	addSubVerbs(cmd, k.IO, b.WorldVerbs, fullWorldVerbs, b.handoff)
	return cmd
}

func newWorldInitCmd(k Kit) *cobra.Command {
	var seeds []string
	cmd := &cobra.Command{
		Use:   "init WORLD [--seed HOSTFILE:GUESTPATH]...",
		Short: "Make a new world; seeds copy host files in (the only way in)",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			w := world.New()
			for _, s := range seeds {
				host, guest, ok := strings.Cut(s, ":")
				if !ok || host == "" || guest == "" {
					return Usagef("--seed %q is not HOSTFILE:GUESTPATH", s)
				}
				if err := seed(w, host, guest); err != nil {
					return err
				}
			}
			if _, err := os.Lstat(args[0]); err == nil {
				return fmt.Errorf("init world: %s exists", args[0])
			}
			if err := w.Save(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "%s: new world\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&seeds, "seed", nil, "copy a host file into the world (HOSTFILE:GUESTPATH, relative to /work)")
	return cmd
}

// seed copies one regular host file in; it is read once, bounded, and never followed as a link.
func seed(w *world.World, host, guest string) error {
	fi, err := os.Lstat(host)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("seed: %s is not a regular file", host)
	}
	b, err := os.ReadFile(host)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if int64(len(b)) > world.DefaultLimits.MaxSize {
		return fmt.Errorf("seed: %s is larger than a world may be", host)
	}
	if !strings.HasPrefix(guest, "/") {
		guest = path.Join("/work", guest)
	}
	if err := w.FS.MkdirAll(path.Dir(guest), 0o755); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := w.FS.WriteFile(guest, b, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

func newWorldForkCmd(k Kit) *cobra.Command {
	return &cobra.Command{
		Use:   "fork SRC DST",
		Short: "Copy a world; SRC is never opened for writing",
		Args:  exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			unlock, err := world.Lock(c.Context(), args[0])
			if err != nil {
				return err
			}
			defer unlock()
			if err := world.Fork(args[0], args[1]); err != nil {
				return err
			}
			io.WriteString(k.IO.Out, early.ForkMessage(args[0], args[1]))
			return nil
		},
	}
}

// WorldLimits are the flags every world verb that runs a script shares (the full build's too).
type WorldLimits struct{ Limits world.Limits }

// Register adds the flags to cmd.
func (wl *WorldLimits) Register(cmd *cobra.Command) {
	d := world.DefaultLimits
	cmd.Flags().IntVar(&wl.Limits.MaxCommands, "max-commands", d.MaxCommands, "commands one exec may run")
	cmd.Flags().DurationVar(&wl.Limits.WallTime, "timeout", d.WallTime, "wall time of one exec")
	cmd.Flags().Int64Var(&wl.Limits.MaxOutput, "max-output", d.MaxOutput, "bytes of stdout and stderr together")
	cmd.Flags().Int64Var(&wl.Limits.MaxSize, "max-size", d.MaxSize, "bytes of file data in the world")
}

func newWorldExecCmd(k Kit) *cobra.Command {
	var wl WorldLimits
	cmd := &cobra.Command{
		Use:   "exec WORLD COMMAND...",
		Short: "Run the words as one shell script in the world",
		Long: `Run the words, joined by spaces, as one shell script in the world. Its stdout,
stderr and exit status are the script's. The world keeps what the script did —
files, working directory, variables, functions, aliases, options — also after
'exit N', a 'set -e' failure or a syntax error (which changes nothing). An exec
that passes a limit ends with status 124 and a message, and nothing of it is kept.
Concurrent execs on one world run one after the other.

Exit status: the script's; 124 when a limit ended it; 1 when the world could not
be read or saved; 130 when interrupted.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return Usagef("exec takes WORLD and a command (see '%s --help')", c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			res, err := execWorld(c, args[0], strings.Join(args[1:], " "), k.IO.In, wl.Limits)
			if err != nil {
				return err
			}
			k.IO.Out.Write(res.Stdout)
			k.IO.Err.Write(res.Stderr)
			if res.Status != 0 {
				return Exit(res.Status, nil)
			}
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	wl.Register(cmd)
	return cmd
}

// execWorld runs one script in the world's worker (world.Runner: the interpreter in a process
// the kernel confines) under the world's lock, and saves what it left unless a limit ended it.
func execWorld(c *cobra.Command, file, script string, stdin io.Reader, l world.Limits) (world.Result, error) {
	l = l.WithDefaults()
	r := world.NewRunnerOnce()
	defer r.Close()
	if err := r.Start(l); err != nil { // its start overlaps the read of stdin
		return world.Result{}, err
	}
	in, err := readStdin(c.Context(), stdin, l)
	if err != nil {
		return world.Result{}, err
	}
	return r.ExecFile(c.Context(), file, script, in, l)
}

// readStdin reads the exec's stdin to its end before the script runs (the worker gets it as
// bytes): at most the world's size, within the exec's wall time. A terminal (or /dev/null) is
// no input at all, so an exec typed at a prompt does not wait for ^D.
func readStdin(ctx context.Context, in io.Reader, l world.Limits) ([]byte, error) {
	if in == nil {
		return nil, nil
	}
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(in, l.MaxSize+1))
		done <- read{b, err}
	}()
	t := time.NewTimer(l.WallTime)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("world exec: stdin: %w", r.err)
		}
		if int64(len(r.b)) > l.MaxSize {
			return nil, fmt.Errorf("%w: stdin bytes (%d)", world.ErrLimit, l.MaxSize)
		}
		return r.b, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: wall time in ms (%d) reading stdin", world.ErrLimit, l.WallTime.Milliseconds())
	case <-ctx.Done():
		return nil, fmt.Errorf("world exec: %w", ctx.Err())
	}
}

func newWorldCatCmd(k Kit) *cobra.Command {
	return &cobra.Command{
		Use:   "cat WORLD GUESTPATH",
		Short: "Print a file of the world (binary-safe)",
		Args:  exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			w, err := world.Load(args[0], 0)
			if err != nil {
				return err
			}
			p := args[1]
			if !strings.HasPrefix(p, "/") {
				p = path.Join("/work", p)
			}
			b, err := w.FS.ReadFile(p)
			if err != nil {
				return fmt.Errorf("cat: %w", err)
			}
			_, err = k.IO.Out.Write(b)
			return err
		},
	}
}

// worldInfo is what 'world info' prints.
type worldInfo struct {
	Format    string            `json:"format"`
	Version   int               `json:"version"`
	Files     int               `json:"files"`
	Dirs      int               `json:"dirs"`
	Symlinks  int               `json:"symlinks"`
	Bytes     int64             `json:"bytes"`
	Cwd       string            `json:"cwd"`
	Turns     int               `json:"turns"`
	Variables map[string]string `json:"variables"`
	Exported  []string          `json:"exported"`
	Functions []string          `json:"functions"`
	Aliases   []string          `json:"aliases"`
	Options   []string          `json:"options_on"`
}

func newWorldInfoCmd(k Kit) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info WORLD [--json]",
		Short: "Files, bytes, cwd, variables, functions, turns, format version",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			w, err := world.Load(args[0], 0)
			if err != nil {
				return err
			}
			in := worldInfo{Format: world.FormatName, Version: world.FormatVersion, Cwd: w.State.Cwd,
				Turns: w.State.Turns, Bytes: w.FS.Size(), Variables: map[string]string{}}
			in.Files, in.Dirs, in.Symlinks = w.FS.Count()
			for _, v := range w.State.Vars {
				in.Variables[v.Name] = v.String()
				if v.Exported {
					in.Exported = append(in.Exported, v.Name)
				}
			}
			for _, f := range w.State.Functions {
				in.Functions = append(in.Functions, f.Name)
			}
			for _, a := range w.State.Aliases {
				in.Aliases = append(in.Aliases, a.Source)
			}
			for _, o := range w.State.Options {
				if f := strings.Fields(o); len(f) >= 3 && f[len(f)-2] == "-s" {
					in.Options = append(in.Options, f[len(f)-1])
				}
			}
			if asJSON {
				return printJSON(k.IO.Out, in)
			}
			fmt.Fprintf(k.IO.Out, "format:    %s v%d\nfiles:     %d (%d bytes), %d dirs, %d symlinks\ncwd:       %s\nturns:     %d\n",
				in.Format, in.Version, in.Files, in.Bytes, in.Dirs, in.Symlinks, in.Cwd, in.Turns)
			names := make([]string, 0, len(in.Variables))
			for n := range in.Variables {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(k.IO.Out, "var:       %s=%q\n", n, in.Variables[n])
			}
			fmt.Fprintf(k.IO.Out, "exported:  %s\nfunctions: %s\naliases:   %s\noptions:   %s\n",
				strings.Join(in.Exported, " "), strings.Join(in.Functions, " "), strings.Join(in.Aliases, "; "), strings.Join(in.Options, " "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWorldExportCmd(k Kit) *cobra.Command {
	return &cobra.Command{
		Use:   "export WORLD DIR",
		Short: "Write the world's /work into a new or empty directory",
		Args:  exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			w, err := world.Load(args[0], 0)
			if err != nil {
				return err
			}
			if err := w.Export(args[1]); err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "%s: exported to %s\n", args[0], args[1])
			return nil
		},
	}
}

func newWorldImportCmd(k Kit) *cobra.Command {
	return &cobra.Command{
		Use:   "import DIR WORLD",
		Short: "Make a world from a directory (refusing links that point out of it)",
		Args:  exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := os.Lstat(args[1]); err == nil {
				return fmt.Errorf("import: %s exists", args[1])
			}
			w, err := world.Import(args[0], world.DefaultLimits.MaxSize)
			if err != nil {
				return err
			}
			w.State.Turns = 0
			if err := w.Save(args[1]); err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "%s: imported from %s\n", args[1], args[0])
			return nil
		},
	}
}

func newWorldMCPConfigCmd(k Kit) *cobra.Command {
	var logPath string
	cmd := &cobra.Command{
		Use:   "mcp-config WORLD [--log PATH]",
		Short: "Print the MCP config a client needs for the world's server",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("mcp-config: %w", err)
			}
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return fmt.Errorf("mcp-config: %w", err)
			}
			cmdArgs := []string{"world", "mcp", abs}
			if logPath != "" {
				lp, err := filepath.Abs(logPath)
				if err != nil {
					return fmt.Errorf("mcp-config: %w", err)
				}
				cmdArgs = append(cmdArgs, "--log", lp)
			}
			server := map[string]any{"type": "stdio", "command": exe, "args": cmdArgs}
			return printJSON(k.IO.Out, map[string]any{"mcpServers": map[string]any{"world": server}})
		},
	}
	cmd.Flags().StringVar(&logPath, "log", "", "where the server appends its transcript")
	return cmd
}
