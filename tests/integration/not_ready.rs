//! Issue 25, design 5.3: the node not ready while its kubelet runs. The
//! issue's six-node journal, written by `systemd-journal-remote` (one file
//! a host, as a collector keeps them): a new node whose CNI comes up 40 s
//! after its kubelet, one whose CNI is never ready, one whose runtime is
//! down for 5 minutes, one with PLEG unhealthy for 4, one under disk
//! pressure for 5, and a healthy one. `scan` and `run --once` give the same
//! incidents; the persistent ones are mailed, the start-up race is not.

use std::path::Path;

use kubelet_sentinel::{Micros, SECOND};

use crate::collector::klog_time;
use crate::support::{Service, bin, export_entry, journal_remote, run};

/// One host's journal: systemd's start of the kubelet, then its lines.
fn host(dir: &Path, name: &str, start: Micros, lines: &[(Micros, String)]) {
    let mut out = Vec::new();
    export_entry(
        &mut out,
        &[
            ("__REALTIME_TIMESTAMP", &start.to_string()),
            ("_HOSTNAME", name),
            ("_PID", "1"),
            ("_SYSTEMD_UNIT", "init.scope"),
            ("UNIT", "kubelet.service"),
            ("SYSLOG_IDENTIFIER", "systemd"),
            (
                "MESSAGE",
                "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
            ),
        ],
    );
    for (at, msg) in lines {
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at.to_string()),
                ("_HOSTNAME", name),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_PID", "2001"),
                ("_STREAM_ID", &format!("{name}-kubelet")),
                ("MESSAGE", msg),
            ],
        );
    }
    journal_remote(&out, &dir.join(format!("remote-{name}.journal")));
}

/// A klog line of severity `sev` at `at`.
fn klog(sev: char, at: Micros, src: &str, body: &str) -> (Micros, String) {
    (at, format!("{sev}{}    2001 {src}] {body}", klog_time(at)))
}

/// The kubelet going about its business: a line every 30 s.
fn chatter(from: Micros, to: Micros) -> Vec<(Micros, String)> {
    (0..=(to - from) / (30 * SECOND))
        .map(|k| from + k * 30 * SECOND)
        .take_while(|&t| t < to)
        .map(|t| {
            klog(
                'I',
                t,
                "kubelet.go:2450",
                r#""SyncLoop (PLEG): event for pod" pod="kube-system/kube-proxy-x7k2p""#,
            )
        })
        .collect()
}

/// `f(t)` every `step` from `from` for `count` times.
fn every(
    from: Micros,
    step: Micros,
    count: i64,
    f: impl Fn(Micros) -> Vec<(Micros, String)>,
) -> Vec<(Micros, String)> {
    (0..count).flat_map(|k| f(from + k * step)).collect()
}

const CNI: &str = r#""Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;

