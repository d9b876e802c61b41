package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestOverlayWorkdir: an overlay workdir reads through to its lower layer,
// sends every write to the upper layer, and never changes the lower.
func TestOverlayWorkdir(t *testing.T) {
	requireLayer(t, "overlayfs")
	base := t.TempDir()
	lower, upper, work, merged := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged")
	for _, d := range []string{upper, work, merged} {
		os.Mkdir(d, 0o755)
	}
	// overlayfs leaves work/work mode 000; the owner may still open it up
	t.Cleanup(func() { os.Chmod(filepath.Join(work, "work"), 0o700) })
	writeFile(t, filepath.Join(lower, "keep"), "base\n")
	writeFile(t, filepath.Join(lower, "gone"), "base\n")
	writeFile(t, filepath.Join(lower, "dir", "f"), "base\n")
	p := shPolicy(sandbox.ModeNamespaces, merged, `cat keep && echo changed > keep && rm gone && rm -r dir && echo new > added && ls`)
	p.Overlay = &sandbox.Overlay{Lower: []string{lower}, Upper: upper, Work: work}
	o := runPolicy(t, p)
	if o.code() != 0 || o.out != "base\nadded\nkeep\n" {
		t.Fatalf("overlay view wrong: code %d %q", o.code(), o.all())
	}
	for f, want := range map[string]string{"keep": "base\n", "gone": "base\n", "dir/f": "base\n"} {
		if got := readFile(t, filepath.Join(lower, f)); got != want {
			t.Errorf("lower %s changed: %q", f, got)
		}
	}
	if readFile(t, filepath.Join(upper, "keep")) != "changed\n" || readFile(t, filepath.Join(upper, "added")) != "new\n" {
		t.Errorf("writes did not land in the upper layer")
	}
	if fi, err := os.Lstat(filepath.Join(upper, "gone")); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("deletion not recorded as a whiteout in the upper layer: %v", err)
	}
	if entries, _ := os.ReadDir(merged); len(entries) != 0 {
		t.Errorf("the host's mount point is not empty: nothing may be mounted on the host")
	}
}

// TestScratch: a scratch path shows its content and takes writes, none of
// which reach the host.
func TestScratch(t *testing.T) {
	requireLayer(t, "overlayfs")
	cache := t.TempDir()
	writeFile(t, filepath.Join(cache, "entry"), "cached\n")
	p := shPolicy(sandbox.ModeNamespaces, t.TempDir(), `cat "$C/entry" && echo poisoned > "$C/entry" && echo new > "$C/new" && cat "$C/entry"`)
	p.Scratch = []string{cache}
	p.SetEnv = []string{"C=" + cache}
	o := runPolicy(t, p)
	if o.code() != 0 || o.out != "cached\npoisoned\n" {
		t.Fatalf("scratch view wrong: %q", o.all())
	}
	if readFile(t, filepath.Join(cache, "entry")) != "cached\n" {
		t.Errorf("LEAK: a scratch write reached the host")
	}
	if _, err := os.Stat(filepath.Join(cache, "new")); err == nil {
		t.Errorf("LEAK: a scratch file was created on the host")
	}
}

// TestScratchLayers: a kept layer receives a run's writes and stays; laid
// read-only under a later run's throwaway layer it is read and never
// changed (the judge's baseline build cache under a patched run).
func TestScratchLayers(t *testing.T) {
	requireLayer(t, "overlayfs")
	cache, keep := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(cache, "entry"), "user\n")
	steps := []struct {
		name, script, want string
		layers             sandbox.ScratchLayers
	}{
		{"kept", `cat "$C/entry" && echo base > "$C/built"`, "user\n", sandbox.ScratchLayers{Keep: keep}},
		{"read-only under a throwaway layer", `cat "$C/built" && echo poisoned > "$C/built" && rm "$C/entry" && cat "$C/built"`, "base\npoisoned\n", sandbox.ScratchLayers{Lower: []string{filepath.Join(keep, "upper")}}},
		{"unchanged", `cat "$C/built" "$C/entry"`, "base\nuser\n", sandbox.ScratchLayers{Lower: []string{filepath.Join(keep, "upper")}}},
	}
	for _, s := range steps {
		p := shPolicy(sandbox.ModeNamespaces, t.TempDir(), s.script)
		p.Scratch = []string{cache}
		p.ScratchLayers = map[string]sandbox.ScratchLayers{cache: s.layers}
		p.SetEnv = []string{"C=" + cache}
		if o := runPolicy(t, p); o.code() != 0 || o.out != s.want {
			t.Fatalf("%s: got %q, want %q", s.name, o.all(), s.want)
		}
	}
	if readFile(t, filepath.Join(keep, "upper", "built")) != "base\n" {
		t.Errorf("LEAK: a later run changed the kept layer")
	}
	if readFile(t, filepath.Join(cache, "entry")) != "user\n" {
		t.Errorf("LEAK: a scratch write reached the host's folder")
	}
}

// TestScratchLayersRefused: layers only for a Scratch path.
func TestScratchLayersRefused(t *testing.T) {
	p := shPolicy(sandbox.ModeNamespaces, t.TempDir(), "true")
	p.ScratchLayers = map[string]sandbox.ScratchLayers{t.TempDir(): {}}
	if _, err := sandbox.Run(context.Background(), p, sandbox.Stdio{}); !errors.Is(err, sandbox.ErrInvalidPolicy) {
		t.Fatalf("layers for a path that is not Scratch: %v, want ErrInvalidPolicy", err)
	}
}
