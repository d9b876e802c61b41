#!/bin/sh
# Parallel bisect against `git bisect run`, in the same run, on the same
# generated range: N commits (default 600), a test that takes SLEEP seconds
# (default 2) and turns bad at a commit chosen at random, forkbomb with
# --forks K (default 4). Prints both wall times, their ratio and whether
# both named the same commit. Needs go and git; installs nothing; removes
# what it made when it exits. Not part of the test run (scripts/test).
# BEFORE=M (default 0) puts M commits before good, each rewriting one of
# 2,000 files in 40 folders: the long history a real range sits on (the
# snapshot copies the range's history only; git bisect run's clone is made
# before its timing starts).
#
#   bench/bisect.sh            # N=600 SLEEP=2 K=4
#   N=1000 K=8 bench/bisect.sh
#   N=300 SLEEP=0 BEFORE=20000 bench/bisect.sh
set -eu
N=${N:-600}
BEFORE=${BEFORE:-0}
SLEEP=${SLEEP:-2}
K=${K:-4}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || { chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"; }' EXIT
export FORKBOMB_HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C

echo "building forkbomb" >&2
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/...)  # forkbomb and forkbomb-full
"$root/scripts/hugebin" "$tmp"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)

T=$(( $(od -An -N2 -tu2 /dev/urandom) % (N - 2) + 2 ))
echo "generating $BEFORE commits, then $N; the test turns bad at commit $T of the $N" >&2
repo="$tmp/repo"
git init -q -b main "$repo"
{
	pad=$(printf '%02040d' 0)
	i=0
	while [ "$i" -lt "$BEFORE" ]; do
		printf 'commit refs/heads/main\ncommitter b <b@localhost> %d +0000\ndata <<E\nhistory %d\nE\n' $((900000000 + i)) "$i"
		printf 'M 644 inline hist/d%d/f%d\ndata <<E\n%d %s\nE\n\n' $((i % 40)) $((i % 2000)) "$i" "$pad"
		i=$((i + 1))
	done
	i=0
	while [ "$i" -le "$N" ]; do
		printf 'commit refs/heads/main\ncommitter b <b@localhost> %d +0000\ndata <<E\ncommit %d\nE\n' $((1000000000 + i)) "$i"
		[ "$i" -gt 0 ] || true
		printf 'M 644 inline v\ndata <<E\n%d\nE\n' "$i"
		printf 'M 644 inline pad/%d\ndata <<E\nfile %d\nE\n\n' $((i % 50)) "$i"
		i=$((i + 1))
	done
} | git -C "$repo" fast-import --quiet
git -C "$repo" reset -q --hard
good=$(git -C "$repo" log --format=%H -1 --grep='^commit 0$' main)
test="sleep $SLEEP; [ \"\$(cat v)\" -lt $T ]"
want=$(git -C "$repo" log --format=%H -1 --grep="^commit $T\$" main)

clone="$tmp/clone"
git clone -q "$repo" "$clone"
s=$(date +%s.%N)
(cd "$clone" && git bisect start main "$good" >/dev/null && git bisect run sh -c "$test" >"$tmp/git.out" 2>&1) || true
e=$(date +%s.%N)
gitT=$(echo "$e - $s" | bc)
gitAns=$(sed -n 's/^\([0-9a-f]\{40\}\) is the first bad commit.*/\1/p' "$tmp/git.out" | head -1)
gitSteps=$(grep -c '^running' "$tmp/git.out" || true)

s=$(date +%s.%N)
"$tmp/forkbomb" bisect --repo "$repo" --good "$good" --bad main --test "$test" --forks "$K" --json >"$tmp/fb.json" 2>"$tmp/fb.err"
e=$(date +%s.%N)
fbT=$(echo "$e - $s" | bc)
fbAns=$(sed -n 's/^  "first_bad": "\([0-9a-f]*\)".*/\1/p' "$tmp/fb.json")
fbRounds=$(sed -n 's/^  "rounds": \([0-9]*\).*/\1/p' "$tmp/fb.json")

same=no
[ "$gitAns" = "$fbAns" ] && [ "$fbAns" = "$want" ] && same=yes
printf '%-22s %8s %8s\n' "" "seconds" "steps"
printf '%-22s %8.1f %8s\n' "git bisect run" "$gitT" "$gitSteps"
printf '%-22s %8.1f %8s\n' "forkbomb bisect K=$K" "$fbT" "$fbRounds"
printf 'ratio git/forkbomb: %.2fx; same first bad commit: %s (N=%d, test %ss, %d commits before good)\n' "$(echo "$gitT / $fbT" | bc -l)" "$same" "$N" "$SLEEP" "$BEFORE"
[ "$same" = yes ]
