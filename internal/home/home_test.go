package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayout pins every path of the layout, from $FORKBOMB_HOME and from
// the user's home, so that moving one is a decision, not an accident.
func TestLayout(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == EnvVar {
				return v
			}
			return ""
		}
	}
	user := func(h string, err error) func() (string, error) { return func() (string, error) { return h, err } }
	for _, tc := range []struct {
		name    string
		getenv  func(string) string
		user    func() (string, error)
		root    string
		wantErr error
	}{
		{"FORKBOMB_HOME", env("/srv/fb"), user("/home/u", nil), "/srv/fb", nil},
		{"FORKBOMB_HOME wins over home", env("/srv/fb/"), user("", errors.New("no home")), "/srv/fb", nil},
		{"default under home", env(""), user("/home/u", nil), "/home/u/.forkbomb", nil},
		{"no home at all", env(""), user("", errors.New("$HOME is not defined")), "", ErrNoHome},
		{"empty home", env(""), user("", nil), "", ErrNoHome},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := FromEnv(tc.getenv, tc.user)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for got, want := range map[string]string{
				l.Root:         tc.root,
				l.Workspaces(): tc.root + "/workspaces",
				l.Runs():       tc.root + "/runs",
				l.Judge():      tc.root + "/judge",
				l.Worlds():     tc.root + "/worlds",
				l.Lab():        tc.root + "/lab",
				l.Canary():     tc.root + "/canary.json",
			} {
				if got != want {
					t.Errorf("got %s, want %s", got, want)
				}
			}
			if d, err := l.Run("20260101-000000-abcdef"); err != nil || d != tc.root+"/runs/20260101-000000-abcdef" {
				t.Errorf("Run = %s, %v", d, err)
			}
		})
	}
}

// TestValidateID is the choke point: only [A-Za-z0-9_-] of 1 to 64, never
// a leading '-', so that no id climbs out of its folder or reads as a flag.
func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"20260101-000000-abcdef", true},
		{"run-x_Y9-f0", true},
		{"a", true},
		{"_", true},
		{strings.Repeat("x", MaxIDLen), true},
		{"", false},
		{strings.Repeat("x", MaxIDLen+1), false},
		{"-rf", false},
		{"..", false},
		{".", false},
		{"../etc", false},
		{"a/b", false},
		{"/abs", false},
		{".hidden", false},
		{"a b", false},
		{"a\x00b", false},
		{"a\\b", false},
		{"é", false},
		{"a.b", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			err := ValidateID("run", tc.id)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
			}
			if err == nil {
				return
			}
			var ie *IDError
			if !errors.Is(err, ErrBadID) || !errors.As(err, &ie) || ie.Kind != "run" || ie.ID != tc.id {
				t.Errorf("error %v is not an IDError of kind run for %q", err, tc.id)
			}
			if _, err := Join("/runs", "run", tc.id); err == nil {
				t.Errorf("Join accepted %q", tc.id)
			}
		})
	}
}

// TestCheckOutside refuses a state folder inside the repository, also
// through a symlink and before the folder exists, and accepts a sibling
// whose name only starts like the repository's.
func TestCheckOutside(t *testing.T) {
	t.Parallel()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(tmp, "repo")
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	os.Symlink(filepath.Join(repo, "sub"), filepath.Join(tmp, "link"))
	for _, tc := range []struct {
		dir    string
		inside bool
	}{
		{repo, true},
		{filepath.Join(repo, "runs"), true},
		{filepath.Join(repo, "sub", "not", "yet"), true},
		{filepath.Join(tmp, "link", "runs"), true},
		{filepath.Join(tmp, "repo2", "runs"), false},
		{filepath.Join(tmp, "runs"), false},
		{tmp, false},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			err := CheckOutside("the runs directory", tc.dir, repo)
			if inside := errors.Is(err, ErrInRepo); inside != tc.inside {
				t.Fatalf("CheckOutside(%s) = %v, want inside=%v", tc.dir, err, tc.inside)
			}
		})
	}
}
