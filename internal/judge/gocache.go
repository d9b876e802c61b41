package judge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Why the judge keeps a build cache, and why it is safe.
//
// Go's build cache keys a package's compiled output on, among its inputs,
// the package's folder (unless -trimpath). Every judged copy used to sit
// at a path of its own, over a throwaway layer on the user's GOCACHE, so a
// patched run recompiled everything the baseline had just compiled. Now:
//
//   - every judged copy of one base is seen at one path (judgedAt: the
//     repository's own): the fork's tree is mounted there inside its own
//     sandbox, so many copies share the path at once without seeing each
//     other;
//   - the baseline run's writes to GOCACHE are kept (keptGoCache), and
//     each patched run sees them as a read-only layer between the user's
//     GOCACHE and its own throwaway layer.
//
// The cache-poisoning defence stays: what a patched run writes goes to
// its throwaway layer and is gone when it ends, so no fork writes what a
// later judge reads. The kept layer is written only by the baseline — the
// base's own code, which every patched run runs anyway — and it is kept
// in the judge's cache folder, hidden from forks and from judged runs
// except through that read-only layer. Test results are never replayed
// from it: every judged run has -count=1.

// Slots bound how many judged test runs go at once. One Slots shared by
// every Judger of a process caps them machine-wide.
type Slots struct{ c chan struct{} }

// NewSlots makes room for n judged runs at once (n <= 0: the number of
// cores).
func NewSlots(n int) *Slots {
	return &Slots{c: make(chan struct{}, parallelism(n))}
}

