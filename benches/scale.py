#!/usr/bin/env python3
"""Journal Export Format for `make bench-scale` (benches/scale.sh), on stdout.

  scale.py hosts N   N hosts, one lister-miss line each, 1 ms apart, dated
                     now-200 s (the many-hosts recipe of issue 27)
  scale.py outage N  N nodes, each its own host, 6 connection-refused
                     status retries against 10.0.0.1:6443, 1 s apart
                     (one endpoint lost by N nodes)
"""
import sys
import time
from datetime import datetime, timezone


def klog(at):
    t = datetime.fromtimestamp(at / 1e6, tz=timezone.utc)
    return t.strftime("%m%d %H:%M:%S.") + f"{at % 1_000_000:06d}"


def entry(out, at, host, msg):
    out.write(
        f"__REALTIME_TIMESTAMP={at}\n_HOSTNAME={host}\n_SYSTEMD_UNIT=kubelet.service\n"
        f"SYSLOG_IDENTIFIER=kubelet\n_UID=0\n_PID=4242\n_STREAM_ID={host}-kubelet\n"
        f"MESSAGE={msg}\n\n"
    )


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    out = sys.stdout
    t0 = (int(time.time()) - 200) * 1_000_000
    if kind == "hosts":
        for k in range(n):
            at = t0 + k * 1000
            h = f"h{k:06d}"
            msg = (
                f'E{klog(at)}    4242 kubelet_node_status.go:535] "Error updating node status, '
                f'will retry" err="error getting node \\"{h}\\": node \\"{h}\\" not found"'
            )
            entry(out, at, h, msg)
    elif kind == "outage":
        t0 -= 3600 * 1_000_000
        for r in range(6):
            for k in range(n):
                at = t0 + r * 1_000_000 + k * (1_000_000 // max(n, 1))
                h = f"node-{k:05d}"
                msg = (
                    f'E{klog(at)}    4242 kubelet_node_status.go:535] "Error updating node status, '
                    f'will retry" err="error getting node \\"{h}\\": Get '
                    f'\\"https://10.0.0.1:6443/api/v1/nodes/{h}?timeout=10s\\": dial tcp '
                    f'10.0.0.1:6443: connect: connection refused"'
                )
                entry(out, at, h, msg)
    else:
        sys.exit(f"unknown kind {kind}")


main()
