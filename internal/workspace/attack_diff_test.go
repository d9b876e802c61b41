//go:build linux || darwin

package workspace_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

const hostSecret = "HOST-SECRET-7f3a9c"

// plantTraps runs, confined in fork f, the attacks of the hostile review on
// the patch path: links to a host file next to a decoy named like them
// plus "\r" or "\n" (git's --stdin-paths dropped a trailing "\r"), links to
// /dev/zero, a FIFO, a .gitignore that is a link to a host file, and, with
// nonUTF8, a name that is not UTF-8 (APFS refuses one). It returns the
// host file.
func plantTraps(t *testing.T, s *workspace.Store, f string, nonUTF8 bool) (secret string) {
	t.Helper()
	host := t.TempDir()
	secret = filepath.Join(host, "secret")
	ignore := filepath.Join(host, "ignore")
	write(t, secret, hostSecret+"\n")
	write(t, ignore, "*.leak\n")
	bad := "" // APFS refuses a name that is not UTF-8
	if nonUTF8 {
		bad = `ln -s '` + secret + `' "$(printf 'bad\377name')"` + "\n"
	}
	execIn(t, s, f, `set -e
ln -s '`+secret+`' foo;  printf 'decoy\n' > "$(printf 'foo\r')"
ln -s '`+secret+`' bar;  printf 'decoy\n' > "$(printf 'bar\n_')"
ln -s /dev/zero zero;    printf 'decoy\n' > "$(printf 'zero\r')"
mkfifo pipe;             printf 'decoy\n' > "$(printf 'pipe\r')"
`+bad+`rm .gitignore; ln -s '`+ignore+`' .gitignore; printf 'x\n' > x.leak
mkdir -p lib/sub; ln -s '`+host+`' lib/sub/dirlink
`)
	return secret
}

// diffWithin computes a diff, failing the test if it does not return: a
// FIFO or /dev/zero used to hang it.
func diffWithin(t *testing.T, s *workspace.Store, f string) (*workspace.Diff, error) {
	t.Helper()
	type res struct {
		d   *workspace.Diff
		err error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := s.Diff(context.Background(), f, true)
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		return r.d, r.err
	case <-time.After(3 * time.Minute):
		t.Fatalf("the diff of %s never returned", f)
	}
	return nil, nil
}
