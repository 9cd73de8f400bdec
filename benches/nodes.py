#!/usr/bin/python3
"""Per-node state under a flood of node names (attack report S12): one host
writes N kubelet lines, each naming a node never seen before, into a private
journald namespace (never the default instance) while the service follows.

Prints one `key=value` line per measure: how long the service took to read
them, its CPU, peak and settled RSS, open and evicted incidents, the metric
series by node, the store's size and the bytes it wrote, then the same after
every incident resolved (resolve_after = RESOLVE seconds). Run as root.

Usage: nodes.py BINARY [N [RESOLVE]]
"""
import json, os, socket, subprocess, sys, time

from harness import Bench, free_port, wait_for

binary = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
resolve = int(sys.argv[3]) if len(sys.argv) > 3 else 20
bench = Bench("nodes")


def kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def written(pid):
    with open(f"/proc/{pid}/io") as f:
        return dict(l.split(": ") for l in f.read().splitlines()).get("write_bytes", "0")


def du(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def series(port):
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        body = b""
        while chunk := c.recv(65536):
            body += chunk
    return sum(1 for l in body.decode().splitlines()
               if l.startswith("kubelet_sentinel_node_status_retries_total{"))


try:
    sock_path = bench.journald()
    work = bench.work
    port = free_port()
    cfg = os.path.join(work, "config.toml")
    with open(cfg, "w") as f:
        f.write(f'[journal]\nnamespace = "{bench.name}"\nidentifiers = ["kubelet"]\nstart_at = "all"\n'
                f'[incidents]\nresolve_after = "{resolve}s"\n'
                f'[store]\npath = "{work}/store"\n[api]\nsocket = "{work}/q.sock"\n'
                f'metrics_listen = "127.0.0.1:{port}"\n')
    svc = bench.start([binary, "--config", cfg, "run"], stdout=subprocess.DEVNULL,
                      stderr=open(os.path.join(work, "log"), "w"))
    wait_for(lambda: os.path.exists(f"{work}/q.sock"), "the service")

    def status():
        out = subprocess.run([binary, "--config", cfg, "status", "-o", "json"], capture_output=True)
        return json.loads(out.stdout) if out.returncode in (0, 5) else {}

    base = status().get("entries", 0)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    t0 = time.monotonic()
    for i in range(n):
        node = f"flood-{i:06d}"
        msg = (f'E1201 10:00:00.000000    4242 kubelet_node_status.go:535] "Error updating node status, '
               f'will retry" err="error getting node \\"{node}\\": Get \\"https://10.0.0.1:6443/api/v1/nodes/'
               f'{node}?timeout=10s\\": dial tcp 10.0.0.1:6443: connect: connection refused"')
        s.sendto(f"MESSAGE={msg}\nSYSLOG_IDENTIFIER=kubelet\nPRIORITY=3\n".encode(), sock_path)
    wait_for(lambda: (status().get("entries", 0) - base >= n), "the lines to be read", timeout=1800)
    read_s = time.monotonic() - t0
    st = status()
    print(f"nodes={n}")
    print(f"read_seconds={read_s:.1f}")
    print(f"cpu_seconds={cpu_seconds(svc.pid):.1f}")
    print(f"peak_rss_mib={kib(svc.pid, 'VmHWM') / 1024:.0f}")
    print(f"rss_mib={kib(svc.pid, 'VmRSS') / 1024:.0f} (anonymous {kib(svc.pid, 'RssAnon') / 1024:.0f}, "
          f"files {kib(svc.pid, 'RssFile') / 1024:.0f})")
    print(f"open_incidents={st.get('open_incidents')}")
    print(f"evicted={st.get('evicted')}")
    print(f"series={series(port)}")
    print(f"store_mib={du(work + '/store') / 1048576:.1f}")
    print(f"written_mib={int(written(svc.pid)) / 1048576:.1f}")
    wait_for(lambda: status().get("open_incidents") == 0, "every incident to resolve", timeout=resolve * 10 + 60)
    time.sleep(2)
    print(f"after_resolve_rss_mib={kib(svc.pid, 'VmRSS') / 1024:.0f} (anonymous "
          f"{kib(svc.pid, 'RssAnon') / 1024:.0f})")
    if os.environ.get("SMAPS"):
        subprocess.run(["sh", "-c", f"sort -k2 -n -r /proc/{svc.pid}/smaps | head -0; "
                        f"awk '/^[0-9a-f]/{{m=$6}} /^Rss:/{{r[m]+=$2}} END{{for(k in r) print r[k], k}}' "
                        f"/proc/{svc.pid}/smaps | sort -n -r | head -8"])
    print(f"after_resolve_series={series(port)}")
    print(f"after_resolve_cpu_seconds={cpu_seconds(svc.pid):.1f}")
finally:
    bench.cleanup()
