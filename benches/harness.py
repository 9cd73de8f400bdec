"""What the benchmark scripts share: a private systemd-journald namespace
(never the default instance), the processes they start, and waiting.
Run as root."""
import os, shutil, socket, subprocess, tempfile, time


def wait_for(cond, what, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bench:
    """A work directory, a journald namespace `name` and the processes
    started; `cleanup()` removes them all."""

    def __init__(self, tag):
        self.name = f"ks{tag}{os.getpid()}"
        self.work = tempfile.mkdtemp(prefix=f"ks-{tag}-")
        self.conf = f"/etc/systemd/journald@{self.name}.conf"
        self.procs = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        return p

    def journald(self):
        """Starts the namespace's journald (volatile, no rate limit);
        returns its native socket."""
        with open(self.conf, "w") as f:
            f.write("[Journal]\nStorage=volatile\nRateLimitBurst=0\nRateLimitIntervalSec=0\n")
        journald = next(p for p in ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"]
                        if os.path.exists(p))
        self.start([journald, self.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock_path = f"/run/systemd/journal.{self.name}/socket"
        wait_for(lambda: os.path.exists(sock_path), "journald")
        return sock_path

    def smtpd(self):
        """Starts aiosmtpd on a free loopback port, delivering into the
        Maildir `maildir` under the work directory; returns (port, maildir)
        once it greets."""
        port = free_port()
        maildir = os.path.join(self.work, "maildir")
        self.start(["/usr/bin/aiosmtpd", "-n", "-l", f"127.0.0.1:{port}", "-c", "aiosmtpd.handlers.Mailbox", maildir],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def up():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
                    return c.recv(3) == b"220"
            except OSError:
                return False
        wait_for(up, "aiosmtpd")
        return port, maildir

    def cleanup(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        if os.path.exists(self.conf):
            os.remove(self.conf)
        shutil.rmtree(f"/run/systemd/journal.{self.name}", ignore_errors=True)
        for root in ["/run/log/journal", "/var/log/journal"]:
            if os.path.isdir(root):
                for d in os.listdir(root):
                    if d.endswith("." + self.name):
                        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
        shutil.rmtree(self.work, ignore_errors=True)
