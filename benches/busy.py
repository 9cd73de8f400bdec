#!/usr/bin/python3
"""A busy node while following (issue 40): the service's CPU, wakeups and
RSS with the kubelet writing 50 lines a second and other units 500, and its
alert latency under the same load; then its wakeups with the kubelet quiet
(the others still writing) and with everything quiet.

Starts its own systemd-journald (a private namespace, never the default
instance), aiosmtpd (Maildir) and kubelet-sentinel (`run`, a store, mail by
SMTP with `group_wait = 0`). A writer process (this script with `--writer`,
its own CPU not measured) sends to the namespace's socket every 100 ms:

- the kubelet (`SYSLOG_IDENTIFIER=kubelet`, root, so trusted): klog chatter
  (SyncLoop, PLEG, probes, volumes, RemoveContainer, ...), and every 30 s a
  burst of refused status updates (5 retries, "exceeds retry count", the
  lease) and, 15 s apart from it, a burst of "Container runtime network not
  ready" and "Skipping pod synchronization" lines;
- other units: containerd, dockerd, sshd, CRON, systemd-networkd,
  chronyd, systemd-logind under their own identifiers. Through the socket
  they cannot carry journald's trusted fields (`_SYSTEMD_UNIT`, `_PID=1`),
  so the service's match excludes them as it excludes a real containerd's
  own output: what they cost is the journal waking the reader and
  libsystemd stepping over them.

Phases, after WARMUP_SECONDS of load: `busy` (BUSY_SECONDS of that load);
`busy+alerts` (the same load, and every ROUND_GAP seconds the kubelet, the
writer with the same pid as its chatter, writes 6 refused status updates
for a new node; the latency is from just before the 6th write to a mail
naming the node in the Maildir, as benches/latency.py times it; ROUNDS
rounds); `resolving` (the kubelet stops; until its incidents have resolved,
`resolve_after` 60 s, and been mailed: not measured; BUSY_SETTLE=0 skips
the wait); `kubelet-quiet` (the others still at 500 lines/s) and
`all-quiet`, QUIET_SECONDS each.

Measured on the service process (all threads), per phase: CPU (utime+stime
of /proc/PID/stat) per wall second, as % of one core; wakeups per second
(voluntary and involuntary context switches of /proc/PID/task/*/status, per
thread, as benches/service.py counts them, and by thread name); RSS
(VmRSS and PSS sampled every second: average and max; VmHWM, RssAnon,
RssFile, Pss_Anon, Pss_File at the end). RssFile is mostly the journal
file mapped by libsystemd, pages journald maps too: PSS counts them half. Prints `key=value` lines. Run as root.

Usage: busy.py BINARY [BUSY_SECONDS [QUIET_SECONDS [WARMUP_SECONDS [ROUNDS [ROUND_GAP]]]]]
       (defaults 180 60 20 60 2)
"""
import datetime, json, os, select, socket, statistics, subprocess, sys, time

KUBELET_PER_S = 50
OTHER_PER_S = 500
TICK = 0.1
BURST_EVERY = 30

CHATTER = [
    '"SyncLoop (PLEG): event for pod" pod="kube-system/kube-proxy-x7k2p" event={"ID":"3c9a","Type":"ContainerStarted","Data":"5f1e"}',
    '"SyncLoop UPDATE" source="api" pods=["default/web-7d4b9c8f6d-2xq9z"]',
    '"SyncLoop RECONCILE" source="api" pods=["kube-system/coredns-5d78c9869d-8kq2f"]',
    '"operationExecutor.VerifyControllerAttachedVolume started for volume" volumeName="kubernetes.io/projected/5e2c-kube-api-access" pod="default/web-7d4b9c8f6d-2xq9z"',
    '"MountVolume.SetUp succeeded for volume" volumeName="kubernetes.io/configmap/5e2c-config" pod="default/web-7d4b9c8f6d-2xq9z"',
    '"Probe failed" probeType="Readiness" pod="default/web-7d4b9c8f6d-2xq9z" podUID="5e2c" containerName="web" probeResult="failure" output="Get \\"http://10.244.1.7:8080/ready\\": dial tcp 10.244.1.7:8080: connect: connection refused"',
    '"RemoveContainer" containerID="4b2f8c1d9e"',
    '"Container runtime status" status="Runtime Conditions: RuntimeReady=true reason: message:, NetworkReady=true reason: message:"',
    '"Image garbage collection succeeded"',
    '"SyncLoop (probe)" probe="readiness" status="" pod="default/web-7d4b9c8f6d-2xq9z"',
]
CHATTER_FILES = ["kubelet.go:2436", "kubelet.go:2430", "kubelet.go:2445", "reconciler_common.go:245",
                 "operation_generator.go:721", "prober.go:107", "scope.go:117", "kubelet.go:2909",
                 "image_gc_manager.go:333", "kubelet.go:2542"]
