#!/usr/bin/env bash
# Runs the peer benchmarks (bench/bench_test.go, a module of its own so that
# leasehold's users never download the peers) COUNT times, benchstat-friendly,
# and the redis-benchmark baseline for the same lock scripts; with SCALE=1,
# the scaling runs too, drawn into docs/bench/*.png. Writes docs/benchmarks.md's tables,
# medians, into bench/summary.md. From a fresh clone it installs
# redis-server (.ci/redis) and the chart tool's modules (go run).
#
#   ./bench.sh                                  # COUNT=5 BENCHTIME=1s
#   SCALE=1 ./bench.sh                          # and the scaling runs and charts
#   KINDS=0 VARIANTS=0 ./bench.sh               # the peer comparison alone
#   COUNT=1 BENCHTIME=1x SCALE=1 ./bench.sh     # smoke run: every step once, numbers meaningless
#   benchstat bench/latest.txt                  # go install golang.org/x/perf/cmd/benchstat@latest
#
# With COUNT=5 on a quiet 2-core machine, expect 10 to 15 minutes for the
# scenarios (the network ones are half of it) and 1 for the baseline. The
# scaling runs (SCALE_COUNT runs, default COUNT) take as long again, most of
# it in the 100,000-waiter and 100,000-lease points: hence opt-in.
#
# KINDS=1 (the default) runs leasehold's other lock kinds (fair, rw read, rw
# write, semaphore) in Uncontended, ParallelDistinct and Contended
# (-bench.kinds), VARIANTS=1 (the default) leasehold in rueidis' pipelined mode
# in the first two (-bench.variants): go test -bench without those flags, as
# CI runs it, leaves them out. FairWaiters runs 500 waiters, and 5,000 too
# with SCALE=1.
#
# Writes:
#   bench/latest.txt           the scenarios: Uncontended, ParallelDistinct,
#                              ClusterDistinct, Contended, ContendedClients
#                              (with each process's share of the grants and
#                              the longest wait, and a run of redisson beside
#                              two leasehold Clients), ManyWaiters, Renewal,
#                              Network, FairWaiters, and RoundTrip (one PING
#                              by each transport)
#   bench/redis-benchmark.txt  the baseline, one benchmark-format line per run
#   bench/scale.txt            the Scale benchmarks over their full ranges
#   bench/summary.md           docs/benchmarks.md's tables and its targets
#                              (speed, and every process's share)
#   docs/bench/*.png           the curves docs/benchmarks.md shows
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
bash .ci/redis
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-1s}
SCALE=${SCALE:-0}
SCALE_COUNT=${SCALE_COUNT:-$COUNT}
KINDS=${KINDS:-1}
VARIANTS=${VARIANTS:-1}
mkdir -p bench

# 1. The scenarios, every library in each. The Scale benchmarks run in step 3.
# -scale here reaches FairWaiters alone (its 5,000-waiter points).
# HOLD is the work inside the critical section in Contended and ContendedClients (0: a
# handoff's own cost alone; the benchmark's default is 250µs).
# The scenarios that compare libraries run with -rounds: every library once per round,
# COUNT rounds, so that two libraries' runs are never minutes apart (go test's -count
# would run one library COUNT times before the next); the sed names a round's results
# as its benchmark's (NAME#01 as NAME), for benchstat. The others run with -count.
# The test's own flags (-rounds and those after it) come after the package: with
# -rounds N before it, the flags after the package reached no benchmark (HOLD, KINDS
# and VARIANTS had no effect).
scenarios='^Benchmark(Uncontended|ParallelDistinct|ClusterDistinct|Contended|ContendedClients|ManyWaiters|Renewal|Network)$'
go -C bench test -run '^$' -bench "$scenarios" -benchtime "$BENCHTIME" -count 1 -timeout 120m . -rounds "$COUNT" \
  -bench.kinds="$KINDS" -bench.variants="$VARIANTS" -scale="$SCALE" -contended.hold="${HOLD:-0}" |
  sed -E 's/^(Benchmark[^[:space:]]*)#[0-9]+/\1/' | tee bench/latest.txt
