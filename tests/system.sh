#!/usr/bin/env bash
# The system test on a real systemd: boots Debian 12 with systemd as PID 1 in
# a container (debootstrap + systemd-nspawn), installs the .deb with apt, and
# checks the service as an operator would, following the README's Install
# steps literally: the .deb starts it with the shipped config (mail off); the
# config is edited as the README says and the README's next commands run;
# the alert mail arrives. Then: Type=notify under DynamicUser with its
# sandboxing, queries through the socket for root and a systemd-journal
# member (and refused for others), a restart that keeps the history,
# `systemctl reload` of a broken config failing with the reason, a config
# error stopping the unit without a restart loop, `systemctl stop` during a
# delivery to a server that never answers, the live security score, purge.
# Cleans up also on failure.
# Usage: tests/system.sh path/to/kubelet-sentinel_*.deb   (as root)
set -euo pipefail
deb=$(readlink -f "$1")
. "$(dirname "$0")/container.sh"
cache=$KS_CACHE
root=$(mktemp -d /var/tmp/ks-system.XXXXXX)
nspawn_pid=""
cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    [ -n "${pid1:-}" ] && nsenter -t "$pid1" -a systemctl --no-block poweroff >/dev/null 2>&1 || true
    for _ in $(seq 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$nspawn_pid" 2>/dev/null || true
  fi
  umount -R "$root" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -n "${pid1:-}" ] && inside journalctl -u kubelet-sentinel --no-pager -n 40 >&2 || true; exit 1; }
pass=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
# grep -q stops reading at the first match; with pipefail the writer's SIGPIPE
# would fail the pipeline. has reads its input to the end.
has() { grep "$@" >/dev/null; }

# --- a Debian root with systemd, cached between runs (tests/container.sh) ----
ks_new_root "$root" || fail "debootstrap"
ok "Debian root ready"

# The stand-in kubelet: real kubelet lines from a unit named kubelet.service,
# so the entries carry a genuine _SYSTEMD_UNIT=kubelet.service.
cat > "$root/usr/local/bin/fake-kubelet" <<'SH'
#!/bin/sh
ts() { date -u +%m%d\ %H:%M:%S.%6N; }
echo "I$(ts)     777 kubelet_node_status.go:75] \"Successfully registered node\" node=\"sys-node\"" >&2
i=0
while [ $i -lt 12 ]; do
  echo "E$(ts)     777 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"sys-node\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/sys-node?timeout=10s\\\": dial tcp 10.0.0.1:6443: connect: connection refused\"" >&2
  i=$((i + 1))
  sleep 0.2
done
exec sleep infinity
SH
chmod 755 "$root/usr/local/bin/fake-kubelet"
cat > "$root/etc/systemd/system/kubelet.service" <<'UNIT'
[Unit]
Description=stand-in kubelet for the kubelet-sentinel system test
[Service]
ExecStart=/usr/local/bin/fake-kubelet
UNIT
cat > "$root/etc/systemd/system/smtp-test.service" <<'UNIT'
[Unit]
Description=SMTP server on loopback for the system test
[Service]
ExecStart=/usr/bin/python3 -m aiosmtpd -n -l 127.0.0.1:2525 -c aiosmtpd.handlers.Mailbox /var/mail/ks
UNIT
# A server that accepts and then never says a word (for the stop test).
cat > "$root/etc/systemd/system/smtp-silent.service" <<'UNIT'
[Unit]
Description=an SMTP server that never answers
[Service]
ExecStart=/usr/bin/python3 -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', 2526)); s.listen(8); c=[s.accept() for _ in range(8)]; time.sleep(3600)"
UNIT
cp "$deb" "$root/root/kubelet-sentinel.deb"