OTHERS = [
    ("containerd", 'time="{t}" level=info msg="StartContainer for \\"4b2f8c1d9e\\" returns successfully"'),
    ("containerd", 'time="{t}" level=info msg="ImageCreate event name:\\"registry.k8s.io/pause:3.9\\""'),
    ("containerd", 'time="{t}" level=info msg="shim disconnected" id=4b2f8c1d9e namespace=k8s.io'),
    ("dockerd", 'time="{t}" level=info msg="ignoring event" container=9a1b module=libcontainerd namespace=moby'),
    ("sshd", "Accepted publickey for admin from 10.0.0.5 port 52144 ssh2: ED25519 SHA256:abc"),
    ("CRON", "(root) CMD (/usr/lib/sysstat/debian-sa1 1 1)"),
    ("systemd-networkd", "cali3f2e1d: Gained IPv6LL"),
    ("chronyd", "Selected source 10.0.0.2 (ntp.example.com)"),
    ("systemd-logind", "New session 42 of user admin."),
]
NODE = "busy-node-1"


def klog(sev, where, body):
    t = datetime.datetime.utcnow().strftime("%m%d %H:%M:%S.%f")
    return f"{sev}{t}    4242 {where}] {body}"


def retry(node):
    return klog("E", "kubelet_node_status.go:535",
                f'"Error updating node status, will retry" err="error getting node \\"{node}\\": '
                f'Get \\"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\\": '
                f'dial tcp 10.0.0.1:6443: connect: connection refused"')


def retry_burst():
    return [retry(NODE) for _ in range(5)] + [
        klog("E", "kubelet_node_status.go:522", '"Unable to update node status" err="update node status exceeds retry count"'),
        klog("E", "controller.go:145", f'"Failed to update lease" err="Put \\"https://10.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}?timeout=10s\\": dial tcp 10.0.0.1:6443: connect: connection refused"'),
    ]


def not_ready_burst():
    out = []
    for _ in range(5):
        out.append(klog("E", "kubelet.go:2862", '"Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"'))
        out.append(klog("E", "kubelet.go:2386", '"Skipping pod synchronization" err="[container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized]"'))
    return out


def writer(sock_path):
    """Paced sends to the namespace; commands on stdin: `kubelet 0|1`,
    `others 0|1`, `round NODE` (6 retries for NODE; prints the monotonic
    time just before the 6th), `counts` (prints the lines sent)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)

    def send(ident, msg):
        s.sendto(f"MESSAGE={msg}\nSYSLOG_IDENTIFIER={ident}\nPRIORITY=6\n".encode(), sock_path)

    kubelet_on = others_on = False
    sent = {"kubelet": 0, "others": 0}
    i = j = 0
    start = next_tick = time.monotonic()
    last_retry = last_not_ready = start
    while True:
        wait = max(0.0, next_tick - time.monotonic())
        ready, _, _ = select.select([sys.stdin], [], [], wait)
        if ready:
            cmd = sys.stdin.readline().split()
            if not cmd or cmd[0] == "quit":
                return
            if cmd[0] == "kubelet":
                kubelet_on = cmd[1] == "1"
                last_retry = time.monotonic() - BURST_EVERY / 2
                last_not_ready = time.monotonic()
            elif cmd[0] == "others":
                others_on = cmd[1] == "1"
            elif cmd[0] == "round":
                for _ in range(5):
                    send("kubelet", retry(cmd[1]))
                t0 = time.monotonic()
                send("kubelet", retry(cmd[1]))
                sent["kubelet"] += 6
                print(f"{t0:.6f}", flush=True)
            elif cmd[0] == "counts":
                print(f'{sent["kubelet"]} {sent["others"]}', flush=True)
            continue
        next_tick += TICK
        now = time.monotonic()
        if kubelet_on:
            lines = []
            if now - last_retry >= BURST_EVERY:
                lines += retry_burst()
                last_retry = now
            if now - last_not_ready >= BURST_EVERY:
                lines += not_ready_burst()
                last_not_ready = now
            for _ in range(max(0, int(KUBELET_PER_S * TICK) - len(lines))):
                lines.append(klog("I", CHATTER_FILES[i % len(CHATTER)], CHATTER[i % len(CHATTER)]))
                i += 1
            for line in lines:
                send("kubelet", line)
            sent["kubelet"] += len(lines)
        if others_on:
            t = datetime.datetime.utcnow().isoformat() + "Z"
            for _ in range(int(OTHER_PER_S * TICK)):
                ident, fmt = OTHERS[j % len(OTHERS)]
                send(ident, fmt.replace("{t}", t))
                j += 1
            sent["others"] += int(OTHER_PER_S * TICK)


if len(sys.argv) > 1 and sys.argv[1] == "--writer":
    writer(sys.argv[2])
    sys.exit(0)

from harness import Bench, wait_for  # noqa: E402

binary = os.path.abspath(sys.argv[1])
busy_seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 180
quiet_seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
warmup_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 20
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 60
round_gap = float(sys.argv[6]) if len(sys.argv) > 6 else 2
bench = Bench("busy")
name, work = bench.name, bench.work
CLK = os.sysconf("SC_CLK_TCK")


def switches(pid):
    """Context switches by thread id (voluntary and not), with names."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                n, comm = 0, "?"
                for line in f:
                    if line.startswith("Name:"):
                        comm = line.split(None, 1)[1].strip()
                    elif line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        n += int(line.split()[1])
                out[t] = (n, comm)
        except FileNotFoundError:
            pass  # ended meanwhile
    return out


