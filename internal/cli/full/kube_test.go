package full

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
