package world

import (
	"os"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// selfExe is this binary as the kernel knows it, even when its file was replaced since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// confineWorker confines this process for good (internal/sandbox.ConfineWorker), from a
// folder that names nothing of forkbomb's.
func confineWorker(data int64) error {
	if err := os.Chdir("/"); err != nil {
		return err
	}
	_, err := sandbox.ConfineWorker(sandbox.WorkerLimits{Data: data})
	return err
}
