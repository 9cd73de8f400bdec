//! A realistic journal for the benchmarks, deterministic from a seed.
//!
//! About 30% of the entries are the kubelet's: ordinary chatter at several
//! verbosities, start-up races, retry storms with the 5-retries-then-exhausted
//! rhythm, deleted nodes, lease and reflector errors, several Kubernetes
//! versions' wordings, multi-line `key=<` entries; the rest are other units
//! (containerd, sshd, cron, systemd, the kernel). Written through
//! `systemd-journal-remote` into many journal files, like a rotated journal.
//!
//! Usage: `gen_journal --entries 1000000 --hosts 1 --files 20 --seed 1 --out DIR
//! [--split host]`. With `--split host` every host gets files of its own,
//! named as `systemd-journal-remote --split-mode=host` names them
//! (`remote-HOST.journal`, rotated `remote-HOST@N.journal`), `--files` per
//! host.

use std::io::Write;
use std::process::{Command, Stdio};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One kubelet's state on one host.
struct Kubelet {
    host: String,
    node: String,
    pid: u32,
    structured: bool,
    /// Remaining lines of the current episode (storm, race, deleted node).
    episode: Vec<String>,
}

const CHATTER: &[&str] = &[
    r#""SyncLoop (PLEG): event for pod" pod="kube-system/kube-proxy-x7k2p" event={"ID":"3c9a","Type":"ContainerStarted","Data":"5f1e"}"#,
    r#""SyncLoop UPDATE" source="api" pods=["default/web-7d4b9c8f6d-2xq9z"]"#,
    r#""operationExecutor.VerifyControllerAttachedVolume started for volume" volumeName="kubernetes.io/projected/5e2c-kube-api-access" pod="default/web-7d4b9c8f6d-2xq9z""#,
    r#""MountVolume.SetUp succeeded for volume" volumeName="kubernetes.io/configmap/5e2c-config" pod="default/web-7d4b9c8f6d-2xq9z""#,
    r#""Probe failed" probeType="Readiness" pod="default/web-7d4b9c8f6d-2xq9z" podUID="5e2c" containerName="web" probeResult="failure" output="Get \"http://10.244.1.7:8080/ready\": dial tcp 10.244.1.7:8080: connect: connection refused""#,
    r#""RemoveContainer" containerID="4b2f8c1d9e""#,
    r#""Image garbage collection succeeded""#,
    r#""Container runtime status" status="Runtime Conditions: RuntimeReady=true reason: message:, NetworkReady=true reason: message:""#,
];

const LEGACY_CHATTER: &[&str] = &[
    "SyncLoop (PLEG): \"web-7d4b9c8f6d-2xq9z_default(5e2c)\", event: &pleg.PodLifecycleEvent{ID:\"5e2c\", Type:\"ContainerStarted\", Data:\"9a1b\"}",
    "Setting node annotation to enable volume controller attach/detach",
    "MountVolume.SetUp succeeded for volume \"default-token-abcde\" (UniqueName: \"kubernetes.io/secret/5e2c-default-token-abcde\") pod \"web\" (UID: \"5e2c\")",
];

const OTHER: &[(&str, &str)] = &[
    ("containerd.service", "containerd"),
    ("containerd.service", "containerd"),
    ("containerd.service", "containerd"),
    ("ssh.service", "sshd"),
    ("cron.service", "CRON"),
    ("systemd-logind.service", "systemd-logind"),
    ("kernel", "kernel"),
    ("docker.service", "dockerd"),
];

impl Kubelet {
    fn klog(&self, sev: char, file: &str, body: &str, at_us: u64) -> String {
        let t = at_us / 1000;
        let (h, m, s, us) = (
            (t / 3_600_000) % 24,
            (t / 60_000) % 60,
            (t / 1000) % 60,
            at_us % 1_000_000,
        );
        format!(
            "{sev}1128 {h:02}:{m:02}:{s:02}.{us:06} {:>7} {file}] {body}",
            self.pid
        )
    }

