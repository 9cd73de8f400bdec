//! A real Alertmanager on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::*;

/// A real Alertmanager on loopback (Debian's `prometheus-alertmanager`),
/// clustering off (or one of a pair gossiping on loopback), mailing its
/// notifications to an SMTP server on loopback (or as the config says).
///
/// It serves on a listener the test holds, handed over by systemd's socket
/// activation protocol (`--web.systemd-socket`, `LISTEN_FDS`): the port is
/// the test's from start to end. While it is stopped, the test accepts and
/// closes every connection on it (a post fails at once, as against a
/// stopped instance), and its restart serves on the same listener.
pub(crate) struct Alertmanager {
    child: Option<std::process::Child>,
    pub port: u16,
    dir: PathBuf,
    held: Port,
    down: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
    /// Its `--cluster.*` flags: `--cluster.listen-address=` (clustering
    /// off) unless it is one of a [`Alertmanager::cluster_pair`].
    cluster: Vec<String>,
}

/// How long the second instance of a cluster waits for the first's
/// notification before sending its own (`--cluster.peer-timeout`): ample
/// for gossip on loopback every 100 ms, on a busy machine.
pub(crate) const PEER_TIMEOUT: Duration = Duration::from_secs(3);

impl Alertmanager {
    pub(crate) fn start(smtp_port: u16, dir: &Path) -> Self {
        Self::with_config(
            dir,
            &format!(
                "global:\n  smtp_smarthost: '127.0.0.1:{smtp_port}'\n  smtp_from: 'alertmanager@example.com'\n  smtp_require_tls: false\n\
                 route:\n  receiver: mail\n  group_by: ['cause']\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h\n\
                 \x20 routes:\n  - receiver: deadman\n    matchers: ['alertname=\"KubeletSentinelHeartbeat\"']\n\
                 receivers:\n- name: mail\n  email_configs:\n  - to: 'oncall@example.com'\n    send_resolved: true\n- name: deadman\n"
            ),
        )
    }

    /// One with the given `alertmanager.yml`.
    pub(crate) fn with_config(dir: &Path, yml: &str) -> Self {
        Self::serve(dir, yml, vec!["--cluster.listen-address=".into()])
    }

    /// Two instances of one cluster gossiping on loopback, each with the
    /// given `alertmanager.yml` (in `dir/0` and `dir/1`), returned once each
    /// counts both among its peers.
    ///
    /// Timings are a test's: gossip every 100 ms, a full state sync every
    /// second, 2 s to settle. The instance second in the cluster's order
    /// (by member name, not by start) waits [`PEER_TIMEOUT`] before
    /// notifying, and then only if the notification log gossiped from the
    /// first does not already hold that notification: that is how a cluster
    /// notifies once.
    pub(crate) fn cluster_pair(dir: &Path, yml: &str) -> [Self; 2] {
        let gossip = [gossip_port(), gossip_port()];
        let pair = [0, 1].map(|k| {
            Self::serve(
                &dir.join(k.to_string()),
                yml,
                vec![
                    format!("--cluster.listen-address=127.0.0.1:{}", gossip[k]),
                    // The first one started cannot join the second yet; the
                    // second joins it.
                    format!("--cluster.peer=127.0.0.1:{}", gossip[1 - k]),
                    format!("--cluster.peer-timeout={}s", PEER_TIMEOUT.as_secs()),
                    "--cluster.gossip-interval=100ms".into(),
                    "--cluster.pushpull-interval=1s".into(),
                    "--cluster.settle-timeout=2s".into(),
                    "--cluster.reconnect-interval=1s".into(),
                ],
            )
        });
        wait_for(
            Duration::from_secs(20),
            || pair.iter().all(|am| am.peers() == 2),
            "the two Alertmanagers to see each other",
        );
        pair
    }

