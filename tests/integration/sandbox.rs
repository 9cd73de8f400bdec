//! Issue 38, design 5.6: pods that cannot start on a Ready node. Real
//! pastes of failed sandboxes (host-local and aws-cni out of addresses),
//! verbatim in `fixtures/real-logs/`, with the incidents written down by
//! reading them; and a collector's journal (one file a host, written by
//! `systemd-journal-remote`) of a node out of addresses, a node whose
//! network plugin is flaky and a healthy one, through the whole house:
//! scan's JSON, the store (`run --once`), `incidents --kind`, `show`,
//! `nodes`, a route and a silence by kind, the mail.

use std::path::Path;

use kubelet_sentinel::{Format, IncidentOut, Micros, SECOND, Settings};

use crate::collector::klog_time;
use crate::support::{Service, bin, export_entry, fixture, journal_remote, run, scan_path};

/// One incident as written down.
struct Expect {
    node: &'static str,
    host: Option<&'static str>,
    cause: &'static str,
    /// pods failed, sandbox failures
    counts: [u64; 2],
}

/// (file, incidents (all pod-sandbox, open, undetermined: a paste is one
/// attempt), [entries, kubelet lines, recognized, unparsed, continuations,
/// foreign])
fn cases() -> Vec<(&'static str, Vec<Expect>, [u64; 6])> {
    vec![
        // One attempt's four lines: one failure of one pod, the runtime's
        // pod-less line claimed by the pod's next; the pod worker's line,
        // cut after the pod's name, says no cause: the attempt keeps the
        // most specific its lines said.
        (
            "rancher-rancher-14504.txt",
            vec![Expect {
                node: "unknown",
                host: None,
                cause: "ip-exhausted",
                counts: [1, 1],
            }],
            [4, 4, 4, 0, 0, 0],
        ),
        // The bare runtime's line has no host (a node of its own, the one
        // that says ip-exhausted); the two syslog lines of the host, cut
        // after `add cmd`, say only that the network plugin failed.
        (
            "aws-amazon-vpc-cni-k8s-59.txt",
            vec![
                Expect {
                    node: "ip-172-20-19-97.us-west-2.compute.internal",
                    host: Some("ip-172-20-19-97.us-west-2.compute.internal"),
                    cause: "cni",
                    counts: [1, 1],
                },
                Expect {
                    node: "unknown",
                    host: None,
                    cause: "ip-exhausted",
                    counts: [0, 1],
                },
            ],
            [3, 3, 3, 0, 0, 0],
        ),
    ]
}

#[test]
fn sandbox_pastes_give_the_expected_incidents() {
    let settings = Settings::default();
    for (file, expected, summary) in cases() {
        let path = fixture(&format!("real-logs/{file}"));
        let r = scan_path(&path, Format::Auto);
        let s = &r.summary;
        assert_eq!(
            [
                s.entries,
                s.kubelet_lines,
                s.recognized,
                s.unparsed,
                s.continuations,
                s.foreign
            ],
            summary,
            "{file}: summary {s:?}"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count() as u64;
        assert_eq!(s.entries, lines, "{file}: no line lost");
        let mut got: Vec<IncidentOut> = r
            .incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect();
        got.sort_by(|a, b| a.node.cmp(&b.node));
        assert_eq!(got.len(), expected.len(), "{file}: {got:#?}");
        for (g, e) in got.iter().zip(&expected) {
            let what = format!("{file} {}", e.node);
            assert_eq!(g.kind.as_str(), "pod-sandbox", "{what}");
            assert_eq!(g.node, e.node, "{what}");
            assert_eq!(g.host.as_deref(), e.host, "{what}");
            assert_eq!(
                (g.status.as_str(), g.verdict.as_str(), g.cause.as_str()),
                ("open", "undetermined", e.cause),
                "{what}"
            );
            assert_eq!([g.pods_failed, g.sandbox_failures], e.counts, "{what}");
            assert_eq!(g.sandbox_successes, 0, "{what}");
            assert!(g.diagnosis.contains("--v=2"), "{what}: {}", g.diagnosis);
            assert!(!g.next_steps.is_empty(), "{what}");
        }
    }
}

/// One host's journal: systemd's start of the kubelet at `start`, then
/// its lines (klog, with their times).
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
    let mut lines = lines.to_vec();
    lines.sort_by_key(|(at, _)| *at);
    for (at, msg) in &lines {
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at.to_string()),
                ("_HOSTNAME", name),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_PID", "2001"),
                ("MESSAGE", msg),
            ],
        );
    }
    journal_remote(&out, &dir.join(format!("remote-{name}.journal")));
}

