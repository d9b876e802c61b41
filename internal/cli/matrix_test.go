package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/cli/full"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// pairWant is what one (verb, engine) pair must do: whether the verb's
// --help offers the engine, the exit status, and a pattern its output must
// hold. A pair that is not offered is refused when its flags are parsed.
type pairWant struct {
	offered bool
	code    int
	out     string
}

// The matrix: every verb that drives an agent, by every registered
// engine. An offered pair runs for real — a one-fork race with a stub
// agent command or the scripted model — or gets the refusal its help
// documents (an agent CLI's canary gate, with a stub CLI that only says its
// version); a pair the help does not offer gets the enum's refusal. A new
// engine or verb fails TestEngineMatrix until it has a row here.
var engineMatrix = map[string]map[string]pairWant{
	"run": {
		"command":     {true, 0, `run \S+: won`},
		"api":         {true, 0, `run \S+: won`},
		"claude-code": {true, 2, `the canary has not run for claude-code 9\.9\.9-stub`},
		"codex":       {true, 2, `the canary has not run for codex 9\.9\.9-stub`},
		"hosted":      {true, 0, `run \S+: won`},
	},
	"eval": {
		"command":     {true, 0, `(?m)^1 +command +1/1 `},
		"api":         {true, 0, `(?m)^1 +api:evalfix +1/1 `},
		"claude-code": {true, 1, `--engines claude-code: the canary has not run for claude-code 9\.9\.9-stub`},
		"codex":       {true, 1, `--engines codex: the canary has not run for codex 9\.9\.9-stub`},
		"hosted":      {true, 0, `(?m)^1 +hosted:evalfix +1/1 `},
	},
	"world race": {
		"command":     {false, 2, ``},
		"api":         {true, 0, `winner: branch 0`},
		"claude-code": {true, 1, `the canary has not run for claude-code 9\.9\.9-stub`},
		"codex":       {false, 2, ``},
		"hosted":      {true, 0, `winner: branch 0`},
	},
	"world drive": {
		"command":     {false, 2, ``},
		"api":         {false, 2, ``},
		"claude-code": {true, 2, `the canary has not run for claude-code 9\.9\.9-stub`},
		"codex":       {false, 2, ``},
		"hosted":      {false, 2, ``},
	},
	"canary": {
		"command":     {false, 2, ``},
		"api":         {false, 2, ``},
		"claude-code": {true, 1, `canary FAILED for claude-code 9\.9\.9-stub`},
		"codex":       {true, 1, `canary FAILED for codex 9\.9\.9-stub`},
		"hosted":      {false, 2, ``},
	},
	"demo": {
		"command":     {false, 2, ``},
		"api":         {true, 0, `== winner: fork 3 \(honest\) ==`},
		"claude-code": {true, 1, `claude is not on PATH`},
		"codex":       {false, 2, ``},
		"hosted":      {true, 0, `== winner: fork 3 \(honest\) ==`},
	},
}

// The eval's repository: a fault the tests catch, and an agent command
// that restores the original.
const (
	evalLib  = "'use strict';\nfunction add(a, b) { return a + b; }\nmodule.exports = { add };\n"
	evalTest = "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./lib.js');\ntest('add', () => { assert.strictEqual(add(2, 3), 5); });\n"
)

