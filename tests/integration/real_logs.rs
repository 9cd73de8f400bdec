//! Every real kubelet log excerpt in `fixtures/real-logs/` (verbatim from
//! public bug reports): the incidents an operator would expect, written down
//! by reading each file, and no line silently lost.

use kubelet_sentinel::journal::Format;
use kubelet_sentinel::report::IncidentOut;
use kubelet_sentinel::tracker::Settings;

use crate::support::{fixture, scan_path};

struct Expect {
    node: &'static str,
    host: Option<&'static str>,
    status: &'static str,
    verdict: &'static str,
    cause: &'static str,
    /// retries, exhausted, lister misses, register failures, lease failures, watch failures
    counts: [u64; 6],
}

const fn open(
    node: &'static str,
    host: Option<&'static str>,
    cause: &'static str,
    counts: [u64; 6],
) -> Expect {
    // Each excerpt ends within a minute of its trouble: still open, and none
    // follows a registration or start marker closely enough to be the race.
    Expect {
        node,
        host,
        status: "open",
        verdict: "undetermined",
        cause,
        counts,
    }
}

/// (file, incidents, [entries, kubelet lines, recognized, unparsed, continuations])
fn cases() -> Vec<(&'static str, Vec<Expect>, [u64; 5])> {
    vec![
        // Five retries within 3 ms, then "exceeds retry count": etcd down.
        // Five is not more than the threshold of 5.
        (
            "coreos-bugs-1650.txt",
            vec![open(
                "10.169.1.131",
                Some("alien1"),
                "etcd",
                [5, 1, 0, 0, 0, 0],
            )],
            [6, 6, 6, 0, 0],
        ),
        // k3s: three pre-registration lister misses; the first line is a
        // Trace continuation whose header was cut off (unparsed); the other
        // Trace lines continue their headers.
        (
            "k3s-io-k3s-5406.txt",
            vec![open(
                "myserver",
                Some("myserver"),
                "lister-lag",
                [0, 0, 3, 0, 0, 0],
            )],
            [9, 9, 3, 1, 3],
        ),
        (
            "kubernetes-cloud-provider-gcp-660.txt",
            vec![open(
                "kt2-89f4b280-e434-master",
                Some("kt2-89f4b280-e434-master"),
                "lister-lag",
                [0, 0, 2, 0, 0, 0],
            )],
            [3, 3, 2, 0, 0],
        ),
        // Registration refused, and the pod reflector's list refused too.
        (
            "kubernetes-kubeadm-1082.txt",
            vec![open(
                "localhost.localdomain",
                Some("localhost.localdomain"),
                "api-unreachable",
                [0, 0, 0, 1, 0, 1],
            )],
            [5, 5, 3, 0, 0],
        ),
        // No node-status trouble; a legacy line with a TAB continuation.
        ("kubernetes-kubernetes-21248.txt", vec![], [5, 5, 0, 0, 1]),
        // JSON format behind a collector's host prefix: "Kubelet version" only.
        ("kubernetes-kubernetes-61117-a.txt", vec![], [8, 8, 1, 0, 0]),
        (
            "kubernetes-kubernetes-70334.txt",
            vec![open(
                "master-1-uxmal",
                Some("master-1-uxmal"),
                "lister-lag",
                [0, 0, 4, 0, 0, 0],
            )],
            [4, 4, 4, 0, 0],
        ),
        // The Node was deleted: plural `nodes "X" not found` outweighs the
        // eviction manager's single-quoted lister miss; two other units' lines
        // are not the kubelet's.
        (
            "kubernetes-kubernetes-75607.txt",
            vec![open(
                "ip-172-20-47-6.ec2.internal",
                Some("ip-172-20-47-6"),
                "node-missing",
                [1, 1, 1, 0, 0, 0],
            )],
            [7, 5, 3, 0, 0],
        ),
        // The reporter redacted names inconsistently: four different names,
        // four incidents, each from the lines that name it.
        (
            "kubernetes-kubernetes-82134.txt",
            vec![
                open(
                    ".tdg.mobilephone.net",
                    Some(".tdg.xxx.net"),
                    "lister-lag",
                    [0, 0, 2, 0, 0, 0],
                ),
                open(
                    ".tdg.xxx.net",
                    Some(".tdg.xxx.net"),
                    "lister-lag",
                    [0, 0, 2, 0, 0, 0],
                ),
                open(
                    ".tdg.xxxx.net",
                    Some(".tdg.xxx.net"),
                    "lister-lag",
                    [0, 0, 3, 0, 0, 0],
                ),
                open(
                    "wtc2k1c4mcn1oam.tdg.mobilephone.net",
                    Some(".tdg.mobilephone.net"),
                    "lister-lag",
                    [0, 0, 2, 0, 0, 0],
                ),
            ],
            [9, 9, 9, 0, 0],
        ),
        // The happy path: register, registered, ready, watching.
        (
            "syself-cluster-api-provider-hetzner-1207.txt",
            vec![],
            [7, 7, 4, 0, 0],
        ),
    ]
}

