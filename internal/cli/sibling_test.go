package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestSameBuild: forkbomb-full is run in the core's place only when its
// build information says it is the sibling of the same build; each way a
// binary can differ is refused by name, and the identical one (the
// positive control) is accepted.
func TestSameBuild(t *testing.T) {
	t.Parallel()
	mine := func() *debug.BuildInfo {
		return &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Path:      "github.com/forkbomb/forkbomb/cmd/forkbomb",
			Main:      debug.Module{Path: "github.com/forkbomb/forkbomb", Version: "v0.0.0-20261201190000-e4c89fc0a1b2"},
			Deps: []*debug.Module{
				{Path: "github.com/spf13/cobra", Version: "v1.10.1", Sum: "h1:cobra"},
			},
			Settings: []debug.BuildSetting{
				{Key: "CGO_ENABLED", Value: "0"},
				{Key: "vcs.revision", Value: "e4c89fc0a1b2"},
				{Key: "vcs.modified", Value: "false"},
			},
		}
	}
	theirs := func(change func(b *debug.BuildInfo)) *debug.BuildInfo {
		b := mine()
		b.Path = "github.com/forkbomb/forkbomb/cmd/forkbomb-full"
		b.Deps = append(b.Deps, &debug.Module{Path: "k8s.io/client-go", Version: "v0.35.0", Sum: "h1:k8s"})
		change(b)
		return b
	}
	setting := func(key, value string) func(b *debug.BuildInfo) {
		return func(b *debug.BuildInfo) {
			for i := range b.Settings {
				if b.Settings[i].Key == key {
					b.Settings[i].Value = value
					return
				}
			}
			b.Settings = append(b.Settings, debug.BuildSetting{Key: key, Value: value})
		}
	}
	for _, tc := range []struct {
		name   string
		change func(b *debug.BuildInfo)
		want   string // "" accepted, else in the error
	}{
		{"same build", func(*debug.BuildInfo) {}, ""},
		{"not the sibling program", func(b *debug.BuildInfo) { b.Path = "github.com/forkbomb/forkbomb/cmd/forkbomb" }, "not github.com/forkbomb/forkbomb/cmd/forkbomb-full"},
		{"another Go", func(b *debug.BuildInfo) { b.GoVersion = "go1.26.7" }, "built by go1.26.7"},
		{"another module", func(b *debug.BuildInfo) { b.Main.Path = "example.com/fork" }, "module example.com/fork"},
		{"another version", func(b *debug.BuildInfo) { b.Main.Version = "v1.0.0" }, "v1.0.0"},
		{"another commit", setting("vcs.revision", "0123456789ab"), "vcs.revision"},
		{"changed sources", setting("vcs.modified", "true"), "vcs.modified"},
		{"other tags", setting("-tags", "nokube"), "-tags"},
		{"cgo", setting("CGO_ENABLED", "1"), "CGO_ENABLED"},
		{"another dependency version", func(b *debug.BuildInfo) { b.Deps[0] = &debug.Module{Path: "github.com/spf13/cobra", Version: "v1.9.0"} }, "github.com/spf13/cobra"},
		{"a dependency replaced", func(b *debug.BuildInfo) {
			b.Deps[0] = &debug.Module{Path: "github.com/spf13/cobra", Version: "v1.10.1", Sum: "h1:cobra", Replace: &debug.Module{Path: "../cobra"}}
		}, "github.com/spf13/cobra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := sameBuild(mine(), theirs(tc.change))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want an error naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}
