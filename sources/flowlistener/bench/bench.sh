#!/usr/bin/env bash
# make bench-flows: the highest zero-loss rate of NetFlow v9 into jocasta
# serve's flow listener, flows aggregated and recorded into the inventory
# of 10,000 devices (the API's traffic totals are what is counted), side
# by side with goflow2 v2.2.6 (protobuf output to a file), both fed by the
# same generator (flowbench send, built on sources/flowlistener/flowgen);
# then serve's RSS with 10,000 devices x 1,000 peers per hour.
#
# A trial sends RATE flows/s for DURATION (10s) to 127.0.0.1, from the
# 10,000 devices to TRIAL_PEERS (5) peers, so that a trial's window holds
# at most 50,000 rows (see "catch-up" in docs/performance.md), waits a
# second after the sender stops, then stops the collector and counts:
#   jocasta: SIGTERM makes the listener hand over its last window; serve
#            is started again on the same database and GET /api/traffic
#            gives the flows recorded (every flow is from a device to a
#            peer that is not one, so total.flows_out counts each once).
#   goflow2: the messages in its -format bin output file.
# Zero loss is < 0.1 % of the flows sent missing. The rate doubles from
# START (25,000) until a trial loses, then is bisected 4 times.
#
# The RSS run then sends an hour's share of 10,000 devices x 1,000 peers
# (every pair once an hour: 2,778 flows/s) for RSS_DURATION (180s) and
# waits until the API has every flow.
#
# Usage: sources/flowlistener/bench/bench.sh   (env: DURATION=10s
# START=25000 MAX=3200000 TRIAL_PEERS=5 RSS_DURATION=180s SKIP_GOFLOW=1
# SKIP_SEARCH=1 for the RSS run alone; KEEP_LOG=file keeps serve's log
# of the RSS run, its collections included; MEMORY_MAX=60M runs the RSS
# run's serve in a memory cgroup of that limit, as a container with a
# memory limit would: cgroup v2 or v1, needs root)
set -euo pipefail
cd "$(dirname "$0")/../../.."
duration=${DURATION:-10s}
start_rate=${START:-25000}
max_rate=${MAX:-3200000}
rss_duration=${RSS_DURATION:-180s}
trial_peers=${TRIAL_PEERS:-5}
devices=10000
peers=1000
work=$(mktemp -d)
pid=""
cgroup=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$cgroup" ] && rmdir "$cgroup" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
free_udp() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

echo "== build"
# jocasta as `make build` and the container build it: static, without
# libc's pages in its resident set (1.4 MB of a cgo build's RSS).
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/jocasta" ./cmd/jocasta
go build -o "$work/jocasta-load" ./cmd/jocasta-load
go build -o "$work/flowbench" ./sources/flowlistener/bench/flowbench
goflow=""
if [ -z "${SKIP_GOFLOW:-}" ]; then
  if GOBIN="$work/bin" go install github.com/netsampler/goflow2/v2/cmd/goflow2@v2.2.6; then
    goflow="$work/bin/goflow2"
  else
    echo "goflow2 v2.2.6 could not be installed: no comparison"
  fi
fi
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024) " MiB"}' /proc/meminfo), $(uname -r), uid $(id -u)"
echo "net.core.rmem_max=$(sysctl -n net.core.rmem_max) net.core.rmem_default=$(sysctl -n net.core.rmem_default)"

port=$(free_port)
udp=$(free_udp)
cat > "$work/j.yaml" <<YAML
server:
  port: $port
db:
  path: $work/data
logger:
  level: info
  format: json
scan:
  devices:
    enabled: false
plugins:
  flowlistener:
    bench:
      enabled: true
      listen: 127.0.0.1:$udp
      exporters: [127.0.0.1]
YAML
echo "== seed $devices devices"
"$work/jocasta-load" seed --db "$work/data/jocasta.db" --devices "$devices" --sweeps 1
tok=$("$work/jocasta" token create --config "$work/j.yaml" --name bench --mode read --expires never | tail -1)
cp "$work/data/jocasta.db" "$work/seeded.db"

