#!/usr/bin/env bash
# `make bench-hosts`: a systemd-journal-remote collector directory with one
# journal file per host (as `--split-mode=host` names them), at HOSTS hosts,
# PER_HOST entries each (examples/gen_journal.rs, seed 7, ~30% kubelet's).
# For each size: `scan DIR` and `journalctl -D DIR -u kubelet.service -o cat`
# (wall, peak RSS; journalctl bounded by JOURNALCTL_TIMEOUT), `run --once`
# into a fresh store, and `run` following the directory: the time until
# `status` says caught up, then its RSS, threads, open files (all, and
# journal files) and journal files still mapped. One run each (the 10 000-host
# directory takes minutes to write): the figures are noisy.
# Prints the section and writes it into $OUT (replacing an older one).
# Then the growth rows of benches/scale.sh (20 000 hosts, a 5 000-node
# outage, each against the size five times smaller; SCALE=0 skips them).
# Environment: HOSTS ("1000 10000"), PER_HOST (100), JOURNALCTL_TIMEOUT (600),
# WORK (target/bench-hosts: the journals, removed at the end unless KEEP=1),
# OUT (BENCHMARKS.md; empty = only print).
#
# Every file systemd-journal-remote writes is preallocated to 8 MiB: 10 000 of
# them would be 80 GB. While the generator runs, the files it has closed are
# made sparse (`fallocate --dig-holes`, three at a time), which leaves well
# under 1 MiB each;
# the generator is paused while less than MIN_FREE_GIB (8) is free.
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-"1000 10000"}
PER_HOST=${PER_HOST:-100}
JOURNALCTL_TIMEOUT=${JOURNALCTL_TIMEOUT:-600}
WORK=${WORK:-target/bench-hosts}
OUT=${OUT-BENCHMARKS.md}
SECTION="## Collector scale (one file per host)"

