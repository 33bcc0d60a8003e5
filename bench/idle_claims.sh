#!/usr/bin/env bash
# The calls an idle `emq work` makes on a queue whose concurrency limit is
# below the worker's slots, over 5 s once it is up (INFO commandstats):
#   bench/idle_claims.sh <emq binary> [redis port, default 7397]
# on a redis-server of your own on that loopback port (it resets its stats).
set -euo pipefail
bin=$1 port=${2:-7397}
url=redis://127.0.0.1:$port/
q=idle-$RANDOM
"$bin" --url "$url" limit "$q" --concurrency 2 >/dev/null 2>&1
"$bin" --url "$url" work "$q" --concurrency 8 -- true >/dev/null 2>&1 &
pid=$!
sleep 2
redis-cli -p "$port" config resetstat >/dev/null
sleep 5
redis-cli -p "$port" info commandstats | grep -E '^cmdstat_(evalsha|bzpopmin|emq\.claim):' | tr -d '\r'
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
