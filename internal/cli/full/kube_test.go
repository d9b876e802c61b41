package full

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/kube"
)

// TestDefaultImage: the core names the forks' default image in its flags
// without linking the kubernetes backend; it must be the backend's own.
func TestDefaultImage(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"run", "sandbox"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			code := cli.Run(context.Background(), []string{verb, "--help"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &out}, cli.Options{})
			if code != 0 || !strings.Contains(out.String(), `(default "`+kube.DefaultImage+`")`) {
				t.Errorf("exit %d; %s --help does not give %s as --image's default:\n%s", code, verb, kube.DefaultImage, out.String())
			}
		})
	}
}

// TestKeepWarmFlag: --keep-warm takes 0 or a duration from a minute to a
// day, and says what it wants otherwise.
func TestKeepWarmFlag(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"0": 0, "": 0, "10m": 10 * time.Minute, "1h": time.Hour} {
		if d, err := keepWarm(v); err != nil || d != want {
			t.Errorf("--keep-warm %q: %v %v, want %v", v, d, err, want)
		}
	}
	for _, v := range []string{"10", "30s", "48h", "-1m", "soon"} {
		if _, err := keepWarm(v); err == nil || !strings.Contains(err.Error(), "--keep-warm") {
			t.Errorf("--keep-warm %q: %v, want an error naming the flag", v, err)
		}
	}
}
