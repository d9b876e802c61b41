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
//     imports no other package of the module; fingerprint_linux_test.go
//     checks that), the toolchain that compiled it and the versions of the
//     modules it links. Embedding the package's own sources makes the
//     compiler put them in both binaries, from the same files, with no
//     step anyone can forget. Test files are embedded too (a pattern
//     cannot leave them out) but not hashed: they are not in either
//     binary's code.
//
// Cost: about 190 kB of source summed (twoCRCs: 40 µs in all, warm),
// once per process and only when a standalone init is in play; see the
// measurements in bench/README.md.

import (
	"embed"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// InitName is the file name of the standalone init beside forkbomb.
const InitName = "forkbomb-init"

//go:embed *.go
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
const fingerprintVersion = "forkbomb-sandbox-fingerprint-1"

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

// fingerprintOf is the sources' part and the modules' part, "S-M". M is
// "unknown" for a binary that carries no module list — a test binary: go
// test stamps none — which so vouches for its sources and toolchain only.
func fingerprintOf(src embed.FS, deps []*debug.Module) string {
	var h twoCRCs
	field := func(s string) {
		h.write([]byte(strconv.Itoa(len(s)) + ":"))
		h.write([]byte(s))
	}
	field(fingerprintVersion)
	field(runtime.Version())
	field(runtime.GOOS + "/" + runtime.GOARCH)
	entries, err := src.ReadDir(".")
	if err != nil {
		panic("sandbox: the embedded sources are unreadable: " + err.Error())
	}
	buf := make([]byte, 32<<10)
	for _, e := range entries { // sorted by name
		name := e.Name()
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			panic("sandbox: the embedded sources are unreadable: " + err.Error())
		}
		field(name)
		h.write([]byte(strconv.FormatInt(info.Size(), 10) + ":"))
		f, err := src.Open(name)
		if err != nil {
			panic("sandbox: the embedded sources are unreadable: " + err.Error())
		}
		for {
			n, err := f.Read(buf)
			h.write(buf[:n])
			if err != nil {
				break
			}
		}
		f.Close()
	}
	mods := "unknown"
	if len(deps) > 0 {
		var m twoCRCs
		for _, path := range linkedModules {
			v := path + " " + moduleVersion(deps, path) + "\n"
			m.write([]byte(v))
		}
		mods = m.sum()
	}
	return h.sum() + "-" + mods
}

// sameBuild compares the parent's fingerprint with the init's own. A
// parent that knows no module versions (a test binary) is taken at its
// sources' word; an init that knows none is not.
func sameBuild(parent, own string) bool {
	ps, pm, ok1 := strings.Cut(parent, "-")
	ownS, ownM, ok2 := strings.Cut(own, "-")
	return ok1 && ok2 && ps == ownS && (pm == ownM || pm == "unknown")
}

// twoCRCs is CRC-32C and CRC-32 (IEEE) of one stream: 64 bits, both
// computed by the CPU's own instructions (SSE 4.2 and PCLMULQDQ on amd64,
// the CRC32 instructions on arm64) at some 20 bytes a nanosecond, where
// SHA-256 manages under 2 (measured: 8 µs against 113 µs for the sources,
// paid by every init). It detects accidents — a stale build — which is
// all it is for: it is not a cryptographic hash, and nothing relies on
// one. Who could forge a colliding init could not place it, since the
// file must be owned by root or the caller and writable by no one else
// (initbin_linux.go) — and whoever can write it can write forkbomb.
type twoCRCs struct{ c, i uint32 }

func (h *twoCRCs) write(p []byte) {
	// MakeTable returns the package's own table for Castagnoli, built
	// once; here rather than at package initialisation, which every
	// forkbomb process pays.
	h.c = crc32.Update(h.c, crc32.MakeTable(crc32.Castagnoli), p)
	h.i = crc32.Update(h.i, crc32.IEEETable, p)
}

func (h *twoCRCs) sum() string {
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], h.c)
	binary.BigEndian.PutUint32(b[4:], h.i)
	return hex.EncodeToString(b[:])
}

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
