#!/bin/sh
# A race's set-up on a repository with a long history: N commits (default
# 20,000, each rewriting one of 2,000 files in 40 folders). Three races of
# 4 forks, one after another, from an empty $FORKBOMB_HOME: at HEAD~1, at
# HEAD (the next commit: its snapshot is seeded from the first's), and at
# HEAD again (the kept pid 1 of the base). The agent appends a line, the
# test is `true`: what is timed is everything around them — the snapshot,
# the forks, the agents' sandboxes, the judge's baseline and verdicts.
# Beside them, the usual way by hand: `git worktree add` of HEAD, 4 times.
# REPS (default 3) runs of the three, each from an empty home; medians.
# BIN=DIR times the binaries in DIR instead of building this tree's (an
# A/B against another commit's build). Needs go and git; installs nothing;
# removes what it made when it exits. Not part of the test run.
#
#   bench/race-start.sh
#   N=5000 REPS=5 bench/race-start.sh
#   BIN=/tmp/old/bin bench/race-start.sh
set -eu
N=${N:-20000}
REPS=${REPS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
bin=${BIN:-}
if [ -z "$bin" ]; then
	echo "building forkbomb" >&2
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/bin/" ./cmd/...)
	"$root/scripts/hugebin" "$tmp"/bin/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
	bin="$tmp/bin"
fi

echo "generating $N commits" >&2
repo="$tmp/repo"
git init -q -b main "$repo"
{
	pad=$(printf '%0200d' 0)
	i=0
	while [ "$i" -lt "$N" ]; do
		printf 'commit refs/heads/main\ncommitter b <b@localhost> %d +0000\ndata <<E\nc%d\nE\n' $((900000000 + i)) "$i"
		if [ "$i" -eq 0 ]; then
			f=0
			while [ "$f" -lt 2000 ]; do
				printf 'M 644 inline d%d/f%d\ndata <<E\n%d %s\nE\n' $((f % 40)) "$f" "$f" "$pad"
				f=$((f + 1))
			done
		else
			printf 'M 644 inline d%d/f%d\ndata <<E\n%d %s\nE\n' $((i % 40)) $((i * 7 % 2000)) "$i" "$pad"
		fi
		echo
		i=$((i + 1))
	done
} | git -C "$repo" fast-import --quiet
git -C "$repo" checkout -q main
git -C "$repo" gc -q

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f\n", b - a}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$tmp/first" >"$tmp/next" >"$tmp/again" >"$tmp/wt"
r=1
while [ "$r" -le "$REPS" ]; do
	echo "run $r of $REPS" >&2
	home="$tmp/home$r"
	for row in first:HEAD~1 next:HEAD again:HEAD; do
		t0=$(now)
		FORKBOMB_HOME="$home" "$bin/forkbomb" run --engine command --agent 'echo x >> README' --forks 4 \
			--test true --verify off --repo "$repo" --rev "${row#*:}" "add a line" >"$tmp/out" 2>&1 || true
		t1=$(now)
		grep -q '^run .*: ' "$tmp/out" || { cat "$tmp/out" >&2; exit 1; }
		secs "$t0" "$t1" >>"$tmp/${row%%:*}"
	done
	chmod -R u+rwX "$home" 2>/dev/null; rm -rf "$home"
	t0=$(now)
	for k in 1 2 3 4; do git -C "$repo" worktree add -q --detach "$tmp/wt$k" HEAD; done
	t1=$(now)
	secs "$t0" "$t1" >>"$tmp/wt"
	for k in 1 2 3 4; do git -C "$repo" worktree remove --force "$tmp/wt$k"; done
	r=$((r + 1))
done
printf 'race set-up, %d commits, 4 forks (median of %d, s)\n' "$N" "$REPS"
printf '%-58s %6s\n' "first race (HEAD~1, empty home)" "$(median <"$tmp/first")"
printf '%-58s %6s\n' "next commit's race (HEAD, seeded from HEAD~1's pid 1)" "$(median <"$tmp/next")"
printf '%-58s %6s\n' "the same commit again (HEAD, its kept pid 1)" "$(median <"$tmp/again")"
printf '%-58s %6s\n' "git worktree add HEAD, 4 times (by hand; no agent, no judge)" "$(median <"$tmp/wt")"