# memory_cgroup LIMIT: makes a memory cgroup limited to LIMIT (no swap)
# and sets $cgroup to its directory.
memory_cgroup() {
  if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cgroup=/sys/fs/cgroup/jocasta-bench-$$
    mkdir "$cgroup"
    echo "$1" > "$cgroup/memory.max"
    echo 0 > "$cgroup/memory.swap.max" 2>/dev/null || true
  elif [ -d /sys/fs/cgroup/memory ]; then
    cgroup=/sys/fs/cgroup/memory/jocasta-bench-$$
    mkdir "$cgroup"
    echo "$1" > "$cgroup/memory.limit_in_bytes"
  else
    echo "MEMORY_MAX: no memory cgroup controller on this machine" >&2; exit 1
  fi
}
# cgroup_report: the cgroup's highest usage (the process's memory and the
# page cache charged to it) and the times it hit its limit or killed.
cgroup_report() {
  if [ -f "$cgroup/memory.peak" ]; then
    echo "cgroup memory.max $(cat "$cgroup/memory.max"): highest usage $(( $(cat "$cgroup/memory.peak") / 1024 )) kB; $(tr '\n' ' ' < "$cgroup/memory.events")"
  else
    echo "cgroup memory.limit_in_bytes $(cat "$cgroup/memory.limit_in_bytes"): highest usage $(( $(cat "$cgroup/memory.max_usage_in_bytes") / 1024 )) kB; limit hit $(cat "$cgroup/memory.failcnt") times; $(grep oom_kill "$cgroup/memory.oom_control" | tr '\n' ' ')"
  fi
}
majflt() { awk '{print $12}' "/proc/$1/stat"; }

start_serve() { # $1: log file; sets ready_s: seconds until ready (catch-up)
  local t0; t0=$(date +%s.%N)
  if [ -n "${in_cgroup:-}" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" "$work/jocasta" serve --config "$work/j.yaml" 2> "$1" &
  else
    "$work/jocasta" serve --config "$work/j.yaml" 2> "$1" &
  fi
  pid=$!
  for _ in $(seq 1 6000); do
    if curl -sf "http://127.0.0.1:$port/api/readyz" >/dev/null && grep -q 'flow listener bound' "$1"; then
      ready_s=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
      return 0
    fi
    sleep 0.1
  done
  echo "serve was not ready within 10 minutes:" >&2; tail -5 "$1" >&2; kill "$pid"; exit 1
}
stop_serve() { kill -TERM "$pid"; wait "$pid" || true; pid=""; }
recorded() {
  curl -sf -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/traffic?limit=1" |
    python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]; print(t["flows_out"]+t["flows_in"])'
}
windows() { # flows the listener decoded, its drops and loss, from its log
  python3 - "$1" <<'PY'
import json, sys
flows = rows = lost = 0; drops = {}
for line in open(sys.argv[1]):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("msg", e.get("message")) != "flow window": continue
    flows += e.get("flows", 0); rows += e.get("rows", 0); lost += e.get("lost_flows", 0)
    for k, v in e.items():
        if k.startswith("drop_"): drops[k[5:]] = drops.get(k[5:], 0) + v
print(f"listener: flows {flows} rows {rows} lost {lost} drops {drops or 'none'}")
PY
}

# trial_jocasta RATE: prints "ok" or "loss", and a line of numbers.
trial_jocasta() {
  local rate=$1 log="$work/serve-$1.log"
  cp "$work/seeded.db" "$work/data/jocasta.db"
  start_serve "$log"
  local sent
  sent=$("$work/flowbench" send --addr "127.0.0.1:$udp" --rate "$rate" --duration "$duration" --devices "$devices" --peers "$trial_peers")
  sleep 1
  local mem; mem=$(hwm "$pid")
  stop_serve
  start_serve "$work/serve-$1-read.log"
  local catchup=$ready_s
  local got; got=$(recorded)
  stop_serve
  local n; n=$(echo "$sent" | awk '{print $2}')
  local verdict; verdict=$(python3 -c "print('ok' if $n - $got < 0.001 * $n else 'loss')")
  echo "$verdict jocasta rate $rate: $sent; recorded $got ($(python3 -c "print(f'{100*($n-$got)/$n:.3f}')") % lost); serve VmHWM ${mem} kB; ready after restart (catch-up) ${catchup}s; $(windows "$log")" >&2
  echo "$verdict"
}

