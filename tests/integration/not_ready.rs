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

/// One host's journal entries in export form, in time order: systemd's
/// start of the kubelet, its lines, and `others` (entries of other units,
/// each already in export form, with its time).
fn entries(
    name: &str,
    start: Micros,
    lines: &[(Micros, String)],
    others: Vec<(Micros, Vec<u8>)>,
) -> Vec<(Micros, Vec<u8>)> {
    let mut all = others;
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
    all.push((start, out));
    for (at, msg) in lines {
        let mut out = Vec::new();
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
        all.push((*at, out));
    }
    all.sort_by_key(|(at, _)| *at);
    all
}

/// systemd's own line (pid 1) about `unit` at `at`, in export form.
fn about(name: &str, at: Micros, unit: &str, msg: &str) -> (Micros, Vec<u8>) {
    let mut out = Vec::new();
    export_entry(
        &mut out,
        &[
            ("__REALTIME_TIMESTAMP", &at.to_string()),
            ("_HOSTNAME", name),
            ("_PID", "1"),
            ("_UID", "0"),
            ("_TRANSPORT", "journal"),
            ("_SYSTEMD_UNIT", "init.scope"),
            ("UNIT", unit),
            ("SYSLOG_IDENTIFIER", "systemd"),
            ("MESSAGE", msg),
        ],
    );
    (at, out)
}

/// The journal file of host `name` in `dir`.
fn file_of(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(format!("remote-{name}.journal"))
}

