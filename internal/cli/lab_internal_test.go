package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestDefaultPolicyIsTodaysFlags: --policy default gives the very policy
// no flags give, and a policy file's settings are those flags.
func TestDefaultPolicyIsTodaysFlags(t *testing.T) {
	t.Setenv("FORKBOMB_HOME", t.TempDir())
	file := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(file, []byte("memory = \"1G\"\npids = 9\ntimeout = \"1m\"\nenv = [\"GOFLAGS\"]\ndenied_programs = [\"/usr/bin/true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	policyOf := func(t *testing.T, args ...string) any {
		t.Helper()
		var out bytes.Buffer
		o := &sandboxOptions{io: IO{Out: &out, Err: &out}, settings: sandboxSettings}
		f := pflag.NewFlagSet("sandbox", pflag.ContinueOnError)
		o.addFlags(f)
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		p, err := o.policy([]string{"true"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		with, same []string
	}{
		{"default", []string{"--policy", "default"}, nil},
		{"file", []string{"--policy", file}, []string{"--memory", "1G", "--pids", "9", "--timeout", "1m", "--env", "GOFLAGS", "--deny-program", "/usr/bin/true"}},
		{"flags win", []string{"--policy", file, "--pids", "3"}, []string{"--memory", "1G", "--pids", "3", "--timeout", "1m", "--env", "GOFLAGS", "--deny-program", "/usr/bin/true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := policyOf(t, tc.with...), policyOf(t, tc.same...)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v gives\n %+v\nwant (%v)\n %+v", tc.with, got, tc.same, want)
			}
		})
	}
}
