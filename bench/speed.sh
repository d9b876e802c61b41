#!/usr/bin/env bash
# Speed table: every row of issue 24's table (and issue 21's world exec row), each timed beside
# its peer in one run by the bench that owns it, printed with its goal and whether it is met.
#
# Usage: bench/speed.sh [-json]
#   -json      one JSON object on stdout instead of the table (progress stays on stderr)
#   SKIP env   rows to leave out, by group: world start workspace forkexec bisect race judge readme
#              (e.g. SKIP="readme judge": the two slowest)
#
# The groups and their benches (each documented in bench/README.md):
#   world      bench/world.sh 20           world fork vs cp; world exec vs just-bash 3.4.2
#   start      bench/sandbox-start.sh      `forkbomb sandbox -- /bin/true` vs bwrap (time added
#                                          over a bare /bin/true; MODE=tiny, N=100); the peer's
#                                          cell also has bwrap started by a Go program (goexec)
#   workspace  bench/workspace-fork.sh     fork + first command vs `git worktree add` (Go's src);
#                                          `workspace diff` vs `git diff` (tiny repository, Go's src)
#   forkexec   BenchmarkForkExec           forks made one after another vs at once
#   bisect     bench/bisect.sh             300 commits, 4 forks, a 0.3 s and a 1 s test, vs
#                                          `git bisect run` (3 and 2 runs; the median ratio)
#   race       BenchmarkRace16             16-fork race: first agent's stop → first verdict, as a
#                                          multiple of one judged run; the race's timeline (which
#                                          fork waited for what) on stderr
#   judge      BenchmarkJudgeGoCmp         a comment-only (README) patch to go-cmp judged over the
#                                          race's warmed cache vs `go test -count=1` (CPU)
#   readme     the README's first command  from a fresh clone with a fresh Go build cache (the
#                                          module cache is the machine's): build, then the demo
# Needs what those need: go, git, bwrap, node and npm (just-bash is installed pinned when
# missing), python3 (to read their JSON). Installs nothing else; removes what it made on exit.
# Ratios are medians of one run on this machine; a loaded machine moves them — run it quiet.
set -euo pipefail

JSON=0
for arg in "$@"; do
	case "$arg" in
	-json | --json) JSON=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "speed.sh: unknown argument '$arg' (only -json)" >&2; exit 2 ;;
	esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
for tool in go git python3; do
	command -v "$tool" >/dev/null || { echo "speed.sh: $tool is needed" >&2; exit 1; }
done

skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
log() { echo "speed.sh: $*" >&2; }

# Each row, tab-separated: group, measure, peer, forkbomb, ratio, goal (op and bound), met.
: >"$tmp/rows"
# row GROUP MEASURE PEER FORKBOMB RATIO OP BOUND: OP is <= or >=, on RATIO.
row() {
	local met
	met=$(awk -v r="$5" -v op="$6" -v g="$7" 'BEGIN { if (r == "" || r != r + 0) print "?"; else if (op == "<=") print (r <= g) ? "yes" : "no"; else print (r >= g) ? "yes" : "no" }')
	printf '%s\t%s\t%s\t%s\t%s\t%s %s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$met" >>"$tmp/rows"
}
# failed GROUP WHY: a bench that did not run to its end is a row that says so.
failed() { printf '%s\t%s\t\t\t\t\t%s\n' "$1" "the bench failed: ${2:-no result}" "?" >>"$tmp/rows"; }
# lastWords FILE: the last line of a failed bench's output that says something (not go test's
# closing ok or PASS).
# lastWords FILE: why a bench failed — its first test-file message (name_test.go:N: …), else
# its last line that is not go test's own summary.
lastWords() {
	local first
	first=$(grep -m1 -E '_test\.go:[0-9]+: ' "$1" | sed 's/^[[:space:]]*//' || true)
	if [ -n "$first" ]; then echo "$first"; else grep -v -E '^(ok|PASS|FAIL)([[:space:]]|$)' "$1" | tail -1; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print ""; else printf "%.2f", a / b }'; }
med() { sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]}'; }
# gobench PKG NAME BENCHTIME: the metrics line of one Go benchmark.
gobench() {
	(cd "$root" && go test -run '^$' -bench "^Benchmark$2\$" -benchtime "$3" -timeout 60m "./$1") >"$tmp/$2.out" 2>&1 || return 1
	grep -E "^Benchmark$2" "$tmp/$2.out" | tail -1
}
# metric LINE NAME: the value before unit NAME in a benchmark's line.
metric() { echo "$1" | awk -v u="$2" '{for (i = 2; i <= NF; i++) if ($i == u) print $(i - 1)}'; }
# gorow GROUP PKG NAME BENCHTIME MEASURE PEER PEER_METRIC FB_METRIC RATIO_METRIC UNIT OP BOUND:
# the row of one Go benchmark, from its metrics (the peer's figure, forkbomb's, their ratio).
gorow() {
	local line
	skip "$1" && return
	log "$1: Benchmark$3 ($4)"
	if line=$(gobench "$2" "$3" "$4"); then
		row "$1" "$5" "$6: $(metric "$line" "$7") ${10}" "$(metric "$line" "$8") ${10}" "$(metric "$line" "$9")" "${11}" "${12}"
	else
		failed "$1" "$(lastWords "$tmp/$3.out")"
	fi
}

