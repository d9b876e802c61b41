package lab

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound: no stored task or policy of that id.
	ErrNotFound = errors.New("not found")
	// ErrExists: add would replace a stored one.
	ErrExists = errors.New("already exists")
	// ErrBuiltin: the built-in default policy cannot be replaced or removed.
	ErrBuiltin = errors.New("built in")
)

// FileError is a refused TOML file: which file, which line (0 when the
// problem is not on one line), which key, and why.
type FileError struct {
	File   string
	Line   int
	Key    string
	Reason string
	Err    error
}

func (e *FileError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Reason)
	}
	return fmt.Sprintf("%s: %s", loc, e.Reason)
}

func (e *FileError) Unwrap() error { return e.Err }
