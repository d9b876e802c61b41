package home

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CheckOutside refuses a state folder (what: "the runs directory", "the
// state home") that is repo or lies inside it, comparing canonical paths:
// a symlink to the repository is inside it too. dir need not exist yet;
// repo must be canonical (as git's --show-toplevel, resolved).
func CheckOutside(what, dir, repo string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if Within(Canonical(abs), repo) {
		return &InRepoError{What: what, Dir: abs, Repo: repo}
	}
	return nil
}

// InRepoError says which state folder lies in which repository.
type InRepoError struct {
	What, Dir, Repo string
}

func (e *InRepoError) Error() string {
	return fmt.Sprintf("%s %s is inside the repository %s", e.What, e.Dir, e.Repo)
}

// Is makes every InRepoError an ErrInRepo.
func (e *InRepoError) Is(target error) bool { return target == ErrInRepo }

// Canonical resolves the symlinks of the longest part of p that exists and
// keeps the rest as written: the canonical path p will have once made.
func Canonical(p string) string {
	for q := p; ; q = filepath.Dir(q) {
		if c, err := filepath.EvalSymlinks(q); err == nil {
			rel, _ := filepath.Rel(q, p)
			return filepath.Join(c, rel)
		}
		if q == "/" || q == "." {
			return p
		}
	}
}

// Within reports whether path is base or lies below it.
func Within(path, base string) bool {
	return path == base || base == "/" || strings.HasPrefix(path, base+"/")
}
