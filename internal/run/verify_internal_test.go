package run

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