func (s *Slots) acquire(ctx context.Context) (release func(), err error) {
	select {
	case s.c <- struct{}{}:
		return func() { <-s.c }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// judgedAt is the folder every judged copy of the base is seen at, inside
// its sandbox: the repository's own (top), so the code under test finds
// itself where the user's own run of the tests finds it — a fix gated on
// its working directory holds, or fails, in both alike. A folder of the
// judge's own instead (judgedPath) where the sandbox cannot work at top (a
// home folder, say) or where a folder the run is shown lies inside it (the
// Go caches, the judge's cache, the temp folder, a toolchain; a --hidden
// folder there is copied out first, stageHidden): mounted under the copy,
// it would become part of the tree tested.
func judgedAt(o Options, top, pid1 string) string {
	// a system folder (an etckeeper repository at /etc): mounted there, the
	// copy would stand in for the sandbox's own
	if sandbox.CheckWorkdir(top) != nil || sandbox.CheckHide(top) != nil {
		return judgedPath(o.CacheDir, pid1)
	}
	shown := slices.Concat(o.Hidden, o.goEnv, o.hidePaths(), []string{os.TempDir()})
	if home, err := os.UserHomeDir(); err == nil {
		for _, t := range sandbox.ToolchainDirs { // Policy.Toolchains, links followed
			shown = append(shown, filepath.Join(home, t))
		}
	}
	for _, p := range shown {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			p = c
		}
		if within(p, top) {
			return judgedPath(o.CacheDir, pid1)
		}
	}
	return top
}

// stageHidden copies each --hidden folder that lies inside the repository
// (top) to a folder of the judge's own (judgeTemp), and returns the
// folders to use: shown at its own path, such a folder would lie inside the
// judged copy, which is mounted at the repository's (judgedAt). A copy
// holds the same files, so the baseline's key (hiddenHash) is the same.
// unstage removes the copies. A folder that cannot be copied is used as it
// is (judgedAt then falls back to the judge's folder).
func stageHidden(ctx context.Context, cacheDir string, hidden []string, top string) (_ []string, unstage func()) {
	out := slices.Clone(hidden)
	dir := ""
	unstage = func() {
		if dir != "" {
			sandbox.RemoveAll(dir)
		}
	}
	for i, h := range hidden {
		if !within(h, top) || h == top {
			continue // the repository itself is not copied: judgedAt falls back
		}
		if dir == "" {
			d, err := judgeTemp(cacheDir, "hidden")
			if err != nil {
				return out, unstage
			}
			dir = d
		}
		dst := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(dst, 0o755); err != nil {
			continue
		}
		if err := exec.CommandContext(ctx, "cp", "-a", "--", h+"/.", dst).Run(); err != nil {
			sandbox.RemoveAll(dst)
			continue
		}
		out[i] = dst
	}
	return out, unstage
}

// judgeTemp makes a folder for a judged run's own files (the patch, the
// Go -exec wrapper, the staged --hidden folders) in the judge's cache
// folder, which every fork's sandbox hides: a race's agents must read
// neither another fork's judged set-up (its sentinels' plan) nor the hidden
// tests, wherever TMPDIR is (a folder outside /tmp is masked in no
// sandbox). Named as sandbox.MkdirTemp names its folders, so that a killed
// forkbomb's are swept at the next judge's start (sandbox.ReclaimStaleIn).
// Without a cache folder, a temp folder.
func judgeTemp(cacheDir, kind string) (string, error) {
	if cacheDir == "" {
		return sandbox.MkdirTemp(kind)
	}
	parent := filepath.Join(cacheDir, tempDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	return sandbox.MkdirTempIn(parent, kind)
}

// tempDir is judgeTemp's folder in the judge's cache folder.
const tempDir = "tmp"

// judgedPATH is the PATH of a judged run: the caller's without the entries
// that name the judged copy — inside the folder it is seen at, or relative
// (resolved from the working directory, the copy) — where a patch could
// put a go, a python or a cat of its own before the real one.
func judgedPATH(path, at string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		c := filepath.Clean(d)
		if r, err := filepath.EvalSymlinks(c); err == nil {
			c = r
		}
		if at != "" && (within(filepath.Clean(d), at) || within(c, at)) {
			continue
		}
		keep = append(keep, d)
	}
	if len(keep) == 0 {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// within says whether path is dir or lies below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// judgedPath is a folder of the judge's own that every judged copy of the
// pid 1 is mounted at, inside its sandbox (see judgedAt); it stays empty on
// the host. "" (no cache folder): each copy is seen at its own path.
func judgedPath(cacheDir, pid1 string) string {
	if cacheDir == "" {
		return ""
	}
	dir := judgedDir(cacheDir, pid1)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return dir
}

// goCaches returns the user's Go build and module caches, if any.
func goCaches() []string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	out, err := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 2 {
		return nil
	}
	return f
}

// addGoCaches makes the Go module cache readable and the build cache
// usable through a throwaway layer, so a judge run neither rebuilds the
// standard library nor leaves anything in the user's cache. Under that
// layer lie the warmed cache (o.goWarm) and the baseline's (o.goLayer),
// read-only; in the baseline and warming runs, the folder keeping the
// run's writes (o.goKeep) takes the throwaway layer's place.
func addGoCaches(p *sandbox.Policy, o Options) {
	caches := o.goEnv
	if len(caches) != 2 {
		return
	}
	if fi, err := os.Stat(caches[0]); err == nil && fi.IsDir() {
		p.Scratch = append(p.Scratch, caches[0])
		p.SetEnv = append(p.SetEnv, "GOCACHE="+caches[0])
		var l sandbox.ScratchLayers
		for _, low := range []string{o.goWarm, o.goLayer} { // topmost first
			if low != "" {
				l.Lower = append(l.Lower, low)
			}
		}
		l.Keep = o.goKeep
		if l.Keep != "" || len(l.Lower) > 0 {
			p.ScratchLayers = map[string]sandbox.ScratchLayers{caches[0]: l}
		}
	}
	if fi, err := os.Stat(caches[1]); err == nil && fi.IsDir() {
		p.ReadOnly = append(p.ReadOnly, caches[1])
		p.SetEnv = append(p.SetEnv, "GOMODCACHE="+caches[1])
	}
}

// keptGoCache is the baseline's Go build cache layer of one base, command
// and hidden tests, in the judge's cache folder: made in a temporary
// folder and renamed into place once the baseline ran to its end, so a
// concurrent judge of the same base, or one killed half-way, never sees a
// partial layer. A nil *keptGoCache keeps nothing.
type keptGoCache struct{ final, tmp string }

func newKeptGoCache(o Options, pid1, key string) *keptGoCache {
	if len(o.goEnv) != 2 || o.at == "" || o.CacheDir == "" {
		return nil
	}
	if fi, err := os.Stat(o.goEnv[0]); err != nil || !fi.IsDir() {
		return nil
	}
	return &keptGoCache{final: filepath.Join(baseDir(o.CacheDir, pid1), "gocache-"+hashOf(key, o.goEnv[0], o.at)[:32])}
}

// layer is the kept layer, or "" when there is none (yet).
func (k *keptGoCache) layer() string {
	if k == nil {
		return ""
	}
	up := filepath.Join(k.final, "upper")
	if fi, err := os.Lstat(up); err == nil && fi.IsDir() {
		return up
	}
	return ""
}

// begin makes the folder the baseline run keeps its writes in.
func (k *keptGoCache) begin() (string, error) {
	if k == nil {
		return "", nil
	}
	if err := os.MkdirAll(filepath.Dir(k.final), 0o700); err != nil {
		return "", nil // no kept layer: slower, not wrong
	}
	tmp, err := os.MkdirTemp(filepath.Dir(k.final), "gocache-*.tmp")
	if err != nil {
		return "", nil
	}
	k.tmp = tmp
	return tmp, nil
}

// commit puts the kept layer in place and returns it.
func (k *keptGoCache) commit() string {
	if k == nil || k.tmp == "" {
		return ""
	}
	// overlayfs's work folder is of no use once unmounted (and holds a
	// folder of mode 0).
	sandbox.RemoveAll(filepath.Join(k.tmp, "work"))
	if entries, err := os.ReadDir(filepath.Join(k.tmp, "upper")); err != nil || len(entries) == 0 {
		// Nothing built (not a Go suite): no layer to lay under the
		// patched runs.
		k.abandon()
		return ""
	}
	if os.Rename(k.tmp, k.final) == nil {
		k.tmp = ""
	}
	return k.layer()
}

// abandon removes a layer that was not committed (a failed baseline, or
// another judge's committed first).
func (k *keptGoCache) abandon() {
	if k != nil && k.tmp != "" {
		sandbox.RemoveAll(k.tmp)
		k.tmp = ""
	}
}
