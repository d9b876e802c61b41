package world

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestFingerprintCoversTheWorker: the fingerprint hashes this package's sources and the
// sandbox's, so the package may import no other package of the module.
func TestFingerprintCoversTheWorker(t *testing.T) {
	t.Parallel()
	testutil.CheckFingerprintSources(t, sources, 30, "github.com/forkbomb/forkbomb/internal/sandbox",
		"github.com/forkbomb/forkbomb/internal/sandbox/progfile", "github.com/forkbomb/forkbomb/internal/world/workerproc",
		"github.com/forkbomb/forkbomb/internal/world/early")
}

// TestFingerprintModulesListed: every module the package links is in linkedModules.
func TestFingerprintModulesListed(t *testing.T) {
	t.Parallel()
	testutil.CheckLinkedModules(t, "fingerprint.go", linkedModules)
}
