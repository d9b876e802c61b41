package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/cli/full"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	// The full build, so that every script runs (world, gateway,
	// --backend kubernetes); the core's hand-off is cmd/forkbomb's test.
	testscript.Main(m, map[string]func(){"forkbomb": func() { os.Exit(cli.Main(full.Options())) }})
}

// TestScripts runs the whole CLI as a user would, from the scripts in
// testdata/script (go test -run TestScripts -update rewrites their
// expected output).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exitcode N CMD ARG...: run CMD like exec and require status N.
			"exitcode": exitcode,
			"scripted": scripted,
			"lastrun":  lastrun,
		},
		// [need:TOOL] is false when a tool CI installs is missing, so
		// that `[!need:claude] skip` gives the reason; with
		// FORKBOMB_REQUIRE_ALL=1 (CI) a missing tool fails the script.
		Condition: func(cond string) (bool, error) {
			tool, ok := strings.CutPrefix(cond, "need:")
			if !ok {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			if _, err := exec.LookPath(tool); err != nil {
				if testutil.RequireAll() {
					return false, fmt.Errorf("%s not installed and %s=1 (scripts/test installs it)", tool, testutil.RequireAllEnv)
				}
				return false, nil
			}
			return true, nil
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir+"/home")
			noExitSleep(env)
			// the judge reuses the Go build cache, as it would a user's
			if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
				env.Setenv("GOCACHE", strings.TrimSpace(string(out)))
			}
			return os.MkdirAll(env.WorkDir+"/home", 0o755)
		},
	})
}

// exitcode N CMD ARG...: run CMD like exec and require status N.
func exitcode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if (got == want) == neg {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// lastrun VAR: set VAR to the id of the newest run under
// $FORKBOMB_HOME/runs (run ids sort by time).
func lastrun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: lastrun VAR")
	}
	ents, err := os.ReadDir(filepath.Join(ts.Getenv("FORKBOMB_HOME"), "runs"))
	ts.Check(err)
	id := ""
	for _, e := range ents {
		if e.IsDir() && e.Name() > id {
			id = e.Name()
		}
	}
	if id == "" {
		ts.Fatalf("lastrun: no run recorded")
	}
	ts.Setenv(args[0], id)
}

// scripted KEY FILE: start the scripted model server (both protocols) for
// the rest of the script, playing the personas of FILE (JSON: persona →
// steps; "" is the script of a prompt with no persona tag), and point the
// Anthropic and OpenAI variables at it with KEY as the real key.
func scripted(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: scripted KEY FILE")
	}
	var scripts map[string][]engine.Step
	if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &scripts); err != nil {
		ts.Fatalf("scripted: %v", err)
	}
	srv, err := engine.StartScripted(args[0], scripts)
	ts.Check(err)
	ts.Defer(func() { srv.Close() })
	for _, p := range []string{"ANTHROPIC", "OPENAI"} {
		ts.Setenv(p+"_BASE_URL", srv.URL)
		ts.Setenv(p+"_API_KEY", args[0])
	}
}
