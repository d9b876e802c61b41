package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A new snapshot's history is most of an earlier one's: the user commits,
// then races again. Its fetch from the user's repository would copy and
// index that whole history once more (seconds on a repository of tens of
// thousands of commits), so New first gives the new snapshot the object
// files of a pid 1 this store keeps of an ancestor of the base — hard
// links, no copy — and a ref to that ancestor for the fetch's
// negotiation, which then sends only what the ancestor lacks.
//
// The pid 1's promise stays: its history is the base and its ancestors
// only. A seed's objects are what its own fetch got, all reachable from
// its base (and a seeded seed's too, by the same argument), and its base
// is an ancestor of the new one in the user's repository, asked there
// with the same safe settings as every read of it (no replacement
// objects, no grafts). A pid 1's tree and repository are never written after it is made (a
// fork writes its own layer, a pid 1's command a throwaway one; diffs keep
// copies of the objects they read beside the tree, in objcache/), so its
// files are the ones its fetch wrote.

const (
	// seedTries bounds the pid 1s asked about (newest first): one git
	// process each.
	seedTries = 4
	// seedMaxFiles and seedMaxPacks bound a seed's object files and
	// packs: each generation of seeding adds a pack or a few loose
	// objects, every pack is one more index for each lookup in a fork,
	// and past these a full fetch, which makes one pack, is the better
	// start.
	seedMaxFiles = 2000
	seedMaxPacks = 32
)

// seed gives the new snapshot at gitDir (initialised, empty) the objects
// of a pid 1 of an ancestor of base in the repository at top, and a ref
// to that ancestor. It returns the removal of that ref, to be called
// after the fetch; nil when no pid 1 could seed it, the snapshot then
// untouched.
func (s *Store) seed(ctx context.Context, top, base, gitDir string) (unref func()) {
	all, err := s.list()
	if err != nil {
		return nil
	}
	var cands []*Meta
	for _, m := range all {
		if m.Kind == KindPid1 && m.Seed && m.Method == MethodSnapshot && m.Repo == top && len(m.Base) == len(base) && IsObjectName(m.Base) {
			cands = append(cands, m)
		}
	}
	slices.SortFunc(cands, func(a, b *Meta) int { return b.Created.Compare(a.Created) })
	user := gitCmd{dir: top}
	asked := 0
	for _, m := range cands {
		if asked == seedTries || ctx.Err() != nil {
			break
		}
		// Seed says it is not shallow; a pid 1 whose file says otherwise
		// lacks the history behind its cut, whatever its meta says.
		if _, err := os.Lstat(filepath.Join(s.tree(m.Name), ".git", "shallow")); !os.IsNotExist(err) {
			continue
		}
		if m.Base != base {
			asked++
			if _, err := user.run(ctx, nil, "merge-base", "--is-ancestor", m.Base, base); err != nil {
				continue // not an ancestor, or not in the repository now
			}
		}
		if unref := s.seedFrom(m, gitDir); unref != nil {
			return unref
		}
	}
	return nil
}

// seedFrom links the object files of the pid 1 m into gitDir and points
// a ref at m's base; nil, gitDir's objects as they were, when it cannot.
// m is held (its use lock, shared) while its files are linked, and read
// again under it, so a pid 1 removed and made anew under that name
// meanwhile is not taken for m. The lock is not waited for: one held
// exclusively (m being removed) means no seed.
func (s *Store) seedFrom(m *Meta, gitDir string) (unref func()) {
	release, err := flock(s.useLockPath(m.Name), syscall.LOCK_SH|syscall.LOCK_NB)
	if err != nil {
		return nil
	}
	defer release()
	now, err := s.meta(m.Name)
	if err != nil || now.Base != m.Base || !now.Created.Equal(m.Created) || now.Kind != KindPid1 || !now.Seed {
		return nil
	}
	from := filepath.Join(s.tree(m.Name), ".git", "objects")
	to := filepath.Join(gitDir, "objects")
	var files []string // relative to objects/
	packs, _ := os.ReadDir(filepath.Join(from, "pack"))
	npacks := 0
	for _, e := range packs {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, "pack-") && (strings.HasSuffix(n, ".pack") || strings.HasSuffix(n, ".idx") || strings.HasSuffix(n, ".rev")) {
			files = append(files, filepath.Join("pack", n))
			if strings.HasSuffix(n, ".pack") {
				npacks++
			}
		}
	}
	if npacks > seedMaxPacks {
		return nil
	}
	dirs, _ := os.ReadDir(from)
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 || !isHex(d.Name()) {
			continue
		}
		loose, _ := os.ReadDir(filepath.Join(from, d.Name()))
		for _, e := range loose {
			if e.Type().IsRegular() && isHex(e.Name()) {
				files = append(files, filepath.Join(d.Name(), e.Name()))
			}
		}
	}
	if len(files) == 0 || len(files) > seedMaxFiles {
		return nil
	}
	var made []string
	undo := func() {
		for _, f := range made {
			os.Remove(filepath.Join(to, f))
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Join(to, filepath.Dir(f)), 0o755); err != nil {
			undo()
			return nil
		}
		if err := os.Link(filepath.Join(from, f), filepath.Join(to, f)); err != nil {
			undo()
			return nil
		}
		made = append(made, f)
	}
	// A loose ref, which git reads in a repository of the files format
	// (init's only one before git 2.45, and its default since); one of
	// another format would not negotiate with it and fetch everything.
	ref := filepath.Join(gitDir, "refs", "forkbomb", "seed")
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		undo()
		return nil
	}
	if err := os.WriteFile(ref, []byte(m.Base+"\n"), 0o644); err != nil {
		undo()
		return nil
	}
	return func() { os.RemoveAll(filepath.Dir(ref)) }
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}