# --- boot it --------------------------------------------------------------------
systemd-nspawn -D "$root" --register=no --keep-unit -b -q >"$cache/nspawn.log" 2>&1 &
nspawn_pid=$!
pid1=""
for _ in $(seq 150); do
  pid1=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [ -n "$pid1" ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || { cat "$cache/nspawn.log"; fail "systemd-nspawn exited"; }
  sleep 0.2
done
[ -n "$pid1" ] || fail "no systemd in the container"
inside() { nsenter -t "$pid1" -a "$@"; }
state=""
for _ in $(seq 150); do
  state=$(inside systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.2
done
echo "   container systemd: $state"
ok "systemd booted inside the container (PID $pid1 on the host)"

inside systemctl start smtp-test.service kubelet.service
# --- the README's Install section, step by step ---------------------------------
# apt-get install ./kubelet-sentinel_*.deb: it starts with the shipped config
# (mail off) and records the outage the stand-in kubelet is in.
inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/kubelet-sentinel.deb >"$cache/apt.log" 2>&1 \
  || { tail -20 "$cache/apt.log"; fail "apt-get install ./kubelet-sentinel.deb"; }
for _ in $(seq 100); do [ "$(inside systemctl is-active kubelet-sentinel)" = active ] && break; sleep 0.2; done
for _ in $(seq 100); do
  inside kubelet-sentinel incidents -o json 2>/dev/null | has '"retries": 12' && break; sleep 0.2
done
inside kubelet-sentinel incidents -o json | has '"retries": 12' || fail "the outage was not recorded before mail was configured"
inside kubelet-sentinel status | has '^mail  *disabled' || fail "status does not say mail is off: $(inside kubelet-sentinel status)"
# editor /etc/kubelet-sentinel/config.toml: uncomment and set [alert] to and
# [alert.smtp] (the README names these keys).
inside sed -i -e 's|^#to = \[\]|to = ["oncall@example.com"]|' -e 's|^#host = "localhost"|host = "127.0.0.1"|' \
  -e 's|^#port = 25|port = 2525|' -e 's|^#tls = "starttls"|tls = "none"|' /etc/kubelet-sentinel/config.toml
inside grep -q '^to = \["oncall@example.com"\]' /etc/kubelet-sentinel/config.toml || fail "the README's edit did not apply"
# kubelet-sentinel check-config && kubelet-sentinel test-email
inside kubelet-sentinel check-config >/dev/null || fail "check-config: $(inside kubelet-sentinel check-config 2>&1 | tail -3)"
inside kubelet-sentinel test-email | has 'test alert sent' || fail "test-email"
# systemctl enable --now kubelet-sentinel; systemctl restart kubelet-sentinel
inside systemctl enable --now kubelet-sentinel >/dev/null 2>&1 || fail "systemctl enable --now"
inside systemctl restart kubelet-sentinel || fail "systemctl restart: $(inside journalctl -u kubelet-sentinel -n 5 --no-pager)"
# kubelet-sentinel status
inside kubelet-sentinel status | has '^mail  *enabled' || fail "status after the README's steps: $(inside kubelet-sentinel status)"
[ "$(inside systemctl show -p Type --value kubelet-sentinel)" = notify ] || fail "Type"
[ "$(inside systemctl show -p ActiveState,SubState --value kubelet-sentinel | paste -sd' ')" = "active running" ] \
  || fail "kubelet-sentinel is $(inside systemctl show -p ActiveState,SubState --value kubelet-sentinel | paste -sd' ')"
[ "$(inside systemctl show -p DynamicUser --value kubelet-sentinel)" = yes ] || fail "DynamicUser"
mainpid=$(inside systemctl show -p MainPID --value kubelet-sentinel)
inside grep -q '^Groups:.*' "/proc/$mainpid/status"
ok "active (running) through Type=notify, DynamicUser, sandboxed; started without an smtp-password credential file"

# --- the alert arrives: the outage that was recorded while mail was off is ----
# announced once mail is on (after the group_wait of 30 s).
for _ in $(seq 300); do
  inside sh -c 'grep -lh "^Subject:.*sys-node: .* node status retries" /var/mail/ks/new/* 2>/dev/null' | has . && break
  sleep 0.2
done
inside sh -c 'grep -h "^Subject:" /var/mail/ks/new/*' | has 'sys-node: .* node status retries' \
  || fail "no alert mail for sys-node after following the README: $(inside sh -c 'grep -h "^Subject:" /var/mail/ks/new/*')"
ok "following the README, the alert mail arrived: $(inside sh -c 'grep -h "^Subject:.*sys-node" /var/mail/ks/new/* | head -1')"

# --- queries through the socket -------------------------------------------------
inside kubelet-sentinel status -o json | has '"service": "running"' || fail "root's status did not come through the socket"
inside kubelet-sentinel incidents -o json | has '"node": "sys-node"' || fail "root's incidents"
inside useradd -M -G systemd-journal alice
inside useradd -M bob
inside runuser -u alice -- kubelet-sentinel status -o json | has '"service": "running"' || fail "alice (systemd-journal) cannot query"
if err=$(inside runuser -u bob -- kubelet-sentinel incidents 2>&1); then fail "bob (not inside systemd-journal) could query"; fi
echo "$err" | has 'permission denied on the query socket' || fail "bob's refusal says: $err"
ok "incidents through the socket: root and a systemd-journal member yes, others refused ($err)"

# --- restart keeps the history, counts nothing twice ----------------------------
for _ in $(seq 100); do
  r=$(inside kubelet-sentinel incidents -o json | grep -o '"retries": [0-9]*' | head -1 | grep -o '[0-9]*$')
  [ "$r" = 12 ] && break; sleep 0.2
done
[ "$r" = 12 ] || fail "retries before restart: $r"
before=$(inside kubelet-sentinel incidents -o json | grep -vE '"(alerted_at|diagnosis)"')
inside systemctl restart kubelet-sentinel
for _ in $(seq 100); do inside kubelet-sentinel status -o json 2>/dev/null | has '"caught_up": true' && break; sleep 0.2; done
after=$(inside kubelet-sentinel incidents -o json | grep -vE '"(alerted_at|diagnosis)"')
[ "$before" = "$after" ] || fail "history changed across the restart: $(diff <(echo "$before") <(echo "$after"))"
ok "systemctl restart keeps the history and counts nothing twice (12 retries)"

# --- an upgrade (a reinstall of the package) restarts it on the new binary ------
pid_before=$(inside systemctl show -p MainPID --value kubelet-sentinel)
inside env DEBIAN_FRONTEND=noninteractive dpkg -i /root/kubelet-sentinel.deb >"$cache/apt.log" 2>&1 \
  || { tail -20 "$cache/apt.log"; fail "dpkg -i of the package again (an upgrade to the same version)"; }
for _ in $(seq 100); do [ "$(inside systemctl is-active kubelet-sentinel)" = active ] && break; sleep 0.2; done
pid_after=$(inside systemctl show -p MainPID --value kubelet-sentinel)
[ "$(inside systemctl is-active kubelet-sentinel)" = active ] && [ "$pid_after" != "$pid_before" ] \
  || fail "after a reinstall: $(inside systemctl is-active kubelet-sentinel), MainPID $pid_before -> $pid_after"
[ "$(inside systemctl is-enabled kubelet-sentinel)" = enabled ] || fail "not enabled after a reinstall"
for _ in $(seq 100); do inside kubelet-sentinel status -o json 2>/dev/null | has '"caught_up": true' && break; sleep 0.2; done
after=$(inside kubelet-sentinel incidents -o json | grep -vE '"(alerted_at|diagnosis)"')
[ "$before" = "$after" ] || fail "history changed across the upgrade: $(diff <(echo "$before") <(echo "$after"))"
ok "an upgrade (dpkg -i of the package again) restarts the enabled service on the new binary (MainPID $pid_before -> $pid_after), history kept"

# --- sd_notify: STATUS= and watchdog pings from the main loop -----------------
for _ in $(seq 50); do
  inside systemctl show -p StatusText --value kubelet-sentinel | has '^following the system journal' && break
  sleep 0.1
done
inside systemctl show -p StatusText --value kubelet-sentinel | has '^following the system journal' \
  || fail "StatusText: $(inside systemctl show -p StatusText --value kubelet-sentinel)"
inside mkdir -p /etc/systemd/system/kubelet-sentinel.service.d
printf '[Service]\nWatchdogSec=2s\n' | inside tee /etc/systemd/system/kubelet-sentinel.service.d/watchdog.conf >/dev/null
inside systemctl daemon-reload
inside systemctl restart kubelet-sentinel
w1=$(inside systemctl show -p WatchdogTimestampMonotonic --value kubelet-sentinel)
sleep 5
w2=$(inside systemctl show -p WatchdogTimestampMonotonic --value kubelet-sentinel)
[ "$(inside systemctl is-active kubelet-sentinel)" = active ] || fail "killed by its 2 s watchdog"
[ "${w2:-0}" -gt "${w1:-0}" ] || fail "no watchdog ping in 5 s ($w1 -> $w2)"
inside rm -rf /etc/systemd/system/kubelet-sentinel.service.d
inside systemctl daemon-reload
ok "STATUS= reaches systemctl; with WatchdogSec=2s it pings and stays up ($(inside systemctl show -p StatusText --value kubelet-sentinel))"

# --- systemctl reload of a broken config fails and says why -------------------
inside cp /etc/kubelet-sentinel/config.toml /root/config.good
echo 'repeat_intervall = "4h"' | inside tee -a /etc/kubelet-sentinel/config.toml >/dev/null
if inside systemctl reload kubelet-sentinel 2>/dev/null; then fail "systemctl reload of a broken config succeeded"; fi
# journald takes ExecReload's output over a stream: it may land a moment later.
for _ in $(seq 50); do
  inside journalctl -u kubelet-sentinel --no-pager -n 30 | has "unknown field .repeat_intervall." && break
  sleep 0.1
done
inside journalctl -u kubelet-sentinel --no-pager -n 30 | has "unknown field .repeat_intervall." \
  || fail "the reload's reason is not in the journal: $(inside journalctl -u kubelet-sentinel --no-pager -n 10)"
[ "$(inside systemctl is-active kubelet-sentinel)" = active ] || fail "a refused reload stopped the service"
ok "systemctl reload of a broken config fails, says why, and the service keeps running"

# --- a config error at start: failed, no restart loop, reason in systemctl status
inside systemctl restart kubelet-sentinel 2>/dev/null || true
for _ in $(seq 50); do [ "$(inside systemctl is-failed kubelet-sentinel)" = failed ] && break; sleep 0.2; done
sleep 6 # longer than RestartSec: a restart loop would show now
[ "$(inside systemctl is-failed kubelet-sentinel)" = failed ] || fail "not failed with a broken config: $(inside systemctl is-active kubelet-sentinel)"
[ "$(inside systemctl show -p NRestarts --value kubelet-sentinel)" = 0 ] || fail "restart loop: NRestarts=$(inside systemctl show -p NRestarts --value kubelet-sentinel)"
st=$(inside systemctl status kubelet-sentinel --no-pager -l -n 5 2>&1 || true)
echo "$st" | has "config error: .*unknown field .repeat_intervall." \
  || fail "systemctl status does not show the config error: $st"
inside cp /root/config.good /etc/kubelet-sentinel/config.toml
inside systemctl reset-failed kubelet-sentinel
inside systemctl start kubelet-sentinel
for _ in $(seq 100); do [ "$(inside systemctl is-active kubelet-sentinel)" = active ] && break; sleep 0.2; done
ok "a config error stops the unit (exit 78, no restart loop) with the error in systemctl status"

# --- the SMTP password arrives as a credential, never in the config ------------
# A username with no password anywhere: mail is off, and the reason never
# says a password file exists (the service cannot look into the root-only
# credentials directory), before or after the restart it recommends.
inside sed -i 's|^#username = ""|username = "alerts"|' /etc/kubelet-sentinel/config.toml
inside grep -q '^username = "alerts"' /etc/kubelet-sentinel/config.toml || fail "the username edit did not apply"
[ -z "$(inside ls -A /etc/kubelet-sentinel/credentials)" ] || fail "credentials/ is not empty"
for round in before-restart after-restart; do
  inside systemctl restart kubelet-sentinel
  for _ in $(seq 50); do (inside kubelet-sentinel status || true) | has '^mail  *disabled' && break; sleep 0.2; done
  st=$(inside kubelet-sentinel status 2>&1 || true)
  echo "$st" | has '^mail  *disabled.*none loaded' || fail "status with a username and no password ($round): $st"
  echo "$st$(inside systemctl show -p StatusText --value kubelet-sentinel)" | has 'exists\|created after' \
    && fail "status claims a password file that does not exist ($round): $st"
done
ok "a username with no password: mail disabled, 'none loaded' with what to do, no file claimed to exist (also after the restart)"
inside sh -c 'umask 077; echo s3cret > /etc/kubelet-sentinel/credentials/password'
inside systemctl restart kubelet-sentinel
[ "$(inside systemctl is-active kubelet-sentinel)" = active ] || fail "not active with a password credential"
inside ls /run/credentials/kubelet-sentinel.service/ | has -x smtp_password || fail "no smtp_password credential"
(inside kubelet-sentinel status || true) | has '^mail  *enabled' || fail "the password credential did not enable mail: $(inside kubelet-sentinel status)"
inside sed -i 's|^username = "alerts"|#username = ""|' /etc/kubelet-sentinel/config.toml
inside systemctl restart kubelet-sentinel
ok "credentials/password is loaded as the credential smtp_password"

# --- systemctl stop during a delivery to a server that never answers ------------
inside systemctl start smtp-silent.service
for _ in $(seq 50); do inside sh -c 'exec 3<>/dev/tcp/127.0.0.1/2526' 2>/dev/null && break; sleep 0.2; done
inside sed -i -e 's|^port = 2525|port = 2526|' -e 's|^#timeout = "30s"|timeout = "60s"|' -e 's|^#group_wait = "30s"|group_wait = "0s"|' /etc/kubelet-sentinel/config.toml
inside systemctl reload kubelet-sentinel || fail "reload to the silent server"
inside systemctl restart kubelet.service   # a new outage: a new alert, sent to the silent server
for _ in $(seq 200); do
  inside kubelet-sentinel status -o json | has '"outbox": [1-9]' && break; sleep 0.2
done
sleep 2 # the delivery is now waiting for the server's greeting (60 s steps)
t0=$(date +%s%N)
inside systemctl stop kubelet-sentinel
t1=$(date +%s%N)
took=$(( (t1 - t0) / 1000000 ))
[ "$took" -lt 10000 ] || fail "systemctl stop took ${took} ms"
[ "$(inside systemctl show -p Result --value kubelet-sentinel)" = success ] || fail "stopped with $(inside systemctl show -p Result --value kubelet-sentinel)"
ok "systemctl stop during a delivery to a silent server: ${took} ms, clean"
inside systemctl stop smtp-silent.service
inside cp /root/config.good /etc/kubelet-sentinel/config.toml
inside systemctl start kubelet-sentinel

# --- a kubelet that dies at start, under systemd's own restarts ------------------
# The stand-in prints the kubelet's fatal line and exits 1; systemd restarts it
# every second. The incident is kubelet-down, crash-loop, cause swap, and its
# mail names the cause and the restarts.
cat > "$root/usr/local/bin/crash-kubelet" <<'SH'
#!/bin/sh
echo "E$(date -u +%m%d\ %H:%M:%S.%6N)     778 run.go:72] \"command failed\" err=\"failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename Type Size Used Priority /swapfile file 4194300 0 -2]\"" >&2
exit 1
SH
chmod 755 "$root/usr/local/bin/crash-kubelet"
inside systemctl stop kubelet.service
inside mkdir -p /etc/systemd/system/kubelet.service.d
printf '[Unit]\nStartLimitIntervalSec=0\n[Service]\nExecStart=\nExecStart=/usr/local/bin/crash-kubelet\nRestart=always\nRestartSec=1\n' \
  | inside tee /etc/systemd/system/kubelet.service.d/crash.conf >/dev/null
inside systemctl daemon-reload
inside systemctl start kubelet.service || true
# Each mail's subject, unfolded (a long one goes on over header lines).
subjects() {
  inside sh -c 'for f in /var/mail/ks/new/*; do awk '"'"'/^Subject:/ {s=$0; while ((getline l) > 0 && l ~ /^[ \t]/) {sub(/^[ \t]+/, " ", l); s=s l}; print s; exit}'"'"' "$f"; done' 2>/dev/null
}
down_mail() { subjects | grep 'kubelet crash-looping' | head -1; }
for _ in $(seq 450); do [ -n "$(down_mail)" ] && break; sleep 0.2; done
[ -n "$(down_mail)" ] || fail "no kubelet-down mail: $(inside sh -c 'grep -h "^Subject:" /var/mail/ks/new/*') $(inside kubelet-sentinel incidents 2>&1)"
down=$(inside kubelet-sentinel incidents -o json --kind kubelet-down)
echo "$down" | has '"cause": "swap"' && echo "$down" | has '"verdict": "crash-loop"' \
  || fail "the kubelet-down incident: $down"
down_mail | has '(swap)' || fail "the mail's subject: $(down_mail)"
ok "a crash-looping kubelet (exit 1 every second under Restart=always) is kubelet-down, crash-loop, swap: $(down_mail)"

# systemd gives up (StartLimitBurst runs out): failed, mailed at once.
printf '[Unit]\nStartLimitIntervalSec=60\nStartLimitBurst=3\n[Service]\nExecStart=\nExecStart=/usr/local/bin/crash-kubelet\nRestart=always\nRestartSec=1\n' \
  | inside tee /etc/systemd/system/kubelet.service.d/crash.conf >/dev/null
inside systemctl daemon-reload
inside systemctl reset-failed kubelet.service
inside systemctl restart kubelet.service || true
failed_mail() { subjects | grep 'kubelet failed, systemd gave up' | head -1; }
for _ in $(seq 450); do [ -n "$(failed_mail)" ] && break; sleep 0.2; done
[ -n "$(failed_mail)" ] || fail "no mail for the unit systemd gave up on: $(inside systemctl is-failed kubelet.service) $(inside kubelet-sentinel incidents --kind kubelet-down 2>&1)"
inside kubelet-sentinel incidents -o json --kind kubelet-down | has '"verdict": "failed"' \
  || fail "no failed verdict: $(inside kubelet-sentinel incidents --kind kubelet-down)"
ok "StartLimitBurst running out: the kubelet-down incident is failed and mailed ($(failed_mail))"

# A healthy kubelet stopped on purpose (systemctl stop) opens nothing.
inside rm -f /etc/systemd/system/kubelet.service.d/crash.conf
printf '[Service]\nExecStart=\nExecStart=/bin/sleep infinity\n' | inside tee /etc/systemd/system/kubelet.service.d/healthy.conf >/dev/null
inside systemctl daemon-reload
inside systemctl reset-failed kubelet.service
inside systemctl start kubelet.service
sleep 2
before=$(inside kubelet-sentinel incidents -o json --kind kubelet-down --limit 0 | grep -c '"id"')
inside systemctl stop kubelet.service
sleep 3
after=$(inside kubelet-sentinel incidents -o json --kind kubelet-down --limit 0 | grep -c '"id"')
[ "$before" = "$after" ] || fail "a requested stop opened an incident ($before -> $after): $(inside kubelet-sentinel incidents --kind kubelet-down)"
inside kubelet-sentinel incidents -o json --kind kubelet-down --status open | has '"id"' \
  && fail "a kubelet-down incident is still open after the requested stop: $(inside kubelet-sentinel incidents --kind kubelet-down)"
inside rm -rf /etc/systemd/system/kubelet.service.d
inside systemctl daemon-reload
ok "systemctl stop of a healthy kubelet opens nothing (and ends what was open)"

# --- not ready while the kubelet runs (issue 25), explained by containerd (26) ---
# With [alert] not_ready_after = "10s" and group_wait = "0s": a kubelet that
# says the CNI is not ready for 6 s after its start and then that the node
# became ready is the start-up race, not mailed; one that says it every 5 s
# past 10 s is mailed (cause cni); containerd.service (a shell loop) stopped
# with systemctl, then the kubelet saying the runtime is down past 10 s, is
# mailed with the stop named.
nr_t0=$(date +%s)
cat > "$root/usr/local/bin/nr-kubelet" <<'SH'
#!/bin/sh
ts() { date -u +%m%d\ %H:%M:%S.%6N; }
cni='"Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"'
case "$(cat /etc/nr-mode)" in
race)
  # A start: its version, its registration, the CNI late, Ready.
  echo "I$(ts)     779 server.go:484] \"Kubelet version\" kubeletVersion=\"v1.31.2\"" >&2
  echo "I$(ts)     779 kubelet_node_status.go:72] \"Attempting to register node\" node=\"$(hostname)\"" >&2
  sleep 1
  echo "I$(ts)     779 kubelet_node_status.go:75] \"Successfully registered node\" node=\"$(hostname)\"" >&2
  for i in 1 2 3 4; do echo "E$(ts)     779 kubelet.go:2862] $cni" >&2; sleep 2; done
  echo "I$(ts)     779 kubelet_node_status.go:493] \"Fast updating node status as it just became ready\"" >&2 ;;
cni)
  while :; do echo "E$(ts)     779 kubelet.go:2862] $cni" >&2; sleep 5; done ;;
