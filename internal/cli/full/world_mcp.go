package full

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/world"
	"github.com/forkbomb/forkbomb/internal/world/worldmcp"
)

func newWorldMCPCmd(k cli.Kit) *cobra.Command {
	var wl cli.WorldLimits
	var logPath string
	cmd := &cobra.Command{
		Use:   "mcp WORLD [--log PATH]",
		Short: "MCP stdio server exposing one tool, \"shell\", bound to WORLD",
		Args:  cli.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := world.Load(args[0], 0); err != nil {
				return err
			}
			var log io.Writer
			if logPath != "" {
				f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
				if err != nil {
					return fmt.Errorf("mcp server: %w", err)
				}
				defer f.Close()
				log = f
			}
			s := worldmcp.NewServer(args[0], wl.Limits, log)
			t := &mcp.IOTransport{Reader: nopReadCloser{k.IO.In}, Writer: nopWriteCloser{k.IO.Out}}
			if err := s.Run(c.Context(), t); err != nil && c.Context().Err() == nil {
				return fmt.Errorf("mcp server: %w", err)
			}
			return nil
		},
	}
	wl.Register(cmd)
	cmd.Flags().StringVar(&logPath, "log", "", "append each call and its result to this file (JSON lines)")
	return cmd
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