/// One host's journal: systemd's start of the kubelet, then its lines.
fn host(dir: &Path, name: &str, start: Micros, lines: &[(Micros, String)]) {
    let out: Vec<u8> = entries(name, start, lines, Vec::new())
        .into_iter()
        .flat_map(|(_, e)| e)
        .collect();
    journal_remote(&out, &file_of(dir, name));
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

const GC_NOT_ENOUGH: &str = r#""Image garbage collection failed multiple times in a row" err="Failed to garbage collect required amount of images. Attempted to free 3077055283 bytes, but only found 0 bytes eligible to free.""#;

const CNI: &str = r#""Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;

/// The issue's six nodes, their kubelets started at `t0`.
fn six_nodes(dir: &Path, t0: Micros) {
    for (name, lines) in six_node_lines(t0) {
        host(dir, name, t0, &lines);
    }
}

/// The kubelet lines of the issue's six nodes, by node.
fn six_node_lines(t0: Micros) -> Vec<(&'static str, Vec<(Micros, String)>)> {
    let mut nodes = Vec::new();
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
    nodes.push(("cni-late", l));
    // The CNI never ready: every 5 s for 14 minutes.
    nodes.push((
        "cni-never",
        every(t0 + 2 * SECOND, 5 * SECOND, 14 * 12, cni),
    ));
    // The runtime down for 5 minutes, ten minutes in.
    let mut l = chatter(t0 + SECOND, t0 + 10 * min);
    l.extend(every(t0 + 10 * min, 5 * SECOND, 60, |t| {
        vec![
            klog('E', t, "kubelet.go:2386", r#""Skipping pod synchronization" err="container runtime is down""#),
            klog('E', t + 1000, "kubelet.go:2853", r#""Container runtime not ready" runtimeReady="RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready""#),
        ]
    }));
    l.extend(chatter(t0 + 15 * min + 30 * SECOND, t0 + 20 * min));
    nodes.push(("runtime-down", l));
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
    nodes.push(("pleg-stuck", l));
    // Disk pressure for 5 minutes.
    let mut l = chatter(t0 + SECOND, t0 + 10 * min);
    l.extend(every(t0 + 10 * min, 10 * SECOND, 30, |t| {
        vec![
            klog('W', t, "eviction_manager.go:369", r#""Eviction manager: attempting to reclaim" resourceName="ephemeral-storage""#),
            klog('I', t + 1000, "eviction_manager.go:380", r#""Eviction manager: must evict pod(s) to reclaim" resourceName="ephemeral-storage""#),
        ]
    }));
    l.extend(chatter(t0 + 15 * min + 30 * SECOND, t0 + 20 * min));
    // Its storm told (design 5.3): image garbage collection found nothing
    // to delete a minute before; ten pods evicted.
    l.push(klog('E', t0 + 9 * min, "kubelet.go:1400", GC_NOT_ENOUGH));
    l.extend((0..10).map(|k| {
        klog(
            'I',
            t0 + 10 * min + 2 * SECOND + k * 30 * SECOND,
            "eviction_manager.go:595",
            &format!(r#""Eviction manager: pod is evicted successfully" pod="default/web-{k}""#),
        )
    }));
    nodes.push(("disk-full", l));
    nodes.push(("healthy", chatter(t0 + SECOND, t0 + 20 * min)));
    nodes
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
    disk_storm_is_told(&svc, &stored, &mails);
}

/// The disk-pressure storm, told: its pods, the last image garbage
/// collection, and that images could not have freed the disk (design 5.3),
/// in the JSON, `show` and the mail.
fn disk_storm_is_told(svc: &Service, stored: &serde_json::Value, mails: &[String]) {
    let disk = stored
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "disk-full")
        .unwrap();
    let pods: Vec<&str> = disk["evicted_pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(pods.len(), 10, "{disk:#}");
    assert_eq!(pods[0], "default/web-0");
    assert_eq!(disk["image_gc"]["outcome"], "not-enough", "{disk:#}");
    assert_eq!(disk["image_gc"]["wanted_bytes"], 3_077_055_283_u64);
    assert_eq!(disk["image_gc"]["freed_bytes"], 0);
    let diagnosis = disk["diagnosis"].as_str().unwrap();
    assert!(
        diagnosis.contains("The eviction manager evicted 10 pods: default/web-0,")
            && diagnosis.contains("could not have freed the disk"),
        "{diagnosis}"
    );
    assert!(
        disk["next_steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().contains("du -xsh")),
        "{disk:#}"
    );
    let show = svc.query(&["show", disk["id"].as_str().unwrap()]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("evicted default/web-0, default/web-1")
            && show.contains("image gc not-enough at"),
        "{show}"
    );
    let mail = mails
        .iter()
        .find(|m| m.contains("Subject: [kubelet-sentinel] disk-full: not ready for"))
        .expect("the disk-pressure mail");
    assert!(mail.contains("could not have freed the disk"), "{mail}");
}

/// One host's journal entries in export form, with their times.
type HostEntries = (&'static str, Vec<(Micros, Vec<u8>)>);

/// The six nodes, the runtime-down host's containerd stopped on request
/// 20 s before its kubelet says the runtime is down.
fn six_nodes_with_a_containerd_stop(t0: Micros) -> Vec<HostEntries> {
    let stop = t0 + 10 * 60 * SECOND - 20 * SECOND;
    let c = "containerd.service";
    six_node_lines(t0)
        .into_iter()
        .map(|(name, lines)| {
            let others = if name == "runtime-down" {
                vec![
                    about(
                        name,
                        stop,
                        c,
                        "Stopping containerd.service - containerd container runtime...",
                    ),
                    about(
                        name,
                        stop + 200_000,
                        c,
                        "containerd.service: Deactivated successfully.",
                    ),
                    about(
                        name,
                        stop + 200_000,
                        c,
                        "Stopped containerd.service - containerd container runtime.",
                    ),
                ]
            } else {
                Vec::new()
            };
            (name, entries(name, t0, &lines, others))
        })
        .collect()
}

/// Appends each host's entries to its file in `dir` in pieces of 1 to 90
/// entries, the hosts taking turns (a splitmix of the turn picks the
/// sizes), a pause now and then.
fn write_in_pieces(dir: &Path, hosts: &[HostEntries]) {
    let mut next: Vec<usize> = vec![0; hosts.len()];
    let mut turn = 0u64;
    while next.iter().zip(hosts).any(|(n, (_, e))| *n < e.len()) {
        for (h, (name, e)) in hosts.iter().enumerate() {
            if next[h] >= e.len() {
                continue;
            }
            turn += 1;
            let mut z = turn.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let end = (next[h] + 1 + (z % 90) as usize).min(e.len());
            let piece: Vec<u8> = e[next[h]..end]
                .iter()
                .flat_map(|(_, b)| b.clone())
                .collect();
            journal_remote(&piece, &file_of(dir, name));
            next[h] = end;
            if z % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(60));
            }
        }
    }
}

/// Each incident's node and not-ready lines, by node.
fn signals(v: &serde_json::Value) -> Vec<(String, u64)> {
    let mut n: Vec<(String, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["node"].as_str().unwrap().to_string(),
                i["not_ready_signals"].as_u64().unwrap(),
            )
        })
        .collect();
    n.sort();
    n
}

/// [`judged`], without the evidence's cursors (they name the file), and
/// for the nodes in `open` without how they ended.
fn comparable(v: &serde_json::Value, open: &[String]) -> Vec<serde_json::Value> {
    judged(v)
        .into_iter()
        .map(|mut i| {
            for e in i["evidence"].as_array_mut().into_iter().flatten() {
                e.as_object_mut().unwrap().remove("cursor");
            }
            if open.iter().any(|n| i["node"] == n.as_str()) {
                let o = i.as_object_mut().unwrap();
                for k in [
                    "status",
                    "resolved_at",
                    "resolution",
                    "verdict",
                    "diagnosis",
                    "next_step",
                ] {
                    o.remove(k);
                }
            }
            i
        })
        .collect()
}

/// The mails in `dir`, quoted-printable's soft breaks undone.
fn mails_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .map(|m| m.replace("=\r\n", "").replace("=3D", "="))
        .collect()
}

/// Issues 25 and 26: a following `run` over the six nodes' journal as it
/// grows (each host's file appended to in pieces, hosts interleaved,
/// pauses between; the runtime-down host's containerd stopped on request
/// first) gives the not-ready incidents `scan` gives of the whole journal:
/// ids, times, counters, evidence, verdicts, causes and the containerd
/// stop in the runtime incident's context. What is still open at the
/// journal's end may differ only in how it ended (a following service also
/// resolves on quiet); the race is not mailed, the persistent ones are.
#[test]
fn a_following_run_gives_the_incidents_scan_gives_as_the_journal_grows() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, growing) = (tmp.path().join("whole"), tmp.path().join("remote"));
    std::fs::create_dir(&whole).unwrap();
    std::fs::create_dir(&growing).unwrap();
    let hosts = six_nodes_with_a_containerd_stop(kubelet_sentinel::now() - 3600 * SECOND);
    for (name, e) in &hosts {
        let out: Vec<u8> = e.iter().flat_map(|(_, b)| b.clone()).collect();
        journal_remote(&out, &file_of(&whole, name));
    }
    let out = run(bin().args(["scan", "-o", "json"]).arg(&whole), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runtime = scanned["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "runtime-down")
        .expect("the runtime incident");
    assert!(
        runtime["context"]
            .to_string()
            .contains("Stopping containerd.service"),
        "{runtime:#}"
    );
    assert!(
        runtime["diagnosis"]
            .to_string()
            .contains("stopped on request"),
        "{runtime:#}"
    );

    let mut svc = Service::new(
        &format!("directory = \"{}\"", growing.display()),
        "[alert]\nto = [\"ops@example.com\"]\ntransport = \"file\"\ngroup_wait = \"0s\"\n\n\
         [alert.file]\ndirectory = \"MAILDIR\"\n",
    );
    let maildir = svc.dir.path().join("mail");
    let config = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("MAILDIR", &maildir.display().to_string());
    std::fs::write(svc.config(), &config).unwrap();
    svc.start();
    write_in_pieces(&growing, &hosts);
    let lines = scanned["summary"]["kubelet_lines"]
        .as_u64()
        .expect("scan's kubelet_lines");
    crate::support::wait_for(
        std::time::Duration::from_secs(60),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines),
        "the service to read every piece",
    );
    svc.settled();
    // A host's last line is held for continuations until its stream has
    // been quiet for a moment of wall time (the reader's caught-up
    // confirmation hands it on): scan's end hands it on at once.
    let want_signals = signals(&scanned["incidents"]);
    crate::support::wait_for(
        std::time::Duration::from_secs(20),
        || signals(&svc.incidents()) == want_signals,
        "the held last lines to be handed on",
    );
    let stored = svc.incidents();
    // The open ones at the journal's end, apart from how they ended.
    let open: Vec<String> = scanned["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["status"] == "open")
        .map(|i| i["node"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(open, ["cni-never"], "{:#}", scanned["incidents"]);
    let (want, got) = (
        comparable(&scanned["incidents"], &open),
        comparable(&stored, &open),
    );
    for (w, g) in want.iter().zip(&got) {
        let differ: Vec<String> = w
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| g.get(k.as_str()) != Some(v))
            .map(|(k, v)| format!("{k}: scan {v} follow {}", g[k.as_str()]))
            .collect();
        assert!(differ.is_empty(), "{} differs: {differ:#?}", w["node"]);
    }
    assert_eq!(want.len(), got.len(), "{stored:#}");
    let mails = mails_in(&maildir);
    assert!(
        !mails.iter().any(|m| m.contains("cni-late")),
        "the race was mailed"
    );
    for node in ["cni-never", "runtime-down", "pleg-stuck", "disk-full"] {
        let subject = format!("Subject: [kubelet-sentinel] {node}: not ready for");
        assert!(
            mails.iter().any(|m| m.contains(&subject)),
            "no alert for {node}"
        );
    }
    let mail = mails
        .iter()
        .find(|m| m.contains("Subject: [kubelet-sentinel] runtime-down: not ready for"))
        .unwrap();
    assert!(mail.contains("stopped on request"), "{mail}");
}