sandbox)
  # Ready, then three pods whose sandboxes fail every 2 s: the subnet is
  # out of addresses (issue 38). No container start line (--v below 2).
  echo "I$(ts)     779 kubelet_node_status.go:493] \"Fast updating node status as it just became ready\"" >&2
  while :; do
    for p in web-1 web-2 web-3; do
      echo "E$(ts)     779 kuberuntime_manager.go:1166] \"CreatePodSandbox for pod failed\" err=\"rpc error: code = Unknown desc = failed to setup network for sandbox \\\"0123456789ab\\\": plugin type=\\\"aws-cni\\\" name=\\\"aws-cni\\\" failed (add): add cmd: failed to assign an IP address to container\" pod=\"default/$p\"" >&2
    done
    sleep 2
  done ;;
runtime)
  while :; do
    echo "E$(ts)     779 kubelet.go:2386] \"Skipping pod synchronization\" err=\"container runtime is down\"" >&2
    echo "E$(ts)     779 kubelet.go:2853] \"Container runtime not ready\" runtimeReady=\"RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready\"" >&2
    sleep 2
  done ;;
esac
exec sleep infinity
SH
chmod 755 "$root/usr/local/bin/nr-kubelet"
printf '[Unit]\nDescription=stand-in containerd for the kubelet-sentinel system test\n[Service]\nExecStart=/bin/sh -c "echo containerd successfully booted; while :; do sleep 1; done"\n' \
  | inside tee /etc/systemd/system/containerd.service >/dev/null