go -C bench test -run '^$' -bench '^Benchmark(FairWaiters|RoundTrip)$' -benchtime "$BENCHTIME" -count "$COUNT" -timeout 120m . \
  -scale="$SCALE" | tee -a bench/latest.txt

# 2. The baseline: redis-benchmark pipelining the same lock scripts
# (-c 32 -P 16) against a redis-server of its own. An op is an acquire and a
# release, as in ParallelDistinct, but redis-benchmark runs one command per
# run, so each is run on its own and ops/s = 1 / (1/acquire/s + 1/release/s):
#   - acquire: lock_acquire on fresh names, the fencing counter present (as
#     for a name locked before);
#   - release: lock_release_all (every hold, as a last release does) on random
#     names among 10N held ones, so that most free a held lock: "freed" is
#     the share that did (the rest repeat a name, and find it free).
# The scripts are taken as Redis runs them, their includes spliced in.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
scripts=$(mktemp -d)
redis-server --port "$port" --save "" --appendonly no --daemonize yes --logfile /dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$scripts"' EXIT
go -C bench test -count=1 -run '^TestWriteLockScripts$' . -baseline.scripts "$scripts" >/dev/null
sleep 0.3
acquire=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$scripts/lock_acquire.lua")")
release=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$scripts/lock_release_all.lua")")
owner=8d2a3f6e-5b1c-4f7e-9a0b-1c2d3e4f5a6b:1 # CLIENT_ID:LEASE_ID, as leasehold's
n=${BASELINE_N:-200000}
held=$((10 * n))
rps() { # redis-benchmark's requests per second for the command in "$@"
  redis-benchmark -p "$port" -q -n "$n" -c 32 -P 16 "$@" | tr '\r' '\n' |
    sed -nE 's/.*: ([0-9.]+) requests per second.*/\1/p' | tail -1
}
for _ in $(seq "$COUNT"); do
  redis-cli -p "$port" FLUSHALL >/dev/null
  a=$(rps -r 1000000000 EVALSHA "$acquire" 2 'lock:__rand_int__' 'redisson_lock_token:{bench}' 30000 "$owner")
  redis-cli -p "$port" FLUSHALL >/dev/null
  # redis-benchmark writes __rand_int__ as 12 digits.
  redis-cli -p "$port" EVAL "for i = 0, tonumber(ARGV[1]) - 1 do redis.call('hset', string.format('lock:%012d', i), ARGV[2], 1) end" \
    0 "$held" "$owner" >/dev/null
  before=$(redis-cli -p "$port" DBSIZE)
  r=$(rps -r "$held" EVALSHA "$release" 2 'lock:__rand_int__' 'redisson_lock__channel:{bench}' 0 "$owner")
  after=$(redis-cli -p "$port" DBSIZE)
  awk -v n="$n" -v a="$a" -v r="$r" -v freed="$((before - after))" 'BEGIN {
    printf "BenchmarkRedisBenchmark/acquire+release %d %.0f ops/s %.0f acquire/s %.0f release/s %.3f freed\n",
      n, 1 / (1 / a + 1 / r), a, r, freed / n }'
done | tee bench/redis-benchmark.txt
redis-cli -p "$port" FLUSHALL >/dev/null

# 3. With SCALE=1, the scaling runs and their charts.
if [ "$SCALE" = 1 ]; then
  go -C bench test -run '^$' -bench '^BenchmarkScale' -scale -benchtime "$BENCHTIME" -count "$SCALE_COUNT" -timeout 120m . |
    tee bench/scale.txt
  (cd tools/benchchart && go run . -o ../../docs/bench ../../bench/scale.txt)
fi

# 4. docs/benchmarks.md's tables, medians of the runs above.
(cd tools/benchchart && go run . -md ../../bench/summary.md ../../bench/latest.txt ../../bench/redis-benchmark.txt)
cat bench/summary.md
