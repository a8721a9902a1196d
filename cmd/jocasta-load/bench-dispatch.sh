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
# Environment: API_RATE (requests/s, default 500), DURATION (per run,
# default 20s), ROUNDS (default 2), DEVICES (default 10000).
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
  (cd "$work" && ./notify.test -test.run '^$' -test.bench DispatchRate \
    -test.benchtime "$(( (secs + 3) * 1000 ))x" -test.count 1) > "$work/dispatch.out" 2>&1
}
for path in '/api/devices?limit=100' '/api/devices/{id}'; do
  for r in $(seq 1 "$rounds"); do
    echo "== $path, round $r: alone"
    load "$path" | grep -E '^(requests|latency|status)'
    echo "== $path, round $r: while dispatching 1,000 changes/s"
    dispatch &
    dpid=$!
    sleep 2
    load "$path" | grep -E '^(requests|latency|status)'
    wait "$dpid" || { cat "$work/dispatch.out"; exit 1; }
    grep -E 'BenchmarkDispatchRate' "$work/dispatch.out" | sed 's/^/dispatch: /'
  done
done