def woken(before, after):
    """As benches/service.py: per thread, so a thread that ended between the
    readings does not take its switches out of the sum."""
    return sum(n - before.get(t, (0, ""))[0] for t, (n, _) in after.items())


def by_name(before, after, seconds):
    names = {}
    for t, (n, comm) in after.items():
        names[comm] = names.get(comm, 0) + n - before.get(t, (0, ""))[0]
    return " ".join(f"{k}:{v / seconds:.2f}" for k, v in sorted(names.items(), key=lambda kv: -kv[1]) if v)


def cpu_by_thread(pid):
    """CPU seconds by thread id, with names."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                head, fields = f.read().rsplit(")", 1)
            out[t] = ((int(fields.split()[11]) + int(fields.split()[12])) / CLK, head.split("(", 1)[1])
        except FileNotFoundError:
            pass
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def mem_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def pss_kib(pid):
    """Proportional set size: pages shared with journald's own mapping of
    the journal file count half."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Pss:", "Pss_Anon:", "Pss_File:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


class Phase:
    """CPU, wakeups and RSS of `pid` from now to `end()`."""

    def __init__(self, pid):
        self.pid = pid
        self.sw, self.cpu, self.t = switches(pid), cpu_seconds(pid), time.monotonic()
        self.threads_cpu = cpu_by_thread(pid)
        self.rss, self.pss = [], []

    def sample(self):
        self.rss.append(mem_kib(self.pid)["VmRSS"])
        self.pss.append(pss_kib(self.pid)["Pss"])

    def end(self, label):
        sw, cpu, t = switches(self.pid), cpu_seconds(self.pid), time.monotonic()
        self.sample()
        m = mem_kib(self.pid)
        p = pss_kib(self.pid)  # the last sample's
        secs = t - self.t
        self.by_thread = by_name(self.sw, sw, secs)
        tc = cpu_by_thread(self.pid)
        self.cpu_by_thread = by_name(self.threads_cpu, tc, secs / 100)  # % of a core
        return (f"phase={label} seconds={secs:.0f} cpu_pct_of_core={100 * (cpu - self.cpu) / secs:.3f} "
                f"wakeups_per_s={woken(self.sw, sw) / secs:.2f} rss_mib_avg={statistics.mean(self.rss) / 1024:.1f} "
                f"rss_mib_max={max(self.rss) / 1024:.1f} hwm_mib={m['VmHWM'] / 1024:.1f} "
                f"anon_mib={m['RssAnon'] / 1024:.1f} file_mib={m['RssFile'] / 1024:.1f} "
                f"pss_mib_avg={statistics.mean(self.pss) / 1024:.1f} pss_mib_max={max(self.pss) / 1024:.1f} "
                f"pss_anon_mib={p.get('Pss_Anon', 0) / 1024:.1f} pss_file_mib={p.get('Pss_File', 0) / 1024:.1f} "
                f"threads={len(sw)}")


def hold(phase, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        phase.sample()
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))


