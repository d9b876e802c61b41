//go:build !linux && !darwin

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Only Linux and macOS have a backend; elsewhere forkbomb refuses to run a
// command confined rather than pretend.
func runConfined(ctx context.Context, r *resolved, stdio Stdio) (*Result, error) {
	return nil, fmt.Errorf("%w (%s): refusing to run unconfined; --no-sandbox accepts that", ErrUnsupported, runtime.GOOS)
}

// Probe reports that no layer exists on this platform.
func Probe(ctx context.Context) (*ProbeReport, error) {
	r := &ProbeReport{Mode: ModeNone, Kernel: runtime.GOOS}
	r.add("sandbox backend", false, "not implemented on "+runtime.GOOS)
	return r, nil
}

// ProbeWith is Probe: there is nothing to choose here.
func ProbeWith(ctx context.Context, o ProbeOptions) (*ProbeReport, error) { return Probe(ctx) }

// IsInit is always false where there is no init.
func IsInit() bool { return false }

// InitMain is never called where IsInit is false.
func InitMain() {}

// FindGitDirs has nothing to protect where there is no sandbox.
func FindGitDirs(root string) ([]string, error) { return nil, nil }

// Loaders: no program lists are enforced here (runConfined refuses), so
// there are no dynamic loaders to allow with them.
func Loaders() []string { return nil }

// backends: the Modes Linux takes, so that a policy is judged alike
// everywhere (runConfined refuses them all here).
var backends = []Mode{ModeAuto, ModeNamespaces, ModeLandlock}

// landlockNetABI: no Landlock here.
func landlockNetABI() int { return 0 }