    fn serve(dir: &Path, yml: &str, cluster: Vec<String>) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("alertmanager.yml"), yml).unwrap();
        let held = Port::listening();
        let mut am = Self {
            child: None,
            port: held.port,
            dir: dir.to_path_buf(),
            held,
            down: None,
            cluster,
        };
        am.restart();
        am
    }

    /// Starts it (again): it keeps no alerts across a restart.
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.end_refuser();
        let log = std::fs::File::create(self.dir.join("alertmanager.log")).unwrap();
        // The listener, given as standard input, becomes fd 3 as
        // LISTEN_FDS says, in a process whose pid LISTEN_PID names.
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec 3<&0 0</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec "$@""#)
            .arg("sh")
            .arg("/usr/bin/prometheus-alertmanager")
            .arg(format!(
                "--config.file={}",
                self.dir.join("alertmanager.yml").display()
            ))
            .arg(format!(
                "--storage.path={}",
                self.dir.join("data").display()
            ))
            .arg("--web.systemd-socket")
            // Its own address in its notifications (a webhook tells the
            // instances of a cluster apart by it).
            .arg(format!("--web.external-url={}", self.url()))
            .args(&self.cluster)
            .arg("--log.level=warn")
            .stdin(self.held.stdin())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start /usr/bin/prometheus-alertmanager (prometheus-alertmanager)");
        self.child = Some(child);
        let port = self.port;
        wait_for(
            Duration::from_secs(20),
            || {
                use std::io::{Read as _, Write as _};
                let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return false;
                };
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let _ =
                    c.write_all(b"GET /-/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut head = [0u8; 12];
                c.read_exact(&mut head).is_ok() && &head[9..] == b"200"
            },
            "Alertmanager to answer /-/ready",
        );
    }

    /// Stops it (SIGKILL: it saves nothing, tells its peers nothing);
    /// until [`Alertmanager::restart`], connections to its port are
    /// accepted and closed at once.
    pub(crate) fn stop(&mut self) {
        if !self.kill() {
            return;
        }
        let listener = self.held.listener();
        listener.set_nonblocking(true).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let refuser = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => drop(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        self.down = Some((stop, refuser));
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its active alerts about incidents (not kubelet-sentinel's heartbeat),
    /// read back with `amtool`.
    pub(crate) fn alerts(&self) -> Vec<serde_json::Value> {
        self.all_alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] != "KubeletSentinelHeartbeat")
            .collect()
    }

    /// The heartbeats it has (one per posting host).
    pub(crate) fn heartbeats(&self) -> Vec<serde_json::Value> {
        self.all_alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "KubeletSentinelHeartbeat")
            .collect()
    }

    /// Every active alert, read back with `amtool`.
    pub(crate) fn all_alerts(&self) -> Vec<serde_json::Value> {
        let out = run(
            Command::new("/usr/bin/amtool").args([
                "alert",
                "query",
                "-o",
                "json",
                &format!("--alertmanager.url={}", self.url()),
            ]),
            None,
        );
        if !out.status.success() {
            return Vec::new();
        }
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// How many members its cluster has as it sees it (`amtool cluster
    /// show`); 0 when it does not answer.
    pub(crate) fn peers(&self) -> usize {
        let out = run(
            Command::new("/usr/bin/amtool").args([
                "cluster",
                "show",
                "-o",
                "json",
                &format!("--alertmanager.url={}", self.url()),
            ]),
            None,
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v["peers"].as_array().map(Vec::len))
            .unwrap_or(0)
    }

    /// The value of an unlabelled metric on its `/metrics`, if it answers.
    pub(crate) fn metric(&self, name: &str) -> Option<f64> {
        use std::io::{Read as _, Write as _};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        // HTTP/1.0: the answer is the body to the close, never chunked.
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
        let mut text = String::new();
        c.read_to_string(&mut text).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }
}

/// A loopback port free for both TCP and UDP, for a cluster's gossip
/// (memberlist binds both). Alertmanager takes no listener for gossip, so
/// unlike every other port here it is free between this and its bind: a
/// clash would show as an instance that never answers `/-/ready`.
fn gossip_port() -> u16 {
    loop {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// An Alertmanager webhook receiver on loopback: it answers every POST
/// 200 and keeps its JSON body, one per notification, in the order they
/// came.
pub(crate) struct Webhook {
    pub port: u16,
    got: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Webhook {
    pub(crate) fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (kept, stopped) = (got.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        if let Some(body) = read_post(conn) {
                            kept.lock().unwrap().push(body);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            port,
            got,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The notifications received so far (Alertmanager's webhook JSON).
    pub(crate) fn notifications(&self) -> Vec<serde_json::Value> {
        self.got.lock().unwrap().clone()
    }
}

/// One request on `conn`, answered 200 and closed: its body as JSON (a
/// body that is not JSON is kept as a string, for the test to show).
fn read_post(mut conn: std::net::TcpStream) -> Option<serde_json::Value> {
    use std::io::{BufRead as _, Read as _, Write as _};
    conn.set_nonblocking(false).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut reader = std::io::BufReader::new(conn.try_clone().ok()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    Some(
        serde_json::from_slice(&body).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&body).into_owned())
        }),
    )
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Alertmanager {
    /// Ends the process, if one runs.
    fn kill(&mut self) -> bool {
        let Some(mut c) = self.child.take() else {
            return false;
        };
        let _ = c.kill();
        let _ = c.wait();
        true
    }

    /// Ends the thread that closes connections while it is stopped.
    fn end_refuser(&mut self) {
        if let Some((stop, refuser)) = self.down.take() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            refuser.join().unwrap();
        }
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        self.kill();
        self.end_refuser();
    }
}