try:
    sock_path = bench.journald()
    port, maildir = bench.smtpd()
    w = bench.start([sys.executable, os.path.abspath(__file__), "--writer", sock_path],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def tell(cmd):
        w.stdin.write(cmd + "\n")
        w.stdin.flush()
    tell("round start-node")  # something to read at start
    w.stdout.readline()
    cfg = os.path.join(work, "config.toml")
    with open(cfg, "w") as f:
        f.write(f'[journal]\nnamespace = "{name}"\nidentifiers = ["kubelet"]\nstart_at = "all"\n'
                f'[store]\npath = "{work}/store"\n[api]\nsocket = "{work}/q.sock"\n'
                f'[alert]\nto = ["oncall@example.com"]\ngroup_wait = "0s"\n'
                f'[alert.smtp]\nhost = "127.0.0.1"\nport = {port}\ntls = "none"\n')
    log = open(os.path.join(work, "service.log"), "w")
    svc = bench.start([binary, "--config", cfg, "run"], stdout=subprocess.DEVNULL, stderr=log)
    wait_for(lambda: os.path.exists(f"{work}/q.sock"), "the service")

    def status():
        return json.loads(subprocess.run([binary, "--config", cfg, "status", "-o", "json"], check=True,
                                         capture_output=True).stdout)
    wait_for(lambda: status().get("caught_up") is True, "the service to catch up")
    newdir = os.path.join(maildir, "new")
    seen = set()

    def mails():
        try:
            return len(os.listdir(newdir))
        except FileNotFoundError:
            return 0

    def mail_naming(node):
        """Whether a new mail names `node` (mails of bursts may come too)."""
        try:
            names = os.listdir(newdir)
        except FileNotFoundError:
            return False
        found = False
        for n in names:
            if n in seen:
                continue
            seen.add(n)
            with open(os.path.join(newdir, n), errors="replace") as f:
                if node in f.read():
                    found = True
        return found

    tell("kubelet 1")
    tell("others 1")
    warm = Phase(svc.pid)
    hold(warm, warmup_seconds)
    busy = Phase(svc.pid)
    tell("counts")
    k0, o0 = map(int, w.stdout.readline().split())
    st0 = status()
    hold(busy, busy_seconds)
    tell("counts")
    k1, o1 = map(int, w.stdout.readline().split())
    st1 = status()
    secs = time.monotonic() - busy.t
    print(f"{busy.end('busy')} kubelet_lines_per_s={(k1 - k0) / secs:.1f} other_lines_per_s={(o1 - o0) / secs:.1f} "
          f"read_kubelet_lines_per_s={(st1['kubelet_lines'] - st0['kubelet_lines']) / secs:.1f} "
          f"mails={mails()}")
    print(f"phase=busy wakeups_by_thread {busy.by_thread}")
    print(f"phase=busy cpu_pct_by_thread {busy.cpu_by_thread}")

    alerting = Phase(svc.pid)
    latencies = []
    for r in range(rounds):
        node = f"busy-lat-{r:04d}"
        slot_end = time.monotonic() + round_gap
        tell(f"round {node}")
        t0 = float(w.stdout.readline())
        while not mail_naming(node):
            if time.monotonic() - t0 > 10:
                raise SystemExit(f"round {r}: no mail naming {node} within 10 s")
            time.sleep(0.0005)
        latencies.append((time.monotonic() - t0) * 1000)
        hold(alerting, slot_end - time.monotonic())
    latencies.sort()
    lat = "alerts=0"
    if latencies:
        p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
        lat = (f"alerts={len(latencies)} p50_ms={statistics.median(latencies):.1f} p99_ms={p99:.1f} "
               f"max_ms={latencies[-1]:.1f}")
    print(f"{alerting.end('busy+alerts')} {lat}")
    print(f"phase=busy+alerts wakeups_by_thread {alerting.by_thread}")
    print(f"phase=busy+alerts cpu_pct_by_thread {alerting.cpu_by_thread}")

    tell("kubelet 0")
    # The kubelet's incidents resolve (`resolve_after`, 60 s by default)
    # and are mailed: that is not the quiet to measure.
    # BUSY_SETTLE=0 (make bench-smoke) does not wait.
    settle = time.monotonic()
    while os.environ.get("BUSY_SETTLE", "1") != "0" and status()["open_incidents"] > 0:
        if time.monotonic() - settle > 180:
            raise SystemExit("the incidents did not resolve within 180 s")
        time.sleep(1)
    print(f"phase=resolving seconds={time.monotonic() - settle:.0f} mails={mails()}")
    time.sleep(2)  # the reader's short waits after the last line end
    q = Phase(svc.pid)
    hold(q, quiet_seconds)
    print(q.end("kubelet-quiet,others-500/s"))
    print(f"phase=kubelet-quiet wakeups_by_thread {q.by_thread}")
    print(f"phase=kubelet-quiet cpu_pct_by_thread {q.cpu_by_thread}")
    tell("others 0")
    time.sleep(2)
    q = Phase(svc.pid)
    hold(q, quiet_seconds)
    print(q.end("all-quiet"))
    print(f"phase=all-quiet wakeups_by_thread {q.by_thread}")
    st = status()
    print(f"incidents={st['incidents']} open={st['open_incidents']} untrusted={st['untrusted']} "
          f"entries_lost={st['entries_lost']} kubelet_lines={st['kubelet_lines']} recognized={st['recognized']}")
    tell("quit")
finally:
    bench.cleanup()
