//! Issue 38, design 5.8: the kernel under the node. One journal written by
//! `systemd-journal-remote` with the kernel's own entries
//! (`_TRANSPORT=kernel`) and a stranger's `logger -t kernel` look-alike,
//! several hosts in it, read by `scan` and by `run --once` (a collector's
//! directory): kernel incidents (a read-only file system, tasks hung long),
//! the kernel's lines as the context of the incidents they explain, and
//! the next boot ending them.

use kubelet_sentinel::{Micros, SECOND};

use crate::support::{Service, bin, export_entry, journal_remote, run};

const T0: Micros = 1_796_205_600_000_000; // 2026-12-02T10:00:00Z

const REMOUNT: &str = "EXT4-fs (nvme0n1p1): Remounting filesystem read-only";
const STRANGERS: &str = "EXT4-fs (sda1): Remounting filesystem read-only";
const BOOT: &str = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)";
const TABLE_FULL: &str = "nf_conntrack: nf_conntrack: table full, dropping packet";

struct J {
    out: Vec<u8>,
}

impl J {
    fn at(s: i64) -> String {
        (T0 + s * SECOND).to_string()
    }

    fn kernel(&mut self, s: i64, host: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_TRANSPORT", "kernel"),
                ("SYSLOG_IDENTIFIER", "kernel"),
                ("MESSAGE", msg),
            ],
        );
    }

    /// `logger -t kernel …` by a user: journald sets its own pid, uid,
    /// unit and transport, whatever the tag says.
    fn forged(&mut self, s: i64, host: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "5555"),
                ("_UID", "1000"),
                ("_TRANSPORT", "syslog"),
                ("_SYSTEMD_UNIT", "session-3.scope"),
                ("SYSLOG_IDENTIFIER", "kernel"),
                ("MESSAGE", msg),
            ],
        );
    }

    fn kubelet(&mut self, s: i64, host: &str, level: char, file: &str, body: &str) {
        let klog = chrono::DateTime::from_timestamp_micros(T0 + s * SECOND)
            .unwrap()
            .format("%m%d %H:%M:%S%.6f");
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "4242"),
                ("_UID", "0"),
                ("_TRANSPORT", "stdout"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("MESSAGE", &format!("{level}{klog}    4242 {file}] {body}")),
            ],
        );
    }

    fn healthy(&mut self, s: i64, host: &str) {
        self.kubelet(
            s,
            host,
            'I',
            "kubelet.go:2480",
            r#""SyncLoop (housekeeping)""#,
        );
    }
}

/// The issue's journal, host by host.
fn journal() -> Vec<u8> {
    let mut j = J { out: Vec::new() };
    // w-ro: its root remounted read-only while its kubelet goes on; then
    // it reboots at 600 s.
    j.kernel(
        100,
        "w-ro",
        "EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: comm kubelet: Detected aborted journal",
    );
    j.kernel(100, "w-ro", REMOUNT);
    j.kernel(600, "w-ro", BOOT);
    // w-hung: containerd blocked for twelve minutes beside PLEG not ready.
    for n in 1..=6_i64 {
        j.kernel(
            120 * n,
            "w-hung",
            &format!(
                "INFO: task containerd:1187 blocked for more than {} seconds.",
                120 * n + n - 1
            ),
        );
    }
    // w-ct: a full conntrack table for five minutes beside api-timeout
    // retries.
    for s in (0..300).step_by(2) {
        j.kernel(s, "w-ct", TABLE_FULL);
    }
    // w-stranger: a user's `logger -t kernel` look-alike, and one real
    // two-minute hung task on a healthy node: nothing.
    j.forged(100, "w-stranger", STRANGERS);
    j.kernel(
        130,
        "w-stranger",
        "INFO: task kworker/u4:2:141 blocked for more than 120 seconds.",
    );
    for s in (0..=720).step_by(10) {
        j.healthy(s, "w-ro");
        j.healthy(s, "w-stranger");
        if s >= 180 {
            j.kubelet(
                s,
                "w-hung",
                'E',
                "kubelet.go:2386",
                r#""Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#,
            );
        } else {
            j.healthy(s, "w-hung");
        }
        if (60..300).contains(&s) {
            j.kubelet(
                s,
                "w-ct",
                'E',
                "kubelet_node_status.go:549",
                r#""Error updating node status, will retry" err="error getting node \"w-ct\": Get \"https://10.0.0.1:6443/api/v1/nodes/w-ct?resourceVersion=0&timeout=10s\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)""#,
            );
        } else {
            j.healthy(s, "w-ct");
        }
    }
    j.out
}

fn by<'a>(v: &'a [serde_json::Value], host: &str, kind: &str) -> &'a serde_json::Value {
    v.iter()
        .find(|i| i["host"] == host && i["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} incident of {host}: {v:#?}"))
}

