//! Writes a small, realistic kubelet journal in Journal Export Format to
//! standard output, for the demo: pipe it into `systemd-journal-remote`.
//!
//! Three nodes on one collector, as `systemd-journal-upload` would ship them:
//! - `worker-01` registers and hits the harmless start-up race (one retry);
//! - `worker-02` loses its API server: five retries and "exceeds retry count"
//!   every 10 s for two minutes, lease and reflector errors alongside;
//! - `worker-03` keeps running after its Node object was deleted;
//!
//! with other units' chatter in between, as a real journal has.
//!
//! Usage: `cargo run --example sample_journal > sample.export`

use std::io::Write;

/// 2026-11-28T09:00:00Z
const T0: u64 = 1_795_856_400_000_000;

struct Writer {
    out: Vec<u8>,
    seq: u64,
}

impl Writer {
    fn entry(&mut self, ms: u64, host: &str, unit: &str, ident: &str, pid: u32, msg: &str) {
        // Entries in one millisecond keep their order.
        self.seq += 1;
        let at = T0 + ms * 1000 + self.seq % 1000;
        let mut fields = vec![
            ("__REALTIME_TIMESTAMP".to_string(), at.to_string()),
            ("_HOSTNAME".to_string(), host.to_string()),
            ("_SYSTEMD_UNIT".to_string(), unit.to_string()),
            ("SYSLOG_IDENTIFIER".to_string(), ident.to_string()),
            ("_PID".to_string(), pid.to_string()),
            ("_TRANSPORT".to_string(), "stdout".to_string()),
            ("_STREAM_ID".to_string(), format!("{host}-{pid}")),
            ("PRIORITY".to_string(), "6".to_string()),
            ("MESSAGE".to_string(), msg.to_string()),
        ];
        if pid == 1 {
            fields.retain(|(k, _)| k != "_STREAM_ID");
            fields.push(("UNIT".to_string(), "kubelet.service".to_string()));
        }
        for (k, v) in fields {
            self.out.extend_from_slice(format!("{k}={v}\n").as_bytes());
        }
        self.out.push(b'\n');
    }

    fn kubelet(&mut self, ms: u64, host: &str, pid: u32, sev: char, file: &str, body: &str) {
        let t = T0 / 1000 + ms;
        let (h, m, s, frac) = (
            (t / 3_600_000) % 24,
            (t / 60_000) % 60,
            (t / 1000) % 60,
            (t % 1000) * 1000,
        );
        let line = format!("{sev}1128 {h:02}:{m:02}:{s:02}.{frac:06} {pid:>7} {file}] {body}");
        self.entry(ms, host, "kubelet.service", "kubelet", pid, &line);
    }
}

fn main() {
    let mut w = Writer {
        out: Vec::new(),
        seq: 0,
    };
    // worker-01: start, caches synced, register, the race, ready.
    w.entry(
        0,
        "worker-01",
        "init.scope",
        "systemd",
        1,
        "Started kubelet: The Kubernetes Node Agent.",
    );
    w.kubelet(
        40,
        "worker-01",
        2425,
        'I',
        "server.go:484",
        r#""Kubelet version" kubeletVersion="v1.31.2""#,
    );
    w.kubelet(
        900,
        "worker-01",
        2425,
        'I',
        "shared_informer.go:320",
        r#""Caches are synced" controller="node""#,
    );
    w.kubelet(
        998,
        "worker-01",
        2425,
        'I',
        "kubelet_node_status.go:72",
        r#""Attempting to register node" node="worker-01""#,
    );
    w.kubelet(
        1005,
        "worker-01",
        2425,
        'I',
        "kubelet_node_status.go:75",
        r#""Successfully registered node" node="worker-01""#,
    );
    w.kubelet(1005, "worker-01", 2425, 'E', "kubelet_node_status.go:535", r#""Error updating node status, will retry" err="error getting node \"worker-01\": node \"worker-01\" not found""#);
    w.entry(1100, "worker-01", "containerd.service", "containerd", 811, r#"time="2026-11-28T09:00:01Z" level=info msg="ImageCreate event name:\"registry.k8s.io/pause:3.10\"""#);
    w.kubelet(
        1420,
        "worker-01",
        2425,
        'I',
        "kubelet_node_status.go:493",
        r#""Fast updating node status as it just became ready""#,
    );
    w.kubelet(
        1600,
        "worker-01",
        2425,
        'I',
        "apiserver.go:52",
        r#""Watching apiserver""#,
    );

    api_outage(&mut w);
    deleted_node(&mut w);
    std::io::stdout()
        .write_all(&w.out)
        .expect("write to standard output");
}

/// worker-02: the API server goes away for two minutes.
fn api_outage(w: &mut Writer) {
    let refused = r#""Error updating node status, will retry" err="error getting node \"worker-02\": Get \"https://10.0.0.10:6443/api/v1/nodes/worker-02?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#;
    for cycle in 0..12u64 {
        let at = 5_000 + cycle * 10_000;
        for n in 0..5 {
            w.kubelet(
                at + n,
                "worker-02",
                3117,
                'E',
                "kubelet_node_status.go:535",
                refused,
            );
        }
        w.kubelet(
            at + 5,
            "worker-02",
            3117,
            'E',
            "kubelet_node_status.go:522",
            r#""Unable to update node status" err="update node status exceeds retry count""#,
        );
        w.kubelet(at + 700, "worker-02", 3117, 'E', "controller.go:145", r#""Failed to update lease" err="Put \"https://10.0.0.10:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/worker-02?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#);
        if cycle % 3 == 0 {
            w.kubelet(at + 900, "worker-02", 3117, 'W', "reflector.go:561", r#"k8s.io/client-go/informers/factory.go:160: failed to list *v1.Node: Get "https://10.0.0.10:6443/api/v1/nodes?fieldSelector=metadata.name%3Dworker-02&limit=500&resourceVersion=0": dial tcp 10.0.0.10:6443: connect: connection refused"#);
        }
        w.entry(
            at + 2_000,
            "worker-02",
            "containerd.service",
            "containerd",
            790,
            r#"time="2026-11-28T09:00:07Z" level=info msg="container event discarded""#,
        );
    }
}

/// worker-03: the Node object was deleted under a running kubelet.
fn deleted_node(w: &mut Writer) {
    for cycle in 0..4u64 {
        let at = 30_000 + cycle * 10_000;
        for n in 0..5 {
            w.kubelet(at + n, "worker-03", 1272, 'E', "kubelet_node_status.go:535", r#""Error updating node status, will retry" err="error getting node \"worker-03\": nodes \"worker-03\" not found""#);
        }
        w.kubelet(
            at + 5,
            "worker-03",
            1272,
            'E',
            "kubelet_node_status.go:522",
            r#""Unable to update node status" err="update node status exceeds retry count""#,
        );
    }
}
