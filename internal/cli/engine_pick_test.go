package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPickEngine: without --engine, claude-code when its CLI is installed
// and no --agent is given; the command engine with --agent; otherwise an
// error saying how to install Claude Code or which engine to pick.
func TestPickEngine(t *testing.T) {
	withClaude := t.TempDir()
	if err := os.WriteFile(filepath.Join(withClaude, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	without := t.TempDir()
	tests := []struct {
		name, path, named string
		given             bool
		agent, agentBin   string
		want, err         string
	}{
		{"named", without, "api", true, "", "", "api", ""},
		{"claude on PATH", withClaude, "claude-code", false, "", "", "claude-code", ""},
		{"--agent", withClaude, "claude-code", false, "./agent", "", "command", ""},
		{"--agent-bin", without, "claude-code", false, "", "/x/claude", "claude-code", ""},
		{"nothing", without, "claude-code", false, "", "", "", "npm install -g @anthropic-ai/claude-code@2.1.328"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			got, err := pickEngine(tt.named, tt.given, tt.agent, tt.agentBin)
			if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("pickEngine = %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
			if err != nil && !strings.Contains(err.Error(), "--engine (command, api, claude-code") {
				t.Errorf("the error does not name the engines: %v", err)
			}
		})
	}
}
