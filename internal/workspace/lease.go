package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
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

// leases are the lease files this process holds, by workspace folder:
// exclusively, of the temporary workspaces it made (files), and shared,
// of the kept ones it uses (holds; one descriptor however many hold it,
// since on a file system where flock is a POSIX lock closing any
// descriptor of a file lets go of all of a process's locks on it).
var leases struct {
	mu    sync.Mutex
	files map[string]*os.File
	holds map[string]*hold
}

type hold struct {
	f       *os.File
	created time.Time // of the workspace held: one made again under its name is another
	n       int
}

// takeLease takes the lease of a workspace being built in tmp: the lock
// is taken there, and goes with the folder when it is renamed into place.
func takeLease(tmp string) (*os.File, error) {
	f, err := openLock(filepath.Join(tmp, leaseFile))
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lease: %w", err)
	}
	return f, nil
}

// keepLease keeps f, the lease of the workspace now in place at dir,
// until the workspace is removed.
func keepLease(dir string, f *os.File) {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	if leases.files == nil {
		leases.files = map[string]*os.File{}
	}
	if old, ok := leases.files[dir]; ok {
		old.Close() // a workspace of that name this process made, removed by another
	}
	leases.files[dir] = f
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

// mine says whether this process holds the lease of the workspace in dir.
// It is asked before any lock is tried: where flock is a POSIX lock (NFS),
// a process's own locks never conflict, and letting go of a second one
// would let go of the first.
func mine(dir string) bool {
	leases.mu.Lock()
	defer leases.mu.Unlock()
	_, ok := leases.files[dir]
	_, held := leases.holds[dir]
	return ok || held
}

// claim takes the lease file of m exclusively, without waiting: it fails
// while the maker of a temporary workspace lives, or while a forkbomb
// holds a kept one (Hold).
func (s *Store) claim(m *Meta) (release func(), err error) {
	if mine(s.dir(m.Name)) {
		return nil, ErrInUse
	}
	return flock(filepath.Join(s.dir(m.Name), leaseFile), syscall.LOCK_EX|syscall.LOCK_NB)
}

// orphaned says whether m is a temporary workspace whose maker is gone:
// nobody holds its lease (a lease file lost is nobody's either).
func (s *Store) orphaned(m *Meta) bool {
	if !m.Temp {
		return false
	}
	release, err := s.claim(m)
	if err != nil {
		return false // held (ErrInUse), or unreadable: left alone
	}
	release()
	return true
}

// Hold keeps a workspace that is not temporary from Prune while this
// process uses it (a kept pid 1 of a base, from before its first fork to
// after its last): a shared lock on its lease file, which Prune must take
// exclusively. It fails with ErrNotFound if the workspace is gone, or went
// while the lock was taken, and with ErrInUse if a Prune kept it for 2 s.
func (s *Store) Hold(name string) (release func(), err error) {
	m, err := s.meta(name)
	if err != nil {
		return nil, err
	}
	dir := s.dir(name)
	leases.mu.Lock()
	defer leases.mu.Unlock()
	h := leases.holds[dir]
	if h == nil || !h.created.Equal(m.Created) {
		path := filepath.Join(dir, leaseFile)
		f, err := openLock(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		if err != nil {
			return nil, fmt.Errorf("hold %s: %w", name, err)
		}
		// a Prune holds it a moment while it looks again under the store
		// lock; one that removes it leaves no folder, and the meta is read
		// again below
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		for i := 0; (err == syscall.EWOULDBLOCK || err == syscall.EINTR) && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		}
		if err != nil {
			f.Close()
			if err == syscall.EWOULDBLOCK {
				return nil, fmt.Errorf("%w: %s is being removed", ErrInUse, name)
			}
			return nil, fmt.Errorf("hold %s: %w", name, err)
		}
		if now, err := s.meta(name); err != nil || !now.Created.Equal(m.Created) {
			f.Close()
			return nil, fmt.Errorf("%w: %s was removed while it was held", ErrNotFound, name)
		}
		if leases.holds == nil {
			leases.holds = map[string]*hold{}
		}
		h = &hold{f: f, created: m.Created}
		leases.holds[dir] = h // an earlier one's is let go by its last release
	}
	h.n++
	return sync.OnceFunc(func() {
		leases.mu.Lock()
		defer leases.mu.Unlock()
		if h.n--; h.n == 0 {
			h.f.Close()
			if leases.holds[dir] == h {
				delete(leases.holds, dir)
			}
		}
	}), nil
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
	Kept    []string `json:"kept,omitempty"` // "name: why" (forks left, in use)
	// Errors are what went wrong beside the removals: "name: error" for a
	// removed workspace whose Forget failed.
	Errors []string `json:"errors,omitempty"`
}

// PruneOptions says what Prune removes besides the temporary workspaces
// whose makers are gone.
type PruneOptions struct {
	// Also names more workspaces to remove, where no forkbomb holds them
	// (Hold) and no command runs in them: those of a pid 1 go once its
	// forks are gone ('workspace prune --bases': the kept bases).
	Also func(*Meta) bool
	// Forget, when set, is called with each workspace removed, right after
	// its removal and before any forkbomb can hold or make one again under
	// its name (Prune still holds the store lock and the workspace's
	// lease): what is kept elsewhere for it goes with it. Its error is
	// reported in Pruned.Errors; the workspace is gone by then.
	Forget func(*Meta) error
	// DryRun only says what would be removed.
	DryRun bool
}

// Prune removes the temporary workspaces whose makers are gone (forks
// first, then pid 1s), and those o.Also names. A temporary workspace whose
// maker lives is never removed, whatever o.Also says.
func (s *Store) Prune(ctx context.Context, o PruneOptions) (*Pruned, error) {
	all, err := s.list()
	if err != nil {
		return nil, err
	}
	out := &Pruned{Removed: []string{}}
	gone := map[string]bool{}
	for _, pass := range []Kind{KindFork, KindPid1} {
		for _, m := range all {
			if m.Kind != pass || !m.Temp && (o.Also == nil || !o.Also(m)) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			why, forgot := s.prune(ctx, m, all, gone, o)
			if why != "" {
				if !m.Temp || why != errLive {
					out.Kept = append(out.Kept, m.Name+": "+why)
				}
				continue
			}
			gone[m.Name] = true
			out.Removed = append(out.Removed, m.Name)
			if forgot != nil {
				out.Errors = append(out.Errors, m.Name+": "+forgot.Error())
			}
		}
	}
	return out, nil
}

// errLive is why a workspace a forkbomb holds is kept.
const errLive = "a running forkbomb uses it"

// prune removes m, and says why not if it does not; forgot is
// o.Forget's error. Under the store lock, it takes m's lease file
// exclusively (without waiting: a live maker or a Hold keeps it), so that
// nobody takes it meanwhile, and looks again.
func (s *Store) prune(ctx context.Context, m *Meta, all []*Meta, gone map[string]bool, o PruneOptions) (why string, forgot error) {
	unlock, err := s.lock()
	if err != nil {
		return err.Error(), nil
	}
	defer unlock()
	release, err := s.claim(m)
	if err != nil {
		if errors.Is(err, ErrInUse) {
			return errLive, nil
		}
		return err.Error(), nil
	}
	defer release()
	// the one looked at, not one made since under its name
	if now, err := s.meta(m.Name); err != nil || !now.Created.Equal(m.Created) || now.Temp != m.Temp {
		return "removed or made again meanwhile", nil
	}
	if o.DryRun {
		if m.Kind == KindPid1 && hasForks(all, m.Name, gone) {
			return "it has forks", nil
		}
		// as the removal would: without waiting (a command's start waits
		// for this probe, it is not refused)
		release, err := s.useLock(m.Name, true)
		if err != nil {
			return err.Error(), nil
		}
		release()
		return "", nil
	}
	if err := s.removeLocked(ctx, m, false); err != nil {
		return err.Error(), nil
	}
	if o.Forget != nil {
		forgot = o.Forget(m)
	}
	return "", forgot
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
