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
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/jocasta" ./cmd/jocasta
go build -o "$work/jocasta-load" ./cmd/jocasta-load
go test -c -o "$work/notify.test" ./projections/notify/
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/j.yaml" <<YAML
server:
  port: $port
db:
  path: $work/data
logger:
  level: warn
scan:
  devices:
    enabled: false
YAML
"$work/jocasta-load" seed --db "$work/data/jocasta.db" --devices "$devices" --sweeps 3 >/dev/null
for i in $(seq 1 10); do
  "$work/jocasta" token create --config "$work/j.yaml" --name "load$i" --mode read --expires never | tail -1
done > "$work/tokens"
"$work/jocasta" serve --config "$work/j.yaml" 2> "$work/serve.log" &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/api/readyz" >/dev/null && break
  sleep 0.1
done

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
