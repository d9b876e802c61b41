package run

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestPatchMutantsApply: every mutant of a patch's added lines, written
// into the patch, is a patch git applies to the base, and gives the
// patched file with that mutation made — statements removed across lines
// and a file without a final newline included; lines the patch did not
// add are never mutated.
func TestPatchMutantsApply(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"calc.go": "package calc\n\nfunc Keep(a int) int { return a * 2 }\n\nfunc Sum(xs []int) int {\n\treturn 0\n}\n",
		"py/m.py": "def keep(a):\n    return a * 2\n\ndef sign(x):\n    return 0",
	}
	fixed := map[string]string{
		"calc.go": "package calc\n\nfunc Keep(a int) int { return a * 2 }\n\nfunc Sum(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt = add(t,\n\t\t\tx)\n\t}\n\treturn t\n}\n\nfunc add(a, b int) int { return a + b }\n",
		"py/m.py": "def keep(a):\n    return a * 2\n\ndef sign(x):\n    if x < 0:\n        return -1\n    return 1 if x > 0 else 0",
	}
	dir := t.TempDir()
	write := func(files map[string]string) {
		for p, c := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(base)
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	write(fixed)
	patch, err := exec.Command("git", "-C", dir, "diff", "--no-color", "--no-ext-diff").Output()
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "checkout", "-q", ".")

	lines := bytes.SplitAfter(patch, []byte("\n"))
	files := patchFiles(lines)
	if len(files) != 2 {
		t.Fatalf("%d files in the patch, want 2", len(files))
	}
	ops := map[string]bool{}
	for _, f := range files {
		src := []byte(fixed[f.path])
		ms, err := mutant.Generate(f.path, src)
		if err != nil {
			t.Fatal(err)
		}
		rewritten := 0
		for _, m := range ms {
			p, ok := f.rewrite(lines, src, m)
			if !ok {
				if _, added := f.added[m.Line]; added && m.EndLine == m.Line {
					t.Errorf("%s: a one-line mutant of an added line was not written", m.ID)
				}
				continue
			}
			if m.Line < 5 {
				t.Errorf("%s: a line the patch did not add was mutated", m.ID)
			}
			rewritten++
			ops[m.Operator] = true
			cmd := exec.Command("git", "-C", dir, "apply", "-")
			cmd.Stdin = bytes.NewReader(p)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: git apply: %v\n%s\n%s", m.ID, err, out, p)
			}
			got, _ := os.ReadFile(filepath.Join(dir, f.path))
			if want := m.Apply(src); !bytes.Equal(got, want) {
				t.Errorf("%s: applied\n%s\nwant\n%s", m.ID, got, want)
			}
			testutil.Git(t, dir, "checkout", "-q", ".")
		}
		if rewritten == 0 {
			t.Errorf("%s: no mutant written", f.path)
		}
	}
	if !ops["REMOVE_STATEMENT"] {
		t.Errorf("operators %v: want a statement removed across lines", ops)
	}
}

// TestSample spreads a budget evenly over the mutants, in order.
func TestSample(t *testing.T) {
	t.Parallel()
	ms := make([]patchMutant, 10)
	for i := range ms {
		ms[i].m.Line = i
	}
	got := sample(ms, 4)
	var lines []int
	for _, m := range got {
		lines = append(lines, m.m.Line)
	}
	if len(lines) != 4 || lines[0] != 0 || lines[1] != 2 || lines[2] != 5 || lines[3] != 7 {
		t.Errorf("sampled lines %v, want [0 2 5 7]", lines)
	}
	if len(sample(ms, 0)) != 10 || len(sample(ms[:3], 8)) != 3 {
		t.Error("no budget, or one above the count, keeps all")
	}
}

// TestHeld: the judged runs the cores hold at once follow from the
// fork's own run — its wall time over the cores it kept busy — never
// under one nor over one per core; unknown CPU time holds one per core.
func TestHeld(t *testing.T) {
	t.Parallel()
	cores := runtime.NumCPU()
	for _, c := range []struct {
		test, cpu int64
		want      int
	}{
		{1000, 0, cores},               // unknown
		{1000, 1000, cores},            // one core busy: as many as there are cores
		{1000, 1000 * int64(cores), 1}, // every core busy
		{1000, 5000 * int64(cores), 1}, // never under one
		{1000, 10, cores},              // never over one per core
		{1000, 2000, max(cores/2, 1)},  // two cores busy
	} {
		if got := held(judge.Timings{Test: c.test, TestCPU: c.cpu}); got != c.want {
			t.Errorf("held(test %d ms, cpu %d ms) on %d cores = %d, want %d", c.test, c.cpu, cores, got, c.want)
		}
	}
	if (Options{}).verifyWorkers(1) != 1 || (Options{VerifyTime: time.Minute}).verifyWorkers(1) != cores || (Options{MinStrength: 0.5}).verifyWorkers(1) != cores {
		t.Errorf("verifyWorkers: the default cap gets what the cores hold, --verify-time and a gate one per core")
	}
}

// TestWithinWorkers: within runs at most w calls at once — one at a time
// with one worker, the calls in order — and w at once when it may.
func TestWithinWorkers(t *testing.T) {
	t.Parallel()
	for _, w := range []int{1, 2} {
		var mu sync.Mutex
		now, most := 0, 0
		var order []int
		started := within(context.Background(), 4, time.Millisecond, 0, time.Now(), true, w, func(i int) {
			mu.Lock()
			now++
			most = max(most, now)
			order = append(order, i)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond) // long enough for a second worker to start meanwhile
			mu.Lock()
			now--
			mu.Unlock()
		})
		if most > w || (w == 1 && !slices.Equal(order, []int{0, 1, 2, 3})) || !slices.Equal(started, []bool{true, true, true, true}) {
			t.Errorf("w=%d: at most %d at once (order %v, started %v)", w, most, order, started)
		}
		if w == 2 && most != 2 {
			t.Logf("w=2: the calls never overlapped (a loaded machine?): at most %d at once", most)
		}
	}
}
