package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/forkbomb/forkbomb/internal/home"
)

// A mined task (forkbomb task mine) is a stored task whose hidden tests
// and provenance live beside it: Dir/mined/ID/hidden/ (the commit's test
// files, laid out as in the repository) and Dir/mined/ID/mined.json.
// Forks never see them: the state home is hidden from every sandbox.

// MinedPrefix starts the id of every mined task.
const MinedPrefix = "mined-"

// MinedDir is where a mined task's hidden tests and provenance live.
func (s *Store) MinedDir(id string) (string, error) {
	return home.Join(filepath.Join(s.Dir, "mined"), "task", id)
}

// StagingDir is a fresh folder inside the store, for a mined task's files
// to be written in before AddMined moves them into place (a rename, so on
// the same file system).
func (s *Store) StagingDir() (string, error) {
	dir := filepath.Join(s.Dir, "mined")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("lab store: %w", err)
	}
	return os.MkdirTemp(dir, ".stage-")
}

// AddMined stores task id and moves staged (a StagingDir) into its place
// as MinedDir(id), under the store's lock: the folder first, the task
// last, so a task file never names hidden tests that are not there, and an
// interruption leaves at most a folder no task names (replaced by the
// next AddMined of that id).
func (s *Store) AddMined(id string, task []byte, staged string) error {
	dst, err := s.MinedDir(id)
	if err != nil {
		return err
	}
	p, err := s.path(KindTask, id)
	if err != nil {
		return err
	}
	if err := parse(KindTask, id+".toml", task); err != nil {
		return err
	}
	return s.locked(func() error {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("add task %s: %w", id, ErrExists)
		}
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("add task %s: %w", id, err)
		}
		if err := os.Rename(staged, dst); err != nil {
			return fmt.Errorf("add task %s: %w", id, err)
		}
		return s.write(KindTask, p, task)
	})
}

// removeMined deletes a mined task's folder (called under the lock).
func (s *Store) removeMined(id string) error {
	dir, err := s.MinedDir(id)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove task %s: %w", id, err)
	}
	return nil
}
