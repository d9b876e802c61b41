#!/usr/bin/env bash
# Gateway load benchmark: metered model calls per second and their p99
# latency through the whole gateway (auth, reserve, forward to the
# scripted upstream on loopback, settle), SQLite against PostgreSQL in the
# same run. The benchmark is BenchmarkModelCall in
# internal/gateway/bench_test.go; PostgreSQL is the throwaway cluster its
# TestMain starts (Debian's postgresql-15; as root it runs as forkbomb-ci).
#
# Usage: bench/gateway-load.sh [BENCHTIME]   (default 3s per database)
set -euo pipefail
BENCHTIME="${1:-3s}"
cd "$(dirname "$0")/.."
out=$(go test -count=1 -run '^$' -bench 'BenchmarkModelCall' -benchtime "$BENCHTIME" ./internal/gateway)
echo "$out" | grep -E '^Benchmark' >&2
echo "$out" | awk '
	/^BenchmarkModelCall\/sqlite/   { for (i = 1; i <= NF; i++) { if ($(i+1) == "req/s") s_rps = $i; if ($(i+1) == "p99-ms") s_p99 = $i } }
	/^BenchmarkModelCall\/postgres/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "req/s") p_rps = $i; if ($(i+1) == "p99-ms") p_p99 = $i } }
	END {
		if (s_rps == "" || p_rps == "") { print "gateway-load.sh: a database did not run (is postgresql-15 installed?)" > "/dev/stderr"; exit 1 }
		printf "%-10s %10s %10s\n", "database", "req/s", "p99 ms"
		printf "%-10s %10.1f %10.1f\n", "sqlite", s_rps, s_p99
		printf "%-10s %10.1f %10.1f\n", "postgres", p_rps, p_p99
		printf "postgres/sqlite: %.2fx req/s, %.2fx p99\n", p_rps / s_rps, p_p99 / s_p99
	}'