fn klog(sev: char, at: Micros, src: &str, body: &str) -> (Micros, String) {
    (at, format!("{sev}{}    2001 {src}] {body}", klog_time(at)))
}

const NO_IP: &str = r#"rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a7c0dd169f1600782ef8b49976c15fa11caad0577706595922ab685e1\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container"#;
const FLAKY: &str = r#"rpc error: code = Unknown desc = failed to setup network for sandbox \"3c8b059ce4c4\": plugin type=\"calico\" failed (add): error adding host side routes for interface: calid29a1cadef5, error: route (Ifindex: 131, Dst: 172.25.136.1/32, Scope: link) already exists for an interface other than 'calid29a1cadef5'"#;

/// One failed attempt of `pod` at `at`: the runtime's line, then the
/// sandbox's and the runtime manager's.
fn attempt(at: Micros, pod: &str, err: &str) -> Vec<(Micros, String)> {
    vec![
        klog(
            'E',
            at,
            "remote_runtime.go:193",
            &format!(r#""RunPodSandbox from runtime service failed" err="{err}""#),
        ),
        klog(
            'E',
            at + 1_000,
            "kuberuntime_sandbox.go:72",
            &format!(r#""Failed to create sandbox for pod" err="{err}" pod="{pod}""#),
        ),
        klog(
            'E',
            at + 2_000,
            "kuberuntime_manager.go:1172",
            &format!(r#""CreatePodSandbox for pod failed" err="{err}" pod="{pod}""#),
        ),
    ]
}

fn started(at: Micros, pod: &str) -> (Micros, String) {
    klog(
        'I',
        at,
        "kubelet.go:2465",
        &format!(
            r#""SyncLoop (PLEG): event for pod" pod="{pod}" event={{"ID":"96d459e4","Type":"ContainerStarted","Data":"9782e0cf"}}"#
        ),
    )
}

const READY: &str = r#""Fast updating node status as it just became ready""#;

/// The three nodes, their kubelets started at `t0`, Ready 20 s later:
/// `eks-full` out of addresses for six pods for 8 minutes, `eks-flaky`
/// whose network plugin fails each new pod twice before it starts (PLEG's
/// events written, `--v=2`), `eks-ok` starting its pods.
fn three_nodes(dir: &Path, t0: Micros) {
    let ready = klog('I', t0 + 20 * SECOND, "kubelet_node_status.go:500", READY);
    let mut full = vec![ready.clone()];
    for tick in 0..48 {
        for k in 0..6 {
            let at = t0 + 30 * SECOND + tick * 10 * SECOND + k * 100_000;
            full.extend(attempt(at, &format!("default/web-{k}"), NO_IP));
        }
    }
    host(dir, "eks-full", t0, &full);
    let mut flaky = vec![ready.clone()];
    for n in 0..24 {
        let pod = format!("default/api-{n}");
        let at = t0 + 30 * SECOND + n * 20 * SECOND;
        flaky.extend(attempt(at, &pod, FLAKY));
        flaky.extend(attempt(at + 10 * SECOND, &pod, FLAKY));
        flaky.push(started(at + 15 * SECOND, &pod));
    }
    host(dir, "eks-flaky", t0, &flaky);
    let mut ok = vec![ready];
    for n in 0..10 {
        ok.push(started(
            t0 + 30 * SECOND + n * 30 * SECOND,
            &format!("default/job-{n}"),
        ));
    }
    host(dir, "eks-ok", t0, &ok);
}

/// (node, status, verdict, cause, pods failed, failures, successes)
fn outline(incidents: &serde_json::Value) -> Vec<(String, String, String, String, u64, u64, u64)> {
    let mut v: Vec<_> = incidents
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "pod-sandbox")
        .map(|i| {
            (
                i["node"].as_str().unwrap().to_string(),
                i["status"].as_str().unwrap().to_string(),
                i["verdict"].as_str().unwrap().to_string(),
                i["cause"].as_str().unwrap().to_string(),
                i["pods_failed"].as_u64().unwrap(),
                i["sandbox_failures"].as_u64().unwrap(),
                i["sandbox_successes"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_node_out_of_addresses_through_the_house() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    three_nodes(&dir, kubelet_sentinel::now() - 3600 * SECOND);
    let out = run(bin().args(["scan", "-o", "json"]).arg(&dir), None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str, st: &str, v: &str, c: &str, p: u64, f: u64, s: u64| {
        (n.into(), st.into(), v.into(), c.into(), p, f, s)
    };
    let want = vec![
        row("eks-flaky", "open", "flapping", "cni", 24, 48, 24),
        row("eks-full", "open", "persistent", "ip-exhausted", 6, 288, 0),
    ];
    assert_eq!(
        outline(&scanned["incidents"]),
        want,
        "{:#}",
        scanned["incidents"]
    );
    assert_eq!(
        scanned["incidents"].as_array().unwrap().len(),
        2,
        "{:#}",
        scanned["incidents"]
    );
    // The service's catch-up: the persistent one mailed to the route for
    // its kind, the flapping one not at all.
    let svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[alert]\nto = [\"ops@example.com\"]\ntransport = \"file\"\ngroup_wait = \"0s\"\n\n\
         [alert.file]\ndirectory = \"MAILDIR\"\n\n\
         [[alert.route]]\nmatch = { kind = [\"pod-sandbox\"] }\nto = [\"network@example.com\"]\n",
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
    // The store gives back what scan found.
    let stored = svc.incidents();
    assert_eq!(outline(&stored), want, "{stored:#}");
    let mails: Vec<String> = std::fs::read_dir(&maildir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .map(|m| m.replace("=\r\n", "").replace("=3D", "="))
        .collect();
    assert!(!mails.iter().any(|m| m.contains("eks-flaky")), "{mails:#?}");
    let full: Vec<&String> = mails.iter().filter(|m| m.contains("eks-full")).collect();
    assert!(!full.is_empty(), "{mails:#?}");
    let page = full
        .iter()
        .find(|m| m.contains("Subject: [kubelet-sentinel] eks-full: Ready but 6 pods cannot start"))
        .expect("the page");
    assert!(page.contains("To: network@example.com"), "{page}");
    assert!(page.contains("failed to assign an IP address"), "{page}");
    assert!(page.contains("WARM_IP_TARGET"), "{page}");
    // `incidents --kind pod-sandbox`, `show` with its own counters, `nodes`.
    let out = svc.query(&["incidents", "--kind", "pod-sandbox"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("persistent (pod-sandbox)"), "{table}");
    assert!(table.contains("flapping (pod-sandbox)"), "{table}");
    assert!(table.contains("288 failures"), "{table}");
    let id = stored
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "eks-full")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let show = svc.query(&["show", &id]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("pods failed 6  sandbox failures 288  pod starts 0"),
        "{show}"
    );
    let nodes = svc.query(&["nodes", "-o", "json"]);
    let nodes: serde_json::Value = serde_json::from_slice(&nodes.stdout).unwrap();
    assert_eq!(nodes["nodes"].as_array().unwrap().len(), 2, "{nodes:#}");
    // A silence by kind is taken and listed.
    let out = svc.query(&[
        "silence",
        "add",
        "--kind",
        "pod-sandbox",
        "--for",
        "1h",
        "--comment",
        "subnet being grown",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = svc.query(&["silence", "list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("pod-sandbox"), "{list}");
}
