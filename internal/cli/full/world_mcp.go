package full

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/world"
)

func newWorldMCPCmd(k cli.Kit) *cobra.Command {
	var wl worldLimits
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
			s := world.NewMCPServer(args[0], wl.l, log)
			t := &mcp.IOTransport{Reader: nopReadCloser{k.IO.In}, Writer: nopWriteCloser{k.IO.Out}}
			if err := s.Run(c.Context(), t); err != nil && c.Context().Err() == nil {
				return fmt.Errorf("mcp server: %w", err)
			}
			return nil
		},
	}
	wl.register(cmd)
	cmd.Flags().StringVar(&logPath, "log", "", "append each call and its result to this file (JSON lines)")
	return cmd
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func newWorldMCPConfigCmd(k cli.Kit) *cobra.Command {
	var logPath string
	cmd := &cobra.Command{
		Use:   "mcp-config WORLD [--log PATH]",
		Short: "Print the MCP config a client needs for the world's server",
		Args:  cli.ExactArgs(1),
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
			enc := json.NewEncoder(k.IO.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"mcpServers": map[string]any{"world": server}})
		},
	}
	cmd.Flags().StringVar(&logPath, "log", "", "where the server appends its transcript")
	return cmd
}
