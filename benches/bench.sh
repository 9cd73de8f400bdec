#!/usr/bin/env bash
# `make bench`: catch-up throughput, memory and alert latency against
# `journalctl`, `journalctl | grep`, a bare libsystemd loop and fail2ban, on
# generated journals. Each comparison runs side by side in one loop (the
# commands take turns), each figure is the median of RUNS runs. Prints one
# table and writes it, with the machine and date, to $OUT.
# Environment: RUNS (5), SIZES ("100000 1000000"), COLLECTOR (1000000 entries;
# 0 = skip) over COLLECTOR_HOSTS ("100 400 1000") hosts, one file set each,
# LATENCY_ROUNDS (200; 0 = skip), SERVICE (1; 0 = skip), IDLE_SECONDS (30),
# BUSY_SECONDS (180; 0 = skip) with BUSY_QUIET_SECONDS (60), BUSY_WARMUP (20)
# and BUSY_ROUNDS (60), CRITERION (1), OUT (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SIZES=${SIZES:-"100000 1000000"}
COLLECTOR=${COLLECTOR:-1000000}
COLLECTOR_HOSTS=${COLLECTOR_HOSTS:-"100 400 1000"}
LATENCY_ROUNDS=${LATENCY_ROUNDS:-200}
CRITERION=${CRITERION:-1}
OUT=${OUT:-BENCHMARKS.md}
dir=target/bench
build=${BUILD:-target/release}   # make bench-smoke runs the debug build
bin=$build/kubelet-sentinel
bare=$build/examples/bare_loop
gen=$build/examples/gen_journal
mkdir -p "$dir"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
f2b_regex='^.*Error updating node status, will retry.*dial tcp <HOST>:6443'

# measure NAME CMD...: wall seconds and peak RSS (KiB) into $tmp/NAME.runs
measure() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
  t1=$(date +%s%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(cat "$tmp/t")" >> "$tmp/$name.runs"
}
median() { # column of $tmp/NAME.runs (1 wall, 2 rss)
  sort -n -k"$2" "$tmp/$1.runs" | awk -v c="$2" '{v[NR]=$c} END {print v[int((NR+1)/2)]}'
}

rows=()
row() { local out="|" cell; for cell in "$@"; do out+=" $cell |"; done; rows+=("$out"); }
fmt_rate() { awk -v n="$1" -v t="$2" 'BEGIN { if (t <= 0) t = 0.001; r = n / t; if (r >= 1e6) printf "%.2fM/s", r/1e6; else printf "%.0fk/s", r/1e3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.001; printf "%.2fx", a / b }'; }

