package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// jsonString is v's JSON as the record writes it: keys sorted.
func jsonString(v any) string {
	b, _ := json.Marshal(v)
	var g any
	if json.Unmarshal(b, &g) == nil {
		b, _ = json.Marshal(g)
	}
	return string(b)
}

func shell(cmd string) engine.ToolCall {
	return engine.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
}

const fixPatch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: lib.sh\n@@\n-add() { echo $(($1 - $2)); }\n+add() { echo $(($1 + $2)); }\n*** End Patch\nEOF\n"

// TestCodexEngine drives the real codex CLI in a fork's sandbox through
// a scripted model: it works in the fork with its shell and its patch
// tool, its events reach the record marked as the agent's, its usage is
// counted outside it, and an escape (a write beside the fork, a read of a
// secret planted there) is contained — every check read from outside.
// The positive controls: a write inside the fork lands, and a file the
// agent cats inside the fork does surface in the events, so a leaked
// secret would.
func TestCodexEngine(t *testing.T) {
	t.Parallel()
	base, _ := testutil.OutsideDir(t)
	secret := "planted-secret-" + time.Now().Format("150405.000000")
	w := codexFork(t, base, map[string]string{
		"lib.sh":     "add() { echo $(($1 - $2)); }\n",
		"marker.txt": "MARKER_VISIBLE_INSIDE\n",
	})
	// Beside the forks, in the store: a folder of the host no fork sees.
	planted := filepath.Join(w.s.Root, "secret.txt")
	if err := os.WriteFile(planted, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := engine.StartScripted(realKey, map[string][]engine.Step{"fix": {
		{Text: "Looking.", Tools: []engine.ToolCall{shell(`cat lib.sh; env > env.txt; cp "$CODEX_HOME/config.toml" seen-config.toml; echo inside > made.txt`)}},
		{Tools: []engine.ToolCall{shell(fixPatch)}},
		{Tools: []engine.ToolCall{shell("echo pwned > ../outside.txt; echo pwned > " + base + "/escaped.txt; cat " + planted + "; cat marker.txt")}},
		{Text: "Fixed."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := codexFor(t, srv)
	if !strings.HasPrefix(c.Info().Version, "codex-cli ") {
		t.Errorf("version %q", c.Info().Version)
	}
	rec := &recorded{}
	var log strings.Builder
	out := c.Run(context.Background(), w, engine.Task{Prompt: "[persona: fix] make add add", Timeout: 2 * time.Minute, Emit: rec.emit, Log: &log})
	evs := rec.all()
	if out.State != event.ForkExited || out.Usage.Turns != 4 {
		t.Fatalf("outcome %+v (want exited after 4 model calls)\nlog:\n%s\nevents:\n%s", out, log.String(), evs)
	}
	_, files, err := w.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, _, err := files.Read(t.Context(), name, 1<<20)
		if err != nil {
			t.Errorf("read %s from the fork: %v", name, err)
		}
		return string(b)
	}
	if got := read("lib.sh"); got != "add() { echo $(($1 + $2)); }\n" {
		t.Errorf("apply_patch did not fix lib.sh: %q", got)
	}
	if read("made.txt") != "inside\n" {
		t.Error("control: the write inside the fork did not land")
	}
	env := read("env.txt")
	if !strings.Contains(env, "OPENAI_API_KEY="+sandbox.PlaceholderPrefix) {
		t.Errorf("the fork's codex had no placeholder key:\n%s", env)
	}
	cfg := read("seen-config.toml")
	for _, want := range []string{`trust_level = "untrusted"`, `wire_api = "responses"`, `base_url = "http://127.0.0.1:`, "check_for_update_on_startup = false"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("codex's config lacks %s:\n%s", want, cfg)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "escaped.txt")); err == nil {
		t.Error("ESCAPE: the agent wrote beside the fork")
	}
	if !strings.Contains(evs, "MARKER_VISIBLE_INSIDE") {
		t.Errorf("control: a file read in the fork never reached the events, so a leak could not be seen:\n%s", evs)
	}
	if strings.Contains(evs, secret) || strings.Contains(log.String(), secret) {
		t.Error("LEAK: the secret planted beside the fork reached the record")
	}
	for _, want := range []string{`tool_call {"id":`, `"source":"agent"`, `"tool":"shell"`, `"tool":"apply_patch"`, `model_response {"id"`, `"text":"Fixed."`} {
		if !strings.Contains(evs, want) {
			t.Errorf("no %s in the events:\n%s", want, evs)
		}
	}
	// The real key: never in the fork's environment, files or the record;
	// the fork sent only its placeholder.
	if strings.Contains(env, realKey) || strings.Contains(evs, realKey) || strings.Contains(log.String(), realKey) {
		t.Error("LEAK: the real key reached the fork or the record")
	}
	if out.Usage.TokensIn == 0 || out.Usage.CostMicroUSD == 0 {
		t.Errorf("usage not counted by the proxy: %+v", out.Usage)
	}
	if !strings.Contains(evs, `"via":"proxy"`) {
		t.Errorf("the proxy's own events are missing:\n%s", evs)
	}
}

// repoConfig is a repository that plants, in codex 0.169's project
// configuration, an MCP server and two hooks, each of which writes a
// marker into the working tree when it loads.
var repoConfig = map[string]string{
	"lib.sh": "add() { echo $(($1 - $2)); }\n",
	".codex/config.toml": `[mcp_servers.planted]
command = "sh"
args = ["-c", "touch MARKER_MCP; sleep 2"]
`,
	".codex/hooks.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch MARKER_HOOK_START"}]}],` +
		`"UserPromptSubmit":[{"hooks":[{"type":"command","command":"touch MARKER_HOOK_PROMPT"}]}]}}`,
}

var repoMarkers = []string{"MARKER_MCP", "MARKER_HOOK_START", "MARKER_HOOK_PROMPT"}

// TestCodexRepoConfigIsolation: a repository's .codex configuration (MCP
// server, hooks) never loads in a fork under the engine's settings. The
// positive control runs the same CLI on the same repository, unconfined,
// with the project trusted: every marker appears, so their absence in the
// fork means the configuration did not load.
func TestCodexRepoConfigIsolation(t *testing.T) {
	t.Parallel()
	// The planted MCP server starts beside codex's turn, not before it, so
	// its marker may come after codex has ended: in a fork, whose sandbox
	// then kills it, a server that did load could leave no marker. The
	// fork's turn is held open for three times as long as the control's
	// markers took to appear (10 s at least, 2 minutes at most), as a
	// loaded machine slows both alike.
	var took time.Duration
	holdFor := func() time.Duration { return min(max(3*took, 10*time.Second), 2*time.Minute) }
	hold := func() { time.Sleep(holdFor()) }
	srv, err := engine.StartScripted(realKey, map[string][]engine.Step{
		"idle":      {{Text: "Nothing to do."}},
		"idle-held": {{Text: "Nothing to do.", Hold: hold}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := codexFor(t, srv)
	t.Run("control: trusted, the markers appear", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "repo")
		for name, body := range repoConfig {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}
		testutil.Git(t, dir, "init", "-q")
		home := filepath.Join(t.TempDir(), "codex-home")
		os.MkdirAll(home, 0o700)
		cfg := fmt.Sprintf(`model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
