# Sourced by tests/system.sh and tests/fleet.sh: a Debian 12 root made once
# with debootstrap and cached, and containers booted from it with systemd as
# PID 1 (systemd-nspawn -b), driven with nsenter. Needs root.

KS_CACHE=/var/cache/kubelet-sentinel-test
# systemd-journal-remote brings systemd-journal-upload too (the fleet test).
KS_INCLUDE=systemd,systemd-sysv,dbus,python3-aiosmtpd,passwd,util-linux,systemd-journal-remote
mkdir -p "$KS_CACHE"

# ks_root_tar: the cached root's tar file (made on the first call).
ks_root_tar() {
  local tar
  tar="$KS_CACHE/bookworm-$(printf %s "$KS_INCLUDE" | md5sum | cut -c1-8).tar"
  # The system and fleet tests run side by side: one makes it, the other
  # waits for it (fd 9, held until this function returns).
  exec 9>"$KS_CACHE/root.lock"
  flock 9
  if [ ! -f "$tar" ]; then
    local tmp
    tmp=$(mktemp -d /var/tmp/ks-root.XXXXXX)
    if ! debootstrap --variant=minbase --include="$KS_INCLUDE" bookworm "$tmp" >"$KS_CACHE/debootstrap.log" 2>&1; then
      tail -20 "$KS_CACHE/debootstrap.log" >&2
      rm -rf "$tmp"
      return 1
    fi
    tar -cf "$tar.part" -C "$tmp" . && mv "$tar.part" "$tar"
    rm -rf "$tmp"
  fi
  flock -u 9
  exec 9>&-
  echo "$tar"
}

# ks_new_root DIR: a fresh copy of the root in DIR.
ks_new_root() {
  local tar
  tar=$(ks_root_tar) || return 1
  tar -xf "$tar" -C "$1" || return 1
  # mktemp (and the tar's own root) make "/" 0700: no other user could
  # traverse it, and a dynamic user fails at CHDIR.
  chmod 755 "$1"
}

declare -A KS_NSPAWN KS_PID1

# ks_boot NAME ROOT [systemd-nspawn options...]: boots ROOT as machine NAME
# and waits for its systemd; KS_PID1[NAME] is its PID 1 on the host.
ks_boot() {
  local name=$1 root=$2
  shift 2
  systemd-nspawn -D "$root" -M "$name" --register=no --keep-unit -b -q "$@" >"$KS_CACHE/nspawn-$name.log" 2>&1 &
  KS_NSPAWN[$name]=$!
  local pid1=""
  for _ in $(seq 150); do
    pid1=$(pgrep -P "${KS_NSPAWN[$name]}" -x systemd || true)
    [ -n "$pid1" ] && break
    kill -0 "${KS_NSPAWN[$name]}" 2>/dev/null || { cat "$KS_CACHE/nspawn-$name.log" >&2; return 1; }
    sleep 0.2
  done
  [ -n "$pid1" ] || return 1
  KS_PID1[$name]=$pid1
  local state=""
  for _ in $(seq 150); do
    state=$(nsenter -t "$pid1" -a systemctl is-system-running 2>/dev/null || true)
    case "$state" in running|degraded) break ;; esac
    sleep 0.2
  done
}

# ks_in NAME CMD...: runs CMD inside container NAME.
ks_in() {
  local name=$1
  shift
  nsenter -t "${KS_PID1[$name]}" -a "$@"
}

# ks_stop_all: powers every container off (then kills what is left).
ks_stop_all() {
  local name
  for name in "${!KS_NSPAWN[@]}"; do
    if kill -0 "${KS_NSPAWN[$name]}" 2>/dev/null; then
      [ -n "${KS_PID1[$name]:-}" ] && nsenter -t "${KS_PID1[$name]}" -a systemctl --no-block poweroff >/dev/null 2>&1 || true
    fi
  done
  for name in "${!KS_NSPAWN[@]}"; do
    for _ in $(seq 50); do kill -0 "${KS_NSPAWN[$name]}" 2>/dev/null || break; sleep 0.2; done
    kill -9 "${KS_NSPAWN[$name]}" 2>/dev/null || true
  done
}
