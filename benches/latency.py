#!/usr/bin/python3
"""Alert latency: a kubelet line written to a journald namespace until the
mail is accepted by a loopback aiosmtpd, with group_wait = 0.

Starts its own systemd-journald (a private namespace, never the default
instance), aiosmtpd (Maildir) and kubelet-sentinel; each round writes 6
refused status updates for a new node (the 6th crosses the threshold of 5)
and times from just before the 6th write until the mail file appears.
Prints p50, p99 and max in ms. Run as root.

Usage: latency.py BINARY [ROUNDS]
"""
import datetime, json, os, socket, statistics, subprocess, sys, time

from harness import Bench, wait_for

binary = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
bench = Bench("latency")
name, work = bench.name, bench.work

try:
    sock_path = bench.journald()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    def send(msg):
        sock.sendto(f"MESSAGE={msg}\nSYSLOG_IDENTIFIER=kubelet\n".encode(), sock_path)
    send("I0101 00:00:00.000000 1 bench.go:1] \"start\"")
    port, maildir = bench.smtpd()
    cfg = os.path.join(work, "config.toml")
    with open(cfg, "w") as f:
        f.write(f'[journal]\nnamespace = "{name}"\nidentifiers = ["kubelet"]\nstart_at = "all"\n'
                f'[incidents]\nresolve_after = "1h"\n[store]\npath = "{work}/store"\n[api]\nsocket = "{work}/q.sock"\n'
                f'[alert]\nto = ["oncall@example.com"]\ngroup_wait = "0s"\n'
                f'[alert.smtp]\nhost = "127.0.0.1"\nport = {port}\ntls = "none"\n')
    log = open(os.path.join(work, "service.log"), "w")
    bench.start([binary, "--config", cfg, "run"], stdout=subprocess.DEVNULL, stderr=log)
    wait_for(lambda: os.path.exists(f"{work}/q.sock"), "the service")
    newdir = os.path.join(maildir, "new")
    def mails():
        try:
            return len(os.listdir(newdir))
        except FileNotFoundError:
            return 0
    latencies = []
    for i in range(rounds):
        node = f"lat-{i}"
        def line():
            t = datetime.datetime.utcnow().strftime("%m%d %H:%M:%S.%f")
            return (f'E{t}    4242 kubelet_node_status.go:535] "Error updating node status, will retry" '
                    f'err="error getting node \\"{node}\\": dial tcp 10.0.0.1:6443: connect: connection refused"')
        for _ in range(5):
            send(line())
        before = mails()
        t0 = time.monotonic()
        send(line())
        while mails() == before:
            if time.monotonic() - t0 > 10:
                raise SystemExit(f"round {i}: no mail within 10 s")
            time.sleep(0.0005)
        latencies.append((time.monotonic() - t0) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    st = json.loads(subprocess.run([binary, "--config", cfg, "status", "-o", "json"], check=True,
                                   capture_output=True).stdout)
    per = st["store_bytes"] / max(1, st["incidents"])
    print(f"alerts={len(latencies)} p50_ms={p50:.1f} p99_ms={p99:.1f} max_ms={latencies[-1]:.1f} "
          f"store_bytes_per_incident_live={per:.0f}")
finally:
    bench.cleanup()
