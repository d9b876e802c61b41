package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A temporary workspace (NewOptions.Temp, ForkTemp) is one its maker
// removes when done: a judged run's fork, a bisect's snapshot and forks, a
// race's forks. A forkbomb killed before it could remove them leaves them
// behind, and a kept pid 1 with such a fork cannot be removed. So each is
// leased to the process that made it: the maker holds a lock on the
// workspace's lease file from before the workspace appears until it is
// removed, and the kernel lets that lock go when the process ends,
// however it ends. Prune removes the temporary workspaces whose lease
// nobody holds; a workspace made by 'forkbomb workspace new' or 'fork' is
// never temporary, and no lock is taken to find out whether a command is
// running in it (that is the use lock's job).

const leaseFile = "lease"

// leases are the lease files this process holds, by workspace folder.
var leases struct {
	mu    sync.Mutex
	files map[string]*os.File
}

// lease takes the lease of a workspace being built in tmp, to be renamed
// to final: the lock is taken in tmp, and goes with the folder.
func lease(tmp, final string) error {
	f, err := os.OpenFile(filepath.Join(tmp, leaseFile), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("lease: %w", err)
	}
	leases.mu.Lock()
	defer leases.mu.Unlock()
	if leases.files == nil {
		leases.files = map[string]*os.File{}
	}
	if old, ok := leases.files[final]; ok {
		old.Close() // a workspace of that name this process made, removed by another
	}
	leases.files[final] = f
	return nil
}

// unlease lets go of the lease of the workspace in dir, if this process
// holds it.
func unlease(dir string) {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	if f, ok := leases.files[dir]; ok {
		f.Close()
		delete(leases.files, dir)
	}
}

// orphaned says whether m is a temporary workspace whose maker is gone:
// nobody holds its lease (a lease file lost is nobody's either).
func (s *Store) orphaned(m *Meta) bool {
	if !m.Temp {
		return false
	}
	release, err := flock(filepath.Join(s.dir(m.Name), leaseFile), syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		return false // held (ErrInUse), or unreadable: left alone
	}
	release()
	return true
}

// Forker makes forks: a Store, or a store of another backend.
type Forker interface {
	Fork(ctx context.Context, src, dst string) (*Meta, error)
}

// ForkTemp makes dst, a temporary fork of src, where s can lease it
// (Store.ForkTemp); elsewhere a fork as Fork makes it.
func ForkTemp(ctx context.Context, s Forker, src, dst string) (*Meta, error) {
	if t, ok := s.(interface {
		ForkTemp(ctx context.Context, src, dst string) (*Meta, error)
	}); ok {
		return t.ForkTemp(ctx, src, dst)
	}
	return s.Fork(ctx, src, dst)
}

// ForkTemp is Fork for a temporary fork, leased to this process until it
// is removed (Prune removes it once the process is gone).
func (s *Store) ForkTemp(ctx context.Context, src, dst string) (*Meta, error) {
	return s.fork(ctx, src, dst, true)
}

// Pruned is what Prune removed, and what it left and why.
type Pruned struct {
	Removed []string `json:"removed"`
	Kept    []string `json:"kept,omitempty"` // "name: why" (forks left, a command running)
}

// Prune removes the temporary workspaces whose makers are gone (forks
// first, then pid 1s), and also the workspaces extra names, if they exist
// and are not in use: those of a pid 1 go once its forks are gone. With
// dryRun it only says what it would remove.
func (s *Store) Prune(ctx context.Context, extra func(*Meta) bool, dryRun bool) (*Pruned, error) {
	all, err := s.list()
	if err != nil {
		return nil, err
	}
	out := &Pruned{Removed: []string{}}
	gone := map[string]bool{}
	for _, pass := range []Kind{KindFork, KindPid1} {
		for _, m := range all {
			if m.Kind != pass || !(s.orphaned(m) || extra != nil && extra(m)) {
				continue
			}
			if dryRun {
				if m.Kind == KindPid1 && hasForks(all, m.Name, gone) {
					out.Kept = append(out.Kept, m.Name+": it has forks")
					continue
				}
				gone[m.Name] = true
				out.Removed = append(out.Removed, m.Name)
				continue
			}
			if err := s.Remove(ctx, m.Name); err != nil {
				if !errors.Is(err, ErrNotFound) {
					out.Kept = append(out.Kept, m.Name+": "+err.Error())
				}
				continue
			}
			out.Removed = append(out.Removed, m.Name)
		}
	}
	return out, ctx.Err()
}

// hasForks says whether pid 1 name has a fork in all that is not in gone.
func hasForks(all []*Meta, name string, gone map[string]bool) bool {
	for _, o := range all {
		if o.Pid1 == name && o.Name != name && !gone[o.Name] {
			return true
		}
	}
	return false
}