if ! skip world; then
	log "world: bench/world.sh 20"
	if "$root/bench/world.sh" 20 >"$tmp/world.out" 2>"$tmp/world.err"; then
		val() { awk -v k="$1" 'index($0, k) == 1 {print $NF}' "$tmp/world.out"; }
		fork=$(val "fork, 1 MiB world: forkbomb world fork (process)")
		cp=$(val "fork, 1 MiB world: cp of the file (process)")
		fb=$(val "exec, 10 commands: forkbomb world exec (process)")
		jb=$(val "exec, 10 commands: just-bash -c (process)")
		row world "world fork, 1 MiB world, as a process (× cp)" "cp: $cp ms" "$fork ms" "$(ratio "$fork" "$cp")" "<=" 1.5
		row world "world exec, 10 commands, as a process (issue 21: just-bash ÷ forkbomb)" "just-bash 3.4.2: $jb ms" "$fb ms" "$(ratio "$jb" "$fb")" ">=" 10
		row world "world exec, 10 commands, as a process (issue 24: just-bash ÷ forkbomb)" "just-bash 3.4.2: $jb ms" "$fb ms" "$(ratio "$jb" "$fb")" ">=" 20
	else
		failed world "$(tail -1 "$tmp/world.err")"
	fi
fi

if ! skip start; then
	log "start: bench/sandbox-start.sh 100 -json (MODE=tiny)"
	if MODE=tiny "$root/bench/sandbox-start.sh" 100 -json >"$tmp/start.json" 2>"$tmp/start.err"; then
		read -r bw fb r cbw cfb cr fl flr cfl cflr < <(python3 - "$tmp/start.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
v = {x["name"]: x for x in d["variants"]}
bw, fb = v["bwrap"], v["forkbomb"]
fl = v["go+bwrap"]
print(bw["overhead_ms"], fb["overhead_ms"], d["forkbomb_over_bwrap_overhead"],
      bw["cpu_overhead_ms"], fb["cpu_overhead_ms"], d["forkbomb_over_bwrap_cpu_overhead"],
      fl["overhead_ms"], d["go_bwrap_over_bwrap_overhead"], fl["cpu_overhead_ms"], d["go_bwrap_over_bwrap_cpu_overhead"])
EOF
		)
		# the peer's cell also names go+bwrap: bwrap started by a Go program that does nothing
		# else, the least any Go parent adds (runc's route: a Go parent, a C stage)
		row start "confined start of /bin/true, wall added over bare (× bwrap)" "bwrap: +$bw ms (started by Go: +$fl ms, $(printf %.2f "$flr")×)" "+$fb ms" "$(printf %.2f "$r")" "<=" 1.5
		row start "confined start of /bin/true, CPU added over bare (× bwrap)" "bwrap: +$cbw ms (started by Go: +$cfl ms, $(printf %.2f "$cflr")×)" "+$cfb ms" "$(printf %.2f "$cr")" "<=" 4
	else
		failed start "$(tail -1 "$tmp/start.err")"
	fi
fi

if ! skip workspace; then
	log "workspace: bench/workspace-fork.sh -json"
	if "$root/bench/workspace-fork.sh" -json >"$tmp/ws.json" 2>"$tmp/ws.err"; then
		python3 - "$tmp/ws.json" >"$tmp/ws.tsv" <<'EOF'
import json, sys
d = {r["name"]: r for r in json.load(open(sys.argv[1]))["repos"]}
g = d["gosrc"]
print("fe", g["worktree_add_true"]["median_ms"], g["forkbomb_fork_exec"]["median_ms"], g["ratios"]["worktree_over_fork_exec_medians"])
for n in ("tiny", "gosrc"):
    r = d[n]
    print("diff-" + n, r["diff_median_ms"]["git"], r["diff_median_ms"]["forkbomb"], r["ratios"]["diff_forkbomb_over_git"])
EOF
		while read -r k peer fb r; do
			case "$k" in
			fe) row workspace "fork + first command, Go's src (git worktree add ÷ forkbomb)" "worktree add: $peer ms" "$fb ms" "$r" ">=" 50 ;;
			diff-tiny) row workspace "workspace diff, a tiny repository (× git diff)" "git diff: $peer ms" "$fb ms" "$r" "<=" 1.5 ;;
			diff-gosrc) row workspace "workspace diff, Go's src (× git diff)" "git diff: $peer ms" "$fb ms" "$r" "<=" 1.5 ;;
			esac
		done <"$tmp/ws.tsv"
	else
		failed workspace "$(tail -1 "$tmp/ws.err")"
	fi
fi

