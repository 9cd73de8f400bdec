#!/usr/bin/python3
"""The service's own costs, measured on the release binary:

- idle: wakeups a second (voluntary context switches over all threads) and
  CPU while following a quiet journal for IDLE_SECONDS (30);
- a /metrics scrape and a `status` query with 10 and with 100 000 incidents
  in the store (the store made by examples/gen_store.rs): medians of 50.

Starts its own systemd-journald (a private namespace, never the default
instance) and services. Prints one `key=value` line per measure. Run as root.

Usage: service.py BINARY GEN_STORE [IDLE_SECONDS [MANY]]
"""
import json, os, socket, statistics, subprocess, sys, time

from harness import Bench, free_port, wait_for

binary = os.path.abspath(sys.argv[1])
gen_store = os.path.abspath(sys.argv[2])
idle_seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
many_count = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
bench = Bench("service")
name, work = bench.name, bench.work

def service(tag, incidents):
    d = os.path.join(work, tag)
    os.makedirs(d)
    if incidents:
        subprocess.run([gen_store, f"{d}/store", str(incidents)], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    cfg = os.path.join(d, "config.toml")
    with open(cfg, "w") as f:
        f.write(f'[journal]\nnamespace = "{name}"\nidentifiers = ["kubelet"]\nstart_at = "all"\n'
                f'[store]\npath = "{d}/store"\n[api]\nsocket = "{d}/q.sock"\nmetrics_listen = "127.0.0.1:{port}"\n')
    p = bench.start([binary, "--config", cfg, "run"], stdout=subprocess.DEVNULL,
                    stderr=open(os.path.join(d, "log"), "w"))
    wait_for(lambda: os.path.exists(f"{d}/q.sock"), "the service")
    return p, cfg, port

def switches(pid):
    """Context switches by thread id (voluntary and not)."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                out[t] = sum(int(line.split()[1]) for line in f
                             if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")))
        except FileNotFoundError:
            pass  # ended meanwhile
    return out

def woken(before, after):
    """Switches between two readings. Per thread: a thread that ended in
    between would take its switches out of a plain sum; a thread that ended
    is counted up to the first reading (its later ones are gone with it)."""
    return sum(n - before.get(t, 0) for t, n in after.items())

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def scrape(port):
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text\r\n\r\n")
        while c.recv(65536):
            pass
    return (time.perf_counter() - t0) * 1000

def caught_up(cfg):
    out = subprocess.run([binary, "--config", cfg, "status", "-o", "json"], capture_output=True)
    return out.returncode == 0 and json.loads(out.stdout).get("caught_up") is True

def status(cfg):
    t0 = time.perf_counter()
    subprocess.run([binary, "--config", cfg, "status", "-o", "json"], check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000

try:
    sock_path = bench.journald()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"MESSAGE=I0101 00:00:00.000000 1 bench.go:1] \"start\"\nSYSLOG_IDENTIFIER=kubelet\n", sock_path)

    few, few_cfg, few_port = service("few", 10)
    many, many_cfg, many_port = service("many", many_count)
    for cfg in [few_cfg, many_cfg]:
        wait_for(lambda: caught_up(cfg), "the service to catch up")
    time.sleep(1)  # the last commit's I/O threads go quiet
    sw0, cpu0, t0 = switches(few.pid), cpu_seconds(few.pid), time.monotonic()
    time.sleep(idle_seconds)
    sw1, cpu1, t1 = switches(few.pid), cpu_seconds(few.pid), time.monotonic()
    threads = len(os.listdir(f"/proc/{few.pid}/task"))
    print(f"idle_seconds={t1 - t0:.0f} wakeups_per_s={woken(sw0, sw1) / (t1 - t0):.2f} cpu_s={cpu1 - cpu0:.3f} threads={threads}")
    for label, port, cfg in [("10", few_port, few_cfg), (str(many_count), many_port, many_cfg)]:
        scrapes = sorted(scrape(port) for _ in range(50))
        statuses = sorted(status(cfg) for _ in range(20))
        print(f"incidents={label} scrape_ms_p50={statistics.median(scrapes):.2f} scrape_ms_max={scrapes[-1]:.2f} "
              f"status_ms_p50={statistics.median(statuses):.1f}")
finally:
    bench.cleanup()