/// The issue's six nodes, their kubelets started at `t0`.
fn six_nodes(dir: &Path, t0: Micros) {
    let min = 60 * SECOND;
    let cni = |t| vec![klog('E', t, "kubelet.go:2862", CNI)];
    // The CNI 40 s late: eight lines, then the ready marker.
    let mut l = every(t0 + 2 * SECOND, 5 * SECOND, 8, cni);
    l.push(klog(
        'I',
        t0 + 42 * SECOND,
        "kubelet_node_status.go:493",
        r#""Fast updating node status as it just became ready""#,
    ));
    l.extend(chatter(t0 + 60 * SECOND, t0 + 20 * min));
    host(dir, "cni-late", t0, &l);
    // The CNI never ready: every 5 s for 14 minutes.
    host(
        dir,
        "cni-never",
        t0,
        &every(t0 + 2 * SECOND, 5 * SECOND, 14 * 12, cni),
    );
    // The runtime down for 5 minutes, ten minutes in.
    let mut l = chatter(t0 + SECOND, t0 + 10 * min);
    l.extend(every(t0 + 10 * min, 5 * SECOND, 60, |t| {
        vec![
            klog('E', t, "kubelet.go:2386", r#""Skipping pod synchronization" err="container runtime is down""#),
            klog('E', t + 1000, "kubelet.go:2853", r#""Container runtime not ready" runtimeReady="RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready""#),
        ]
    }));
    l.extend(chatter(t0 + 15 * min + 30 * SECOND, t0 + 20 * min));
    host(dir, "runtime-down", t0, &l);
    // PLEG unhealthy for 4 minutes.
    let mut l = chatter(t0 + SECOND, t0 + 10 * min);
    l.push(klog(
        'I',
        t0 + 10 * min,
        "setters.go:602",
        r#""Node became not ready" node="pleg-stuck" condition={"type":"Ready","status":"False","lastHeartbeatTime":"2026-12-02T10:00:00Z","lastTransitionTime":"2026-12-02T10:00:00Z","reason":"KubeletNotReady","message":"PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"}"#,
    ));
    l.extend(every(t0 + 10 * min + SECOND, 5 * SECOND, 48, |t| {
        vec![klog('E', t, "kubelet.go:2386", r#""Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#)]
    }));
    l.extend(chatter(t0 + 15 * min, t0 + 20 * min));
    host(dir, "pleg-stuck", t0, &l);
    // Disk pressure for 5 minutes.
    let mut l = chatter(t0 + SECOND, t0 + 10 * min);
    l.extend(every(t0 + 10 * min, 10 * SECOND, 30, |t| {
        vec![
            klog('W', t, "eviction_manager.go:369", r#""Eviction manager: attempting to reclaim" resourceName="ephemeral-storage""#),
            klog('I', t + 1000, "eviction_manager.go:380", r#""Eviction manager: must evict pod(s) to reclaim" resourceName="ephemeral-storage""#),
        ]
    }));
    l.extend(chatter(t0 + 15 * min + 30 * SECOND, t0 + 20 * min));
    host(dir, "disk-full", t0, &l);
    host(dir, "healthy", t0, &chatter(t0 + SECOND, t0 + 20 * min));
}

/// (node, status, verdict, cause, alerted) of each incident, by node.
fn outline(incidents: &serde_json::Value) -> Vec<(String, String, String, String, bool)> {
    let mut v: Vec<_> = incidents
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            assert_eq!(i["kind"], "not-ready", "{i:#}");
            (
                i["node"].as_str().unwrap().to_string(),
                i["status"].as_str().unwrap().to_string(),
                i["verdict"].as_str().unwrap().to_string(),
                i["cause"].as_str().unwrap().to_string(),
                i["alerted_at"].is_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// What an incident is, apart from its delivery.
fn judged(incidents: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = incidents
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let mut i = i.clone();
            let o = i.as_object_mut().unwrap();
            o.remove("alerted_at");
            o.remove("silenced_by");
            i
        })
        .collect();
    v.sort_by_key(|i| i["node"].as_str().unwrap().to_string());
    v
}

#[test]
fn the_six_nodes_of_the_issue() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    six_nodes(&dir, kubelet_sentinel::now() - 3600 * SECOND);
    let out = run(bin().args(["scan", "-o", "json"]).arg(&dir), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = |a: &str, b: &str, c: &str, d: &str, e: bool| {
        (
            a.to_string(),
            b.to_string(),
            c.to_string(),
            d.to_string(),
            e,
        )
    };
    assert_eq!(
        outline(&scanned["incidents"]),
        vec![
            s("cni-late", "resolved", "startup-race", "cni", false),
            s("cni-never", "open", "persistent", "cni", false),
            s(
                "disk-full",
                "resolved",
                "persistent",
                "disk-pressure",
                false
            ),
            s("pleg-stuck", "resolved", "persistent", "pleg", false),
            s("runtime-down", "resolved", "persistent", "runtime", false),
        ],
        "{:#}",
        scanned["incidents"]
    );
    // The service's catch-up mails the persistent ones, not the race.
    let svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[alert]\nto = [\"ops@example.com\"]\ntransport = \"file\"\ngroup_wait = \"0s\"\n\n\
         [alert.file]\ndirectory = \"MAILDIR\"\n",
    );
    let maildir = svc.dir.path().join("mail");
    let config = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("MAILDIR", &maildir.display().to_string());
    std::fs::write(svc.config(), &config).unwrap();
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = svc.incidents();
    assert_eq!(
        outline(&stored),
        vec![
            s("cni-late", "resolved", "startup-race", "cni", false),
            s("cni-never", "open", "persistent", "cni", true),
            s("disk-full", "resolved", "persistent", "disk-pressure", true),
            s("pleg-stuck", "resolved", "persistent", "pleg", true),
            s("runtime-down", "resolved", "persistent", "runtime", true),
        ],
        "{stored:#}"
    );
    // Identical apart from delivery: ids, times, counters, evidence.
    assert_eq!(judged(&scanned["incidents"]), judged(&stored));
    // The mails say what the kubelet said and what to check next.
    let mails: Vec<String> = std::fs::read_dir(&maildir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        // quoted-printable's soft breaks undone
        .map(|m| m.replace("=\r\n", "").replace("=3D", "="))
        .collect();
    // The four alerts and the three resolved notices; none for the race.
    assert_eq!(mails.len(), 7);
    let cni = mails
        .iter()
        .find(|m| m.contains("Subject: [kubelet-sentinel] cni-never: not ready for"))
        .expect("the never-ready CNI's mail");
    assert!(cni.contains("cni plugin not initialized"), "{cni}");
    assert!(cni.contains("/etc/cni/net.d"), "{cni}");
    assert!(!mails.iter().any(|m| m.contains("cni-late")));
    // `incidents --kind not-ready`, `show` with its own counters.
    let out = svc.query(&["incidents", "--kind", "not-ready"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("persistent (not-ready)"), "{table}");
    let never = stored
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "cni-never")
        .unwrap();
    assert_eq!(never["not_ready_signals"], 168, "{never:#}");
    let show = svc.query(&["show", never["id"].as_str().unwrap()]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("not-ready lines 168"), "{show}");
    assert!(!show.contains("retries 0  exhausted 0"), "{show}");
    let nodes = svc.query(&["nodes", "-o", "json"]);
    let nodes: serde_json::Value = serde_json::from_slice(&nodes.stdout).unwrap();
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 5, "{nodes:#}");
}
