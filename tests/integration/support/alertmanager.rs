//! A real Alertmanager on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::*;

/// A real Alertmanager on loopback (Debian's `prometheus-alertmanager`),
/// clustering off, mailing its notifications to an SMTP server on loopback.
pub(crate) struct Alertmanager {
    child: Option<std::process::Child>,
    pub port: u16,
    dir: PathBuf,
}

impl Alertmanager {
    pub(crate) fn start(port: u16, smtp_port: u16, dir: &Path) -> Self {
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
        let mut am = Self {
            child: None,
            port,
            dir: dir.to_path_buf(),
        };
        am.restart();
        am
    }

    /// One with the given `alertmanager.yml`.
    pub(crate) fn with_config(port: u16, dir: &Path, yml: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("alertmanager.yml"), yml).unwrap();
        let mut am = Self {
            child: None,
            port,
            dir: dir.to_path_buf(),
        };
        am.restart();
        am
    }

    /// Starts it (again): it keeps no alerts across a restart.
    pub(crate) fn restart(&mut self) {
        self.stop();
        let log = std::fs::File::create(self.dir.join("alertmanager.log")).unwrap();
        let child = Command::new("/usr/bin/prometheus-alertmanager")
            .arg(format!(
                "--config.file={}",
                self.dir.join("alertmanager.yml").display()
            ))
            .arg(format!(
                "--storage.path={}",
                self.dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--cluster.listen-address=")
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start /usr/bin/prometheus-alertmanager (prometheus-alertmanager)");
        self.child = Some(child);
        let port = self.port;
        wait_for(
            Duration::from_secs(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "Alertmanager to listen",
        );
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
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

impl Drop for Alertmanager {
    fn drop(&mut self) {
        self.stop();
    }
}
