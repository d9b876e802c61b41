package workspace_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestMain lets the test binary serve as the sandbox init and, for the
// crash test, as a forkbomb process that gets killed mid-operation.
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	if len(os.Args) == 5 && os.Args[1] == "__workspace_new" {
		s, err := workspace.Open(os.Args[2])
		if err == nil {
			_, err = s.New(context.Background(), os.Args[3], workspace.NewOptions{Repo: os.Args[4]})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 5 && os.Args[1] == "__workspace_temp" {
		makeTemps(os.Args[2], os.Args[3], os.Args[4])
	}
	if len(os.Args) == 4 && os.Args[1] == "__workspace_hold" {
		holdWorkspace(os.Args[2], os.Args[3])
	}
	if len(os.Args) == 3 && os.Args[1] == "__git_hold" {
		holdGit(os.Args[2] == "plain")
	}
	os.Exit(m.Run())
}

// holdGit starts a git that waits on its stdin forever, prints its pid and
// waits to be killed: a forkbomb killed mid-diff. With plain, git is
// started without forkbomb's settings (the positive control).
func holdGit(plain bool) {
	// git holds the write end too, so it never sees the end of its input:
	// only a signal ends it.
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(1)
	}
	var c *exec.Cmd
	if plain {
		c = exec.Command("git", "hash-object", "--stdin")
		c.Stdin, c.ExtraFiles = r, []*os.File{w}
		err = c.Start()
	} else {
		c, err = workspace.StartGit(context.Background(), r, []*os.File{w}, "hash-object", "--stdin")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(c.Process.Pid)
	time.Sleep(time.Hour)
	os.Exit(1)
}