mkdir -p "$WORK"
WORK=$(realpath "$WORK")
# Copies: a rebuild meanwhile (others share target/) changes nothing here.
cp target/release/kubelet-sentinel target/release/examples/gen_journal "$WORK/"
bin=$WORK/kubelet-sentinel
gen=$WORK/gen_journal
built="$(date -u -r target/release/kubelet-sentinel +%H:%MZ); HEAD at the run $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted src changes')"
follow_pid=""
gen_pid=""
cleanup() {
  for p in $follow_pid $gen_pid; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
# journal-remote, journalctl and the service may each hold a file per host.
ulimit -n "$(ulimit -Hn)"
nofile=$(ulimit -n)

free_gib() { df --output=avail -B1G "$WORK" | tail -1 | tr -d ' '; }

# dig DIR [PID]: once, makes sparse every journal file in DIR not made
# sparse yet that no child of PID (the generator's journal-remote) holds open.
declare -A dug
dig() {
  local d=$1 pid=${2:-} f c open=""
  local -a files
  mapfile -t files < <(find "$d" -maxdepth 1 -name '*.journal')
  # Listed first, then the open ones: a file listed is closed or open now.
  if [ -n "$pid" ]; then
    for c in $(pgrep -P "$pid" 2>/dev/null); do
      open+=$(ls -l "/proc/$c/fd" 2>/dev/null | awk '/\.journal/ {print $NF}' || true)$'\n'
    done
  fi
  local -a todo=()
  for f in "${files[@]}"; do
    [ -z "${dug[$f]:-}" ] || continue
    grep -qxF "$f" <<<"$open" && continue # still written: next time
    todo+=("$f"); dug[$f]=1
  done
  # Several at a time: each waits for its file's writeback, one by one they
  # fall behind the generator.
  [ "${#todo[@]}" -eq 0 ] || printf '%s\0' "${todo[@]}" | xargs -0 -P 3 -n 1 fallocate --dig-holes \
    || echo "fallocate --dig-holes failed on some file" >&2
}

make_collector() { # HOSTS DIR
  local hosts=$1 d=$2 min_free
  rm -rf "$d"; mkdir -p "$d"
  dug=()
  min_free=$(free_gib)
  local t0=$SECONDS
  "$gen" --entries $(( hosts * PER_HOST )) --hosts "$hosts" --files 1 --split host --seed 7 --out "$d" >&2 &
  gen_pid=$!
  local f stopped=0
  while kill -0 "$gen_pid" 2>/dev/null; do
    dig "$d" "$gen_pid"
    f=$(free_gib); [ "$f" -lt "$min_free" ] && min_free=$f
    # Digging lags behind on a busy machine: the generator waits below
    # MIN_FREE_GIB free (between two files: journal-remote is its child).
    if [ "$f" -lt "${MIN_FREE_GIB:-8}" ] && [ "$stopped" = 0 ]; then
      kill -STOP "$gen_pid"; stopped=1
    elif [ "$f" -ge $(( ${MIN_FREE_GIB:-8} + 4 )) ] && [ "$stopped" = 1 ]; then
      kill -CONT "$gen_pid"; stopped=0
    fi
    [ "$stopped" = 1 ] || sleep 1
  done
  wait "$gen_pid"; gen_pid=""
  dig "$d" # every file is closed now
  echo "$hosts hosts: written in $(( SECONDS - t0 )) s, $(find "$d" -name '*.journal' | wc -l) files, $(du -sh "$d" | cut -f1) on disk (sparse; $(( $(du -s --apparent-size -BM "$d" | cut -f1 | tr -d M) / 1024 )) GiB apparent), lowest free ${min_free} GiB" >&2
}

# timed OUTFILE CMD...: runs CMD (stdout to OUTFILE), sets $wall (s), $rss (MiB), $rc.
timed() {
  local out=$1; shift
  rc=0
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" > "$out" 2> "$WORK/err" || rc=$?
  wall=$(awk 'END {print $(NF-1)}' "$WORK/time")
  rss=$(( $(awk 'END {print $NF}' "$WORK/time") / 1024 ))
}

proc_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
json_get() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

rows=()
row() { local out="|" cell; for cell in "$@"; do out+=" $cell |"; done; rows+=("$out"); }

for hosts in $HOSTS; do
  d=$WORK/c$hosts
  n=$(( hosts * PER_HOST ))
  make_collector "$hosts" "$d"
  label="$hosts hosts, $n entries"
  # The files were just written and made sparse: the first reader would
  # pay for reading them back into the page cache (at 1 000 hosts a first
  # scan takes 3.7 s, mostly system time, the next 0.36 s). One untimed
  # read first, so every reader finds them cached.
  sync
  "$bin" scan -o json "$d" > /dev/null

  # scan
  timed "$WORK/scan.json" "$bin" scan -o json "$d"
  [ "$rc" = 0 ] || { cat "$WORK/err" >&2; exit 1; }
  kubelet=$(json_get 'd["summary"]["kubelet_lines"]' < "$WORK/scan.json")
  scan_wall=$wall
  row "$label" "scan DIR" "$wall s" "$rss MiB" "$kubelet kubelet lines"
  echo "$label: scan ${wall}s ${rss}MiB, $kubelet kubelet lines" >&2

  # journalctl: one handle over every file
  timed "$WORK/jc.out" timeout "$JOURNALCTL_TIMEOUT" journalctl -D "$d" -u kubelet.service -o cat
  lines=$(wc -l < "$WORK/jc.out"); rm -f "$WORK/jc.out"
  if [ "$rc" = 124 ]; then
    row "$label" "journalctl -D DIR -u kubelet -o cat" "timed out at $JOURNALCTL_TIMEOUT s" "$rss MiB" "$lines lines by then"
    echo "$label: journalctl timed out after ${JOURNALCTL_TIMEOUT}s (${lines} lines, ${rss}MiB)" >&2
  else
    [ "$rc" = 0 ] || { cat "$WORK/err" >&2; exit 1; }
    row "$label" "journalctl -D DIR -u kubelet -o cat" "$wall s" "$rss MiB" "$lines lines; scan/journalctl $(awk -v a="$scan_wall" -v b="$wall" 'BEGIN { if (b <= 0) b = 0.001; printf "%.3fx", a / b }')"
    echo "$label: journalctl ${wall}s ${rss}MiB, $lines lines" >&2
  fi

  # run --once into a fresh store
  s=$WORK/s$hosts; rm -rf "$s"; mkdir -p "$s"
  cfg=$s/config.toml
  printf '[journal]\ndirectory = "%s"\nstart_at = "all"\n[store]\npath = "%s/store"\n[api]\nsocket = "%s/q.sock"\n' "$d" "$s" "$s" > "$cfg"
  timed /dev/null "$bin" --config "$cfg" run --once
  [ "$rc" = 0 ] || { cat "$WORK/err" >&2; exit 1; }
  row "$label" "run --once (fresh store)" "$wall s" "$rss MiB" "store $(du -sk "$s/store" | cut -f1) KiB"
  echo "$label: run --once ${wall}s ${rss}MiB" >&2

  # run, following: catch-up into a fresh store, then what it holds
  rm -rf "$s/store" "$s/q.sock"
  t0=$(date +%s%N)
  "$bin" --config "$cfg" run > "$s/log" 2>&1 &
  follow_pid=$!
  caught=""
  for _ in $(seq 1200); do
    kill -0 "$follow_pid" 2>/dev/null || { cat "$s/log" >&2; exit 1; }
    if [ -S "$s/q.sock" ] && "$bin" --config "$cfg" status -o json > "$s/status.json" 2>/dev/null \
      && [ "$(json_get 'd["caught_up"]' < "$s/status.json" 2>/dev/null)" = True ]; then
      caught=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
      break
    fi
    sleep 0.5
  done
  [ -n "$caught" ] || { echo "$label: the service did not catch up in 600 s" >&2; cat "$s/log" >&2; exit 1; }
  sleep 5 # settled: a few polls of the directory after the catch-up
  pid=$follow_pid
  rss_now=$(( $(proc_kib "$pid" VmRSS) / 1024 ))
  hwm=$(( $(proc_kib "$pid" VmHWM) / 1024 ))
  anon=$(( $(proc_kib "$pid" RssAnon) / 1024 ))
  rfile=$(( $(proc_kib "$pid" RssFile) / 1024 ))
  threads=$(awk '$1 == "Threads:" {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  jfds=$(ls -l "/proc/$pid/fd" | grep -c '\.journal' || true)
  maps=$(awk '$6 ~ /\.journal$/ {print $6}' "/proc/$pid/maps" | sort -u | wc -l)
  known=$(json_get 'd["hosts"] if isinstance(d["hosts"], int) else len(d["hosts"])' < "$s/status.json")
  kill "$follow_pid"; wait "$follow_pid" 2>/dev/null || true; follow_pid=""
  row "$label" "run, following: caught up" "$caught s" "$rss_now MiB (peak $hwm; anon $anon, files $rfile)" "$fds open files ($jfds journal files), $maps journal files mapped, $threads threads, $known hosts' clocks"
  echo "$label: follow caught up in ${caught}s, RSS ${rss_now}MiB (peak ${hwm}, anon ${anon}, file ${rfile}), fds ${fds} (journal ${jfds}), mapped ${maps}, threads ${threads}, hosts ${known}" >&2
  rm -rf "$s"
  [ "${KEEP:-0}" = 1 ] || rm -rf "$d"
done

# Kubernetes' own scale (issue 27): 20 000 hosts and a 5 000-node outage,
# each against the row five times smaller (benches/scale.sh; SCALE=0 skips).
scale=""
if [ "${SCALE:-1}" != 0 ]; then
  scale=$(BIN="$bin" bash benches/scale.sh)
fi

{
  echo "$SECTION"
  echo
  echo "Written by \`make bench-hosts\` (\`benches/hosts.sh\`, $(date -u +%Y-%m-%dT%H:%MZ)) on $(nproc) cores, $(uname -sr), $(journalctl --version | head -1), kubelet-sentinel $("$bin" --version | cut -d' ' -f2) (release build of $built); open-file limit $nofile."
  echo "A collector directory with one file per host (\`examples/gen_journal.rs --split host\`, seed 7, $PER_HOST entries a host, ~30% kubelet's; each file written by its own systemd-journal-remote, named as \`--split-mode=host\` names them, then made sparse). One run each, on a machine shared with other work: the figures are noisy. An untimed \`scan\` reads the files first; they stay in the page cache only while they fit (the device's read-ahead is $(lsblk -dno RA "$(findmnt -no SOURCE -T "$WORK")" 2>/dev/null || echo '?') KiB: a page fault in a file maps that much of it around the fault, zeros of the preallocated files included). \`journalctl\` bounded at $JOURNALCTL_TIMEOUT s; it opens at most 7168 files (libsystemd's \`JOURNAL_FILES_MAX\`) and reads the others' lines not at all. \"Following\": \`run\` on the directory into a fresh store, timed until \`status\` says caught up, then measured after 5 s."
  echo
  echo "| collector | what | wall | RSS | notes |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [ -n "$scale" ]; then
    echo
    echo "Growth with the work (\`benches/scale.sh\`, also \`make bench-scale\`): \`scan -o json\` of one journal file; \"hosts N\": N hosts, one lister-miss line each; \"outage N\": one endpoint lost by N nodes, each its own host, 6 retries 1 s apart. Median of 3 runs; the ratio is to the row five times smaller (5x is linear, the bound is 7x)."
    echo
    echo "$scale"
  fi
} > "$WORK/section.md"
cat "$WORK/section.md"
mkdir -p target/bench && cp "$WORK/section.md" target/bench/hosts.md
if [ -n "$OUT" ]; then
  # Replace the section, or put it before the hand-kept history.
  /usr/bin/python3 - "$OUT" "$WORK/section.md" "$SECTION" <<'EOF'
import sys
out, new, head = sys.argv[1], open(sys.argv[2]).read().rstrip("\n") + "\n", sys.argv[3]
text = open(out).read() if __import__("os").path.exists(out) else ""
lines = text.splitlines(keepends=True)
if head + "\n" in lines:
    i = lines.index(head + "\n")
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    lines[i:j] = [new, "\n"] if j < len(lines) else [new]
else:
    j = next((k for k, l in enumerate(lines) if l.startswith("## Profiled and fixed")), len(lines))
    if j == len(lines) and lines and not lines[-1].endswith("\n\n"):
        lines.append("\n")
    lines[j:j] = [new, "\n"]
open(out, "w").write("".join(lines))
EOF
  echo "written into $OUT" >&2
fi
