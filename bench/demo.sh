#!/usr/bin/env bash
# Demo benchmark: how long does `forkbomb demo` take cold (a fresh Go build
# cache and a fresh FORKBOMB_HOME, as right after a first build) and warm
# (run again over both), against `go test` of a module like the demo's, cold
# and warm, in the same interleaved run?
#
# Usage: bench/demo.sh
#   REPS      env: rounds (default 1); each round runs every variant once
#   FORKBOMB  env: a forkbomb binary to time instead of building this tree
#   BEFORE    env: a second forkbomb binary (an older build) timed alongside
#
# The peer is the least any tool must pay: `go test -vet=off ./...` on a
# copy of a stdlib-only module with a test (cold: with a fresh GOCACHE, so
# it compiles what `testing` needs). The demo runs that test command six
# times (the baseline and four judged forks, plus the warm-up of the build
# cache), confined, with four agents in between. Wall time comes from
# $EPOCHREALTIME, CPU time (user+sys of every process the command waited
# for, from wait4) from bash's `times`. Each variant's table line is
# printed as soon as its round is done. Everything lives in a temp dir
# removed on exit.
set -euo pipefail

REPS="${REPS:-1}"
case "$REPS" in '' | *[!0-9]* | 0)
	echo "demo.sh: REPS must be a positive integer, not '$REPS'" >&2
	exit 2
	;;
esac
for tool in go git; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "demo.sh: '$tool' is required but not on PATH" >&2
		exit 1
	fi
done
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
T="$(mktemp -d "${TMPDIR:-/tmp}/forkbomb-demobench.XXXXXX")"
cleanup() {
	chmod -R u+w "$T" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
log() { echo "$@" >&2; }

if [[ -n "${FORKBOMB:-}" ]]; then
	FB="$(realpath "$FORKBOMB")"
else
	FB="$T/bin/forkbomb"
	log "building forkbomb -> $FB"
	(cd "$src" && CGO_ENABLED=0 go build -o "$(dirname "$FB")/" ./cmd/...)  # forkbomb and forkbomb-full
	"$src/scripts/hugebin" "$(dirname "$FB")"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
fi
VARIANTS=(after)
if [[ -n "${BEFORE:-}" ]]; then
	OLD="$(realpath "$BEFORE")"
	VARIANTS=(before after)
fi

# The peer's module: a balance type and its test, standard library only.
mkdir -p "$T/mod"
printf 'module example.com/wallet\n\ngo 1.21\n' >"$T/mod/go.mod"
printf 'package wallet\n\ntype Balance int64\n\nfunc (b Balance) Deposit(a int64) Balance { return b + Balance(a) }\n' >"$T/mod/wallet.go"
printf 'package wallet\n\nimport "testing"\n\nfunc TestDeposit(t *testing.T) {\n\tif Balance(1).Deposit(1) != 2 {\n\t\tt.Fatal()\n\t}\n}\n' >"$T/mod/wallet_test.go"

# cpu_us VAR: CPU time of every child waited for so far, in microseconds,
# from bash's `times` written to a file (a $(...) subshell would count only
# its own children).
cpu_us() {
	local lines u s us ss
	times >"$T/times"
	mapfile -t lines <"$T/times"
	read -r u s <<<"${lines[1]}"
	tm_us "$u" us
	tm_us "$s" ss
	printf -v "$1" '%d' $((us + ss))
}
tm_us() {
	local m="${1%%m*}" sec="${1#*m}"
	sec="${sec%s}"
	printf -v "$2" '%d' $(((10#$m * 60 + 10#${sec%.*}) * 1000000 + 10#${sec#*.} * 1000))
}

# timed NAME CMD...: run CMD with its output in $T/NAME.out; print and
# keep its wall and CPU seconds. A demo must end with exit 0; go test's
# exit status is not looked at.
declare -A W C
timed() {
	local name="$1" t0 t1 c0 c1 rc=0
	shift
	sync
	cpu_us c0
	t0="${EPOCHREALTIME//[!0-9]/}"
	"$@" >"$T/$name.out" 2>&1 || rc=$?
	t1="${EPOCHREALTIME//[!0-9]/}"
	cpu_us c1
	if ((rc != 0)) && [[ "$name" == *demo* ]]; then
		log "demo.sh: FAILED (exit $rc): $*"
		cat "$T/$name.out" >&2
		exit "$rc"
	fi
	W[$name]+="$((t1 - t0)) " C[$name]+="$((c1 - c0)) "
	printf '  %-22s wall %7.2f s   cpu %7.2f s\n' "$name" "$(sec $((t1 - t0)))" "$(sec $((c1 - c0)))"
}
sec() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1e6 }'; }

# fresh: a new cold Go build cache and FORKBOMB_HOME.
fresh() {
	rm -rf "$T/gocache" "$T/home"
	mkdir -p "$T/gocache" "$T/home"
	export GOCACHE="$T/gocache" FORKBOMB_HOME="$T/home"
}
peer() { (cd "$T/mod" && go test -count=1 -vet=off ./...); }

echo "kernel $(uname -r), $(nproc) CPUs, $(go env GOVERSION); load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for ((r = 1; r <= REPS; r++)); do
	echo "round $r:"
	fresh
	timed "go test cold" peer
	timed "go test warm" peer
	for v in "${VARIANTS[@]}"; do
		bin="$FB"
		[[ "$v" == before ]] && bin="$OLD"
		fresh
		timed "demo $v cold" "$bin" demo
		timed "demo $v warm" "$bin" demo
	done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"

# med NAME KIND: the median of NAME's samples of W or C, in seconds.
med() {
	local -n m="$2"
	tr ' ' '\n' <<<"${m[$1]}" | grep . | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1e6 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }'; }

echo
echo "== medians of $REPS round(s); ratio: demo / go test of the same state (targets: cold <= 15 s, warm <= 5 s wall) =="
printf '  %-18s %9s %9s %9s %9s\n' "" wall cpu "wall ×" "cpu ×"
for v in "${VARIANTS[@]}"; do
	for s in cold warm; do
		printf '  %-18s %9s %9s %9s %9s\n' "demo $v $s" "$(med "demo $v $s" W)" "$(med "demo $v $s" C)" \
			"$(ratio "$(med "demo $v $s" W)" "$(med "go test $s" W)")" "$(ratio "$(med "demo $v $s" C)" "$(med "go test $s" C)")"
	done
done
for s in cold warm; do
	printf '  %-18s %9s %9s\n' "go test $s" "$(med "go test $s" W)" "$(med "go test $s" C)"
done
