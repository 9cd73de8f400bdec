#!/usr/bin/env bash
# The fleet test: real parts end to end, both layouts of the README's Fleet
# section followed literally.
#
# - A collector container (systemd as PID 1, host network): Debian's
#   systemd-journal-remote receiving uploads on 19532, kubelet-sentinel from
#   the .deb reading /var/log/journal/remote.
# - Three node containers, each on its own veth link (so the collector sees
#   each at its own address and writes one file set per host): a stand-in
#   kubelet printing real kubelet lines under kubelet.service,
#   systemd-journal-upload shipping the journal to the collector, and
#   kubelet-sentinel from the .deb posting to Alertmanager.
# - On the host: a real Alertmanager (Debian's prometheus-alertmanager),
#   read back with amtool, mailing its notifications to aiosmtpd.
#
# Checked: every node's incident appears on the collector under its node
# name with all its retries, also for a node whose upload starts late (after
# the others' entries are read); the alerts reach Alertmanager with their
# labels, each once although a node and the collector both post it, and go
# out as one grouped notification, not one per node and instance; the
# collector, seeing three hosts lose one API endpoint, posts one endpoint
# alert (KubeletAPIEndpointDown) in place of its node alerts; they resolve
# there.
# Usage: tests/fleet.sh path/to/kubelet-sentinel_*.deb   (as root)
set -euo pipefail
deb=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/container.sh"
work=$(mktemp -d /var/tmp/ks-fleet.XXXXXX)
nodes=(fleet-1 fleet-2 fleet-3)
am_pid=""
smtp_pid=""
cleanup() {
  ks_stop_all
  [ -n "$am_pid" ] && kill "$am_pid" 2>/dev/null || true
  [ -n "$smtp_pid" ] && kill "$smtp_pid" 2>/dev/null || true
  for n in "${nodes[@]}"; do ip link del "ve-$n" 2>/dev/null || true; done
  for d in "$work"/root-*; do umount -R "$d" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for n in collector "${nodes[@]}"; do
    [ -n "${KS_PID1[$n]:-}" ] || continue
    echo "--- $n: kubelet-sentinel" >&2
    ks_in "$n" journalctl -u kubelet-sentinel --no-pager -n 15 >&2 || true
  done
  if [ -n "${KS_PID1[collector]:-}" ]; then
    echo "--- collector: journal-remote and its files" >&2
    ks_in collector journalctl -u systemd-journal-remote --no-pager -n 10 >&2 || true
    ks_in collector ls -la /var/log/journal/remote >&2 || true
  fi
  if [ -n "${KS_PID1[fleet-1]:-}" ]; then
    echo "--- fleet-1: journal-upload" >&2
    ks_in fleet-1 journalctl -u systemd-journal-upload --no-pager -n 10 >&2 || true
  fi
  [ -f "$work/am/alertmanager.log" ] && tail -5 "$work/am/alertmanager.log" >&2
  exit 1
}
pass=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
# serve_on ADDRESS NAME COMMAND...: COMMAND serves on a listener at a port the
# kernel picked, handed over (never free in between); port_of NAME waits for
# that port and prints it.
servers="$here/integration/support"
serve_on() {
  local address=$1 name=$2
  shift 2
  "$servers/serve-on.py" "$address" "$work/$name.port" "$@" >/dev/null 2>&1 &
}
port_of() { wait_until 20 test -s "$work/$1.port" && cat "$work/$1.port"; }
# wait_until SECONDS CMD...: polls CMD every 0.5 s.
wait_until() {
  local t=$1
  shift
  for _ in $(seq $((t * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  return 1
}

# --- the host side: Alertmanager mailing to aiosmtpd ----------------------------
mkdir -p "$work/am"   # not $work/mail: aiosmtpd makes the Maildir
serve_on 127.0.0.1 smtp /usr/bin/python3 "$servers/aiosmtpd-on-stdin.py" "$work/mail"
smtp_pid=$!
smtp_port=$(port_of smtp) || fail "aiosmtpd did not start"
wait_until 20 /usr/bin/python3 -c "import smtplib; smtplib.SMTP('127.0.0.1', $smtp_port, timeout=2).quit()" \
  || fail "aiosmtpd does not answer on :$smtp_port"
cat > "$work/am/alertmanager.yml" <<YML
global:
  smtp_smarthost: '127.0.0.1:$smtp_port'
  smtp_from: 'alertmanager@example.com'
  smtp_require_tls: false
route:
  receiver: oncall
  group_by: ['cause']
  group_wait: 10s
  group_interval: 5s
  repeat_interval: 1h
  routes:
  # kubelet-sentinel's heartbeat goes to a dead man's switch, not to people.
  - receiver: deadman
    matchers: ['alertname="KubeletSentinelHeartbeat"']
receivers:
- name: oncall
  email_configs:
  - to: 'oncall@example.com'
    send_resolved: true
- name: deadman
YML
# On every address: the nodes reach it through their links' host ends.
"$servers/serve-on.py" 0.0.0.0 "$work/am.port" /usr/bin/prometheus-alertmanager \
  --config.file="$work/am/alertmanager.yml" --storage.path="$work/am/data" \
  --web.systemd-socket --cluster.listen-address= --log.level=warn 2>"$work/am/alertmanager.log" &
am_pid=$!
am_port=$(port_of am) || fail "Alertmanager did not start"
amtool_all() { amtool alert query -o json --alertmanager.url="http://127.0.0.1:$am_port"; }
# The incidents' alerts; heartbeats apart.
amtool_alerts() { amtool_all | /usr/bin/python3 -c "import json,sys; print(json.dumps([a for a in json.load(sys.stdin) if a['labels']['alertname'] != 'KubeletSentinelHeartbeat']))"; }
wait_until 20 amtool_all || fail "Alertmanager did not start"
ok "Alertmanager on :$am_port, mailing to aiosmtpd on :$smtp_port"

# --- the containers --------------------------------------------------------------
for m in collector "${nodes[@]}"; do
  mkdir "$work/root-$m"
  ks_new_root "$work/root-$m" || fail "debootstrap"
  cp "$deb" "$work/root-$m/root/kubelet-sentinel.deb"
  # The cached root carries the host's /etc/hostname: each gets its own.
  echo "$m" > "$work/root-$m/etc/hostname"
done
# The stand-in kubelet: 12 retries naming its own node, then quiet.
for n in "${nodes[@]}"; do
  r="$work/root-$n"
  cat > "$r/usr/local/bin/fake-kubelet" <<'SH'
#!/bin/sh
node=$(hostname)
ts() { date -u +%m%d\ %H:%M:%S.%6N; }
echo "I$(ts)     777 kubelet_node_status.go:75] \"Successfully registered node\" node=\"$node\"" >&2
i=0
while [ $i -lt 12 ]; do
  echo "E$(ts)     777 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"$node\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/$node?timeout=10s\\\": dial tcp 10.0.0.1:6443: connect: connection refused\"" >&2
  i=$((i + 1))
  sleep 0.2
done
exec sleep infinity
SH
  chmod 755 "$r/usr/local/bin/fake-kubelet"
  printf '[Unit]\nDescription=stand-in kubelet\n[Service]\nExecStart=/usr/local/bin/fake-kubelet\n' \
    > "$r/etc/systemd/system/kubelet.service"
done
ks_boot collector "$work/root-collector" || fail "the collector did not boot"
k=0
for n in "${nodes[@]}"; do
  k=$((k + 1))
  ks_boot "$n" "$work/root-$n" --network-veth || fail "$n did not boot"
  # The link: 10.77.K.1 on the host (where the collector's and
  # Alertmanager's ports are), 10.77.K.2 in the node.
  ip addr add "10.77.$k.1/24" dev "ve-$n"
  ip link set "ve-$n" up
  nsenter -t "${KS_PID1[$n]}" -n ip addr add "10.77.$k.2/24" dev host0
  nsenter -t "${KS_PID1[$n]}" -n ip link set host0 up
  nsenter -t "${KS_PID1[$n]}" -n ip link set lo up
done
ok "a collector and ${#nodes[@]} nodes booted with systemd as PID 1, each node on its own link"

# --- README, Fleet, collector: journal-remote receives, kubelet-sentinel reads --
install_deb() { # NAME
  ks_in "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/kubelet-sentinel.deb >"$work/apt-$1.log" 2>&1 \
    || { tail -20 "$work/apt-$1.log"; fail "apt-get install on $1"; }
}
install_deb collector
ks_in collector mkdir -p /etc/systemd/system/systemd-journal-remote.service.d
printf '[Service]\nExecStart=\nExecStart=/lib/systemd/systemd-journal-remote --listen-http=-3 --output=/var/log/journal/remote/\n' \
  | ks_in collector tee /etc/systemd/system/systemd-journal-remote.service.d/http.conf >/dev/null
ks_in collector systemctl daemon-reload
out=$(ks_in collector systemctl enable --now systemd-journal-remote.socket 2>&1) || fail "journal-remote socket: $out"
ks_in collector sed -i -e 's|^#directory = ""|directory = "/var/log/journal/remote"|' \
  -e "s|^#urls = \[\]|urls = [\"http://127.0.0.1:$am_port\"]|" /etc/kubelet-sentinel/config.toml
# Test timing only: incidents resolve after 10 s of quiet instead of 60 s.
ks_in collector sed -i 's|^#resolve_after = "60s"|resolve_after = "10s"|' /etc/kubelet-sentinel/config.toml
ks_in collector kubelet-sentinel check-config >/dev/null || fail "collector check-config: $(ks_in collector kubelet-sentinel check-config 2>&1 | tail -2)"
ks_in collector systemctl restart kubelet-sentinel
wait_until 20 ks_in collector systemctl is-active kubelet-sentinel || fail "the collector's kubelet-sentinel is not active"
ok "collector: journal-remote on :19532, kubelet-sentinel reading /var/log/journal/remote with the packaged unit"

# --- README, Fleet, nodes: journal-upload to the collector, kubelet-sentinel ---
# posting to Alertmanager.
k=0
for n in "${nodes[@]}"; do
  k=$((k + 1))
  install_deb "$n"
  ks_in "$n" sed -i -e "s|^#urls = \[\]|urls = [\"http://10.77.$k.1:$am_port\"]|" \
    -e 's|^#resolve_after = "60s"|resolve_after = "10s"|' /etc/kubelet-sentinel/config.toml
  ks_in "$n" systemctl reload kubelet-sentinel || fail "reload on $n"
  ks_in "$n" mkdir -p /etc/systemd/journal-upload.conf.d
  printf '[Upload]\nURL=http://10.77.%s.1:19532\n' "$k" | ks_in "$n" tee /etc/systemd/journal-upload.conf.d/collector.conf >/dev/null
done
# fleet-3 uploads late: its kubelet runs now, its upload starts once the
# others' entries are read on the collector.
for n in fleet-1 fleet-2; do ks_in "$n" systemctl enable --now systemd-journal-upload >/dev/null 2>&1 || fail "journal-upload on $n"; done
for n in "${nodes[@]}"; do ks_in "$n" systemctl start kubelet.service; done
ok "nodes: stand-in kubelets running; journal-upload on fleet-1 and fleet-2 (fleet-3 later)"

retries_on() { # MACHINE NODE -> the node's retries on that machine's kubelet-sentinel
  ks_in "$1" kubelet-sentinel incidents -o json 2>/dev/null | /usr/bin/python3 -c "
import json, sys
v = json.load(sys.stdin)['incidents']
print(sum(i['retries'] for i in v if i['node'] == '$2'))"
}
has_retries() { [ "$(retries_on "$1" "$2")" = "$3" ]; }
for n in fleet-1 fleet-2; do
  wait_until 60 has_retries collector "$n" 12 || fail "collector: $n has $(retries_on collector "$n") retries, not 12"
done
ks_in fleet-3 systemctl enable --now systemd-journal-upload >/dev/null 2>&1 || fail "journal-upload on fleet-3"
wait_until 60 has_retries collector fleet-3 12 || fail "collector: fleet-3 (late upload) has $(retries_on collector fleet-3) retries, not 12"
files=$(ks_in collector sh -c 'ls /var/log/journal/remote/' | tr '\n' ' ')
for n in "${nodes[@]}"; do
  has_retries "$n" "$n" 12 || fail "$n's own instance has $(retries_on "$n" "$n") retries"
done
ok "every node's incident on the collector with its 12 retries, fleet-3's uploaded late too (files: $files)"

# --- Alertmanager: each alert once, one grouped notification, resolved --------
am_nodes() { amtool_alerts | /usr/bin/python3 -c "import json,sys; print(' '.join(sorted(a['labels']['node'] for a in json.load(sys.stdin) if a['labels']['alertname'] == 'KubeletNodeStatusTrouble')))"; }
am_endpoints() { amtool_alerts | /usr/bin/python3 -c "import json,sys; print(' '.join(sorted(a['labels']['api_endpoint'] + '/' + a['labels']['cause'] for a in json.load(sys.stdin) if a['labels']['alertname'] == 'KubeletAPIEndpointDown')))"; }
any_active() { [ -n "$(amtool_alerts | /usr/bin/python3 -c "import json,sys; print(' '.join(a['labels']['alertname'] for a in json.load(sys.stdin)))")" ]; }
all_three() { [ "$(am_nodes)" = "fleet-1 fleet-2 fleet-3" ]; }
wait_until 40 all_three || fail "Alertmanager has: $(am_nodes)"
labels=$(amtool_alerts | /usr/bin/python3 -c "
import json, sys
a = [x for x in json.load(sys.stdin) if x['labels']['node'] == 'fleet-2'][0]['labels']
print(a['alertname'], a['host'], a['cause'], a['verdict'], a['severity'])")
[ "$labels" = "KubeletNodeStatusTrouble fleet-2 api-unreachable persistent critical" ] || fail "labels: $labels"
count=$(amtool_alerts | /usr/bin/python3 -c "import json,sys; print(len([a for a in json.load(sys.stdin) if a['labels']['alertname'] == 'KubeletNodeStatusTrouble']))")
[ "$count" = 3 ] || fail "$count node alerts in Alertmanager for 3 nodes posted by 4 instances"
ok "Alertmanager holds 3 node alerts (each posted by its node, the collector's taken over by its endpoint alert), labels: $labels"
# The collector's endpoint incident, and whether its alert reached
# Alertmanager (recorded on it as alerted_at; it may be over by now).
ep_state() {
  ks_in collector kubelet-sentinel incidents --kind endpoint -o json | /usr/bin/python3 -c "
import json, sys
v = json.load(sys.stdin)['incidents']
print(len(v), ' '.join(sorted(v[0]['nodes'])) if v else '', 'posted' if v and v[0].get('alerted_at') else 'not-posted')"
}
one_outage() { [ "$(ep_state)" = "1 fleet-1 fleet-2 fleet-3 posted" ]; }
wait_until 40 one_outage || fail "the collector's endpoint incidents: $(ep_state); endpoint alerts in Alertmanager: '$(am_endpoints)'"
ok "the collector: one endpoint incident for 10.0.0.1:6443 naming the 3 nodes, its KubeletAPIEndpointDown alert posted"
beats=$(amtool_all | /usr/bin/python3 -c "import json,sys; print(' '.join(sorted(a['labels']['host'] for a in json.load(sys.stdin) if a['labels']['alertname'] == 'KubeletSentinelHeartbeat')))")
[ "$(echo "$beats" | wc -w)" = 4 ] || fail "heartbeats: '$beats' (one for each of the 4 instances' hosts)"
ok "a heartbeat from each instance ($beats), routed to the dead man's switch"

firing_mails() { grep -L '^Subject:.*RESOLVED' "$work/mail/new/"* 2>/dev/null | wc -l; }
has_mail() { [ "$(firing_mails)" -ge 1 ]; }
wait_until 40 has_mail || fail "no notification from Alertmanager"
sleep 6
[ "$(firing_mails)" -le 2 ] || fail "$(firing_mails) notifications for one outage (3 nodes, 4 instances)"
ok "one outage, $(firing_mails) grouped notification(s) from Alertmanager, not one per node and instance"

none_active() { ! any_active; }
wait_until 90 none_active || fail "alerts still active: $(am_nodes) $(am_endpoints)"
resolved_mail() { grep -l '^Subject:.*RESOLVED' "$work/mail/new/"* >/dev/null 2>&1; }
wait_until 30 resolved_mail || fail "no resolved notification"
ok "the incidents resolved on the nodes and the collector, and in Alertmanager (resolved notification sent)"

echo "$pass passed, 0 failed"
