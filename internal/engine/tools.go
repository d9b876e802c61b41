package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// The two tools the model sees. Descriptions are what the model reads.
const shellDescription = `Run a shell command (/bin/sh -c) in the workspace, whose root is the current directory. Every command runs in a sandbox: no network, nothing outside the workspace is writable, and background processes are killed when the command ends. Output (stdout and stderr) is capped.`

const editorDescription = `View and edit files of the workspace. Commands: "view" (a file with line numbers, or a directory listing; view_range [start, end] optional), "create" (write file_text to path), "str_replace" (replace the one occurrence of old_str with new_str), "insert" (insert new_str after line insert_line; 0 inserts at the top). Paths are relative to the workspace root (or absolute within it). Paths under .git and through symlinks are refused.`

var shellSchema = map[string]any{
	"command": map[string]any{"type": "string", "description": "the shell command"},
}

var editorSchema = map[string]any{
	"command":     map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert"}},
	"path":        map[string]any{"type": "string"},
	"file_text":   map[string]any{"type": "string"},
	"old_str":     map[string]any{"type": "string"},
	"new_str":     map[string]any{"type": "string"},
	"insert_line": map[string]any{"type": "integer"},
	"view_range":  map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
}

type editorInput struct {
	Command    string `json:"command"`
	Path       string `json:"path"`
	FileText   string `json:"file_text"`
	OldStr     string `json:"old_str"`
	NewStr     string `json:"new_str"`
	InsertLine int    `json:"insert_line"`
	ViewRange  []int  `json:"view_range"`
}

// edit runs one editor call. A refusal or a mistake is a result the model
// reads (isErr), not a Go error: only infrastructure faults are those.
func edit(ctx context.Context, t workspace.Files, root string, raw json.RawMessage) (out string, isErr bool) {
	var in editorInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return "invalid input: " + err.Error(), true
	}
	rel, err := clean(root, in.Path)
	if err != nil {
		return err.Error(), true
	}
	switch in.Command {
	case "view":
		if isDir(ctx, t, rel) {
			names, err := list(ctx, t, rel)
			if err != nil {
				return err.Error(), true
			}
			return strings.Join(names, "\n"), false
		}
		data, _, err := read(ctx, t, rel)
		if err != nil {
			return err.Error(), true
		}
		lines := strings.Split(string(data), "\n")
		from, to := 1, len(lines)
		if len(in.ViewRange) == 2 {
			from, to = max(1, in.ViewRange[0]), min(len(lines), in.ViewRange[1])
		}
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
		}
		return b.String(), false
	case "create":
		if err := write(ctx, t, rel, []byte(in.FileText), 0o644); err != nil {
			return err.Error(), true
		}
		return "created " + rel, false
	case "str_replace":
		data, mode, err := read(ctx, t, rel)
		if err != nil {
			return err.Error(), true
		}
		if n := strings.Count(string(data), in.OldStr); n != 1 || in.OldStr == "" {
			return fmt.Sprintf("old_str occurs %d times in %s; it must occur exactly once", n, rel), true
		}
		if err := write(ctx, t, rel, []byte(strings.Replace(string(data), in.OldStr, in.NewStr, 1)), mode); err != nil {
			return err.Error(), true
		}
		return "edited " + rel, false
	case "insert":
		data, mode, err := read(ctx, t, rel)
		if err != nil {
			return err.Error(), true
		}
		lines := strings.SplitAfter(string(data), "\n")
		if in.InsertLine < 0 || in.InsertLine > len(lines) {
			return fmt.Sprintf("insert_line %d is outside 0..%d", in.InsertLine, len(lines)), true
		}
		ins := in.NewStr
		if !strings.HasSuffix(ins, "\n") {
			ins += "\n"
		}
		out := strings.Join(lines[:in.InsertLine], "") + ins + strings.Join(lines[in.InsertLine:], "")
		if err := write(ctx, t, rel, []byte(out), mode); err != nil {
			return err.Error(), true
		}
		return "inserted into " + rel, false
	}
	return fmt.Sprintf("unknown editor command %q", in.Command), true
}
