#!/usr/bin/python3
"""S21: the service's memory with clients that ask for a large answer and
never read it.

A journal of INCIDENTS hosts whose status updates were refused three times
(written by systemd-journal-remote; host names of 300 bytes, as a
collector may see) makes `GET /incidents` large. N clients, as `nobody` in the socket's group (answers to root are not
bounded), each with a 4 KiB receive buffer, send `GET /incidents` and read
only the status line; then, while they hold, root's `status` is timed and
the service's RSS sampled for HOLD seconds. Prints one `key=value` line.
With `tcp`, the clients (any user: TCP is never root's) ask `/metrics` on
`metrics_listen` instead, with a 4 KiB receive buffer set before connecting,
and a scrape is timed too. Run as root; needs setpriv and the group
systemd-journal.

Usage: unread.py BINARY [INCIDENTS [N [HOLD [tcp]]]]
"""
import grp, os, socket, subprocess, sys, tempfile, time


def connect(where):
    """A socket to `unix:PATH` or `tcp:PORT`, with a 4 KiB receive buffer."""
    kind, addr = where.split(":", 1)
    s = socket.socket(socket.AF_UNIX if kind == "unix" else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(addr if kind == "unix" else ("127.0.0.1", int(addr)))
    return s


def clients(where, n):
    """The crowd (run as nobody): prints ok=… busy=… closed=…, then holds."""
    conns = []
    path = b"/incidents" if where.startswith("unix:") else b"/metrics"
    for _ in range(n):
        s = connect(where)
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        conns.append(s)
    count = {"ok": 0, "busy": 0, "closed": 0}
    for s in conns:
        s.settimeout(60)
        head = s.recv(12)
        key = "ok" if head.endswith(b" 200") else "busy" if head.endswith(b" 503") else "closed"
        count[key] += 1
    print(" ".join(f"{k}={v}" for k, v in count.items()), flush=True)
    sys.stdin.read()


def journal(path, hosts):
    """Export format into systemd-journal-remote: each host's kubelet
    could not update its node's status, three times, 2 s apart."""
    t0 = int(time.time() - 3600) * 1_000_000
    out = []
    for n in range(hosts):
        host = f"unread-{n:05}-" + "x" * 300
        for k in range(3):
            at = t0 + n * 1000 + k * 2_000_000
            klog = time.strftime("%m%d %H:%M:%S", time.gmtime(at // 1_000_000)) + f".{at % 1_000_000:06}"
            msg = (f'E{klog}    4242 kubelet_node_status.go:535] "Error updating node status, will retry" '
                   f'err="error getting node \\"{host}\\": dial tcp 10.0.0.1:6443: connect: connection refused"')
            out.append(f"__REALTIME_TIMESTAMP={at}\n_HOSTNAME={host}\n_SYSTEMD_UNIT=kubelet.service\n"
                       f"SYSLOG_IDENTIFIER=kubelet\n_PID=4242\nMESSAGE={msg}\n\n")
    tool = next(p for p in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
                if os.path.exists(p))
    subprocess.run([tool, f"--output={path}", "-"], input="".join(out).encode(), check=True,
                   stderr=subprocess.DEVNULL)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def main():
    binary = os.path.abspath(sys.argv[1])
    incidents = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    hold = float(sys.argv[4]) if len(sys.argv) > 4 else 10
    tcp = len(sys.argv) > 5 and sys.argv[5] == "tcp"
    port = 19000 + os.getpid() % 1000
    d = tempfile.mkdtemp(prefix="unread-")
    os.chmod(d, 0o755)
    os.mkdir(f"{d}/journals")
    journal(f"{d}/journals/remote-fleet.journal", incidents)
    cfg = f"{d}/config.toml"
    with open(cfg, "w") as f:
        f.write(f'[journal]\ndirectory = "{d}/journals"\nstart_at = "all"\n'
                f'[store]\npath = "{d}/store"\n[api]\nsocket = "{d}/q.sock"\n'
                + (f'metrics_listen = "127.0.0.1:{port}"\n' if tcp else ""))
    svc = subprocess.Popen([binary, "--config", cfg, "run"], stdout=subprocess.DEVNULL,
                           stderr=open(f"{d}/log", "w"))
    try:
        for _ in range(200):
            if os.path.exists(f"{d}/q.sock"):
                break
            time.sleep(0.1)
        # Caught up: every host's incident is in.
        while True:
            time.sleep(2)
            out = subprocess.run([binary, "--config", cfg, "incidents", "--limit", "0", "-o", "json"],
                                 capture_output=True).stdout
            if out.count(b'"node": "unread-') >= incidents:
                break
        time.sleep(2)
        before = rss_kib(svc.pid)
        gid = grp.getgrnam("systemd-journal").gr_gid
        where = f"tcp:{port}" if tcp else f"unix:{d}/q.sock"
        crowd = subprocess.Popen(
            ["setpriv", "--reuid=65534", "--regid=65534", f"--groups={gid}", "--",
             "/usr/bin/python3", os.path.abspath(__file__), "--clients", where, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        peak, end = before, time.time() + hold
        counts = None
        while time.time() < end or counts is None:
            peak = max(peak, rss_kib(svc.pid))
            if counts is None and crowd.poll() is None:
                import select
                if select.select([crowd.stdout], [], [], 0.2)[0]:
                    counts = crowd.stdout.readline().strip()
            else:
                time.sleep(0.2)
        def answer_mb():
            s = connect(where)
            s.settimeout(60)
            s.sendall(b"GET " + (b"/metrics" if tcp else b"/incidents") + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            got, head = 0, b""
            while b := s.recv(1 << 20):
                got, head = got + len(b), head or b[:12]
            return f"{got / 1e6:.1f} first={head.decode(errors='replace').replace(' ', '_')}"
        start = time.time()
        st = subprocess.run(["timeout", "30", binary, "--config", cfg, "status"],
                            stdout=subprocess.DEVNULL)
        took = time.time() - start
        peak = max(peak, rss_kib(svc.pid))
        scrape = time.time()
        answer = answer_mb()
        scrape = time.time() - scrape
        crowd.stdin.close()
        crowd.wait()
        print(f"incidents={incidents} answer_mb={answer} answer_s={scrape:.2f} clients={n} {counts} rss_before_mib={before >> 10} "
              f"rss_peak_mib={peak >> 10} status_s={took:.2f} status_exit={st.returncode}")
    finally:
        svc.terminate()
        svc.wait()
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    if sys.argv[1] == "--clients":
        clients(sys.argv[2], int(sys.argv[3]))
    else:
        main()
