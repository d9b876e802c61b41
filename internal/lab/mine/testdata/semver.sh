#!/bin/sh
# Builds semver.bundle, the history task mine is tested on: a small Go
# library whose commits are each one case of what mining keeps or skips.
# Run from this folder: sh semver.sh
set -eu
out=$(pwd)/semver.bundle
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
git init -q -b main .
export GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z
commit() { git add -A && git commit -qm "$1"; }

printf 'module example.com/semver\n\ngo 1.22\n' > go.mod
cat > version.go <<'GO'
// Package semver reads versions of the form MAJOR.MINOR.PATCH.
package semver

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed version.
type Version struct{ Major, Minor, Patch int }

// Parse reads "1.2.3".
func Parse(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("semver: %q: want three parts", s)
	}
	var n [3]int
	for i, p := range parts {
		n[i], _ = strconv.Atoi(p)
	}
	return Version{n[0], n[1], n[2]}, nil
}
GO
cat > version_test.go <<'GO'
package semver

import "testing"

func TestParse(t *testing.T) {
	v, err := Parse("1.2.3")
	if err != nil || v != (Version{1, 2, 3}) {
		t.Fatalf("Parse: %v, %v", v, err)
	}
}
GO
commit "Parse versions"

cat >> version.go <<'GO'

// Compare is -1, 0 or 1 as a is older than, the same as or newer than b.
func Compare(a, b Version) int {
	for _, d := range []int{a.Major - b.Major, a.Minor - b.Minor, a.Patch - b.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}
GO
cat > compare_test.go <<'GO'
package semver

import "testing"

func TestCompare(t *testing.T) {
	if Compare(Version{1, 2, 3}, Version{1, 10, 0}) != -1 || Compare(Version{2, 0, 0}, Version{1, 9, 9}) != 1 {
		t.Fatal("Compare orders by major, minor, patch")
	}
}
GO
commit "Add Compare

Versions must be ordered by major, then minor, then patch, as numbers."

printf '# semver\n\nParse and compare versions.\n' > README.md
sed -i 's|// Parse reads "1.2.3".|// Parse reads "1.2.3"; see README.md.|' version.go
commit "Document the package"

cat >> version_test.go <<'GO'

func TestParseWrongParts(t *testing.T) {
	if _, err := Parse("1.2"); err == nil {
		t.Fatal("two parts accepted")
	}
}
GO
commit "Test Parse with two parts"


git checkout -q -b vprefix
sed -i 's|	parts := strings.Split(s, ".")|	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")|' version.go
cat > prefix_test.go <<'GO'
package semver

import "testing"

func TestParseV(t *testing.T) {
	if v, err := Parse("v1.2.3"); err != nil || v != (Version{1, 2, 3}) {
		t.Fatalf("Parse v1.2.3: %v, %v", v, err)
	}
}
GO
commit "Accept a leading v"
git checkout -q main
git merge -q --no-ff -m "Merge branch vprefix" vprefix

cat > version.go.new <<'GO'
// Package semver reads versions of the form MAJOR.MINOR.PATCH.
package semver

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed version.
type Version struct{ Major, Minor, Patch int }

// Parse reads "1.2.3"; see README.md.
func Parse(s string) (Version, error) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("semver: %q: want three parts", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("semver: %q: part %d is not a number", s, i+1)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}
GO
# keep what follows Parse (Compare)
sed -n '/^\/\/ Compare/,$p' version.go > rest.go
{ cat version.go.new; echo; cat rest.go; } > version.go
rm version.go.new rest.go
cat >> version_test.go <<'GO'

func TestParseNotANumber(t *testing.T) {
	if _, err := Parse("1.x.3"); err == nil {
		t.Fatal("1.x.3 parsed")
	}
}
GO
commit "Parse refuses parts that are not numbers

Parse read 1.x.3 as 1.0.3: strconv.Atoi's error was dropped."

cat > latest.go <<'GO'
package semver

import (
	"io"
	"net/http"
	"strings"
)

// Latest fetches the newest version from a release feed.
func Latest(url string) (Version, error) {
	resp, err := http.Get(url)
	if err != nil {
		return Version{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Version{}, err
	}
	return Parse(strings.TrimSpace(string(b)))
}
GO
cat > latest_test.go <<'GO'
package semver

import "testing"

func TestLatest(t *testing.T) {
	if _, err := Latest("http://releases.example.com/semver/latest"); err != nil {
		t.Fatal(err)
	}
}
GO
commit "Fetch the latest release"

git bundle create -q "$out" main
