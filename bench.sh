#!/usr/bin/env bash
# Runs the peer benchmarks (bench_test.go) COUNT times, benchstat-friendly,
# and the redis-benchmark baseline for the lock script, into bench/.
#
#   ./bench.sh            # COUNT=5
#   COUNT=10 ./bench.sh
#   benchstat bench/latest.txt   # go install golang.org/x/perf/cmd/benchstat@latest
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin"
bash .ci/redis
COUNT=${COUNT:-5}
mkdir -p bench
out=bench/latest.txt
go test -run '^$' -bench . -benchtime "${BENCHTIME:-1s}" -count "$COUNT" -timeout 60m . | tee "$out"

# Baseline: redis-benchmark pipelining the acquire script on this machine.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --save "" --appendonly no --daemonize yes --logfile /dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
sleep 0.3
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat script/lua/lock_acquire.lua)")
for i in $(seq "$COUNT"); do
  redis-benchmark -p "$port" -q -n 400000 -c 32 -P 16 -r 100000 \
    EVALSHA "$sha" 2 'lock:__rand_int__' 'tok:__rand_int__' 30000 owner:1 | tr '\r' '\n' | tail -1
done | tee bench/redis-benchmark.txt
