#!/bin/sh
# forkbomb mutants against gremlins (github.com/go-gremlins/gremlins, from
# the Go module proxy), on the same file of the same module, in one run:
# go-cmp v0.6.0's cmp/cmpopts/equate.go (FILE to change), tested by its
# package's tests as gremlins tests them. Prints both wall times, the
# ratio, and how the statuses of the mutants both tools made compare
# (matched by line, column and operator name). Needs go, git and python3;
# fetches gremlins and go-cmp through the module proxy (or the module
# cache). Not part of scripts/test.
#
#   bench/mutants-go.sh
#   FILE=cmp/cmpopts/sort.go WORKERS=2 bench/mutants-go.sh
set -eu
FILE=${FILE:-cmp/cmpopts/equate.go}
WORKERS=${WORKERS:-2}
GREMLINS=${GREMLINS:-github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || { chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"; }' EXIT
export FORKBOMB_HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C

echo "building forkbomb and gremlins" >&2
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/...)  # forkbomb and forkbomb-full
"$root/scripts/hugebin" "$tmp"/forkbomb*  # in 2 MiB pages, as the README builds them (HUGEBIN=0: as go build leaves them)
(cd "$tmp" && GOFLAGS= GOBIN="$tmp/bin" go install "$GREMLINS")
dir=$(cd "$tmp" && GOFLAGS= go mod download -json github.com/google/go-cmp@v0.6.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
for v in fb gr; do
	cp -r "$dir" "$tmp/$v" && chmod -R u+w "$tmp/$v"
	git -C "$tmp/$v" init -q && git -C "$tmp/$v" add -A && git -C "$tmp/$v" -c user.name=b -c user.email=b@l commit -qm base
done
pkg=./$(dirname "$FILE")/

# gremlins mutates the module; every other file is excluded.
excl=$(cd "$tmp/gr" && find . -name '*.go' ! -name '*_test.go' | sed 's|^\./||' | grep -vx "$FILE" | sed 's/\./\\./g; s/^/-E ^/; s/$/$/' | tr '\n' ' ')
s=$(date +%s.%N)
# shellcheck disable=SC2086
(cd "$tmp/gr" && "$tmp/bin/gremlins" unleash --workers "$WORKERS" --invert-assignments --invert-logical $excl -o "$tmp/gr.json" . >"$tmp/gr.out" 2>&1) || true
e=$(date +%s.%N)
grT=$(echo "$e - $s" | bc)

s=$(date +%s.%N)
"$tmp/forkbomb" mutants --repo "$tmp/fb" --test "go test -count=1 $pkg" --paths "$FILE" --forks "$WORKERS" --json "$tmp/fb.json" >"$tmp/fb.out" 2>"$tmp/fb.err"
e=$(date +%s.%N)
fbT=$(echo "$e - $s" | bc)

python3 - "$tmp/gr.json" "$tmp/fb.json" "$FILE" <<'PY'
import json, sys, collections
gr, fb, file = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
# gremlins' words for Stryker's
g2s = {"KILLED": "Killed", "LIVED": "Survived", "NOT COVERED": "NoCoverage", "TIMED OUT": "Timeout", "NOT VIABLE": "CompileError"}
g = {}
for f in gr.get("files", []):
    if f["file_name"].endswith(file):
        for m in f["mutations"]:
            g[(m["line"], m["column"], m["type"])] = g2s.get(m["status"], m["status"])
s = {}
for m in fb["files"].get(file, {}).get("mutants", []):
    s[(m["location"]["start"]["line"], m["location"]["start"]["column"], m["mutatorName"])] = m["status"]
both = set(g) & set(s)
same = sum(1 for k in both if g[k] == s[k])
print(f"mutants: gremlins {len(g)}, forkbomb {len(s)}, made by both {len(both)}; same status {same}/{len(both)}")
diff = collections.Counter((g[k], s[k]) for k in both if g[k] != s[k])
for (a, b), n in sorted(diff.items()):
    print(f"  gremlins {a} / forkbomb {b}: {n}")
PY
printf 'gremlins %.1fs, forkbomb %.1fs: ratio gremlins/forkbomb %.2fx (%s, %s workers)\n' "$grT" "$fbT" "$(echo "$grT / $fbT" | bc -l)" "$FILE" "$WORKERS"
