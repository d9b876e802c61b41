#!/usr/bin/env bash
# Fork benchmark: what does a `forkbomb workspace fork` (and one confined
# command in the fork) cost, compared with `git worktree add`, for a tiny
# repository and for a copy of the Go toolchain's src tree (~10k files)?
#
# Usage: bench/workspace-fork.sh [-json]
#   JSON=1   env: same as -json (one JSON object on stdout instead of tables)
#   FORKS    env: forks, and worktrees, per repository (default 3)
#   REPS     env: runs of each diff; the median is reported (default 3)
#   SYNC=0   env: do not `sync` before each timed command (see bench/README.md)
#   FORKBOMB env: a forkbomb binary to time instead of building this tree
#
# For each repository:
#   a. FORKS x  git worktree add --detach DIR HEAD; (cd DIR && true)
#   b. once     forkbomb workspace new pid1 --repo REPO   (one-time cost)
#      FORKS x  forkbomb workspace fork pid1 fN; forkbomb workspace exec fN -- true
#               (the fork is also timed on its own)
#   c. du -sk of fork f1 right after forking, and of worktree 1
#   d. the same one-line change in f1 and in worktree 1, then REPS x
#      forkbomb workspace diff f1  vs  git -C WORKTREE diff
# Everything runs round-robin (iteration i makes worktree i and fork i of
# tiny, then of gosrc), so that load from other processes lands on every
# variant alike. Wall times come from bash's $EPOCHREALTIME (no process is
# started to read the clock) and include process start-up; CPU times
# (user+sys of every process the command started and waited for, from
# wait4's rusage) come from bash's `times`, next to them, since a shared
# machine makes wall time noisy. Each timed command starts after a `sync`,
# so that none pays for writing back what the one before it wrote. Each
# table goes to stdout as soon as its phase is done (JSON, with -json, at
# the end), progress to stderr. Nothing is installed; all state, FORKBOMB_HOME included, lives in
# a temp dir removed on exit. See bench/README.md.
set -euo pipefail

JSON="${JSON:-0}"
FORKS="${FORKS:-3}"
REPS="${REPS:-3}"
SYNC="${SYNC:-1}"
for arg in "$@"; do
	case "$arg" in
	-json | --json) JSON=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "workspace-fork.sh: unknown argument '$arg' (only -json)" >&2
		exit 2
		;;
	esac
done
for v in FORKS REPS; do
	case "${!v}" in '' | *[!0-9]* | 0)
		echo "workspace-fork.sh: $v must be a positive integer, not '${!v}'" >&2
		exit 2
		;;
	esac
done
if ((BASH_VERSINFO[0] < 5)); then
	echo "workspace-fork.sh: needs bash >= 5 (for \$EPOCHREALTIME)" >&2
	exit 1
fi
for tool in go git du awk; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "workspace-fork.sh: '$tool' is required but not on PATH" >&2
		exit 1
	fi
done

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

