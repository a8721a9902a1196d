#!/usr/bin/env bash
# The memory and time of rebuilding every projection from a long log,
# in serve and offline: docs/performance.md, "Rebuild memory".
#
# DB is a jocasta database to replay (it is copied, never written). The
# 90-day log of `make bench-history` is the one measured; keep it with
#   JOCASTA_HISTORY_DB=/tmp/h90.db make bench-history
# and run, from the repository's root,
#   DB=/tmp/h90.db cmd/jocasta-load/replay-memory.sh
#
# 1. serve: starts jocasta serve on the copy (no sweeps), waits until it
#    is ready, and asks it for `jocasta replay` over the control socket:
#    serve itself rebuilds every projection into a new file, with its
#    own collector target. Its RssAnon is sampled every 0.2 s.
# 2. offline: the same replay by `jocasta replay` with serve stopped,
#    GOGC=100 (the offline replay's own settings, GOGC=400 under a soft
#    limit of half the memory, depend on the machine's memory).
# Each prints the wall time, the highest anonymous RSS sampled, and the
# highest live heap the collector found (GODEBUG=gctrace=1).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DB:?set DB to the path of a jocasta database to replay, see the head of this script}"
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
go build -o "$work/jocasta" ./cmd/jocasta
mkdir -p "$work/data"
cp "$DB" "$work/data/jocasta.db"
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

# live LOG: the highest live heap in a gctrace log, in MB.
live() { awk '/^gc / { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+->[0-9]+->[0-9]+$/) { split($i, v, "->"); if (v[3] + 0 > m) m = v[3] + 0 } } END { print m + 0 }' "$1"; }
# sample PID FILE: the highest RssAnon of PID in kB into FILE, until PID ends.
sample() {
  local m=0 a
  while a=$(awk '/RssAnon/ {print $2}' "/proc/$1/status" 2>/dev/null); do
    [ -n "$a" ] && [ "$a" -gt "$m" ] && m=$a && echo "$m" > "$2"
    sleep 0.2
  done
}
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

echo "== replay of $(du -h "$DB" | cut -f1) ($DB) on $(nproc) CPUs"
GODEBUG=gctrace=1 "$work/jocasta" serve --config "$work/j.yaml" 2> "$work/serve.log" &
pid=$!
for _ in $(seq 1 6000); do
  curl -sf "http://127.0.0.1:$port/api/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/api/readyz" >/dev/null || { echo "serve was not ready within 10 minutes" >&2; exit 1; }
gc_from=$(grep -c '^gc ' "$work/serve.log" || true)
echo 0 > "$work/serve.anon"
sample "$pid" "$work/serve.anon" &
t0=$(now)
"$work/jocasta" replay --config "$work/j.yaml" --output "$work/serve-replay.db"
t1=$(now)
tail -n +"$((gc_from + 1))" "$work/serve.log" | grep '^gc ' > "$work/serve-replay.gc" || true
echo "serve's replay: $(secs "$t0" "$t1") s; highest anonymous RSS $(cat "$work/serve.anon") kB; highest live heap $(live "$work/serve-replay.gc") MB"
kill -TERM "$pid"; wait "$pid" || true; pid=
rm -f "$work/serve-replay.db"

echo 0 > "$work/offline.anon"
t0=$(now)
GOGC=100 GODEBUG=gctrace=1 "$work/jocasta" replay --config "$work/j.yaml" --output "$work/offline-replay.db" 2> "$work/offline.log" &
pid=$!
sample "$pid" "$work/offline.anon" &
wait "$pid"; pid=
t1=$(now)
echo "offline replay (GOGC=100): $(secs "$t0" "$t1") s; highest anonymous RSS $(cat "$work/offline.anon") kB; highest live heap $(live "$work/offline.log") MB"
