// Package worldmcp serves a world over MCP: one tool, "shell". It is a package of its own so that
// what links worlds without serving them (the core forkbomb, the slim worker) does not link the
// MCP SDK and its initialisers.
package worldmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/forkbomb/forkbomb/internal/world"
)

// ShellInput is the "shell" tool's argument.
type ShellInput struct {
	Command string `json:"command" jsonschema:"a shell script to run in the world (bash syntax)"`
}

// ShellOutput is the "shell" tool's structured result.
type ShellOutput struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Status int    `json:"status"`
	Limit  string `json:"limit,omitempty"`
	Failed string `json:"failed,omitempty"`
}

const shellToolDescription = `Run a shell script in a virtual workspace (a "world"). The filesystem is /work
(kept between calls) and /tmp (emptied after each call); the working directory, variables,
functions, aliases and options are kept between calls. Commands are built in: cat echo printf
ls mkdir rmdir rm cp mv ln touch stat chmod find grep sed awk sort uniq cut tr head tail wc tee
xargs diff od basename dirname realpath readlink seq date env printenv base64 sha256sum md5sum jq
tar gzip gunzip true false test sleep which du tree. There is no network and no other program.`

// NewServer returns an MCP server with one tool, "shell", bound to the world at file.
// Each call is appended to log (when not nil) as one JSON line: the command and its result.
//
// Every call runs in the server's worker (Runner: started on the first call, replaced when it
// dies); a panic, a dead worker or a limit is that call's tool error and the server keeps
// serving.
func NewServer(file string, l world.Limits, log io.Writer) *mcp.Server {
	var logMu sync.Mutex
	runner := world.NewRunner()
	s := mcp.NewServer(&mcp.Implementation{Name: "forkbomb-world", Version: fmt.Sprintf("v%d", world.FormatVersion)}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "shell", Description: shellToolDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ShellInput) (*mcp.CallToolResult, ShellOutput, error) {
			res, err := runner.ExecFile(ctx, file, in.Command, nil, l)
			if err != nil {
				// A Go error here becomes a tool error for the client, never a crash of the server.
				return nil, ShellOutput{}, fmt.Errorf("world: %w", err)
			}
			out := ShellOutput{Stdout: text(res.Stdout), Stderr: text(res.Stderr), Status: res.Status, Limit: res.Limit, Failed: res.Failed}
			if log != nil {
				line, _ := json.Marshal(struct {
					Command string `json:"command"`
					ShellOutput
				}{text([]byte(in.Command)), out})
				logMu.Lock()
				log.Write(append(line, '\n'))
				logMu.Unlock()
			}
			var b strings.Builder
			b.WriteString(out.Stdout)
			if out.Stderr != "" {
				b.WriteString("\n[stderr]\n" + out.Stderr)
			}
			fmt.Fprintf(&b, "\n[exit status %d]", res.Status)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
				IsError: res.Limit != "" || res.Failed != ""}, out, nil
		})
	return s
}

// text makes output valid UTF-8 for JSON, marking bytes that are not.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