trial_goflow() {
  local rate=$1 out="$work/goflow-$1.bin"
  "$goflow" -listen "netflow://127.0.0.1:$udp" -format bin -transport.file "$out" -transport.file.sep "" \
    -addr "127.0.0.1:$(free_port)" -loglevel warn 2> "$work/goflow-$1.log" &
  pid=$!
  sleep 1
  local sent
  sent=$("$work/flowbench" send --addr "127.0.0.1:$udp" --rate "$rate" --duration "$duration" --devices "$devices" --peers "$trial_peers")
  sleep 1
  local mem; mem=$(hwm "$pid")
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  local got; got=$("$work/flowbench" count-goflow --file "$out")
  rm -f "$out"
  local n; n=$(echo "$sent" | awk '{print $2}')
  local verdict; verdict=$(python3 -c "print('ok' if $n - $got < 0.001 * $n else 'loss')")
  echo "$verdict goflow2 rate $rate: $sent; written $got ($(python3 -c "print(f'{100*($n-$got)/$n:.3f}')") % lost); VmHWM ${mem} kB" >&2
  echo "$verdict"
}

search() { # $1: trial function; prints the highest zero-loss rate
  local lo=0 hi=0 r=$start_rate
  while [ "$r" -le "$max_rate" ]; do
    if [ "$($1 "$r")" = ok ]; then lo=$r; r=$((r * 2)); else hi=$r; break; fi
  done
  if [ "$hi" -eq 0 ]; then echo "$lo (the largest tried)"; return; fi
  for _ in 1 2 3 4; do
    local mid=$(((lo + hi) / 2))
    if [ "$($1 "$mid")" = ok ]; then lo=$mid; else hi=$mid; fi
  done
  echo "$lo"
}

echo "== jocasta serve, flowlistener (NetFlow v9, $devices devices x $trial_peers peers, trials of $duration)"
start_serve "$work/probe.log"
grep -o '"rcvbuf":[0-9]*' "$work/probe.log" | head -1 | sed "s/^/socket receive buffer granted (kernel's figure, twice the request): /"
stop_serve
if [ "$(id -u)" = 0 ]; then echo "(root: SO_RCVBUFFORCE)"; else echo "(not root: SO_RCVBUF, capped by net.core.rmem_max)"; fi
jrate="not measured" grate="not measured"
[ -z "${SKIP_SEARCH:-}" ] && jrate=$(search trial_jocasta)
if [ -n "$goflow" ] && [ -z "${SKIP_SEARCH:-}" ]; then
  echo "== goflow2 v2.2.6 (-format bin to a file; its socket keeps the default buffer, net.core.rmem_default)"
  grate=$(search trial_goflow)
fi

echo "== serve RSS: $devices devices x $peers peers per hour (an hour spread evenly: $((devices * peers / 60)) distinct pairs per 60 s window), $rss_duration"
cp "$work/seeded.db" "$work/data/jocasta.db"
# gctrace: each collection's live heap goes to the log, for the highest
# live heap below (steadier from run to run than the RSS, which depends
# on when the collector happens to run).
if [ -n "${MEMORY_MAX:-}" ]; then
  memory_cgroup "$MEMORY_MAX"
  in_cgroup=1
  # As in a container that starts cold, the pages serve maps (its
  # executable, the database) are read in by serve and charged to its
  # cgroup, not to this script's, which wrote them: the machine's clean
  # page cache is dropped first.
  sync
  echo 1 > /proc/sys/vm/drop_caches
  echo "serve runs in the memory cgroup $cgroup, limited to $MEMORY_MAX (the page cache dropped before it starts)"
