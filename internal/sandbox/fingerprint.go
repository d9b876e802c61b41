package sandbox

// The build fingerprint: what the parent and a standalone init
// (cmd/forkbomb-init) compare to know that the init runs the same sandbox
// code as the parent that configures it (see the protocol in
// init_linux.go, and initbin_linux.go for how the init is chosen).
//
// Why this and not something else:
//   - The Go build ID and the ELF build ID name the whole binary, and the
//     two binaries are different programs by design.
//   - The VCS stamp (vcs.revision, vcs.modified) does not change while a
//     tree is being edited, which is when stale binaries are made; and a
//     `go build -buildvcs=false` has none.
//   - A hash made by `go generate` goes stale the moment someone forgets
//     to run it, silently: the very failure it is meant to catch.
//   - What decides the init's behaviour is the source of this package (it
//     imports no other package of the module but progfile, whose folder
//     lies inside its own and is embedded with it; fingerprint_test.go
//     checks that), the toolchain that compiled it and the versions of the
//     modules it links. Embedding the package's own sources makes the
//     compiler put them in both binaries, from the same files, with no
//     step anyone can forget. Test files are embedded too (a pattern
//     cannot leave them out) but not hashed: they are not in either
//     binary's code.
//
// Cost: about 190 kB of source hashed (see sum), once per process and
// only when a standalone init is in play: about 0.3 ms of a fresh init's
// start, 0.2 ms warm in a test binary (BenchmarkFingerprint); see
// bench/README.md.

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"hash"
	"io/fs"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// InitName is the file name of the standalone init beside forkbomb.
const InitName = "forkbomb-init"

//go:embed *.go progfile/*.go
var sources embed.FS

// linkedModules are the modules this package links (go list -deps); a
// test keeps the list complete.
var linkedModules = []string{
	"github.com/landlock-lsm/go-landlock",
	"golang.org/x/net",
	"golang.org/x/sys",
	"kernel.org/pub/linux/libs/security/libcap/psx",
}

// fingerprintVersion changes when what the fingerprint covers changes.
const fingerprintVersion = "forkbomb-sandbox-fingerprint-2"

// Fingerprint identifies the sandbox code of this build: two binaries with
// the same fingerprint run the same init. It is computed once per process.
func Fingerprint() string { return fingerprint() }

var fingerprint = sync.OnceValue(func() string {
	var deps []*debug.Module
	if bi, ok := debug.ReadBuildInfo(); ok {
		deps = bi.Deps
	}
	return fingerprintOf(sources, deps)
})

// ProgramFingerprint is the fingerprint of another part of forkbomb run as
// a program of its own (the world's worker): version names what it covers,
// src are the part's sources and modules the modules it links, sorted.
// Compare two with SameFingerprint.
func ProgramFingerprint(version string, src embed.FS, modules []string) string {
	var deps []*debug.Module
	if bi, ok := debug.ReadBuildInfo(); ok {
		deps = bi.Deps
	}
	return sourcesFingerprint(version, src, modules, deps)
}

// SameFingerprint reports whether a program whose fingerprint is own runs
// the code of the parent, whose fingerprint is parent (see sameBuild).
func SameFingerprint(parent, own string) bool { return sameBuild(parent, own) }

// fingerprintOf is this package's fingerprint.
func fingerprintOf(src embed.FS, deps []*debug.Module) string {
	return sourcesFingerprint(fingerprintVersion, src, linkedModules, deps)
}

// sourcesFingerprint is the sources' part and the modules' part, "S-M". M
// is "unknown" for a binary that carries no module list — a test binary:
// go test stamps none — which so vouches for its sources and toolchain
// only.
func sourcesFingerprint(version string, src embed.FS, modules []string, deps []*debug.Module) string {
	h := newSum()
	field := func(s string) {
		h.write([]byte(strconv.Itoa(len(s)) + ":"))
		h.write([]byte(s))
	}
	field(version)
	field(runtime.Version())
	field(runtime.GOOS + "/" + runtime.GOARCH)
	buf := make([]byte, 32<<10)
	err := fs.WalkDir(src, ".", func(name string, e fs.DirEntry, err error) error { // in lexical order
		if err != nil || e.IsDir() || strings.HasSuffix(name, "_test.go") {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		field(name)
		h.write([]byte(strconv.FormatInt(info.Size(), 10) + ":"))
		f, err := src.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			n, err := f.Read(buf)
			h.write(buf[:n])
			if err != nil {
				return nil
			}
		}
	})
	if err != nil {
		panic("sandbox: the embedded sources are unreadable: " + err.Error())
	}
	mods := "unknown"
	if len(deps) > 0 {
		m := newSum()
		for _, path := range modules {
			v := path + " " + moduleVersion(deps, path) + "\n"
			m.write([]byte(v))
		}
		mods = m.hex()
	}
	return h.hex() + "-" + mods
}

// sameBuild compares the parent's fingerprint with the init's own. A
// parent that knows no module versions (a test binary) is taken at its
// sources' word; an init that knows none is not.
func sameBuild(parent, own string) bool {
	ps, pm, ok1 := strings.Cut(parent, "-")
	ownS, ownM, ok2 := strings.Cut(own, "-")
	return ok1 && ok2 && ps == ownS && (pm == ownM || pm == "unknown")
}

// sum is the fingerprint's hash. SHA-256, hardware-assisted on current
// amd64 and arm64, costs a fresh init process 0.1–0.15 ms for the
// sources; CRC-32C, many times faster on a warm table, was measured
// slower here, since building its table is most of a first use (0.2 ms),
// and a weaker sum would only save what no one would notice.
type sum struct{ h hash.Hash }

func newSum() *sum { return &sum{sha256.New()} }

func (s *sum) write(p []byte) { s.h.Write(p) }

// hex is the first 128 bits, in hex.
func (s *sum) hex() string { return hex.EncodeToString(s.h.Sum(nil)[:16]) }

// moduleVersion is path's version and checksum as linked, after any
// replacement; "none" when the binary carries no build information for it.
func moduleVersion(deps []*debug.Module, path string) string {
	for _, m := range deps {
		if m.Path != path {
			continue
		}
		if r := m.Replace; r != nil {
			return "=> " + r.Path + "@" + r.Version + " " + r.Sum
		}
		return m.Version + " " + m.Sum
	}
	return "none"
}