/// What both reads must agree on, incident by incident.
fn summary(v: &[serde_json::Value]) -> Vec<String> {
    let mut s: Vec<String> = v
        .iter()
        .map(|i| {
            format!(
                "{} {} {} {} {} {} {} {} {}",
                i["host"],
                i["kind"],
                i["cause"],
                i["verdict"],
                i["status"],
                i["npd_condition"],
                i["hung_tasks"],
                i["context"],
                i["diagnosis"]
            )
        })
        .collect();
    s.sort();
    s
}

#[test]
fn the_kernel_under_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("remote");
    std::fs::create_dir(&journals).unwrap();
    let file = journals.join("remote-fleet.journal");
    journal_remote(&journal(), &file);
    let r = run(bin().args(["scan", "--utc", "-o", "json"]).arg(&file), None);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let inc = v["incidents"].as_array().unwrap().clone();

    // The read-only root: a kernel incident, readonly-fs, persistent,
    // alerted, ended by the next boot; the file system's error its context.
    let ro = by(&inc, "w-ro", "kernel");
    assert_eq!(ro["cause"], "readonly-fs", "{ro:#}");
    assert_eq!(ro["verdict"], "persistent", "{ro:#}");
    assert_eq!(ro["npd_condition"], "ReadonlyFilesystem", "{ro:#}");
    assert_eq!(ro["readonly_devices"], serde_json::json!(["nvme0n1p1"]));
    assert_eq!(ro["status"], "resolved", "{ro:#}");
    assert_eq!(ro["resolution"], "rebooted", "{ro:#}");
    assert_eq!(ro["evidence"][0]["text"], REMOUNT, "{ro:#}");
    assert_eq!(ro["context"][0]["unit"], "kernel", "{ro:#}");
    assert!(
        ro["next_steps"].to_string().contains("mount | grep 'ro,'"),
        "{ro:#}"
    );

    // Twelve minutes of a hung containerd: its own kernel incident, and a
    // hung-task line in the PLEG not-ready incident's context.
    let hung = by(&inc, "w-hung", "kernel");
    assert_eq!(hung["cause"], "hung-tasks", "{hung:#}");
    assert_eq!(hung["npd_condition"], "KernelDeadlock", "{hung:#}");
    assert_eq!(hung["hung_tasks"][0]["task"], "containerd", "{hung:#}");
    assert_eq!(hung["hung_tasks"][0]["blocked_secs"], 725, "{hung:#}");
    let nr = by(&inc, "w-hung", "not-ready");
    assert_eq!(nr["cause"], "pleg", "{nr:#}");
    assert!(
        nr["context"].as_array().unwrap().iter().any(|c| c["text"]
            .as_str()
            .unwrap()
            .starts_with("INFO: task containerd:1187 blocked")),
        "{nr:#}"
    );

    // The full conntrack table: in the api-timeout incident's context, its
    // run of 150 lines two.
    let ct = by(&inc, "w-ct", "node-status");
    assert_eq!(ct["cause"], "api-timeout", "{ct:#}");
    let ctx = ct["context"].as_array().unwrap();
    assert_eq!(ctx.len(), 2, "{ct:#}");
    assert!(ctx.iter().all(|c| c["text"] == TABLE_FULL), "{ct:#}");
    assert!(
        ct["diagnosis"]
            .as_str()
            .unwrap()
            .contains("conntrack table was full"),
        "{ct:#}"
    );

    // The stranger's look-alike and one two-minute hung task: nothing.
    assert!(inc.iter().all(|i| i["host"] != "w-stranger"), "{inc:#?}");
    assert_eq!(inc.len(), 4, "{inc:#?}");

    // run --once on the directory (a collector, host by host): the same;
    // `incidents --kind kernel` and `show` say it.
    let svc = Service::new(&format!("directory = \"{}\"", journals.display()), "");
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let once = svc.incidents();
    assert_eq!(summary(once.as_array().unwrap()), summary(&inc));
    let kernel = svc.query(&["incidents", "--kind", "kernel", "-o", "json"]);
    let kernel: serde_json::Value = serde_json::from_slice(&kernel.stdout).unwrap();
    let hosts: Vec<&str> = kernel["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 2, "{kernel:#}");
    assert!(hosts.contains(&"w-ro") && hosts.contains(&"w-hung"));
    let nodes = svc.query(&["nodes", "-o", "json"]);
    assert!(nodes.status.success());
    let nodes = String::from_utf8_lossy(&nodes.stdout);
    assert!(
        nodes.contains("\"w-ro\"") && nodes.contains("\"w-hung\""),
        "{nodes}"
    );
    let id = ro["id"].as_str().unwrap();
    let show = svc.query(&["show", id, "--utc"]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("read-only nvme0n1p1") && text.contains("ReadonlyFilesystem"),
        "{text}"
    );
}
