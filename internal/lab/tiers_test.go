package lab

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// docTags reads the "Policies" table of docs/SECURITY.md.
func docTags(t *testing.T) []TierTag {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "docs", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []TierTag
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Policies")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		if len(cells) != 6 {
			t.Fatalf("SECURITY.md policies row has %d cells: %s", len(cells), line)
		}
		noCg := cells[3]
		if noCg == "—" {
			noCg = ""
		}
		out = append(out, TierTag{Setting: cells[0], Namespaces: cells[1], Landlock: cells[2], NoCgroup: noCg, Seatbelt: cells[4], Test: cells[5]})
	}
	if len(out) == 0 {
		t.Fatal(`docs/SECURITY.md has no "## Policies" table`)
	}
	return out
}

// TestTiersMatchSecurityDoc: the tags in code and the table in
// docs/SECURITY.md say the same, row by row, and every test they name
// exists.
func TestTiersMatchSecurityDoc(t *testing.T) {
	t.Parallel()
	doc := docTags(t)
	key := func(g TierTag) TierTag { g.Note = ""; return g }
	inDoc := map[string]TierTag{}
	for _, d := range doc {
		inDoc[d.Setting] = d
	}
	for _, c := range Tags {
		d, ok := inDoc[c.Setting]
		switch {
		case !ok:
			t.Errorf("%s: tagged in code, missing from docs/SECURITY.md", c.Setting)
		case key(c) != d:
			t.Errorf("%s drifted:\n code %+v\n doc  %+v", c.Setting, key(c), d)
		}
		delete(inDoc, c.Setting)
	}
	for s := range inDoc {
		t.Errorf("%s: in docs/SECURITY.md, not tagged in code", s)
	}
	valid := map[string]bool{TierKernel: true, TierForkbomb: true, TierRequested: true, TierNone: true}
	for _, c := range Tags {
		tiers := []string{c.Namespaces, c.Landlock, c.Seatbelt}
		if c.NoCgroup != "" {
			tiers = append(tiers, strings.Split(c.NoCgroup, "/")...)
		}
		for _, tr := range tiers {
			if !valid[tr] {
				t.Errorf("%s: tier %q is not kernel, forkbomb, requested or none", c.Setting, tr)
			}
		}
	}
	tests := testFuncs(t)
	for _, c := range Tags {
		if c.Test != "—" && !tests[c.Test] {
			t.Errorf("%s: test %s does not exist", c.Setting, c.Test)
		}
	}
}

// testFuncs lists every func TestX in the repository's Go files.
func testFuncs(t *testing.T) map[string]bool {
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	out := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShow: every setting is shown, with the tier of the machine given.
func TestShow(t *testing.T) {
	t.Parallel()
	deny := &Policy{DeniedPrograms: []string{"/usr/bin/curl"}}
	for _, tc := range []struct {
		name    string
		p       *Policy
		m       Machine
		setting string
		tier    string
		note    string
	}{
		{"git under namespaces", &Policy{}, Machine{Backend: sandbox.ModeNamespaces, Cgroup: true}, ".git read-only", TierKernel, ""},
		{"git under landlock", &Policy{}, Machine{Backend: sandbox.ModeLandlock, Cgroup: true}, ".git read-only", TierNone, ""},
		{"pids without cgroup, landlock", &Policy{Pids: 9}, Machine{Backend: sandbox.ModeLandlock}, "pids", TierNone, ""},
		{"pids without cgroup, namespaces", &Policy{Pids: 9}, Machine{Backend: sandbox.ModeNamespaces}, "pids", TierKernel, ""},
		{"allow-list on landlock", &Policy{Network: "allow:example.com"}, Machine{Backend: sandbox.ModeLandlock}, "network", TierNone, ""},
		{"deny-list only", deny, Machine{Backend: sandbox.ModeNamespaces}, "denied_programs", TierKernel, "a copy of a denied program made inside the fork runs"},
		{"no backend", &Policy{}, Machine{Backend: sandbox.ModeNone}, "writable", TierNone, ""},
		{"git under seatbelt", &Policy{}, Machine{Backend: sandbox.ModeSeatbelt}, ".git read-only", TierKernel, ""},
		{"memory under seatbelt", &Policy{Memory: "1G"}, Machine{Backend: sandbox.ModeSeatbelt}, "memory", TierNone, ""},
		{"allow-list under seatbelt", &Policy{Network: "allow:example.com"}, Machine{Backend: sandbox.ModeSeatbelt}, "network", TierKernel, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Show(tc.p, tc.m)
			if len(rows) != len(PolicyFields)+1 {
				t.Fatalf("%d rows for %d settings and .git", len(rows), len(PolicyFields))
			}
			for _, r := range rows {
				if r.Setting == tc.setting {
					if r.Tier != tc.tier || !strings.Contains(r.Note, tc.note) {
						t.Fatalf("%s: tier %q note %q, want %q and %q", r.Setting, r.Tier, r.Note, tc.tier, tc.note)
					}
					return
				}
			}
			t.Fatalf("no row %s", tc.setting)
		})
	}
}