T="$(mktemp -d "${TMPDIR:-/tmp}/forkbomb-forkbench.XXXXXX")"
cleanup() {
	chmod -R u+w "$T" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

log() { echo "$@" >&2; }

# cpu_us VAR: the user+sys CPU time, in microseconds, of every child this
# shell has waited for so far (and of their waited-for descendants), from
# the second line of bash's `times`. No subshell is started, here or in
# tm_us: one would be a child too, and its own `times` would count only
# its own children.
cpu_us() {
	local lines u s us ss
	times >"$T/times"
	mapfile -t lines <"$T/times"
	read -r u s <<<"${lines[1]}"
	tm_us "$u" us
	tm_us "$s" ss
	printf -v "$1" '%d' $((us + ss))
}

# tm_us XmY.ZZZs VAR: a `times` field, in microseconds, into VAR.
tm_us() {
	local m="${1%%m*}" sec="${1#*m}"
	sec="${sec%s}"
	printf -v "$2" '%d' $(((10#$m * 60 + 10#${sec%.*}) * 1000000 + 10#${sec#*.} * 1000))
}

# timed VAR CMD...: run CMD (stdout discarded, stderr shown), put its wall
# time in microseconds into VAR and its CPU time into VAR_cpu. A failing CMD stops the benchmark with its
# exit status, its own error message above ours. Unless SYNC=0, dirty pages
# are written back first, untimed: a `workspace exec` ends by unmounting an
# overlay, and overlayfs then syncs the whole filesystem its upper layer is
# on, so without it an exec would pay for writing back the worktree just
# checked out before it.
timed() {
	local var="$1" t0 t1 c0 c1 rc=0
	shift
	[[ "$SYNC" == 0 ]] || sync
	cpu_us c0
	t0="${EPOCHREALTIME//[!0-9]/}"
	"$@" >/dev/null || rc=$?
	t1="${EPOCHREALTIME//[!0-9]/}"
	cpu_us c1
	if ((rc != 0)); then
		log "workspace-fork.sh: FAILED (exit $rc): $*"
		exit "$rc"
	fi
	printf -v "$var" '%d' $((t1 - t0))
	printf -v "${var}_cpu" '%d' $((c1 - c0))
}

# ms US: microseconds as milliseconds.
ms() { awk -v u="$1" 'BEGIN { printf "%.2f\n", u / 1000 }'; }

# ratio A B: A / B to two decimals (null when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "null"; else printf "%.2f\n", a / b }'; }

# kb DIR: du -sk of DIR.
kb() { du -sk "$1" | cut -f1; }

declare -A R # every result, keyed "repo.metric"

# summarize NAME SERIES: from R[NAME.SERIES] (microseconds, blank-separated)
# set R[NAME.SERIES.total|mean|median|min|max] in milliseconds.
summarize() {
	local k="$1.$2" total mean median min max
	read -r total mean median min max < <(tr ' ' '\n' <<<"${R[$k]}" | grep . | sort -n | awk '
		{ v[NR] = $1; s += $1 }
		END {
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f %.2f %.2f\n", s / 1000, s / NR / 1000, med / 1000, v[1] / 1000, v[NR] / 1000
		}')
	R[$k.total]="$total" R[$k.mean]="$mean" R[$k.median]="$median" R[$k.min]="$min" R[$k.max]="$max"
}

# --- setup -------------------------------------------------------------------

if [[ -n "${FORKBOMB:-}" ]]; then
	FB="$(realpath "$FORKBOMB")"
	log "using forkbomb $FB (not building)"
else
	FB="$T/bin/forkbomb"
	log "building forkbomb -> $FB"
	(cd "$src" && CGO_ENABLED=0 go build -o "$(dirname "$FB")/" ./cmd/...)  # forkbomb and forkbomb-full
	"$src/scripts/hugebin" "$(dirname "$FB")"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
fi

# commit REPO MESSAGE: commit everything, pack it, and keep git from
# starting any automatic maintenance later: a detached `git gc --auto`
# (which a commit of ~10k loose objects starts) would compete with the
# timings and race the clean-up.
commit() {
	git -C "$1" config gc.auto 0
	git -C "$1" config maintenance.auto false
	git -C "$1" -c user.name=bench -c user.email=bench@localhost \
		-c commit.gpgsign=false commit -q -m "$2"
	git -C "$1" gc --quiet
}

REPOS=(tiny gosrc)
R[tiny.changed]="README.md"
R[gosrc.changed]="fmt/print.go"

log "creating the tiny repository"
mkdir -p "$T/repos/tiny"
git -C "$T/repos/tiny" init -q
echo "tiny repository for the fork benchmark" >"$T/repos/tiny/README.md"
printf 'package main\n\nfunc main() {}\n' >"$T/repos/tiny/main.go"
printf 'module tiny\n\ngo 1.22\n' >"$T/repos/tiny/go.mod"
git -C "$T/repos/tiny" add -A
commit "$T/repos/tiny" "tiny"

GOROOT_SRC="$(go env GOROOT)/src"
log "copying $GOROOT_SRC into a git repository (one commit)..."
cp -r "$GOROOT_SRC" "$T/repos/gosrc"
chmod -R u+w "$T/repos/gosrc" # a GOROOT from the module cache is read-only
git -C "$T/repos/gosrc" init -q
git -C "$T/repos/gosrc" add -A
commit "$T/repos/gosrc" "Go src tree for the fork benchmark"
sync # let the write-back of the copies finish before anything is timed

for n in "${REPOS[@]}"; do
	R[$n.files]="$(git -C "$T/repos/$n" ls-files | wc -l)"
	mkdir -p "$T/wt-$n"
done
log "tiny: ${R[tiny.files]} files; gosrc: ${R[gosrc.files]} files"

KERNEL="$(uname -r)"
CPUS="$(nproc)"
GOVER="$(go env GOVERSION)"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log "kernel $KERNEL, $CPUS CPUs, $GOVER, load average $LOAD_START"

# use NAME: point repo, wts, ws and FORKBOMB_HOME at repository NAME. Each
# repository has a store of its own, so each pays the one-time costs.
use() {
	repo="$T/repos/$1"
	wts="$T/wt-$1"
	export FORKBOMB_HOME="$T/home-$1"
	ws="$FORKBOMB_HOME/workspaces"
}

# worktree_add REPO DIR: git's way to get a second working copy, and a
# command run in it.
worktree_add() {
	git -C "$1" worktree add --quiet --detach "$2" HEAD
	(cd "$2" && true)
}

# text: true when the tables are printed as the phases end (not -json).
text() { [[ "$JSON" != 1 ]]; }

# row LABEL NAME SERIES: one line of timings, wall then CPU medians.
row() {
	local k="$2.$3"
	printf '  %-27s %9s %9s %8s %8s %8s %9s\n' "$1" \
		"${R[$k.total]}" "${R[$k.mean]}" "${R[$k.median]}" "${R[$k.min]}" "${R[$k.max]}" "${R[$k.cpu.median]}"
}

if text; then
	printf 'forkbomb %s\n' "${FORKBOMB:-built from $src}"
	printf 'kernel %s, %s CPUs, %s; load average %s at the start\n' "$KERNEL" "$CPUS" "$GOVER" "$LOAD_START"
	printf '%s forks per repository, diffs: median of %s; sync before each timed command: %s\n' \
		"$FORKS" "$REPS" "$([[ "$SYNC" == 0 ]] && echo no || echo yes)"
	printf 'times in ms (cpu: user+sys of the command and its children, from wait4), disk in KB\n'
fi

# --- b (one-time). pid 1 ------------------------------------------------------

for n in "${REPOS[@]}"; do
	use "$n"
	log "$n: forkbomb workspace new pid1 --repo $repo"
	timed t "$FB" workspace new pid1 --repo "$repo"
	R[$n.new_ms]="$(ms "$t")" R[$n.new_cpu_ms]="$(ms "$t_cpu")"
	R[$n.pid1_kb]="$(kb "$ws/pid1")"
done

# --- a, b, c. worktrees and forks ---------------------------------------------

log "$FORKS x (git worktree add + true, forkbomb fork + exec true) per repository, round-robin"
for ((i = 1; i <= FORKS; i++)); do
	for n in "${REPOS[@]}"; do
		use "$n"
		timed wt worktree_add "$repo" "$wts/w$i"
		timed fork "$FB" workspace fork pid1 "f$i"
		if ((i == 1)); then # not timed
			R[$n.fork_first_ms]="$(ms "$fork")"
			R[$n.fork_kb]="$(kb "$ws/f1")"
			R[$n.wt_kb]="$(kb "$wts/w1")"
			R[$n.wt_admin_kb]="$(kb "$repo/.git/worktrees/w1")"
			R[$n.method]="$("$FB" workspace ls --json |
				awk -F'"' '/"name": "f1"/ { f = 1 } f && /"method"/ { print $4; exit }')"
		fi
		timed run "$FB" workspace exec "f$i" -- true
		R[$n.wt]+="$wt " R[$n.fork]+="$fork " R[$n.exec]+="$run " R[$n.fe]+="$((fork + run)) "
		R[$n.wt.cpu]+="$wt_cpu " R[$n.fork.cpu]+="$fork_cpu " R[$n.exec.cpu]+="$run_cpu " R[$n.fe.cpu]+="$((fork_cpu + run_cpu)) "
		log "  $i $n: worktree $(ms "$wt") ms (cpu $(ms "$wt_cpu")); fork $(ms "$fork") ms (cpu $(ms "$fork_cpu")) + exec $(ms "$run") ms (cpu $(ms "$run_cpu"))"
	done
done

for n in "${REPOS[@]}"; do
	for s in wt fork exec fe; do
		summarize "$n" "$s"
		summarize "$n" "$s.cpu"
	done
	for m in mean median; do
		R[$n.r.wt_fe.$m]="$(ratio "${R[$n.wt.$m]}" "${R[$n.fe.$m]}")"
		R[$n.r.wt_fork.$m]="$(ratio "${R[$n.wt.$m]}" "${R[$n.fork.$m]}")"
	done
	R[$n.r.wt_fe.cpu]="$(ratio "${R[$n.wt.cpu.median]}" "${R[$n.fe.cpu.median]}")"
	R[$n.r.wt_fork.cpu]="$(ratio "${R[$n.wt.cpu.median]}" "${R[$n.fork.cpu.median]}")"
	R[$n.r.disk]="$(ratio "${R[$n.wt_kb]}" "${R[$n.fork_kb]}")"
done
for s in fe fork exec wt; do
	for m in mean median; do
		R[size.$s.$m]="$(ratio "${R[gosrc.$s.$m]}" "${R[tiny.$s.$m]}")"
	done
done

if text; then
	for n in "${REPOS[@]}"; do
		echo
		printf '== %s: %s files; forks by %s ==\n' "$n" "${R[$n.files]}" "${R[$n.method]}"
		printf '  %-27s %9s %9s %8s %8s %8s %9s\n' "" total "per fork" median min max "cpu med"
		row "git worktree add + true" "$n" wt
		row "forkbomb fork + exec true" "$n" fe
		row "forkbomb fork alone" "$n" fork
		row "forkbomb exec true alone" "$n" exec
		printf '  first fork %s ms (it includes the store'"'"'s one-time capability probe)\n' "${R[$n.fork_first_ms]}"
		printf '  one-time: workspace new pid1 %s ms (cpu %s ms); pid1 on disk %s KB\n' "${R[$n.new_ms]}" "${R[$n.new_cpu_ms]}" "${R[$n.pid1_kb]}"
		printf '  disk right after forking: fork %s KB; worktree %s KB (+ %s KB under .git/worktrees/)\n' \
			"${R[$n.fork_kb]}" "${R[$n.wt_kb]}" "${R[$n.wt_admin_kb]}"
	done
	echo
	echo "== ratios: how many times cheaper a fork is than git worktree add (above 1.00 forkbomb wins) =="
	printf '  %-31s %28s %28s\n' "" tiny gosrc
	printf '  %-31s %10s %8s %8s %10s %8s %8s\n' "" "per fork" median "cpu med" "per fork" median "cpu med"
	printf '  %-31s %10s %8s %8s %10s %8s %8s\n' \
		"worktree / (fork + exec)" "${R[tiny.r.wt_fe.mean]}" "${R[tiny.r.wt_fe.median]}" "${R[tiny.r.wt_fe.cpu]}" \
		"${R[gosrc.r.wt_fe.mean]}" "${R[gosrc.r.wt_fe.median]}" "${R[gosrc.r.wt_fe.cpu]}" \
		"worktree / fork alone" "${R[tiny.r.wt_fork.mean]}" "${R[tiny.r.wt_fork.median]}" "${R[tiny.r.wt_fork.cpu]}" \
		"${R[gosrc.r.wt_fork.mean]}" "${R[gosrc.r.wt_fork.median]}" "${R[gosrc.r.wt_fork.cpu]}"
	printf '  %-31s %28s %28s\n' "disk worktree / fork" "${R[tiny.r.disk]}" "${R[gosrc.r.disk]}"
	echo
	echo "== size dependence: gosrc / tiny (1.00 = independent of repository size) =="
	printf '  %-31s %10s %8s\n' "" "per fork" median
	printf '  %-31s %10s %8s\n' \
		"forkbomb fork + exec true" "${R[size.fe.mean]}" "${R[size.fe.median]}" \
		"forkbomb fork alone" "${R[size.fork.mean]}" "${R[size.fork.median]}" \
		"forkbomb exec true alone" "${R[size.exec.mean]}" "${R[size.exec.median]}" \
		"git worktree add + true" "${R[size.wt.mean]}" "${R[size.wt.median]}"
fi

log "removing worktrees 2..$FORKS (not timed)"
for n in "${REPOS[@]}"; do
	use "$n"
	for ((i = 2; i <= FORKS; i++)); do
		git -C "$repo" worktree remove --force "$wts/w$i"
	done
done

# --- d. diffs -------------------------------------------------------------------

for n in "${REPOS[@]}"; do
	use "$n"
	file="${R[$n.changed]}"
	log "$n: appending a line to $file in f1 and in worktree 1"
	# shellcheck disable=SC2016 # $1 belongs to the sh inside the sandbox
	timed t "$FB" workspace exec f1 -- sh -c 'echo x >> "$1"' sh "$file"
	# Refresh worktree 1's index first (not timed): right after a checkout,
	# files written in the same second as the index are "racily clean" and
	# every git diff would re-read them, which a worktree in use does not.
	git -C "$wts/w1" update-index -q --refresh
	echo x >>"$wts/w1/$file"
	# Both must show the change, or the timings compare nothing.
	patch="$("$FB" workspace diff f1)"
	if ! grep -q '^+x$' <<<"$patch"; then
		log "workspace-fork.sh: forkbomb workspace diff f1 does not show the change:"
		log "$patch"
		exit 1
	fi
	patch="$(git -C "$wts/w1" diff)"
	grep -q '^+x$' <<<"$patch"
	R[$n.diff_stat]="$("$FB" workspace diff f1 --stat | tail -n1 | sed 's/^ *//')"
done

log "$REPS x (forkbomb workspace diff f1, git diff) per repository, round-robin"
for ((i = 1; i <= REPS; i++)); do
	for n in "${REPOS[@]}"; do
		use "$n"
		timed t "$FB" workspace diff f1
		R[$n.fbdiff]+="$t " R[$n.fbdiff.cpu]+="$t_cpu "
		timed t git -C "$wts/w1" diff
		R[$n.gitdiff]+="$t " R[$n.gitdiff.cpu]+="$t_cpu "
	done
done
for n in "${REPOS[@]}"; do
	use "$n"
	git -C "$repo" worktree remove --force "$wts/w1"
	for s in fbdiff gitdiff; do
		summarize "$n" "$s"
		summarize "$n" "$s.cpu"
	done
	R[$n.r.diff]="$(ratio "${R[$n.fbdiff.median]}" "${R[$n.gitdiff.median]}")"
	R[$n.r.diff.cpu]="$(ratio "${R[$n.fbdiff.cpu.median]}" "${R[$n.gitdiff.cpu.median]}")"
done

LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
log "load average at the end: $LOAD_END"

if text; then
	echo
	echo "== diff after a one-line change: forkbomb workspace diff / git diff (medians; below 1.00 forkbomb wins) =="
	printf '  %-6s %9s %9s %9s %9s %7s %7s   %s\n' "" "forkbomb" "git" "fb cpu" "git cpu" ratio "cpu" "change"
	for n in "${REPOS[@]}"; do
		printf '  %-6s %9s %9s %9s %9s %7s %7s   %s\n' "$n" \
			"${R[$n.fbdiff.median]}" "${R[$n.gitdiff.median]}" "${R[$n.fbdiff.cpu.median]}" "${R[$n.gitdiff.cpu.median]}" \
			"${R[$n.r.diff]}" "${R[$n.r.diff.cpu]}" "${R[$n.changed]} (${R[$n.diff_stat]})"
	done
	echo
	printf 'load average %s at the end\n' "$LOAD_END"
	exit 0
fi

# --- JSON -------------------------------------------------------------------------

# series_json NAME SERIES: one timing series as a JSON object.
series_json() {
	local k="$1.$2"
	printf '{"total_ms": %s, "per_fork_ms": %s, "median_ms": %s, "min_ms": %s, "max_ms": %s, "cpu_median_ms": %s}' \
		"${R[$k.total]}" "${R[$k.mean]}" "${R[$k.median]}" "${R[$k.min]}" "${R[$k.max]}" "${R[$k.cpu.median]}"
}
repo_json() {
	local n="$1"
	cat <<EOJ
    {
      "name": "$n",
      "files": ${R[$n.files]},
      "fork_method": "${R[$n.method]}",
      "changed_file": "${R[$n.changed]}",
      "worktree_add_true": $(series_json "$n" wt),
      "forkbomb_new_ms": ${R[$n.new_ms]},
      "forkbomb_new_cpu_ms": ${R[$n.new_cpu_ms]},
      "forkbomb_fork_exec": $(series_json "$n" fe),
      "forkbomb_fork": $(series_json "$n" fork),
      "forkbomb_fork_first_ms": ${R[$n.fork_first_ms]},
      "forkbomb_exec": $(series_json "$n" exec),
      "disk_kb": {"fork": ${R[$n.fork_kb]}, "worktree": ${R[$n.wt_kb]}, "worktree_admin": ${R[$n.wt_admin_kb]}, "pid1": ${R[$n.pid1_kb]}},
      "diff_median_ms": {"forkbomb": ${R[$n.fbdiff.median]}, "git": ${R[$n.gitdiff.median]}},
      "diff_cpu_median_ms": {"forkbomb": ${R[$n.fbdiff.cpu.median]}, "git": ${R[$n.gitdiff.cpu.median]}},
      "ratios": {
        "worktree_over_fork_exec": ${R[$n.r.wt_fe.mean]},
        "worktree_over_fork": ${R[$n.r.wt_fork.mean]},
        "worktree_over_fork_exec_medians": ${R[$n.r.wt_fe.median]},
        "worktree_over_fork_medians": ${R[$n.r.wt_fork.median]},
        "worktree_over_fork_exec_cpu_medians": ${R[$n.r.wt_fe.cpu]},
        "worktree_over_fork_cpu_medians": ${R[$n.r.wt_fork.cpu]},
        "diff_forkbomb_over_git": ${R[$n.r.diff]},
        "diff_forkbomb_over_git_cpu": ${R[$n.r.diff.cpu]},
        "disk_worktree_over_fork": ${R[$n.r.disk]}
      }
    }
EOJ
}
cat <<EOJ
{
  "forkbomb": "${FORKBOMB:-built from $src}",
  "kernel": "$KERNEL",
  "cpus": $CPUS,
  "go": "$GOVER",
  "loadavg_start": "$LOAD_START",
  "loadavg_end": "$LOAD_END",
  "forks": $FORKS,
  "diff_reps": $REPS,
  "sync_before_each": $([[ "$SYNC" == 0 ]] && echo false || echo true),
  "repos": [
$(repo_json tiny),
$(repo_json gosrc)
  ],
  "gosrc_over_tiny": {
    "fork_exec_per_fork": ${R[size.fe.mean]},
    "fork_exec_median": ${R[size.fe.median]},
    "fork_per_fork": ${R[size.fork.mean]},
    "fork_median": ${R[size.fork.median]},
    "exec_per_fork": ${R[size.exec.mean]},
    "exec_median": ${R[size.exec.median]},
    "worktree_per_fork": ${R[size.wt.mean]},
    "worktree_median": ${R[size.wt.median]}
  }
}
EOJ