# The row names the cores each way kept busy (CPU ÷ wall): when a fork costs the same CPU both
# ways, its ratio is the cores at once kept busy ÷ the cores one at a time did.
if ! skip forkexec; then
	log "forkexec: BenchmarkForkExec (5x)"
	if line=$(gobench internal/workspace ForkExec 5x); then
		row forkexec "4 forks + a first command each, one after another (× at once, per fork; the cores each kept busy, of $(nproc))" \
			"at once: $(metric "$line" ms/fork-parallel) ms, $(metric "$line" parallel-cores) cores" "$(metric "$line" ms/fork-serial) ms, $(metric "$line" serial-cores) cores" "$(metric "$line" serial/parallel)" "<=" 1.2
	else
		failed forkexec "$(lastWords "$tmp/ForkExec.out")"
	fi
fi

if ! skip bisect; then
	for spec in "0.3 3 1" "1 2 2"; do
		read -r sleep runs goal <<<"$spec"
		log "bisect: bench/bisect.sh, 300 commits, a ${sleep} s test, 4 forks, $runs runs"
		: >"$tmp/bisect.runs"
		ok=1
		for _ in $(seq "$runs"); do
			if ! N=300 SLEEP="$sleep" K=4 "$root/bench/bisect.sh" >"$tmp/bisect.out" 2>"$tmp/bisect.err"; then
				ok=0
				break
			fi
			grep -q "same first bad commit: yes" "$tmp/bisect.out" || { ok=0; echo "the two named different commits" >>"$tmp/bisect.err"; break; }
			# one line a run: the ratio, git's seconds and steps, forkbomb's seconds and rounds
			awk '/^ratio git\/forkbomb:/ {r = $3; sub("x;", "", r)} /^git bisect run/ {gs = $4; st = $5}
				/^forkbomb bisect/ {fs = $4; ro = $5} END {print r, gs, st, fs, ro}' "$tmp/bisect.out" >>"$tmp/bisect.runs"
		done
		if [ "$ok" = 1 ]; then
			# every cell from the run whose ratio is the median (the lower of two); steps ÷ rounds
			# is the ratio if neither side cost anything beyond the test, each of git's steps
			# and of forkbomb's rounds taking the test's time
			read -r r gs st fs ro < <(sort -n "$tmp/bisect.runs" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}')
			row bisect "bisect, 300 commits, a $sleep s test, 4 forks (git bisect run ÷ forkbomb; the median run)" \
				"git: $gs s, $st steps" "$fs s, $ro rounds (git's steps ÷ rounds: $(ratio "$st" "$ro"))" "$r" ">=" "$goal"
		else
			failed bisect "$(tail -1 "$tmp/bisect.err")"
		fi
	done
fi

gorow race internal/run Race16 1x "16-fork race: first agent's stop → first verdict (× one judged run)" \
	"one judged run" judged-run-ms first-verdict-ms first-verdict/judged-run-x ms "<=" 1.3
# which fork waited for what: the race's timeline, as the benchmark printed it
if [ -f "$tmp/Race16.out" ]; then
	sed -n '/^race timeline/,/^goos:/p' "$tmp/Race16.out" | grep -v '^goos:' >&2 || true
fi

gorow judge internal/judge JudgeGoCmp 2x "judge of a comment-only patch to go-cmp, warmed cache (× go test's CPU)" \
	"go test -count=1" checkout-cpu-ms readme-warm-cpu-ms readme-warm/checkout-cpu-x "ms CPU" "<=" 1.5

if ! skip readme; then
	log "readme: the README's first command, from a fresh clone with a fresh Go build cache"
	clone="$tmp/clone"
	git clone -q "$root" "$clone"
	cmd=$(awk '/^```sh$/ {getline; print; exit}' "$root/README.md")
	start=$EPOCHREALTIME
	if (cd "$clone" && GOCACHE="$tmp/gocache" FORKBOMB_HOME="$tmp/home" bash -c "$cmd") >"$tmp/readme.out" 2>&1; then
		end=$EPOCHREALTIME
		secs=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
		row readme "the README's first command, fresh clone, fresh build cache (s; goal ≤ 120)" "—" "$secs s" "$secs" "<=" 120
	else
		failed readme "$(tail -1 "$tmp/readme.out")"
	fi
	chmod -R u+w "$tmp/gocache" 2>/dev/null || true
fi

python3 - "$tmp/rows" "$JSON" <<'EOF'
import json, sys
rows = []
for line in open(sys.argv[1]):
    g, m, p, f, r, goal, met = line.rstrip("\n").split("\t")
    rows.append({"group": g, "measure": m, "peer": p, "forkbomb": f,
                 "ratio": float(r) if r else None, "goal": goal, "met": met})
if sys.argv[2] == "1":
    print(json.dumps({"rows": rows}, indent=2, ensure_ascii=False))
    sys.exit()
cols = [("measure", "measure"), ("peer", "peer"), ("forkbomb", "forkbomb"), ("ratio", "ratio"), ("goal", "goal"), ("met", "met")]
cell = lambda r, k: "" if r[k] is None else str(r[k])
width = {k: max([len(h)] + [len(cell(r, k)) for r in rows]) for k, h in cols}
print("  ".join(h.ljust(width[k]) for k, h in cols).rstrip())
for r in rows:
    print("  ".join(cell(r, k).ljust(width[k]) for k, _ in cols).rstrip())
EOF
