package run_test

import (
	"context"
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	if len(os.Args) == 5 && os.Args[1] == "__race" { // a forkbomb to kill: state, runs, repo
		s, err := workspace.Open(os.Args[2])
		if err == nil {
			_, _, err = run.Race(context.Background(), run.Options{Store: s, RunsDir: os.Args[3], Repo: os.Args[4],
				Task: "t", Forks: 2, Engine: engine.Command{Argv: []string{"/bin/sh", "-c", startedAgent}}, Test: "sleep 300"})
		}
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startedAgent is an agent that says it runs ("started" in its fork), then
// runs until it is killed.
const startedAgent = "touch started; exec sleep 300"
