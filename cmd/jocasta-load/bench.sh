#!/usr/bin/env bash
# Scripted API load for docs/performance.md: seeds 10,000 devices, starts
# jocasta serve on loopback, and loads it from a separate process
# (jocasta-load) with 50 concurrent clients spread over 10 loopback
# addresses (the server limits each client address to 20,000 requests per
# second; 10 hosts with 5 clients each stay under it) and 10 read tokens.
# Prints throughput, latency percentiles and the RSS of serve (and how
# much of it is anonymous memory, how much mapped files: the binary and
# the database). Usage: cmd/jocasta-load/bench.sh [DEVICES]
set -euo pipefail
cd "$(dirname "$0")/../.."
devices=${1:-10000}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/jocasta" ./cmd/jocasta
go build -o "$work/jocasta-load" ./cmd/jocasta-load
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
"$work/jocasta-load" seed --db "$work/data/jocasta.db" --devices "$devices" --sweeps 3
for i in $(seq 1 10); do
  "$work/jocasta" token create --config "$work/j.yaml" --name "load$i" --mode read --expires never | tail -1
done > "$work/tokens"
"$work/jocasta" serve --config "$work/j.yaml" 2> "$work/serve.log" &
pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/api/readyz" >/dev/null && break
  sleep 0.1
done
rss() { awk '/VmRSS/ {r=$2} /RssAnon/ {a=$2} /RssFile/ {f=$2} END {print r " kB (anonymous " a " kB, files " f " kB)"}' "/proc/$pid/status"; }
echo "serve RSS after start with $devices devices: $(rss)"
load() { "$work/jocasta-load" http --url "http://127.0.0.1:$port" --token-file "$work/tokens" --concurrency 50 --sources 10 --duration "${DURATION:-10s}" --path "$1"; echo; }
load '/api/devices?limit=100'
load '/api/devices/{id}'
load '/api/devices?limit=100&q=host-12'
load '/api/devices?limit=100&q=00:1b:63:00:1'
load '/api/devices?limit=100&q=no-such-device'
echo "serve RSS after the load: $(rss)"