    fn start_episode(&mut self, rng: &mut Rng, at: u64) {
        let n = &self.node;
        let s = self.structured;
        let kind = rng.below(10);
        let mut lines = Vec::new();
        match kind {
            // The start-up race: register, one lister miss, ready.
            0..=3 => {
                lines.push(self.klog(
                    'I',
                    "server.go:484",
                    r#""Kubelet version" kubeletVersion="v1.31.2""#,
                    at,
                ));
                lines.push(self.klog(
                    'I',
                    "kubelet_node_status.go:72",
                    &format!(r#""Attempting to register node" node="{n}""#),
                    at,
                ));
                lines.push(self.klog(
                    'I',
                    "kubelet_node_status.go:75",
                    &format!(r#""Successfully registered node" node="{n}""#),
                    at,
                ));
                lines.push(self.klog('E', "kubelet_node_status.go:535", &format!(r#""Error updating node status, will retry" err="error getting node \"{n}\": node \"{n}\" not found""#), at));
                lines.push(self.klog(
                    'I',
                    "kubelet_node_status.go:493",
                    r#""Fast updating node status as it just became ready""#,
                    at,
                ));
            }
            // A retry storm: the API server is unreachable for a while.
            4..=6 => {
                for _ in 0..(2 + rng.below(6)) {
                    for _ in 0..5 {
                        lines.push(if s {
                            self.klog('E', "kubelet_node_status.go:535", &format!(r#""Error updating node status, will retry" err="error getting node \"{n}\": Get \"https://10.0.0.10:6443/api/v1/nodes/{n}?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#), at)
                        } else {
                            self.klog('E', "kubelet_node_status.go:390", &format!("Error updating node status, will retry: error getting node \"{n}\": Get https://10.0.0.10:6443/api/v1/nodes/{n}?timeout=10s: dial tcp 10.0.0.10:6443: getsockopt: connection refused"), at)
                        });
                    }
                    lines.push(if s {
                        self.klog('E', "kubelet_node_status.go:522", r#""Unable to update node status" err="update node status exceeds retry count""#, at)
                    } else {
                        self.klog('E', "kubelet_node_status.go:382", "Unable to update node status: update node status exceeds retry count", at)
                    });
                    lines.push(self.klog('E', "controller.go:145", &format!(r#""Failed to update lease" err="Put \"https://10.0.0.10:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{n}?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#), at));
                    lines.push(self.klog('W', "reflector.go:561", "k8s.io/client-go/informers/factory.go:160: failed to list *v1.Node: Get \"https://10.0.0.10:6443/api/v1/nodes?limit=500\": dial tcp 10.0.0.10:6443: connect: connection refused", at));
                }
            }
            // The Node was deleted under a running kubelet.
            7 => {
                for _ in 0..3 {
                    for _ in 0..5 {
                        lines.push(self.klog('E', "kubelet_node_status.go:390", &format!("Error updating node status, will retry: error getting node \"{n}\": nodes \"{n}\" not found"), at));
                    }
                    lines.push(self.klog(
                        'E',
                        "kubelet_node_status.go:382",
                        "Unable to update node status: update node status exceeds retry count",
                        at,
                    ));
                }
            }
            // A multi-line structured entry (`key=<` block over entries).
            _ => {
                lines.push(self.klog(
                    'I',
                    "kuberuntime_manager.go:1050",
                    r#""Container definition changed" pod="default/web" spec=<"#,
                    at,
                ));
                lines.push("\timage: registry.example.com/web:1.2.3".to_string());
                lines.push("\tresources: {limits: {cpu: 500m}}".to_string());
                lines.push(" > containerName=\"web\"".to_string());
            }
        }
        lines.reverse();
        self.episode = lines;
    }

    fn line(&mut self, rng: &mut Rng, at: u64) -> String {
        if let Some(l) = self.episode.pop() {
            return l;
        }
        if rng.below(400) == 0 {
            self.start_episode(rng, at);
            if let Some(l) = self.episode.pop() {
                return l;
            }
        }
        if self.structured {
            let body = CHATTER[rng.below(CHATTER.len() as u64) as usize];
            self.klog('I', "kubelet.go:2400", body, at)
        } else {
            let body = LEGACY_CHATTER[rng.below(LEGACY_CHATTER.len() as u64) as usize];
            self.klog('I', "kubelet.go:1853", body, at)
        }
    }
}

fn field(out: &mut Vec<u8>, k: &str, v: &str) {
    out.extend_from_slice(k.as_bytes());
    out.push(b'=');
    out.extend_from_slice(v.as_bytes());
    out.push(b'\n');
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn journal_remote() -> &'static str {
    [
        "/lib/systemd/systemd-journal-remote",
        "/usr/lib/systemd/systemd-journal-remote",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .expect("systemd-journal-remote (package systemd-journal-remote)")
}

fn main() {
    let entries: u64 = arg("--entries", "100000").parse().expect("--entries N");
    let hosts: u64 = arg("--hosts", "1").parse().expect("--hosts N");
    let files: u64 = arg("--files", "10").parse().expect("--files N");
    let seed: u64 = arg("--seed", "1").parse().expect("--seed N");
    let per_host = arg("--split", "none") == "host";
    let out = std::path::PathBuf::from(arg("--out", "target/bench/journal"));
    std::fs::create_dir_all(&out).expect("create --out");
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut kubelets: Vec<Kubelet> = (0..hosts)
        .map(|h| Kubelet {
            host: if hosts == 1 {
                "worker-01".into()
            } else {
                format!("worker-{:02}", h + 1)
            },
            node: if hosts == 1 {
                "worker-01".into()
            } else {
                format!("worker-{:02}", h + 1)
            },
            pid: 2000 + h as u32,
            structured: h % 4 != 3,
            episode: Vec::new(),
        })
        .collect();
    let t0: u64 = 1_795_856_400_000_000;
    let mut written = 0u64;
    let mut kubelet_entries = 0u64;
    // Export text per output file: one sequence of files, or one per host.
    let outputs = if per_host { hosts * files } else { files };
    let per_output = entries.div_ceil(files);
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); outputs as usize];
    let mut host_counts = vec![0u64; hosts as usize];
    let flush = |buf: &mut Vec<u8>, name: String| {
        let path = out.join(name);
        let _ = std::fs::remove_file(&path);
        let mut child = Command::new(journal_remote())
            .arg(format!("--output={}", path.display()))
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run systemd-journal-remote");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(buf)
            .expect("feed systemd-journal-remote");
        assert!(
            child.wait().unwrap().success(),
            "systemd-journal-remote failed"
        );
        buf.clear();
        buf.shrink_to_fit();
    };
    while written < entries {
        let at = t0 + written * 1_000 + rng.below(1_000);
        let h = rng.below(hosts) as usize;
        let k = &mut kubelets[h];
        let (unit, ident, pid, msg) =
            if rng.below(10) < 3 || !k.episode.is_empty() && rng.below(2) == 0 {
                kubelet_entries += 1;
                let msg = k.line(&mut rng, at);
                ("kubelet.service", "kubelet", k.pid, msg)
            } else {
                let (unit, ident) = OTHER[rng.below(OTHER.len() as u64) as usize];
                let msg = format!(
                    "{ident}: event {} handled in {}ms",
                    rng.below(1_000_000),
                    rng.below(500)
                );
                (unit, ident, 900 + rng.below(50) as u32, msg)
            };
        let host = k.host.clone();
        // Which file: the n-th part of the whole journal, or of this host's.
        let slot = if per_host {
            let per_host_file = (entries / hosts).div_ceil(files).max(1);
            let part = (host_counts[h] / per_host_file).min(files - 1);
            host_counts[h] += 1;
            h as u64 * files + part
        } else {
            written / per_output
        };
        let buf = &mut bufs[slot as usize];
        field(buf, "__REALTIME_TIMESTAMP", &at.to_string());
        field(buf, "__MONOTONIC_TIMESTAMP", &(at - t0).to_string());
        field(buf, "_BOOT_ID", "6d1a4c0e2f3b4a5d8e9f0a1b2c3d4e5f");
        field(buf, "_HOSTNAME", &host);
        field(buf, "_SYSTEMD_UNIT", unit);
        field(buf, "SYSLOG_IDENTIFIER", ident);
        field(buf, "_PID", &pid.to_string());
        field(buf, "_TRANSPORT", "stdout");
        field(buf, "PRIORITY", "6");
        field(buf, "_STREAM_ID", &format!("{host}{unit}"));
        field(buf, "MESSAGE", &msg);
        buf.push(b'\n');
        written += 1;
    }
    for (slot, buf) in bufs.iter_mut().enumerate() {
        if buf.is_empty() {
            continue;
        }
        let slot = slot as u64;
        let name = if per_host {
            let host = &kubelets[(slot / files) as usize].host;
            match slot % files {
                // The last part is the file being written; the others were
                // rotated away.
                p if p + 1 == files => format!("remote-{host}.journal"),
                p => format!("remote-{host}@{p:04}.journal"),
            }
        } else {
            format!("part-{slot:04}.journal")
        };
        flush(buf, name);
    }
    println!(
        "{entries} entries ({kubelet_entries} kubelet's) from {hosts} hosts in {outputs} files under {}",
        out.display()
    );
}
