package cli

import (
	"errors"
	"fmt"

	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// state is the state home the commands share ($FORKBOMB_HOME); only the
// CLI looks it up, and passes the paths it names to the packages.
func state() (home.Layout, error) {
	return home.Default()
}

// openStore opens the workspace store of the state home.
func openStore() (*workspace.Store, error) {
	l, err := state()
	if err != nil {
		return nil, err
	}
	return workspace.Open(l.Workspaces())
}

// runsDirOr is dir, or the state home's runs directory when dir is "".
func runsDirOr(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	l, err := state()
	if err != nil {
		return "", err
	}
	return l.Runs(), nil
}

// inRepoHint adds the flag that moves a state folder found inside the
// repository: the library names the folder, the CLI its flag.
func inRepoHint(err error) error {
	if errors.Is(err, home.ErrInRepo) {
		return fmt.Errorf("%w; use --runs-dir elsewhere", err)
	}
	return err
}
