package sandbox

// Which program runs as the init.
//
// Every confined start executes an init. The forkbomb binary can serve
// (re-executed through /proc/self/exe: exactly the code that is running),
// but it carries the whole of forkbomb — its Go runtime start and package
// initialisers cost several milliseconds per start. cmd/forkbomb-init is
// the same init built alone. The parent uses it only when it can show
// that it runs the same sandbox code as itself:
//
//   - it is the regular file named forkbomb-init beside os.Executable()
//     (or Policy.Init), opened once per process with O_PATH|O_NOFOLLOW — a
//     symbolic link is refused, not followed — and checked through that
//     descriptor: a regular file, executable, neither set-id nor writable
//     by group or others, owned by root or the caller, on a mount that
//     allows execution. Whoever can change it could change forkbomb.
//   - it is executed through that same descriptor (/proc/self/fd/N in the
//     child), so the file checked is the file run, whatever is at the
//     path by then.
//   - it is from the same build: the parent sends its Fingerprint
//     (fingerprint.go) ahead of the configuration and the init refuses to
//     start when its own differs, with a status record of kind "stale"
//     (init_linux.go).
//
// Anything else — no such file, a refused one, a stale one, one that
// cannot be executed or that ends without a word — makes the parent start
// /proc/self/exe instead, for that start (before the command has run) and
// for the rest of the process, and say so once on stderr with the fix.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox/progfile"
)

// selfInit is what Result.Init and the probe call the running binary
// serving as its own init.
const selfInit = "/proc/self/exe"

// errInitRefused marks a start that failed because of the standalone init
// itself; the parent retries with selfInit.
var errInitRefused = errors.New("the standalone sandbox init was refused")

// errInitStart marks a failure to start the init process at all (exec or
// clone), which may be the namespaces' fault rather than the init's.
var errInitStart = errors.New("cannot start the sandbox init")

// initBinary is one standalone init candidate, looked at once per path per
// process.
type initBinary struct {
	path string
	file *os.File // O_PATH, held for the life of the process; nil when unusable
	// absent: there is no such file (no warning: `go run`, tests).
	absent bool
	// refusal, once set, is why it is not used (it never is again).
	refusal atomic.Pointer[string]
	warn    sync.Once
}

var initBinaries struct {
	sync.Mutex
	m map[string]*initBinary
}

// defaultInitPath is forkbomb-init beside the running executable.
var defaultInitPath = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the running executable: %w", err)
	}
	return filepath.Join(filepath.Dir(exe), InitName), nil
})

// lookupInit returns the candidate for explicit (Policy.Init), or for the
// default path when explicit is empty. It opens and checks the file on
// first use only; a file refused then is never used by this process.
func lookupInit(explicit string) *initBinary {
	path := explicit
	if path == "" {
		p, err := defaultInitPath()
		if err != nil {
			b := &initBinary{}
			b.refuse(err.Error())
			return b
		}
		path = p
	}
	initBinaries.Lock()
	defer initBinaries.Unlock()
	if b := initBinaries.m[path]; b != nil {
		return b
	}
	b := &initBinary{path: path}
	f, err := progfile.Open(path)
	switch {
	case errors.Is(err, unix.ENOENT):
		b.absent = true // the normal case of `go run`: no warning
		b.refusal.Store(ptr("none at " + path))
	case err != nil:
		b.refuse(err.Error())
		b.warnOnce()
	default:
		b.file = f
		// Needed at the first start, a few steps on: computed meanwhile.
		go fingerprint()
	}
	if initBinaries.m == nil {
		initBinaries.m = map[string]*initBinary{}
	}
	initBinaries.m[path] = b
	return b
}

func ptr(s string) *string { return &s }

// usable reports whether starts should use this init.
func (b *initBinary) usable() bool { return b != nil && b.file != nil && b.refusal.Load() == nil }

// refuse records why b is not used, for the rest of the process.
func (b *initBinary) refuse(why string) { b.refusal.CompareAndSwap(nil, &why) }

// warnOnce tells the user, once per process and file, why the slow init is
// used and how to fix it.
func (b *initBinary) warnOnce() {
	b.warn.Do(func() {
		why := "unknown"
		if r := b.refusal.Load(); r != nil {
			why = *r
		}
		fmt.Fprintf(os.Stderr, "forkbomb: warning: sandbox init %s not used: %s; forkbomb serves as its own init, which starts slower. "+
			"Rebuild both from one tree (CGO_ENABLED=0 go build -o bin/ ./cmd/...) and keep %s a plain file, mode 0755, beside forkbomb\n", b.path, why, InitName)
	})
}

// describe says which init starts use and why, for the probe.
func (b *initBinary) describe() *InitReport {
	if b.usable() {
		return &InitReport{Path: b.path, Standalone: true, Reason: "a checked " + InitName + " of the same build"}
	}
	why := "none found"
	if r := b.refusal.Load(); r != nil {
		why = *r
	}
	if !b.absent && b.path != "" {
		why = b.path + " not used: " + why
	}
	return &InitReport{Path: selfInit, Reason: why}
}

// In one start, b is the standalone init to use, or nil for the running
// binary: decided once (startWithFallback), since another start may refuse
// b meanwhile.

// initCommand is the command that starts an init with the protocol's
// descriptors extra (fd 3 onwards): the standalone init b, executed
// through its descriptor passed right after them, or else the running
// binary.
func initCommand(b *initBinary, extra []*os.File) *exec.Cmd {
	if b == nil {
		cmd := exec.Command(selfInit, initArg)
		cmd.Args[0] = InitName
		cmd.ExtraFiles = extra
		return cmd
	}
	fd := 3 + len(extra)
	cmd := exec.Command("/proc/self/fd/"+strconv.Itoa(fd), initArg, standaloneArg)
	cmd.Args[0] = InitName
	cmd.ExtraFiles = append(append([]*os.File{}, extra...), b.file)
	return cmd
}

// writeConfig sends cfg to the init b, after the parent's fingerprint
// when b is a standalone init (the protocol in init_linux.go), in one
// write.
func writeConfig(w io.Writer, b *initBinary, cfg *initConfig) error {
	var buf bytes.Buffer
	if b != nil {
		buf.WriteString(fingerprint() + "\n")
	}
	if err := json.NewEncoder(&buf).Encode(cfg); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// initUsed is what Result.Init says of b.
func initUsed(b *initBinary) string {
	if b != nil {
		return b.path
	}
	return selfInit
}

// startWithFallback runs start with the standalone init b and, when that
// fails because of b, again with the running binary — and b is not used
// again by this process. A failure both inits share (namespaces refused,
// an init killed before a word) is not held against b.
func startWithFallback[T any](b *initBinary, start func(*initBinary) (T, error)) (T, error) {
	if !b.usable() {
		return start(nil)
	}
	v, err := start(b)
	if !errors.Is(err, errInitRefused) && !errors.Is(err, errInitStart) {
		return v, err
	}
	v2, err2 := start(nil)
	for _, both := range []error{errInitStart, errNoStart} {
		if errors.Is(err, both) && errors.Is(err2, both) {
			return v2, err2 // the same failure either way: not b's
		}
	}
	why := strings.TrimPrefix(err.Error(), ErrSetup.Error()+": ")
	b.refuse(strings.TrimPrefix(why, errInitRefused.Error()+": "))
	b.warnOnce()
	return v2, err2
}
