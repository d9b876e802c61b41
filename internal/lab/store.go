package lab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
	"github.com/forkbomb/forkbomb/internal/home"
)

// Kind is what a stored file holds.
type Kind string

const (
	KindPolicy Kind = "policy"
	KindTask   Kind = "task"
)

// Store is the lab folder: Dir/policies/ID.toml and Dir/tasks/ID.toml.
type Store struct {
	Dir string
}

// Open is the store of the state home l (nothing is created until Add).
func Open(l home.Layout) *Store { return &Store{Dir: l.Lab()} }

func (s *Store) folder(k Kind) string {
	if k == KindPolicy {
		return filepath.Join(s.Dir, "policies")
	}
	return filepath.Join(s.Dir, "tasks")
}

// path is where id of kind k lives; the id is checked at home's choke point.
func (s *Store) path(k Kind, id string) (string, error) {
	p, err := home.Join(s.folder(k), string(k), id)
	if err != nil {
		return "", err
	}
	return p + ".toml", nil
}

// parse checks data as a file of kind k.
func parse(k Kind, file string, data []byte) error {
	var err error
	if k == KindPolicy {
		_, err = ParsePolicy(file, data)
	} else {
		_, err = ParseTask(file, data)
	}
	return err
}

// List returns the stored ids of kind k, sorted; for policies the
// built-in default comes first.
func (s *Store) List(k Kind) ([]string, error) {
	entries, err := os.ReadDir(s.folder(k))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list %ss: %w", k, err)
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".toml")
		if ok && e.Type().IsRegular() && home.ValidateID(string(k), id) == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if k == KindPolicy {
		ids = slices.Insert(ids, 0, DefaultPolicy)
	}
	return ids, nil
}

// Read returns the stored file of id, and its path.
func (s *Store) Read(k Kind, id string) ([]byte, string, error) {
	p, err := s.path(k, id)
	if err != nil {
		return nil, "", err
	}
	data, err := readBounded(p, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p, fmt.Errorf("%s %s: %w", k, id, ErrNotFound)
	}
	return data, p, err
}

// Add stores data as id after checking it, atomically (a temp file
// renamed into place) and under the store's lock, so two forkbomb
// processes never tear or both win a name. It never replaces a stored
// file, nor the built-in default policy.
func (s *Store) Add(k Kind, id string, data []byte) error {
	p, err := s.path(k, id)
	if err != nil {
		return err
	}
	if k == KindPolicy && id == DefaultPolicy {
		return fmt.Errorf("add policy %s: %w", id, ErrBuiltin)
	}
	if err := parse(k, id+".toml", data); err != nil {
		return err
	}
	return s.locked(func() error {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("add %s %s: %w (remove it first)", k, id, ErrExists)
		}
		return s.write(k, p, data)
	})
}

// write puts data at p atomically: a temp file beside it, synced and
// renamed into place. The caller holds the lock.
func (s *Store) write(k Kind, p string, data []byte) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("add %s: %w", k, err)
	}
	if err := atomicfile.Write(p, data); err != nil {
		return fmt.Errorf("add %s: %w", k, err)
	}
	return nil
}

// Remove deletes a stored file, under the lock.
func (s *Store) Remove(k Kind, id string) error {
	p, err := s.path(k, id)
	if err != nil {
		return err
	}
	if k == KindPolicy && id == DefaultPolicy {
		return fmt.Errorf("remove policy %s: %w", id, ErrBuiltin)
	}
	return s.locked(func() error {
		if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s %s: %w", k, id, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("remove %s %s: %w", k, id, err)
		}
		if k == KindTask {
			return s.removeMined(id)
		}
		return nil
	})
}

// locked runs f holding an exclusive flock on Dir/.lock.
func (s *Store) locked(f func() error) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("lab store: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("lock lab store: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock lab store: %w", err)
	}
	return f()
}

// isFileRef: a reference with a slash or a .toml suffix names a file;
// anything else is a stored id (checked by home.ValidateID).
func isFileRef(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, ".toml")
}

// load reads a FILE_OR_ID reference: the file's bytes and its name for
// errors, or the stored file's.
func (s *Store) load(k Kind, ref string) ([]byte, string, error) {
	if isFileRef(ref) {
		data, err := readBounded(ref, true)
		if err != nil {
			return nil, ref, fmt.Errorf("read %s file: %w", k, err)
		}
		return data, ref, nil
	}
	data, p, err := s.Read(k, ref)
	return data, p, err
}

// LoadPolicy reads a policy by FILE_OR_ID; "default" is the built-in one.
func (s *Store) LoadPolicy(ref string) (*Policy, error) {
	if ref == DefaultPolicy {
		return &Policy{}, nil
	}
	data, name, err := s.load(KindPolicy, ref)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(name, data)
}

// LoadTask reads a task by FILE_OR_ID.
func (s *Store) LoadTask(ref string) (*Task, error) {
	data, name, err := s.load(KindTask, ref)
	if err != nil {
		return nil, err
	}
	return ParseTask(name, data)
}

// readBounded reads a regular file of at most maxFileBytes, never
// blocking on a FIFO. A stored file is never read through a symlink at its
// name (follow false); a file the user names on the command line may be
// one.
func readBounded(path string, follow bool) ([]byte, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	return data, nil
}

// ReadFile reads a file the user named (symlinks followed), bounded as
// stored files are.
func ReadFile(path string) ([]byte, error) {
	data, err := readBounded(path, true)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
