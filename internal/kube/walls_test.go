package kube

import (
	"errors"
	"testing"
)

// TestProbeResult: which backend confines in a pod, and whether its
// commands' signals are scoped to their sandbox — only then does a
// command's end skip the kill of what it left (Exec): a pid namespace, or
// Landlock ABI 6 or newer; an older Landlock is confining but unscoped;
// no backend, or a failed probe, is ErrNoWalls.
func TestProbeResult(t *testing.T) {
	for _, tc := range []struct {
		name, report string
		mode         string
		scoped       bool
		noWalls      bool
	}{
		{"namespaces", `{"mode":"namespaces","layers":[{"name":"landlock","status":"ok","detail":"ABI 3"}]}`, "namespaces", true, false},
		{"landlock ABI 7", `{"mode":"landlock","layers":[{"name":"landlock","status":"ok","detail":"ABI 7"}]}`, "landlock", true, false},
		{"landlock ABI 6", `{"mode":"landlock","layers":[{"name":"landlock","status":"ok","detail":"ABI 6"}]}`, "landlock", true, false},
		{"landlock ABI 5", `{"mode":"landlock","layers":[{"name":"landlock","status":"ok","detail":"ABI 5"}]}`, "landlock", false, false},
		{"landlock, no layer", `{"mode":"landlock","layers":[]}`, "landlock", false, false},
		{"none", `{"mode":"none","layers":[{"name":"landlock","status":"unavailable","detail":"not here"}]}`, "", false, true},
		{"not json", `ABI 7`, "", false, true},
	} {
		mode, scoped, err := probeResult([]byte(tc.report), 0, nil)
		if string(mode) != tc.mode || scoped != tc.scoped || errors.Is(err, ErrNoWalls) != tc.noWalls {
			t.Errorf("%s: mode %q scoped %v err %v; want %q %v no walls %v", tc.name, mode, scoped, err, tc.mode, tc.scoped, tc.noWalls)
		}
	}
	if _, _, err := probeResult(nil, 125, errors.New("exit 125")); !errors.Is(err, ErrNoWalls) {
		t.Errorf("a failed probe: %v, want ErrNoWalls", err)
	}
}
