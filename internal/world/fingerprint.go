package world

// The worker's fingerprint: what the trusted side and a slim worker
// (cmd/forkbomb-world) compare to know that the worker runs the world code
// the trusted side speaks to — the same wire, the same format, the same
// interpreter, the same confinement. It is the sandbox's fingerprint
// (internal/sandbox/fingerprint.go, whose reasons hold here too) taken
// over this package's own sources, early's (its lock, its system calls' assembly included) and workerproc's (how the worker is
// started), the sandbox's sources (the worker's confinement) and the
// modules this package links.

import (
	"embed"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

//go:embed *.go workerproc/*.go early/*.go early/*.s
var sources embed.FS

// linkedModules are the modules this package links (go list -deps),
// sorted; a test keeps the list complete.
var linkedModules = []string{
	"github.com/benhoyt/goawk",
	"github.com/itchyny/gojq",
	"github.com/itchyny/timefmt-go",
	"github.com/landlock-lsm/go-landlock",
	"golang.org/x/net",
	"golang.org/x/sys",
	"golang.org/x/term",
	"kernel.org/pub/linux/libs/security/libcap/psx",
	"mvdan.cc/sh/v3",
}

// fingerprintVersion changes when what the fingerprint covers changes.
const fingerprintVersion = "forkbomb-world-fingerprint-4"

// fingerprint is computed once per process, and only where a slim worker
// is in play.
var fingerprint = sync.OnceValue(func() string {
	// The sandbox's sources part only: its modules are among this
	// package's, and a test binary's sandbox part names none.
	sb, _, _ := strings.Cut(sandbox.Fingerprint(), "-")
	return sandbox.ProgramFingerprint(fingerprintVersion+" sandbox "+sb, sources, linkedModules)
})
