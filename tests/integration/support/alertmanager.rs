//! A real Alertmanager on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::*;

/// A real Alertmanager on loopback (Debian's `prometheus-alertmanager`),
/// clustering off, mailing its notifications to an SMTP server on loopback.
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
}

impl Alertmanager {
    pub(crate) fn start(smtp_port: u16, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("alertmanager.yml"),
            format!(
                "global:\n  smtp_smarthost: '127.0.0.1:{smtp_port}'\n  smtp_from: 'alertmanager@example.com'\n  smtp_require_tls: false\n\
                 route:\n  receiver: mail\n  group_by: ['cause']\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h\n\
                 \x20 routes:\n  - receiver: deadman\n    matchers: ['alertname=\"KubeletSentinelHeartbeat\"']\n\
                 receivers:\n- name: mail\n  email_configs:\n  - to: 'oncall@example.com'\n    send_resolved: true\n- name: deadman\n"
            ),
        )
        .unwrap();
        let held = Port::listening();
        let mut am = Self {
            child: None,
            port: held.port,
            dir: dir.to_path_buf(),
            held,
            down: None,
        };
        am.restart();
        am
    }

    /// One with the given `alertmanager.yml`.
    pub(crate) fn with_config(dir: &Path, yml: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("alertmanager.yml"), yml).unwrap();
        let held = Port::listening();
        let mut am = Self {
            child: None,
            port: held.port,
            dir: dir.to_path_buf(),
            held,
            down: None,
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
            .arg("--cluster.listen-address=")
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

    /// Stops it; until [`Alertmanager::restart`], connections to its port
    /// are accepted and closed at once.
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
