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
. cmd/jocasta-load/serve.sh
rss() { awk '/VmRSS/ {r=$2} /RssAnon/ {a=$2} /RssFile/ {f=$2} END {print r " kB (anonymous " a " kB, files " f " kB)"}' "/proc/$pid/status"; }
echo "serve RSS after start with $devices devices: $(rss)"
load() { "$work/jocasta-load" http --url "http://127.0.0.1:$port" --token-file "$work/tokens" --concurrency 50 --sources 10 --duration "${DURATION:-10s}" --path "$1"; echo; }
load '/api/devices?limit=100'
load '/api/devices/{id}'
load '/api/devices?limit=100&q=host-12'
load '/api/devices?limit=100&q=00:1b:63:00:1'
load '/api/devices?limit=100&q=no-such-device'
echo "serve RSS after the load: $(rss)"
