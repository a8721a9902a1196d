# Sourced by the load scripts of this directory (bench.sh,
# bench-dispatch.sh), from the repository's root with $devices set:
# builds jocasta and jocasta-load into a temporary $work, seeds $devices
# devices (3 sweeps), writes 10 read tokens to $work/tokens, and starts
# jocasta serve on a free loopback $port (pid $pid, log $work/serve.log)
# without sweeps; waits until it is ready. An EXIT trap stops serve and
# removes $work.
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
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
