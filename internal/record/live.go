package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file of a run's folder that the forkbomb recording the
// run holds locked (flock, exclusive) from before run.json first says
// "running" until the record is closed. The kernel drops the lock when
// that process dies, however it dies (SIGKILL, OOM, a power cut of the
// process's host), so a reader tells a running run from an interrupted
// one by trying the lock, not by kill(pid, 0): a pid means nothing in
// another pid namespace or on another host, and may have been reused.
//
// Limits: the lock is only as good as the filesystem's locks. Local
// filesystems, tmpfs and overlayfs hold flock locks between every process
// of one kernel, whatever its pid namespace. NFS (Linux emulates flock
// with byte-range locks since 2.6.12) holds them between hosts with NFSv4
// or NFSv3 with lockd; a mount with -o nolock keeps them per host, so a
// reader on another host sees every run of that mount as interrupted. A
// filesystem that refuses flock (some FUSE ones) gets no lock file: its
// runs are judged by their pid, on this host only, as before.
const LockFile = "run.lock"

// Liveness is what a reader can tell of the process recording a run.
type Liveness int

const (
	// LivenessUnknown: the run has no usable lock (a record from before
	// the lock, or a filesystem without flock).
	LivenessUnknown Liveness = iota
	// Alive: some process holds the run's lock.
	Alive
	// Gone: nobody holds it; the recording process ended.
	Gone
)

func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Gone:
		return "gone"
	}
	return "unknown"
}

// holdLock creates dir's lock file and locks it for as long as the
// returned file stays open. On a filesystem that cannot lock it removes
// the file again and returns nil, nil: readers then fall back to the pid.
// The descriptor is close-on-exec, so no command forkbomb starts inherits
// the lock and keeps a dead run looking alive.
func holdLock(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run lock: %w", err)
	}
	if err := flockRetry(f, syscall.LOCK_EX); err != nil {
		f.Close()
		os.Remove(path)
		if unsupportedLock(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	return f, nil
}

// RunLiveness tries the lock of the run folder dir without waiting.
func RunLiveness(dir string) Liveness {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return LivenessUnknown
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return LivenessUnknown
	}
	switch err := flockRetry(f, syscall.LOCK_SH|syscall.LOCK_NB); {
	case err == nil:
		return Gone // closing f drops the shared lock at once
	case errors.Is(err, syscall.EWOULDBLOCK):
		return Alive
	}
	return LivenessUnknown
}

func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unsupportedLock(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL)
}

// running tells whether the run recorded in dir by pid is still going: by
// its lock where it has one, else by its pid on this host.
func running(dir string, pid int) bool {
	switch RunLiveness(dir) {
	case Alive:
		return true
	case Gone:
		return false
	}
	return pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH
}
