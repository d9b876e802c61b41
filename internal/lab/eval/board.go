package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
)

// Board is the file where evaluations on stored tasks accumulate
// ($FORKBOMB_HOME/lab/eval/board.json). Every change is made under an
// exclusive lock and written whole to a temp file renamed into place, so
// two forkbomb processes never lose each other's attempts and an
// interruption never leaves it torn.
type Board struct {
	Path string
}

// boardFile is the board's on-disk form.
type boardFile struct {
	Version  int       `json:"version"`
	Attempts []Attempt `json:"attempts"`
}

// maxBoardBytes bounds what is read of the board.
const maxBoardBytes = 64 << 20

// Add appends an attempt.
func (b *Board) Add(a Attempt) error {
	return b.locked(func() error {
		f, err := b.read()
		if err != nil {
			return err
		}
		f.Attempts = append(f.Attempts, a)
		return b.write(f)
	})
}

// Attempts are every attempt on the board, oldest first.
func (b *Board) Attempts() ([]Attempt, error) {
	var out []Attempt
	err := b.locked(func() error {
		f, err := b.read()
		out = f.Attempts
		return err
	})
	return out, err
}

func (b *Board) read() (*boardFile, error) {
	f := &boardFile{Version: 1}
	fh, err := os.OpenFile(b.Path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the eval board: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxBoardBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the eval board: %w", err)
	}
	if len(data) > maxBoardBytes {
		return nil, fmt.Errorf("read the eval board: %s is larger than %d bytes", b.Path, maxBoardBytes)
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("read the eval board %s: %w", b.Path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("read the eval board %s: version %d, this forkbomb reads 1", b.Path, f.Version)
	}
	return f, nil
}

func (b *Board) write(f *boardFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(b.Path, append(data, '\n')); err != nil {
		return fmt.Errorf("write the eval board: %w", err)
	}
	return nil
}

// locked runs f holding an exclusive flock beside the board.
func (b *Board) locked(f func() error) error {
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o700); err != nil {
		return fmt.Errorf("eval board: %w", err)
	}
	lf, err := os.OpenFile(b.Path+".lock", os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("lock the eval board: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock the eval board: %w", err)
	}
	return f()
}
