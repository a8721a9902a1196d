#!/usr/bin/env bash
# The API's latency with and without notifications being dispatched, for
# docs/performance.md (issue: 1,000 changes/s to three destinations
# without the API's p99 moving by more than 10 %).
#
# Seeds 10,000 devices, starts jocasta serve on loopback and offers it a
# fixed rate of API requests (open loop: jocasta-load --rate, latencies
# counted from each request's scheduled time), alternately alone and
# while BenchmarkDispatchRate (projections/notify) dispatches 1,000
# changes/s to three loopback receivers in a second process on the same
# machine. Each pair is run ROUNDS times, per path.
#
# Usage: cmd/jocasta-load/bench-dispatch.sh
# The p99 of every run is kept, and the medians over the rounds of each
# side are compared at the end of each path (a single run's p99 moves
# by more than the effect looked for).
#
# Environment: API_RATE (requests/s, default 500), DURATION (per run,
# default 20s), ROUNDS (default 2), DEVICES (default 10000), PATHS
# (space-separated, default "/api/devices?limit=100 /api/devices/{id}"),
# JOCASTA_NOTIFY_DIGESTS=1 (the dispatcher with serve's default digests:
# the push and http destinations get a digest a second, the webhook
# every change; default: every change to all three),
# JOCASTA_NOTIFY_NOSYNC=1 (the dispatcher without fsync), DISPATCH_PREFIX
# (a command the dispatcher runs under, e.g. "nice -n 19"), BESIDE (a
# shell command run instead of the dispatcher, e.g. a busy loop, to
# compare).
set -euo pipefail
cd "$(dirname "$0")/../.."
devices=${DEVICES:-10000}
api_rate=${API_RATE:-500}
duration=${DURATION:-20s}
rounds=${ROUNDS:-2}
secs=${duration%s}
. cmd/jocasta-load/serve.sh >/dev/null
go test -c -o "$work/notify.test" ./projections/notify/

load() {
  "$work/jocasta-load" http --url "http://127.0.0.1:$port" --token-file "$work/tokens" \
    --concurrency 50 --sources 10 --rate "$api_rate" --duration "$duration" --path "$1"
}
# dispatch runs the dispatcher at 1,000 changes/s for the length of one
# load run plus 3 s (it starts first and warms up for 2 s).
dispatch() {
  if [ -n "${BESIDE:-}" ]; then
    timeout "$(( secs + 3 ))" bash -c "$BESIDE" > "$work/dispatch.out" 2>&1 || true
    return
  fi
  (cd "$work" && ${DISPATCH_PREFIX:-} ./notify.test -test.run '^$' -test.bench DispatchRate \
    -test.benchtime "$(( (secs + 3) * 1000 ))x" -test.count 1) > "$work/dispatch.out" 2>&1
}
# us converts the p99 of a load run's "latency" line to microseconds.
us() {
  awk '/^latency/ { v = $7; if (v ~ /ms$/) { sub(/ms$/, "", v); v *= 1000 }
    else if (v ~ /µs$/) { sub(/µs$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000000 }
    printf "%.0f\n", v }'
}
# median of the numbers on stdin.
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
default_paths='/api/devices?limit=100 /api/devices/{id}'
IFS=' ' read -r -a paths <<< "${PATHS:-$default_paths}"
for path in "${paths[@]}"; do
  : > "$work/alone"; : > "$work/beside"
  for r in $(seq 1 "$rounds"); do
    echo "== $path, round $r: alone"
    load "$path" > "$work/run.out"
    grep -E '^(requests|latency|status|load tool)' "$work/run.out"
    us < "$work/run.out" >> "$work/alone"
    echo "== $path, round $r: while dispatching 1,000 changes/s"
    dispatch &
    dpid=$!
    sleep 2
    load "$path" > "$work/run.out"
    grep -E '^(requests|latency|status|load tool)' "$work/run.out"
    us < "$work/run.out" >> "$work/beside"
    wait "$dpid" || { cat "$work/dispatch.out"; exit 1; }
    grep -E 'BenchmarkDispatchRate' "$work/dispatch.out" | sed 's/^/dispatch: /' || true
  done
  a=$(median < "$work/alone"); b=$(median < "$work/beside")
  echo "== $path: p99 alone $(paste -sd' ' "$work/alone") µs; while dispatching $(paste -sd' ' "$work/beside") µs"
  awk -v a="$a" -v b="$b" 'BEGIN { printf "== median p99: alone %.0f µs, while dispatching %.0f µs (%+.1f %%)\n", a, b, (b - a) * 100 / a }'
done