inside mkdir -p /etc/systemd/system/kubelet.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/nr-kubelet\n' | inside tee /etc/systemd/system/kubelet.service.d/nr.conf >/dev/null
inside systemctl daemon-reload
inside systemctl start containerd.service
inside sed -i -e 's|^#not_ready_after = "3m"|not_ready_after = "10s"|' -e 's|^#sandbox_after = "5m"|sandbox_after = "10s"|' -e 's|^#group_wait = "30s"|group_wait = "0s"|' /etc/kubelet-sentinel/config.toml
inside grep -q '^not_ready_after = "10s"' /etc/kubelet-sentinel/config.toml || fail "the not_ready_after edit did not apply"
inside systemctl restart kubelet-sentinel
# The not-ready incidents, one a line: status verdict cause alerted.
not_ready() {
  inside kubelet-sentinel incidents -o json --kind not-ready --limit 0 | python3 -c '
import json, sys
for i in json.load(sys.stdin)["incidents"]:
    print(i["status"], i["verdict"], i["cause"], "alerted" if i.get("alerted_at") else "not-alerted")'
}
# Each not-ready alert's subject and text (MIME and quoted-printable undone).
nr_mails() {
  inside python3 -c '
import email, email.policy, glob
for f in sorted(glob.glob("/var/mail/ks/new/*")):
    m = email.message_from_binary_file(open(f, "rb"), policy=email.policy.default)
    s = " ".join(str(m["subject"]).split())
    if ": not ready for " in s and "while its kubelet runs" in s:
        b = m.get_body(("plain",))
        print("SUBJECT", s)
        print(b.get_content() if b else "")'
}
echo race | inside tee /etc/nr-mode >/dev/null
inside systemctl start kubelet.service
for _ in $(seq 100); do not_ready | has '^resolved startup-race cni' && break; sleep 0.2; done
not_ready | has '^resolved startup-race cni not-alerted' || fail "the start-up race: $(not_ready)"
# Its start, as the README's `kubelet-sentinel starts` shows it: Ready, its
# phases init, register, network and ready, the race listed on it.
start_of_race=$(inside kubelet-sentinel starts -o json --verdict ready | python3 -c '
import json, sys
for s in json.load(sys.stdin)["starts"]:
    phases = [p["phase"] for p in s["phases"]]
    if s["kubelet_version"] == "v1.31.2" and phases == ["init", "register", "network", "ready"] and s["incidents"]:
        print(s["time_to_ready_ms"], s["slowest"])
        break')
[ -n "$start_of_race" ] || fail "no start with its phases: $(inside kubelet-sentinel starts 2>&1)"
inside kubelet-sentinel starts --utc | has 'slowest phase most often' || fail "starts shows no fleet line: $(inside kubelet-sentinel starts 2>&1)"
# The same as journal events (README, "Incidents and starts as journal
# events"): the start and the race's incident, with their fields, and the
# catalog's words for `journalctl -x`.
start_event=$(inside journalctl -o json --no-pager MESSAGE_ID=41390a88e37e4dad8ea9e7befff580cb | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("KUBELET_SENTINEL_VERDICT") == "ready" and e.get("KUBELET_SENTINEL_SLOWEST") and e.get("SYSLOG_IDENTIFIER") == "kubelet-sentinel":
        print(e["KUBELET_SENTINEL_NODE"], e["KUBELET_SENTINEL_TIME_TO_READY_MS"], e["KUBELET_SENTINEL_KUBELET_VERSION"])')
[ -n "$start_event" ] || fail "no start event: $(inside journalctl -o json --no-pager SYSLOG_IDENTIFIER=kubelet-sentinel | tail -5)"
inside journalctl -o json --no-pager MESSAGE_ID=aea17aef24704ef7876e52c35c89e46b KUBELET_SENTINEL_KIND=not-ready | has '"KUBELET_SENTINEL_INCIDENT"' \
  || fail "no opened event for the race's not-ready incident"
inside journalctl -x --no-pager MESSAGE_ID=41390a88e37e4dad8ea9e7befff580cb | has 'kubelet-sentinel starts --node' \
  || fail "journalctl -x has no catalog text for the start event: $(inside journalctl -x --no-pager MESSAGE_ID=41390a88e37e4dad8ea9e7befff580cb | tail -8)"
inside systemctl stop kubelet.service
echo cni | inside tee /etc/nr-mode >/dev/null
inside systemctl start kubelet.service
for _ in $(seq 150); do nr_mails | has '^SUBJECT.*(cni)' && break; sleep 0.2; done
nr_mails | has '^SUBJECT.*(cni)' || fail "no mail for the CNI not ready past not_ready_after: $(not_ready) $(subjects)"
cni_mail=$(nr_mails | grep '^SUBJECT.*(cni)' | head -1)
inside systemctl stop kubelet.service
for _ in $(seq 50); do not_ready | has '^open' || break; sleep 0.2; done
not_ready | has '^open' && fail "a requested stop left the not-ready incident open: $(not_ready)"
inside systemctl stop containerd.service
echo runtime | inside tee /etc/nr-mode >/dev/null
inside systemctl start kubelet.service
for _ in $(seq 150); do nr_mails | has '^SUBJECT.*(runtime)' && break; sleep 0.2; done
nr_mails | has '^SUBJECT.*(runtime)' || fail "no mail for the runtime down past not_ready_after: $(not_ready) $(subjects)"
runtime_mail=$(nr_mails | sed -n '/^SUBJECT.*(runtime)/,/^SUBJECT/p')
echo "$runtime_mail" | has 'containerd.service was stopped on request' \
  || fail "the runtime mail does not name the containerd stop: $runtime_mail"
inside systemctl stop kubelet.service
# The race never mailed: the one CNI alert is the persistent one's.
[ "$(nr_mails | grep -c '^SUBJECT.*(cni)')" = 1 ] || fail "CNI alerts: $(nr_mails | grep '^SUBJECT')"
not_ready | has 'startup-race cni not-alerted' || fail "the race was alerted: $(not_ready)"
# A Ready node whose pods' sandboxes keep failing past sandbox_after (10 s
# here): one pod-sandbox incident, persistent, ip-exhausted, three pods,
# mailed (issue 38).
for _ in $(seq 50); do not_ready | has '^open' || break; sleep 0.2; done
echo sandbox | inside tee /etc/nr-mode >/dev/null
inside systemctl start kubelet.service
sandbox_mail() { subjects | grep 'Ready but 3 pods cannot start' | head -1; }
for _ in $(seq 200); do [ -n "$(sandbox_mail)" ] && break; sleep 0.2; done
[ -n "$(sandbox_mail)" ] || fail "no pod-sandbox mail: $(inside kubelet-sentinel incidents --kind pod-sandbox 2>&1) $(subjects)"
sandbox_mail | has '(ip-exhausted)' || fail "the pod-sandbox mail's subject: $(sandbox_mail)"
inside kubelet-sentinel incidents -o json --kind pod-sandbox | python3 -c '
import json, sys
i = json.load(sys.stdin)["incidents"][0]
assert (i["verdict"], i["cause"], i["pods_failed"]) == ("persistent", "ip-exhausted", 3), i
assert i["alerted_at"], i' || fail "the pod-sandbox incident: $(inside kubelet-sentinel incidents -o json --kind pod-sandbox)"
inside systemctl stop kubelet.service
ok "a Ready node whose three pods' sandboxes fail past sandbox_after: pod-sandbox, persistent, ip-exhausted, mailed ($(sandbox_mail))"
inside rm -rf /etc/systemd/system/kubelet.service.d
inside systemctl daemon-reload
ok "not ready while the kubelet runs: the 6 s start-up race not mailed (its start: $start_of_race; its event: $start_event); the CNI past not_ready_after mailed ($cni_mail); containerd stopped, runtime down, its mail names the stop ($(( $(date +%s) - nr_t0 )) s)"

# --- the live security score agrees with the offline one ------------------------
live=$(inside systemd-analyze security --no-pager kubelet-sentinel 2>&1 | grep -oE 'Overall exposure level for kubelet-sentinel.service: [0-9.]+' | grep -oE '[0-9.]+$')
offline=$(systemd-analyze security --offline=yes --no-pager "$root/usr/lib/systemd/system/kubelet-sentinel.service" 2>&1 | grep -oE 'Overall exposure level for kubelet-sentinel.service: [0-9.]+' | grep -oE '[0-9.]+$')
[ -n "$live" ] && [ "$live" = "$offline" ] || fail "live score $live, offline $offline"
ok "systemd-analyze security: live $live = offline $offline"

# --- purge stops and removes it -------------------------------------------------
inside env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q kubelet-sentinel >"$cache/purge.log" 2>&1 || fail "apt-get purge"
[ "$(inside systemctl is-active kubelet-sentinel 2>/dev/null)" != active ] || fail "still active after purge"
for f in /usr/bin/kubelet-sentinel /etc/kubelet-sentinel /usr/lib/systemd/system/kubelet-sentinel.service /var/lib/private/kubelet-sentinel; do
  inside test ! -e "$f" || fail "$f left after purge"
done
ok "apt-get purge stops and removes it"

echo "$pass passed, 0 failed"
