package judge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// What the judge keeps for a base, and when it goes.
//
// Each base pid 1 (BaseName) has a folder of its own in the judge's cache
// folder, bases/<pid 1>: its baselines' outcomes and the Go build caches
// their runs filled (keptGoCache), which every later judgement of that
// base reads. Only a Judger that holds the pid 1 (BasePid1) reads or
// writes it. So it goes with the pid 1: 'workspace prune --bases' calls
// ForgetBase under the claim that keeps every forkbomb from the pid 1 and
// the store lock that keeps one from being made again under its name,
// right after removing it; the folder is set aside there by one rename
// and removed by SweepForgotten after, so that the claim is short however
// large the caches. A base made again later has no baseline yet: its
// first judgement runs one and keeps a build cache again.

// basesDir holds the bases' folders, and those set aside for removal.
const basesDir = "bases"

// forgottenPrefix names a base's folder set aside for SweepForgotten: no
// pid 1 is named so (workspace.ValidateName refuses a leading dot).
const forgottenPrefix = ".forgotten-"

// baseDir is what the judge keeps for the base pid 1 named pid1.
func baseDir(cacheDir, pid1 string) string {
	return filepath.Join(cacheDir, basesDir, pid1)
}

// judgedDir is where every judged copy of pid1 is seen, inside its sandbox,
// when not at its repository's own path (judgedAt); it stays empty on the
// host.
func judgedDir(cacheDir, pid1 string) string {
	return filepath.Join(cacheDir, "judged", pid1)
}

// ForgetBase sets aside what the judge keeps in cacheDir for the pid 1
// named pid1 (its baselines and their Go build caches) and the empty
// folder its judged copies were seen at, for SweepForgotten to remove.
// Call it only once pid1 is removed and none can be made again or held
// meanwhile (workspace.PruneOptions.Forget). Nothing kept is no error.
func ForgetBase(cacheDir, pid1 string) error {
	if cacheDir == "" {
		return nil
	}
	dir, err := home.Join(filepath.Join(cacheDir, basesDir), "workspace", pid1)
	if err != nil {
		return err
	}
	switch _, err := os.Lstat(dir); {
	case err == nil:
		var r [8]byte
		rand.Read(r[:])
		// a new name: os.Rename refuses a folder that exists, even empty
		if err := os.Rename(dir, filepath.Join(filepath.Dir(dir), forgottenPrefix+pid1+"-"+hex.EncodeToString(r[:]))); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	// the mount point every judged copy of it was seen at, empty on the host
	if err := os.Remove(judgedDir(cacheDir, pid1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// SweepForgotten removes the folders ForgetBase set aside in cacheDir,
// those a killed forkbomb left included; nothing reads them.
func SweepForgotten(cacheDir string) error {
	if cacheDir == "" {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(cacheDir, basesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), forgottenPrefix) {
			continue
		}
		d := filepath.Join(cacheDir, basesDir, e.Name())
		sandbox.RemoveAll(d)
		if _, err := os.Lstat(d); err == nil {
			errs = append(errs, fmt.Errorf("%s could not be removed", d))
		}
	}
	return errors.Join(errs...)
}
