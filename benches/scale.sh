#!/usr/bin/env bash
# `make bench-scale`: growth of `scan` with the work (issue 27). Two shapes,
# each at two sizes five times apart; each figure the median of RUNS runs,
# and the ratio of the larger to the smaller (5x is linear):
#   hosts N   N hosts in one journal file, one lister-miss line each
#   outage N  one endpoint lost by N nodes (each its own host), 6 retries each
# Journals from benches/scale.py through systemd-journal-remote.
# Environment: RUNS (3), HOSTS ("4000 20000"), OUTAGE ("1000 5000"),
# BIN (target/release/kubelet-sentinel), TIMEOUT (300 s a run).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
HOSTS=${HOSTS:-"4000 20000"}
OUTAGE=${OUTAGE:-"1000 5000"}
BIN=${BIN:-target/release/kubelet-sentinel}
TIMEOUT=${TIMEOUT:-300}
remote=""
for d in /lib/systemd /usr/lib/systemd; do [ -x "$d/systemd-journal-remote" ] && remote=$d/systemd-journal-remote; done
[ -n "$remote" ] || { echo "systemd-journal-remote not found" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

wall() { # FILE: median wall seconds of `scan FILE`
  local f=$1 s e
  for _ in $(seq "$RUNS"); do
    s=$(date +%s%N)
    timeout "$TIMEOUT" "$BIN" scan -o json "$f" >/dev/null 2>&1 || { echo "timeout"; return; }
    e=$(date +%s%N)
    awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
  done | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

echo "| shape | size | scan wall | ratio to the row 5x smaller |"
echo "|---|---|---|---|"
for shape in hosts outage; do
  sizes=$HOSTS; [ "$shape" = outage ] && sizes=$OUTAGE
  prev=""
  for n in $sizes; do
    f=$tmp/$shape-$n.journal
    python3 benches/scale.py "$shape" "$n" | "$remote" --output="$f" - 2>/dev/null
    w=$(wall "$f")
    r=""
    [ -n "$prev" ] && [ "$w" != timeout ] && r=$(awk -v a="$w" -v b="$prev" 'BEGIN { printf "%.1fx", a / b }')
    echo "| $shape | $n | $w s | $r |"
    prev=$w
    rm -f "$f"
  done
done
