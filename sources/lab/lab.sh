#!/usr/bin/env bash
# lab.sh — the jocasta test lab for manual use (make lab-up / make lab-down).
#
#   sources/lab/lab.sh up   [NAME]   build the lab (lab.DefaultSpec) and leave it running
#   sources/lab/lab.sh show [NAME]   list its hosts
#   sources/lab/lab.sh down [NAME]   stop its responders and delete its namespaces
#
# NAME defaults to "jlab"; namespaces are NAME-scanner, NAME-dns, NAME-<host>
# and NAME-br (the bridge). Needs root and: iproute2 dnsmasq-base avahi-daemon
# samba minidlna (perl-base and mount are always there). The lab has no link
# into the host's network. See sources/lab/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd=${1:-}
name=${2:-jlab}
case "$cmd" in
  up|down|show) ;;
  *) echo "usage: $0 up|down|show [NAME]" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "lab.sh: network namespaces need root (try: sudo $0 $*)" >&2
  exit 1
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/labctl" ./sources/lab/labctl
exec "$bin/labctl" "$cmd" -name "$name"