fi
GODEBUG=gctrace=1 start_serve "$work/rss.log"
in_cgroup=
echo "serve VmHWM at start: $(hwm "$pid") kB"
# The kernel's high-water mark is reset once serve has settled after its
# load (clear_refs 5; it releases the load's pages within 5 s of being
# ready), so that the VmHWM read after the flows is the highest RSS they
# caused, to the page, where the sampler below sees only once a second
# (a window's peak lasts less than that).
sleep 10
echo "serve RSS 10 s after ready: $(awk '/VmRSS/ {print $2}' "/proc/$pid/status") kB"
hwm_reset=no
echo 5 > "/proc/$pid/clear_refs" 2>/dev/null && hwm_reset=yes
# The highest RSS, anonymous and file-mapped RSS, sampled every second
# from the start of the load (VmHWM also counts the start).
( a=0 f=0 r=0; while kill -0 "$pid" 2>/dev/null; do
    read -r ca cf < <(awk '/RssAnon/ {a=$2} /RssFile/ {f=$2} END {print a+0, f+0}' "/proc/$pid/status" 2>/dev/null || echo 0 0)
    [ "${ca:-0}" -gt "$a" ] && a=$ca; [ "${cf:-0}" -gt "$f" ] && f=$cf
    [ $((${ca:-0} + ${cf:-0})) -gt "$r" ] && r=$((ca + cf))
    echo "$a $f $r" > "$work/rss-peaks"; sleep 1
  done ) &
gc_from=$(grep -c '^gc ' "$work/rss.log" || true)
sent=$("$work/flowbench" send --addr "127.0.0.1:$udp" --rate $((devices * peers / 3600)) --duration "$rss_duration" --devices "$devices" --peers "$peers")
echo "$sent"
stopped=$(date +%s)
# The peaks while the flows arrived and their windows were recorded, before
# the API's traffic reads below (each reads every row of the range, and
# the pages it reads are mapped until serve releases them, within 5 s).
sleep 70
read -r load_anon load_file load_rss < "$work/rss-peaks" || true
echo "highest sampled while the flows came and until their last window was recorded (70 s after): RSS ${load_rss:-?} kB; anonymous ${load_anon:-?} kB, files ${load_file:-?} kB (each its own highest)"
if [ "$hwm_reset" = yes ]; then
  echo "highest RSS while the flows came and until their last window was recorded (VmHWM since serve was ready): $(hwm "$pid") kB"
else
  echo "VmHWM could not be reset (/proc/$pid/clear_refs): the highest RSS is the sampled one above"
fi
live=$(awk -v from="$gc_from" '/^gc / && ++n > from { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+->[0-9]+->[0-9]+$/) { split($i, v, "->"); if (v[3] + 0 > m) m = v[3] + 0 } } END { print m + 0 }' "$work/rss.log")
[ -n "${KEEP_LOG:-}" ] && cp "$work/rss.log" "$KEEP_LOG"
echo "highest live heap after a collection while the flows came and until their last window was recorded: $live MB (gctrace)"
n=$(echo "$sent" | awk '{print $2}')
got=0
while [ "$got" -lt "$n" ] && [ $(($(date +%s) - stopped)) -lt 900 ]; do
  sleep 5
  got=$(recorded)
done
echo "recorded $got of $n flows $(($(date +%s) - stopped)) s after the sender stopped (the first read comes 70 s after; the last window closes up to 60 s after it)"
echo "serve VmHWM after: $(hwm "$pid") kB; $(awk '/VmRSS/ {r=$2} /RssAnon/ {a=$2} /RssFile/ {f=$2} END {print "VmRSS " r " kB (anonymous " a " kB, files " f " kB)"}' "/proc/$pid/status"); database $(du -k "$work/data/jocasta.db" | cut -f1) kB"
read -r peak_anon peak_file peak_rss < "$work/rss-peaks" || true
echo "highest sampled over the whole run, the API's reads included: RSS ${peak_rss:-?} kB; anonymous ${peak_anon:-?} kB, files ${peak_file:-?} kB (each its own highest)"
echo "serve's major page faults (pages read from the disk): $(majflt "$pid"); collections: $(grep -c '^gc ' "$work/rss.log" || true)"
[ -n "$cgroup" ] && cgroup_report
stop_serve
windows "$work/rss.log"

echo
echo "highest zero-loss rate (< 0.1 % lost), flows/s: jocasta $jrate; goflow2 $grate"