[projects.%q]
trust_level = "trusted"
`, srv.URL+"/v1", dir)
		os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.Bin, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"--dangerously-bypass-hook-trust", "--ephemeral", "--", "[persona: idle] hello")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir(), "CODEX_HOME=" + home, "OPENAI_API_KEY=" + realKey}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("codex: %v\n%s", err, out)
		}
		// The MCP server starts in the background; give it its moment.
		for _, m := range repoMarkers {
			if !eventually(func() bool { _, err := os.Stat(filepath.Join(dir, m)); return err == nil }) {
				t.Errorf("control: %s never appeared, so its absence proves nothing\n%s", m, out)
			}
		}
		took = time.Since(start)
	})
	t.Run("the engine: none loads", func(t *testing.T) {
		base, _ := testutil.OutsideDir(t)
		w := codexFork(t, base, repoConfig)
		rec := &recorded{}
		out := c.Run(context.Background(), w, engine.Task{Prompt: "[persona: idle-held] hello", Timeout: 2*time.Minute + holdFor(), Emit: rec.emit})
		if out.State != event.ForkExited || out.Usage.Turns != 1 {
			t.Fatalf("outcome %+v\n%s", out, rec.all())
		}
		_, files, _ := w.Files(t.Context())
		for _, m := range repoMarkers {
			if _, err := files.Stat(t.Context(), m); err == nil {
				t.Errorf("LOADED: the repository's %s ran in the fork", m)
			}
		}
		if strings.Contains(rec.all(), "error {") {
			t.Errorf("codex reported errors (its config?):\n%s", rec.all())
		}
	})
}

// eventually polls cond for up to a minute (a marker a background
// process writes, or a command codex runs once its model answered —
// on a loaded CI machine codex's own start can take well over ten
// seconds); it never judges a duration, and a condition that holds
// returns at once.
func eventually(cond func() bool) bool {
	for range 600 {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// TestCodexKilled: cancelling the context (the race stopping a loser)
// ends codex and everything it started — a command it left running
// included — before Run returns. Checked in the host's process table;
// the control: the command was running (its file landed) and is found
// there by the same scan while it runs.
func TestCodexKilled(t *testing.T) {
	t.Parallel()
	mark := "300.4242" + time.Now().Format("0405")
	srv, err := engine.StartScripted(realKey, map[string][]engine.Step{"stay": {
		{Tools: []engine.ToolCall{shell("echo started > started.txt; sleep " + mark)}},
		{Tools: []engine.ToolCall{shell("sleep " + mark)}},
		{Text: "Done."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := codexFor(t, srv)
	base, _ := testutil.OutsideDir(t)
	w := codexFork(t, base, map[string]string{"a.txt": "a\n"})
	_, files, _ := w.Files(t.Context())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan bool, 1)
	go func() {
		started := eventually(func() bool { _, err := files.Stat(t.Context(), "started.txt"); return err == nil }) &&
			eventually(func() bool { return sleeping(mark) })
		seen <- started
		cancel()
	}()
	out := c.Run(ctx, w, engine.Task{Prompt: "[persona: stay] go", Timeout: 2 * time.Minute})
	if !<-seen {
		t.Fatal("control: the command never ran, or the scan never saw it")
	}
	if out.State != event.ForkKilled {
		t.Errorf("outcome %+v, want killed", out)
	}
	if sleeping(mark) {
		t.Error("a process codex started outlived Run")
	}
}

// sleeping says whether a process of this user runs "sleep mark".
func sleeping(mark string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "sleep\x00"+mark) {
			return true
		}
	}
	return false
}