// TestEngineMatrix walks every (verb × engine) pair the help offers and
// some it does not (see engineMatrix): each ends as written there, never
// with another error. The model is the scripted server, standing in for
// the Anthropic API and the gateway alike; the agent CLIs are stubs that
// answer --version, so their pairs reach the canary's gate whatever is
// installed.
func TestEngineMatrix(t *testing.T) {
	testutil.Need(t, "git", "go", "node")
	names := engine.Names()
	for verb, row := range engineMatrix {
		var got []string
		for e := range row {
			got = append(got, e)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(names))
		if !slices.Equal(got, want) {
			t.Fatalf("engineMatrix[%q] covers %v; the registry has %v", verb, got, want)
		}
	}

	dir := t.TempDir()
	// the judge and the demo reuse the Go build cache, as a user's would
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	mkdir(t, filepath.Join(dir, "home"))
	const key = "sk-matrix-scripted-0123456789abcdef"
	srv, err := engine.StartScripted(key, map[string][]engine.Step{
		"fix":     {shellStep("sed -i s/-/+/ lib.sh"), {Text: "Fixed."}},
		"world":   {shellStep("echo 42 > /work/answer"), {Text: "Done."}},
		"evalfix": {{Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "create", "path": "lib.js", "file_text": evalLib}}}}, {Text: "Fixed."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, v := range []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "FORKBOMB_GATEWAY_URL", "FORKBOMB_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"} {
		t.Setenv(v, srv.Env(v))
	}
	// stubs are each agent CLI's stand-in: it says its version, and
	// does nothing else
	stubs := map[string]string{}
	for _, d := range engine.Descriptors() {
		if d.Bin != "" {
			p := filepath.Join(dir, "stubs", d.Bin)
			mkdir(t, filepath.Dir(p))
			writeFile(t, p, "#!/bin/sh\n[ \"$1\" = --version ] && echo 9.9.9-stub\nexit 0\n", 0o755)
			stubs[d.Name] = p
		}
	}

	repo := gitRepo(t, filepath.Join(dir, "repo"), map[string]string{
		"lib.sh":   "add() { echo $(($1 - $2)); }\n",
		"check.sh": ". ./lib.sh\n[ \"$(add 2 3)\" = 5 ] && echo \"1 passed, 0 failed\" || { echo \"0 passed, 1 failed\"; exit 1; }\n",
	})
	jsRepo := gitRepo(t, filepath.Join(dir, "jsrepo"), map[string]string{"lib.js": evalLib, "lib.test.js": evalTest})
	// newWorld is a world of its own for one pair: a race leaves its
	// winner beside the trunk
	newWorld := func(t *testing.T) string {
		w := filepath.Join(t.TempDir(), "w.world")
		if out, code := forkbombRun(t, "world", "init", w); code != 0 {
			t.Fatalf("world init: %s", out)
		}
		return w
	}

	// engineArgs are the flags an offered engine takes: its stub CLI, or
	// the agent program of an engine that runs one.
	engineArgs := func(verb, e, agent string) []string {
		d, err := engine.Lookup(e)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Takes(engine.FlagAgentBin):
			return []string{"--" + engine.FlagAgentBin.Name, stubs[e]}
		case d.Takes(engine.FlagAgent):
			return []string{"--" + engine.FlagAgent.Name, agent}
		}
		return nil
	}
	// loop is whether e is forkbomb's own loop: the scripted model plays
	// its eval attempts by the model's name
	loop := func(e string) bool {
		d, err := engine.Lookup(e)
		return err == nil && d.Loop
	}
	argv := map[string]func(t *testing.T, e string) []string{
		"run": func(_ *testing.T, e string) []string {
			return append([]string{"run", "--repo", repo, "--forks", "1", "--test", "/bin/sh check.sh", "--engine", e},
				append(engineArgs("run", e, "sed -i s/-/+/ lib.sh"), "[persona: fix] make add add")...)
		},
		"eval": func(_ *testing.T, e string) []string {
			entry := e
			if loop(e) {
				entry += ":evalfix"
			}
			return append([]string{"eval", "--repo", jsRepo, "--test", "node --test lib.test.js", "--faults", "1", "--engines", entry},
				engineArgs("eval", e, "cat > lib.js <<'EOF'\n"+evalLib+"EOF\n")...)
		},
		"world race": func(t *testing.T, e string) []string {
			return append([]string{"world", "race", newWorld(t), "--forks", "1", "--check", "grep -qx 42 /work/answer", "--engine", e},
				append(engineArgs("world race", e, "true"), "[persona: world] write 42 into /work/answer")...)
		},
		"world drive": func(t *testing.T, e string) []string {
			return append([]string{"world", "drive", newWorld(t), "--engine", e}, append(engineArgs("world drive", e, "true"), "anything")...)
		},
		"canary": func(_ *testing.T, e string) []string {
			return append([]string{"canary", "--engine", e, "--timeout", "1m"}, engineArgs("canary", e, "true")...)
		},
		// the demo takes no engine flags: its CLI comes from PATH
		"demo": func(_ *testing.T, e string) []string { return []string{"demo", "--engine", e} },
	}

	for _, verb := range slices.Sorted(func(yield func(string) bool) {
		for v := range engineMatrix {
			if !yield(v) {
				return
			}
		}
	}) {
		offered := helpOffers(t, strings.Fields(verb)...)
		for _, e := range names {
			w := engineMatrix[verb][e]
			t.Run(verb+"/"+e, func(t *testing.T) {
				if slices.Contains(offered, e) != w.offered {
					t.Fatalf("%s --help offers %v; the matrix says %s is offered: %v", verb, offered, e, w.offered)
				}
				// each pair in a state home of its own: one pair's
				// canary result is not another's
				t.Setenv("FORKBOMB_HOME", t.TempDir())
				if verb == "demo" && stubs[e] != "" {
					// the demo takes the CLI from PATH: none there
					t.Setenv("PATH", t.TempDir())
				}
				args := argv[verb](t, e)
				out, code := forkbombRun(t, args...)
				pattern := w.out
				if !w.offered {
					pattern = `invalid argument "` + e + `" for "--engine" flag: "` + e + `" is not one of ` + strings.Join(offered, ", ")
				}
				if code != w.code || !regexp.MustCompile(pattern).MatchString(out) {
					t.Errorf("forkbomb %s: exit %d, want %d and /%s/:\n%s", strings.Join(args, " "), code, w.code, pattern, out)
				}
			})
		}
	}
}

// helpOffers are the engines a verb's --help offers: its --engine's
// values, or eval's list.
func helpOffers(t *testing.T, verb ...string) []string {
	t.Helper()
	out, code := forkbombRun(t, append(verb, "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d\n%s", verb, code, out)
	}
	if m := regexp.MustCompile(`(?m)^ +--engine ([a-z|-]+) `).FindStringSubmatch(out); m != nil {
		return strings.Split(m[1], "|")
	}
	if m := regexp.MustCompile(`--engines string .*ENGINE one of ([a-z, -]+)`).FindStringSubmatch(out); m != nil {
		return strings.FieldsFunc(strings.ReplaceAll(m[1], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	}
	t.Fatalf("%v --help offers no engine:\n%s", verb, out)
	return nil
}

// forkbombRun runs one command line of the full build in this process,
// bounded in time, and returns its output (stdout then stderr) and status.
func forkbombRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := cli.Run(ctx, args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, full.Options())
	return out.String() + errb.String(), code
}

func shellStep(cmd string) engine.Step {
	return engine.Step{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": cmd}}}}
}

// gitRepo makes a repository of files, one commit.
func gitRepo(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	mkdir(t, dir)
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content, 0o644)
	}
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
