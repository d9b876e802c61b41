#!/usr/bin/env bash
# World benchmark: forkbomb world fork and exec against the npm just-bash package (3.4.2), in
# one run, interleaved, with ratios.
#
# Usage: bench/world.sh [N]     (N iterations of each, default 30)
#   JUST_BASH_DIR env: where just-bash@3.4.2 is installed (default /opt/forkbomb-bench; it is
#                      installed there with npm, pinned, when missing)
#
#   fork: `forkbomb world fork` of a world holding 1 MiB of files (a process, end to end) against
#         `cp` of its file (a process: issue 24's peer), and world.Fork in Go (the library: go
#         test -bench Fork1MB) against a copy of the same file in node (a JSON world's fork is a
#         copy of its file)
#   exec: `forkbomb world exec W SCRIPT` against `just-bash -c SCRIPT`, both processes, end to
#         end (forkbomb's includes starting the confined worker the interpreter runs in); and in
#         a session: Runner.ExecFile (lock, read, run in the session's worker, decode, save)
#         against new Bash().exec(SCRIPT); plus the one-shot world.ExecFile (a worker per exec)
#         and the interpreter alone in process (world.Exec)
# SCRIPT is ten commands. Wall times from bash's $EPOCHREALTIME; medians.
set -euo pipefail
N="${1:-30}"
JB="${JUST_BASH_DIR:-/opt/forkbomb-bench}"
SCRIPT='mkdir -p d; echo a > d/f; cat d/f; seq 10 | sort -r | head -3; x=1; echo $x; ls d; wc -l d/f; grep a d/f; echo done'
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$JB/node_modules/.bin/just-bash" ]; then
	echo "installing just-bash@3.4.2 into $JB" >&2
	mkdir -p "$JB"
	npm install --prefix "$JB" --no-audit --no-fund --save-exact just-bash@3.4.2 >&2
fi
JUST="$JB/node_modules/.bin/just-bash"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/...)  # forkbomb and its helpers (forkbomb-world: the worker)
"$root/scripts/hugebin" "$tmp"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
FB="$tmp/forkbomb"

# A 1 MiB world: 64 files of 16 KiB.
mkdir "$tmp/seed"
head -c 16384 /dev/zero | tr '\0' a > "$tmp/seed/chunk"
seeds=()
for i in $(seq 64); do seeds+=(--seed "$tmp/seed/chunk:f$i"); done
"$FB" world init "$tmp/big.world" "${seeds[@]}" >/dev/null
"$FB" world init "$tmp/small.world" >/dev/null
mkdir "$tmp/jbroot"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", (b-a)*1000}'; }

: >"$tmp/fork" >"$tmp/cp" >"$tmp/fbexec" >"$tmp/jbexec"
for i in $(seq "$N"); do
	t0=$EPOCHREALTIME; "$FB" world fork "$tmp/big.world" "$tmp/f$i.world" >/dev/null; t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$tmp/fork"; rm -f "$tmp/f$i.world" "$tmp/f$i.world.lock"
	t0=$EPOCHREALTIME; cp "$tmp/big.world" "$tmp/c$i.world"; t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$tmp/cp"; rm -f "$tmp/c$i.world"
	cp "$tmp/small.world" "$tmp/s.world"
	t0=$EPOCHREALTIME; "$FB" world exec "$tmp/s.world" "$SCRIPT" >/dev/null; t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$tmp/fbexec"
	rm -rf "$tmp/jbroot"; mkdir "$tmp/jbroot"
	t0=$EPOCHREALTIME; (cd "$tmp/jbroot" && "$JUST" --allow-write -c "$SCRIPT" >/dev/null); t1=$EPOCHREALTIME
	ms "$t0" "$t1" >>"$tmp/jbexec"
done
fork_cli=$(median <"$tmp/fork")
cp_cli=$(median <"$tmp/cp")
fb_exec=$(median <"$tmp/fbexec")
jb_exec=$(median <"$tmp/jbexec")
js=$(node "$root/bench/world/inproc.mjs" "$JB" "$tmp/big.world" "$N" "$SCRIPT")
js_exec=$(echo "$js" | sed 's/.*"exec_ms":\([0-9.e-]*\).*/\1/')
js_fork=$(echo "$js" | sed 's/.*"fork_ms":\([0-9.e-]*\).*/\1/')
gobench=$(cd "$root" && go test -run '^$' -bench 'Fork1MB|ExecFile|ExecInProcess' -benchtime 200x ./internal/world | awk '/^Benchmark/ {print $1, $3}')
go_fork=$(echo "$gobench" | awk '/Fork1MB/ {printf "%.4f", $2/1e6}')
go_exec=$(echo "$gobench" | awk '/ExecFile-|ExecFile / {printf "%.4f", $2/1e6}')
go_oneshot=$(echo "$gobench" | awk '/ExecFileOneShot/ {printf "%.4f", $2/1e6}')
go_inproc=$(echo "$gobench" | awk '/ExecInProcess/ {printf "%.4f", $2/1e6}')

printf '%-52s %10s\n' "world benchmark (median of $N, ms)" ""
printf '%-52s %10s\n' "fork, 1 MiB world: world.Fork (Go library)" "$go_fork"
printf '%-52s %10s\n' "fork, 1 MiB world: copy of the file in node" "$js_fork"
printf '%-52s %10s\n' "fork, 1 MiB world: forkbomb world fork (process)" "$fork_cli"
printf '%-52s %10s\n' "fork, 1 MiB world: cp of the file (process)" "$cp_cli"
printf '%-52s %10s\n' "exec, 10 commands: forkbomb world exec (process)" "$fb_exec"
printf '%-52s %10s\n' "exec, 10 commands: just-bash -c (process)" "$jb_exec"
printf '%-52s %10s\n' "exec, 10 commands: Runner.ExecFile (session worker)" "$go_exec"
printf '%-52s %10s\n' "exec, 10 commands: world.ExecFile (worker per exec)" "$go_oneshot"
printf '%-52s %10s\n' "exec, 10 commands: world.Exec (interpreter alone)" "$go_inproc"
printf '%-52s %10s\n' "exec, 10 commands: new Bash().exec (in process)" "$js_exec"
awk -v a="$jb_exec" -v b="$fb_exec" 'BEGIN {printf "ratio exec, process: just-bash / forkbomb = %.1fx\n", a/b}'
awk -v a="$js_exec" -v b="$go_exec" 'BEGIN {printf "ratio exec, session: just-bash in process / world session = %.1fx\n", a/b}'
awk -v a="$fork_cli" -v b="$cp_cli" 'BEGIN {printf "ratio fork, process: forkbomb world fork / cp = %.1fx\n", a/b}'
awk -v a="$go_fork" 'BEGIN {printf "ratio fork: 0.24 ms (the original) / world.Fork = %.1fx\n", 0.24/a}'
