package mine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// maxPromptMessage bounds how much of a commit message becomes a prompt.
const maxPromptMessage = 4 << 10

// taskFile is the stored task of a kept commit: its parent as the base,
// its test files as hidden tests, a prompt from its message.
func taskFile(repo string, c Commit, message, hidden string) ([]byte, error) {
	t := struct {
		Repo   string   `toml:"repo"`
		Rev    string   `toml:"rev"`
		Prompt string   `toml:"prompt"`
		Test   string   `toml:"test"`
		Hidden []string `toml:"hidden"`
	}{repo, c.Parent, prompt(message, c), c.Test, []string{hidden}}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# mined by forkbomb task mine from commit %s: %s\n", c.Commit, oneLine(c.Subject))
	if err := toml.NewEncoder(&b).Encode(t); err != nil {
		return nil, fmt.Errorf("task file: %w", err)
	}
	return b.Bytes(), nil
}

// prompt is the commit's message, as the request it answered, and the
// tests that must come to pass. The tests themselves stay hidden.
func prompt(message string, c Commit) string {
	message = strings.TrimSpace(message)
	if len(message) > maxPromptMessage {
		message = strings.ToValidUTF8(message[:maxPromptMessage], "") + "…"
	}
	return fmt.Sprintf("%s\n\nMake this change to the code. It is done when these tests pass (`%s`), and every test that passes now still passes: %s. "+
		"The tests are not in your copy of the repository; write the code, not the tests.",
		message, c.Test, strings.Join(c.FailToPass, ", "))
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// writeProvenance records where a kept task came from, beside its hidden
// tests.
func writeProvenance(dir string, c Commit) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mined.json"), append(data, '\n'), 0o600)
}

// detect picks the test command from the commit's tree and the kind of
// test files it changed: go test for Go, pytest for Python, and for
// JavaScript the package's own test script or node's runner.
func detect(ctx context.Context, h *workspace.History, c string, tests []string) string {
	has := func(ext ...string) bool {
		for _, t := range tests {
			for _, e := range ext {
				if strings.HasSuffix(t, e) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has(".go"):
		if _, err := h.Blob(ctx, c, "go.mod"); err == nil {
			return "go test ./..."
		}
	case has(".py"):
		return "python3 -m pytest"
	case has(".js", ".mjs", ".cjs", ".ts"):
		if data, err := h.Blob(ctx, c, "package.json"); err == nil {
			var pkg struct {
				Scripts map[string]string `json:"scripts"`
			}
			if json.Unmarshal(data, &pkg) == nil && pkg.Scripts["test"] != "" {
				return "npm test"
			}
		}
		return "node --test"
	}
	return ""
}
