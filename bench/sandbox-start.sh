#!/usr/bin/env bash
# Start-up benchmark: how long does `forkbomb sandbox -- /bin/true` take,
# compared with running /bin/true bare and under bubblewrap?
#
# Usage: bench/sandbox-start.sh [N] [startbench flags, e.g. -json]
#   N      iterations per variant (default: $N, else 200)
#   MODE   env: tiny, gosrc or both (default both)
#   FB_BEFORE  env: path of another forkbomb binary (an older build), timed
#          in the same rounds as forkbomb-before, for a before/after figure
#          (it uses the forkbomb-init beside it, if any, as forkbomb does)
#
# Builds forkbomb and forkbomb-init (CGO_ENABLED=0) into a temp dir, then runs
# bench/cmd/startbench, which times the variants round-robin — bare, bwrap,
# forkbomb, and go+bwrap: bwrap started by bench/cmd/goexec, a Go program
# that does nothing else (the least a Go parent with a C sandbox stage, as
# runc's, could cost) — for
#   1. a tiny (empty) workdir, and
#   2. a workdir that is a git repository holding a copy of the Go
#      toolchain's own src tree (~10k files), because forkbomb walks the
#      writable tree for nested .git directories before the command starts.
# Tables (or, with -json, one JSON object per workdir) go to stdout, progress
# to stderr. Nothing is installed; everything is removed on exit. See
# bench/README.md.
set -euo pipefail

N="${1:-${N:-200}}"
shift || true
MODE="${MODE:-both}"
case "$N" in '' | *[!0-9]* | 0)
	echo "sandbox-start.sh: N must be a positive integer, not '$N'" >&2
	exit 2
	;;
esac
case "$MODE" in tiny | gosrc | both) ;; *)
	echo "sandbox-start.sh: MODE must be tiny, gosrc or both, not '$MODE'" >&2
	exit 2
	;;
esac

if ! command -v bwrap >/dev/null 2>&1; then
	echo "sandbox-start.sh: bwrap (bubblewrap) is not installed; it is the baseline." >&2
	echo "  Install it with:  apt-get install bubblewrap" >&2
	exit 1
fi
for tool in go git; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "sandbox-start.sh: '$tool' is required but not on PATH" >&2
		exit 1
	fi
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

T="$(mktemp -d "${TMPDIR:-/tmp}/forkbomb-startbench.XXXXXX")"
cleanup() {
	chmod -R u+w "$T" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

# q WORD: WORD single-quoted for startbench's command-line splitter.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

FB="$T/bin/forkbomb"
# All binaries, as the README builds them: forkbomb starts the slim
# forkbomb-init beside it as its sandbox init (internal/sandbox/initbin_linux.go).
echo "building forkbomb, forkbomb-init and forkbomb-full -> $T/bin" >&2
CGO_ENABLED=0 go build -o "$T/bin/" ./cmd/...
"./scripts/hugebin" "$T"/bin/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
# Compile startbench once up front so the first `go run` does not time it.
go build -o /dev/null ./bench/cmd/startbench
# goexec: a Go program that only starts bwrap (the floor of a Go parent with
# a C sandbox stage, runc's route), timed as go+bwrap.
CGO_ENABLED=0 go build -o "$T/goexec" ./bench/cmd/goexec
"./scripts/hugebin" "$T/goexec" # as forkbomb's binaries, so that the floor is not raised by how go build left it

BARE="/bin/true"
BWRAP="bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc /bin/true"

echo "kernel $(uname -r), $(nproc) CPUs, $(bwrap --version), $(go version | cut -d' ' -f3-)" >&2
echo >&2

# bench LABEL WORKDIR: one startbench run of the variants.
bench() {
	local label="$1" wd="$2"
	shift 2
	go run ./bench/cmd/startbench -n "$N" -label "$label" \
		-bare "$BARE" \
		-bwrap "$BWRAP" \
		-floor "$(q "$T/goexec") $BWRAP" \
		-forkbomb "$(q "$FB") sandbox --workdir $(q "$wd") -- /bin/true" \
		${FB_BEFORE:+-before "$(q "$FB_BEFORE") sandbox --workdir $(q "$wd") -- /bin/true"} \
		"$@"
}

if [[ "$MODE" == tiny || "$MODE" == both ]]; then
	WD="$T/wd"
	mkdir "$WD"
	bench "tiny workdir" "$WD" "$@"
	echo >&2
	if command -v hyperfine >/dev/null 2>&1; then
		# Not interleaved; shown on stderr for comparison only.
		{
			echo "hyperfine (tiny workdir), for comparison:"
			hyperfine -N --warmup 10 --runs "$N" \
				-n bare "$BARE" \
				-n bwrap "$BWRAP" \
				-n forkbomb "$FB sandbox --workdir $WD -- /bin/true"
			echo
		} >&2
	fi
fi

if [[ "$MODE" == gosrc || "$MODE" == both ]]; then
	GOSRC="$T/gosrc"
	echo "copying $(go env GOROOT)/src into a git repository..." >&2
	cp -r "$(go env GOROOT)/src" "$GOSRC"
	chmod -R u+w "$GOSRC" # a GOROOT from the module cache is read-only
	git -C "$GOSRC" init -q
	# No automatic maintenance: the commit of ~10k loose objects would
	# otherwise start a detached `git gc --auto` that competes with the
	# timed runs (and with the clean-up).
	git -C "$GOSRC" config gc.auto 0
	git -C "$GOSRC" config maintenance.auto false
	git -C "$GOSRC" add -A
	git -C "$GOSRC" -c user.name=bench -c user.email=bench@localhost \
		-c commit.gpgsign=false commit -q -m "Go src tree for the start-up benchmark"
	sync # let the write-back of the copy finish before anything is timed
	files="$(git -C "$GOSRC" ls-files | wc -l)"
	dirs="$(find "$GOSRC" -path "$GOSRC/.git" -prune -o -type d -print | wc -l)"
	echo "$files files in $dirs directories" >&2
	echo >&2
	bench "Go src tree workdir ($files files)" "$GOSRC" "$@"
fi
