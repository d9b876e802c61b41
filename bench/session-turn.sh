#!/usr/bin/env bash
# Agent-turn benchmark: 30 shell commands in one fork, run as the api
# engine's shell tool runs them — a sandbox.Run per command (before
# sessions), one sandbox.Session for the whole turn (its start and close
# included), and a bubblewrap start per command (the peer).
#
# Usage: bench/session-turn.sh [ROUNDS] [TURNS]
#   ROUNDS  interleaved rounds (default 5); each round runs every variant
#           once, in turn, so a loaded machine weighs on all of them alike
#   TURNS   turns per variant per round (default 3)
#
# Prints, as rounds finish, each variant's wall ms and CPU ms per turn
# (this process and every process it reaped: the inits, the commands),
# then the medians and their ratios to bwrap. The benchmark itself is
# BenchmarkTurn30 in internal/sandbox/session_bench_test.go.
set -euo pipefail

ROUNDS="${1:-5}"
TURNS="${2:-3}"
for n in "$ROUNDS" "$TURNS"; do
	case "$n" in '' | *[!0-9]* | 0)
		echo "session-turn.sh: ROUNDS and TURNS are positive integers" >&2
		exit 2
		;;
	esac
done
command -v bwrap >/dev/null 2>&1 || {
	echo "session-turn.sh: bwrap (bubblewrap) is the peer; apt-get install bubblewrap" >&2
	exit 1
}

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
T="$(mktemp -d "${TMPDIR:-/tmp}/forkbomb-turnbench.XXXXXX")"
trap 'rm -rf "$T"' EXIT
echo "building the sandbox test binary" >&2
(cd "$repo" && go test -c -o "$T/sandbox.test" ./internal/sandbox)

variants="run session bwrap"
printf '%-6s %-8s %10s %10s\n' round variant wall-ms cpu-ms
for r in $(seq 1 "$ROUNDS"); do
	for v in $variants; do
		line="$(cd "$T" && ./sandbox.test -test.run '^$' -test.bench "^BenchmarkTurn30/$v\$" \
			-test.benchtime "${TURNS}x" | grep "^BenchmarkTurn30/$v")"
		wall="$(awk '{printf "%.1f", $3/1e6}' <<<"$line")"
		cpu="$(awk '{printf "%.1f", $5}' <<<"$line")"
		printf '%-6s %-8s %10s %10s\n' "$r" "$v" "$wall" "$cpu"
		echo "$v $wall $cpu" >>"$T/results"
	done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
printf '%-8s %12s %12s %14s %14s\n' variant wall-ms/turn cpu-ms/turn wall-vs-bwrap cpu-vs-bwrap
bw="$(awk '$1=="bwrap"{print $2}' "$T/results" | median)"
bc="$(awk '$1=="bwrap"{print $3}' "$T/results" | median)"
for v in $variants; do
	w="$(awk -v v="$v" '$1==v{print $2}' "$T/results" | median)"
	c="$(awk -v v="$v" '$1==v{print $3}' "$T/results" | median)"
	printf '%-8s %12s %12s %13.2fx %13.2fx\n' "$v" "$w" "$c" "$(awk -v a="$w" -v b="$bw" 'BEGIN{print a/b}')" "$(awk -v a="$c" -v b="$bc" 'BEGIN{print a/b}')"
done
