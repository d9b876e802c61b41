package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// MkdirTemp makes a private temporary directory named after its owner's
// pid, forkbomb-KIND-PID-*, so that ReclaimStale can tell it from a live
// one after forkbomb was killed.
func MkdirTemp(kind string) (string, error) { return MkdirTempIn("", kind) }

// MkdirTempIn is MkdirTemp in dir ("": the temporary directory), for
// ReclaimStaleIn.
func MkdirTempIn(dir, kind string) (string, error) {
	return os.MkdirTemp(dir, fmt.Sprintf("forkbomb-%s-%d-", kind, os.Getpid()))
}

// ReclaimStale removes the temporary directories of forkbomb processes
// that no longer exist (killed with SIGKILL before they could clean up).
// A directory whose pid is alive — or reused by another process — is left.
func ReclaimStale() { ReclaimStaleIn(os.TempDir()) }

// ReclaimStaleIn is ReclaimStale for the directories MkdirTempIn made in
// dir.
func ReclaimStaleIn(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "forkbomb-")
		if !ok || !e.IsDir() {
			continue
		}
		parts := strings.SplitN(rest, "-", 3)
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
