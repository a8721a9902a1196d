#!/usr/bin/env bash
# bench_lab.sh — measures the device sweep (needs root, fping and nmap).
#
#   sources/icmpsweep/bench_lab.sh            rate 1000/s, 2 rounds, 2s wait
#   RATE=2000 ROUNDS=1 WAIT_MS=1000 sources/icmpsweep/bench_lab.sh
#
# 1. Go benchmarks: the ICMP and ARP sweep engines alone (BenchmarkSweepFake:
#    time and allocations per address of a /16) and a real /16 ICMP sweep
#    at 20,000 probes/s through both socket kinds (BenchmarkSweepSlash16:
#    wall time against the bound addresses×rounds/rate+wait, process CPU
#    time, peak RSS, bytes and allocations per address).
# 2. TestLabCompareSweepers: jocasta's ICMP sweep and device sweep (ARP
#    on-link, and ICMP only as without CAP_NET_RAW), fping and nmap -sn,
#    side by side in one run on a /22, on-link (lab bridge) and routed
#    (behind a router namespace), with the same rate, rounds and wait;
#    prints a table.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "bench_lab.sh: network namespaces and raw sockets need root" >&2
  exit 1
fi
for tool in fping nmap ip; do
  command -v "$tool" >/dev/null || { echo "bench_lab.sh: $tool missing (apt-get install -y fping nmap iproute2)" >&2; exit 1; }
done
echo "== Go benchmarks (go test -run '^\$' -bench 'SweepFake|SweepSlash16' -benchtime 2x ./sources/icmpsweep/ ./sources/arpsweep/)"
go test -run '^$' -bench 'SweepFake|SweepSlash16' -benchtime 2x ./sources/icmpsweep/ ./sources/arpsweep/ | grep -E '^(Benchmark|cpu:|pkg:)'
echo
echo "== /22 side by side (JOCASTA_BENCH_LAB=1 go test -run TestLabCompareSweepers ./sources/devicesweep/)"
JOCASTA_BENCH_LAB=1 JOCASTA_BENCH_RATE="${RATE:-1000}" JOCASTA_BENCH_ROUNDS="${ROUNDS:-2}" JOCASTA_BENCH_WAIT_MS="${WAIT_MS:-2000}" \
  go test -count=1 -v -timeout 10m -run '^TestLabCompareSweepers$' ./sources/devicesweep/ |
  grep -v -E '^(=== RUN|--- PASS|PASS$|ok )|lab\.go:[0-9]+: lab '
