package workspace_test

import (
	"context"
	"fmt"
	"os"
	"testing"

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
	os.Exit(m.Run())
}
