#!/bin/sh
# The verifier's cost: the same race — one fork, the command engine
# writing a fix, judged by `go test ./...` — with --verify off and --verify
# auto, interleaved, N times each. Prints the median wall time of each,
# the median judged run of the fork's patch (its verdict's timings), and
# the verifier's added time as a multiple of that judged run (the issue's
# bound: at most 1x with the default budget). Needs go and git. Not part
# of scripts/test.
#
#   bench/verify.sh        # N=7
#   N=15 bench/verify.sh
set -eu
N=${N:-${1:-7}}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || { chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"; }' EXIT
export FORKBOMB_HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/...)
"$root/scripts/hugebin" "$tmp"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)

# A package whose fix adds eight mutable lines, tested by a suite that
# pins them: every mutant is worth a run.
repo=$tmp/repo
mkdir -p "$repo"
cat >"$repo/go.mod" <<'GO'
module bench

go 1.22
GO
cat >"$repo/grade.go" <<'GO'
package bench

// Grade names a score's band.
func Grade(score int) string {
	return "F"
}
GO
cat >"$repo/fixed.txt" <<'GO'
package bench

// Grade names a score's band.
func Grade(score int) string {
	if score >= 90 {
		return "A"
	}
	if score >= 70 && score < 90 {
		return "B"
	}
	if score >= 50 {
		return "C"
	}
	return "F"
}
GO
cat >"$repo/grade_test.go" <<'GO'
package bench

import "testing"

func TestGrade(t *testing.T) {
	for s, want := range map[int]string{0: "F", 49: "F", 50: "C", 69: "C", 70: "B", 89: "B", 90: "A", 100: "A"} {
		if got := Grade(s); got != want {
			t.Errorf("Grade(%d) = %q, want %q", s, got, want)
		}
	}
}
GO
git -C "$repo" init -q && git -C "$repo" add -A && git -C "$repo" -c user.name=b -c user.email=b@l commit -qm base

race() { # $1: off or auto; prints "wall judged_ms"
	s=$(date +%s.%N)
	"$tmp/forkbomb" run --repo "$repo" --forks 1 --engine command --agent 'cp fixed.txt grade.go' \
		--test 'go test ./...' --verify "$1" --json x >"$tmp/out.json" 2>/dev/null
	e=$(date +%s.%N)
	id=$(sed -n 's/^  "id": "\(.*\)",$/\1/p' "$tmp/out.json")
	ms=$(sed -n 's/^    "total": \([0-9]*\)$/\1/p' "$FORKBOMB_HOME/runs/$id/forks/0/verdict.json")
	caught=$(sed -n 's/^        "caught": \([0-9]*\),$/\1/p' "$tmp/out.json")
	judged=$(sed -n 's/^        "judged": \([0-9]*\),$/\1/p' "$tmp/out.json")
	echo "$(echo "$e - $s" | bc) $ms ${caught:--}/${judged:--}"
}
race off >/dev/null # warm the judge's baseline cache and Go's build cache
for i in $(seq "$N"); do
	echo "off $(race off)"
	echo "auto $(race auto)"
done >"$tmp/times"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
off=$(awk '$1=="off"{print $2}' "$tmp/times" | median)
auto=$(awk '$1=="auto"{print $2}' "$tmp/times" | median)
judged=$(awk '{print $3/1000}' "$tmp/times" | median)
echo "race, --verify off:  median ${off}s (N=$N)"
echo "race, --verify auto: median ${auto}s; mutants caught/judged per race: $(awk '$1=="auto"{print $4}' "$tmp/times" | tr '\n' ' ')"
echo "one judged run of the fork's patch: median ${judged}s"
echo "verifier added: $(echo "scale=2; ($auto - $off) / $judged" | bc)x one judged run ($(nproc) cores)"