#[test]
fn real_logs_give_the_expected_incidents() {
    let settings = Settings::default();
    for (file, expected, [entries, kubelet, recognized, unparsed, continuations]) in cases() {
        let path = fixture(&format!("real-logs/{file}"));
        let r = scan_path(&path, Format::Auto);
        let s = &r.summary;
        assert_eq!(
            [
                s.entries,
                s.kubelet_lines,
                s.recognized,
                s.unparsed,
                s.continuations
            ],
            [entries, kubelet, recognized, unparsed, continuations],
            "{file}: summary {s:?}"
        );
        let mut got: Vec<IncidentOut> = r
            .incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect();
        got.sort_by(|a, b| a.node.cmp(&b.node));
        assert_eq!(got.len(), expected.len(), "{file}: {got:#?}");
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.node, e.node, "{file}");
            assert_eq!(g.host.as_deref(), e.host, "{file} {}", e.node);
            assert_eq!(
                (g.status.as_str(), g.verdict.as_str(), g.cause.as_str()),
                (e.status, e.verdict, e.cause),
                "{file} {}",
                e.node
            );
            assert_eq!(
                [
                    g.retries,
                    g.exhausted,
                    g.lister_misses,
                    g.register_failures,
                    g.lease_failures,
                    g.watch_failures
                ],
                e.counts,
                "{file} {}",
                e.node
            );
            assert!(!g.diagnosis.is_empty());
            assert!(!g.evidence.is_empty());
        }
    }
}

#[test]
fn no_line_is_silently_lost() {
    for (file, ..) in cases() {
        let path = fixture(&format!("real-logs/{file}"));
        let text = std::fs::read_to_string(&path).unwrap();
        // Every line but the `# source:`/`# notes:` header is an entry.
        let lines = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count() as u64;
        let s = scan_path(&path, Format::Auto).summary;
        assert_eq!(s.entries, lines, "{file}");
        // Each kubelet entry is a parsed line, a continuation or unparsed.
        assert_eq!(
            s.kubelet_lines,
            s.lines + s.continuations + s.unparsed,
            "{file}: {s:?}"
        );
        assert!(s.recognized <= s.lines, "{file}");
    }
}

#[test]
fn sync_guide_problematic_sequence_is_the_startup_race() {
    let r = scan_path(&fixture("sync-guide/problematic.log"), Format::Auto);
    let settings = Settings::default();
    assert_eq!(r.incidents.len(), 1);
    let i = IncidentOut::new(&r.incidents[0], &settings);
    assert_eq!(i.node, "nuvlrknpcimn01");
    assert_eq!(i.verdict, "startup-race");
    assert_eq!(i.cause, "lister-lag");
    assert_eq!(i.retries, 1);
    assert_eq!(i.exhausted, 0);
    assert_eq!(i.opened_at, "2025-07-15T16:24:50.198Z");
    assert!(
        i.diagnosis
            .contains("the lister missed the node 0 ms later"),
        "{}",
        i.diagnosis
    );
    assert!(
        i.diagnosis
            .contains("caches reported synced 98 ms before registration"),
        "{}",
        i.diagnosis
    );
    assert!(
        i.diagnosis.contains("Registered at 16:24:50.198"),
        "{}",
        i.diagnosis
    );
}

#[test]
fn sync_guide_healthy_sequence_has_no_incident() {
    let r = scan_path(&fixture("sync-guide/healthy.log"), Format::Auto);
    assert!(r.incidents.is_empty(), "{:?}", r.incidents);
    assert_eq!(r.summary.recognized, 3);
    assert_eq!(r.summary.unparsed, 0);
}