bench_journal() { # LABEL DIR ENTRIES
  local label=$1 j=$2 n=$3
  rm -f "$tmp"/*.runs
  local kubelet
  kubelet=$("$bin" scan -o json "$j" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["kubelet_lines"])')
  local cfg="$tmp/once.toml"
  printf '[journal]\ndirectory = "%s"\nstart_at = "all"\n[store]\npath = "%s/store"\n[api]\nsocket = "%s/q.sock"\n' "$j" "$tmp" "$tmp" > "$cfg"
  for _ in $(seq "$RUNS"); do
    measure scan "$bin" scan "$j"
    measure journalctl journalctl -D "$j" -u kubelet.service -o cat
    measure grep sh -c "journalctl -D '$j' -u kubelet.service | grep -c 'will retry'"
    measure bare "$bare" "$j"
    rm -rf "$tmp/store"
    measure once "$bin" --config "$cfg" run --once
  done
  # fail2ban is slow: fewer runs on large journals.
  local f2b_runs=$RUNS
  [ "$n" -gt 200000 ] && f2b_runs=1
  for _ in $(seq "$f2b_runs"); do
    measure f2b fail2ban-regex "systemd-journal[journalpath=$j]" "$f2b_regex" --journalmatch=_SYSTEMD_UNIT=kubelet.service
  done
  local store_kb
  store_kb=$(du -sk "$tmp/store" | cut -f1)
  local s j_ g b o f
  s=$(median scan 1); j_=$(median journalctl 1); g=$(median grep 1); b=$(median bare 1); o=$(median once 1); f=$(median f2b 1)
  row "$label" "scan" "$s s" "$(fmt_rate "$n" "$s") entries, $(fmt_rate "$kubelet" "$s") kubelet lines" "$(( $(median scan 2) / 1024 )) MiB" "1.00x"
  row "$label" "journalctl -u kubelet -o cat (floor)" "$j_ s" "" "$(( $(median journalctl 2) / 1024 )) MiB" "scan/journalctl $(ratio "$s" "$j_")"
  row "$label" "journalctl -u kubelet \\| grep -c 'will retry'" "$g s" "" "" "scan/grep $(ratio "$s" "$g")"
  row "$label" "bare libsystemd loop (MESSAGE + time)" "$b s" "" "$(( $(median bare 2) / 1024 )) MiB" "scan/bare $(ratio "$s" "$b"); RSS above bare: $(( ($(median scan 2) - $(median bare 2)) / 1024 )) MiB"
  row "$label" "fail2ban-regex (journal, unit match)" "$f s" "" "$(( $(median f2b 2) / 1024 )) MiB" "scan/fail2ban $(ratio "$s" "$f")"
  row "$label" "run --once (catch-up into a fresh store)" "$o s" "$(fmt_rate "$n" "$o") entries" "$(( $(median once 2) / 1024 )) MiB" "store ${store_kb} KiB"
  echo "$label: scan ${s}s, journalctl ${j_}s, bare ${b}s, fail2ban ${f}s, run --once ${o}s" >&2
}

make_journal() { # ENTRIES HOSTS DIR [SPLIT]
  if [ ! -f "$3/.done-$1-$2-${4:-none}" ]; then
    rm -rf "$3"; mkdir -p "$3"
    if [ "${4:-none}" = host ]; then
      # A collector: one file per host, as --split-mode=host writes them.
      "$gen" --entries "$1" --hosts "$2" --files 1 --split host --seed 7 --out "$3" >&2
    else
      "$gen" --entries "$1" --hosts "$2" --files $(( $1 / 50000 + 1 )) --seed 7 --out "$3" >&2
    fi
    touch "$3/.done-$1-$2-${4:-none}"
  fi
}

for n in $SIZES; do
  make_journal "$n" 1 "$dir/j$n"
  bench_journal "$n entries, 1 host" "$dir/j$n" "$n"
done
if [ "$COLLECTOR" -gt 0 ]; then
  for hosts in $COLLECTOR_HOSTS; do
    make_journal "$COLLECTOR" "$hosts" "$dir/c$COLLECTOR-$hosts" host
    bench_journal "$COLLECTOR entries, collector ($hosts hosts, a file each)" "$dir/c$COLLECTOR-$hosts" "$COLLECTOR"
  done
fi

latency="(skipped)"
if [ "$LATENCY_ROUNDS" -gt 0 ]; then
  latency=$(/usr/bin/python3 benches/latency.py "$bin" "$LATENCY_ROUNDS")
fi

service="(skipped)"
if [ "${SERVICE:-1}" = 1 ]; then
  service=$(/usr/bin/python3 benches/service.py "$bin" "$build/examples/gen_store" "${IDLE_SECONDS:-30}" "${SERVICE_INCIDENTS:-100000}")
fi

nodes="(skipped)"
if [ "${NODES:-100000}" -gt 0 ]; then
  nodes=$(/usr/bin/python3 benches/nodes.py "$bin" "${NODES:-100000}" "${NODES_RESOLVE:-20}")
fi

busy="(skipped)"
if [ "${BUSY_SECONDS:-180}" != 0 ]; then
  busy=$(/usr/bin/python3 benches/busy.py "$bin" "${BUSY_SECONDS:-180}" "${BUSY_QUIET_SECONDS:-60}" "${BUSY_WARMUP:-20}" "${BUSY_ROUNDS:-60}")
fi

crit=""
if [ "$CRITERION" = 1 ]; then
  crit=$(cargo bench --quiet --bench parse -- --warm-up-time 1 --measurement-time 3 2>/dev/null \
    | awk '/^parse\+recognize\//{name=$1; sub(/^parse\+recognize\//, "", name); got=0}
           /thrpt:/ && !got {print "| " name " | " $4 " " $5 " |"; got=1}')
fi

{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` ($(date -u +%Y-%m-%dT%H:%MZ)) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(journalctl --version | head -1), kubelet-sentinel $("$bin" --version | cut -d' ' -f2)."
  echo "Each figure is the median of $RUNS runs (fail2ban: 1 run on journals over 200k entries); the commands of one journal take turns in the same loop, so ratios hold on a noisy machine. Journals: \`examples/gen_journal.rs\` (seed 7; ~30% kubelet entries), written by systemd-journal-remote into 50k-entry files (a collector: one file per host, named as \`--split-mode=host\` names them; \`scan\` and \`run --once\` read it host by host, \`journalctl\`, grep, fail2ban and the bare loop through one handle). Peak RSS includes the memory-mapped journal files."
  echo
  echo "| journal | what | wall | throughput | peak RSS | compared |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Alert latency (a kubelet line written to a journald namespace until aiosmtpd accepted the mail, \`group_wait = 0\`): $latency"
  echo
  echo "The service itself (\`benches/service.py\`): idle while following a quiet journal (wakeups a second over all threads, CPU), and a \`/metrics\` scrape and a \`status\` query (the CLI, process start included) with 10 and with 100 000 incidents in the store (\`examples/gen_store.rs\`):"
  echo
  echo '```'
  echo "$service"
  echo '```'
  echo
  echo "Per-node state under a flood of names (\`benches/nodes.py\`: one host writes ${NODES:-100000} lines into a journald namespace, each naming a node never seen before, while the service follows; then every incident resolves, \`resolve_after\` ${NODES_RESOLVE:-20}s). Open incidents stay within \`[incidents] max_nodes_per_host\` (64), the rest are evicted; the store keeps every incident, and sled's memory grows with it:"
  echo
  echo '```'
  echo "$nodes"
  echo '```'
  echo
  echo "A busy node while following (\`benches/busy.py\`, \`make bench-busy\`): the kubelet writing 50 lines a second (klog chatter, a burst of refused status updates and one of network-not-ready lines every 30 s) and other units 500 into a journald namespace; the service's CPU (% of one core), wakeups a second and RSS over ${BUSY_SECONDS:-180} s, the alert latency of new nodes' retries meanwhile (\`group_wait = 0\`); then the kubelet quiet with the others still writing, then everything quiet:"
  echo
  echo '```'
  echo "$busy"
  echo '```'
  if [ -n "$crit" ]; then
    echo
    echo "Parser and signal table (criterion, \`cargo bench --bench parse\`), lines per second by shape:"
    echo
    echo "| shape | median |"
    echo "|---|---|"
    echo "$crit"
  fi
  # Every `## ` section of the old file is kept as it was, in its order:
  # the collector scale (`make bench-hosts`, benches/hosts.sh) and the
  # sections written by hand; only the generated table above is replaced,
  # and the history (benches/history.md) is appended anew.
  if [ -f "$OUT" ] && grep -q '^## ' "$OUT"; then
    echo
    awk '/^## Profiled and fixed/{p=0; next} /^## /{p=1} p' "$OUT" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
  fi
  [ -f benches/history.md ] && cat benches/history.md
} > "$tmp/out.md"
cat "$tmp/out.md"
cp "$tmp/out.md" "$OUT"
