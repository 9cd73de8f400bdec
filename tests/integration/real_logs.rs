//! Every real kubelet log excerpt in `fixtures/real-logs/` (verbatim from
//! public bug reports): the incidents an operator would expect, written down
//! by reading each file, and no line silently lost.

use kubelet_sentinel::Format;
use kubelet_sentinel::IncidentOut;
use kubelet_sentinel::Settings;

use crate::support::{fixture, scan_path};

struct Expect {
    kind: &'static str,
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
        kind: "node-status",
        node,
        host,
        status: "open",
        verdict: "undetermined",
        cause,
        counts,
    }
}

/// A not-ready incident still open when the excerpt ends, with no kubelet
/// start in it (so not the start-up race); no node-status counters.
const fn not_ready(node: &'static str, host: Option<&'static str>, cause: &'static str) -> Expect {
    Expect {
        kind: "not-ready",
        ..open(node, host, cause, [0; 6])
    }
}

/// A kernel incident (design 5.8), paged at once: persistent from the
/// start, open until the host's next boot.
const fn kernel(node: &'static str, host: Option<&'static str>, cause: &'static str) -> Expect {
    Expect {
        kind: "kernel",
        verdict: "persistent",
        ..open(node, host, cause, [0; 6])
    }
}

/// (file, incidents, [entries, kubelet lines, recognized, unparsed,
/// continuations, foreign])
#[allow(clippy::too_many_lines)] // the table of real logs, one row each
fn cases() -> Vec<(&'static str, Vec<Expect>, [u64; 6])> {
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
            [6, 6, 6, 0, 0, 0],
        ),
        // k3s: three pre-registration lister misses; the first line is the
        // end of an apiserver Trace whose header was cut off: k3s's own
        // output, foreign; the other Trace lines continue their headers.
        (
            "k3s-io-k3s-5406.txt",
            vec![open(
                "myserver",
                Some("myserver"),
                "lister-lag",
                [0, 0, 3, 0, 0, 0],
            )],
            [9, 8, 3, 0, 3, 1],
        ),
        (
            "kubernetes-cloud-provider-gcp-660.txt",
            vec![open(
                "kt2-89f4b280-e434-master",
                Some("kt2-89f4b280-e434-master"),
                "lister-lag",
                [0, 0, 2, 0, 0, 0],
            )],
            [3, 3, 2, 0, 0, 0],
        ),
        // Registration refused, and the pod reflector's list refused too;
        // the legacy `skipping pod synchronization - [container runtime is
        // down]`: not the start-up state (that is `may not have completed
        // yet`), the runtime's own report that it is down (docker not up
        // yet after the reboot): the node not ready, its runtime's, still
        // open when the paste ends.
        (
            "kubernetes-kubeadm-1082.txt",
            vec![
                open(
                    "localhost.localdomain",
                    Some("localhost.localdomain"),
                    "api-unreachable",
                    [0, 0, 0, 1, 0, 1],
                ),
                not_ready(
                    "localhost.localdomain",
                    Some("localhost.localdomain"),
                    "runtime",
                ),
            ],
            [5, 5, 4, 0, 0, 0],
        ),
        // No node-status trouble; a legacy line with a TAB continuation;
        // 1.21's start-up aggregate (`container runtime status check may not
        // have completed yet, PLEG is not healthy: pleg has yet to be
        // successful`), which every kubelet writes as it starts: recognised,
        // supporting only, no incident.
        (
            "kubernetes-kubernetes-21248.txt",
            vec![],
            // Recognised: the start-up state and image garbage collection's
            // first failure before its stats (it says nothing of the disk).
            [5, 5, 2, 0, 1, 0],
        ),
        // JSON format behind a collector's host prefix: "Kubelet version" only.
        (
            "kubernetes-kubernetes-61117-a.txt",
            vec![],
            [8, 8, 1, 0, 0, 0],
        ),
        (
            "kubernetes-kubernetes-70334.txt",
            vec![open(
                "master-1-uxmal",
                Some("master-1-uxmal"),
                "lister-lag",
                [0, 0, 4, 0, 0, 0],
            )],
            [4, 4, 4, 0, 0, 0],
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
            [7, 5, 3, 0, 0, 0],
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
            [9, 9, 9, 0, 0, 0],
        ),
        // The happy path: register, registered, ready, watching.
        (
            "syself-cluster-api-provider-hetzner-1207.txt",
            vec![],
            [7, 7, 4, 0, 0, 0],
        ),
        // Hard-wrapped at 110 columns: twelve physical lines, four entries.
        // The Node was never created (plural `nodes "X" not found`).
        (
            "pahud-eks-templates-1.txt",
            vec![open(
                "ip-10-0-157-91.us-west-2.compute.internal",
                Some("ip-10-0-157-91.us-west-2.compute.internal"),
                "node-missing",
                [3, 0, 1, 0, 0, 0],
            )],
            [4, 4, 4, 0, 0, 0],
        ),
        // The Rancher UI's time glued to the header; no host. Six retries in
        // ten seconds against a deleted Node: over the threshold, persistent.
        (
            "rancher-rancher-4587.txt",
            vec![Expect {
                verdict: "persistent",
                ..open("test-534747", None, "node-missing", [6, 1, 0, 0, 0, 0])
            }],
            [7, 7, 7, 0, 0, 0],
        ),
        // Glued UI time again; refused Node and Pod lists are supporting
        // signals only: no node-status trouble, no incident.
        ("rancher-rancher-6820.txt", vec![], [3, 3, 2, 0, 0, 0]),
        // Prose and a dateless prefix before a Docker-logged kubelet line
        // (identifier dockerd-current, adopted by content).
        ("rancher-rancher-19030.txt", vec![], [1, 1, 1, 0, 0, 0]),
        // Quotes damaged in the paste: the node and the cause survive.
        (
            "geerlingguy-ansible-role-kubernetes-125.txt",
            vec![open(
                "instance",
                Some("instance"),
                "lister-lag",
                [0, 0, 2, 0, 0, 0],
            )],
            [2, 2, 2, 0, 0, 0],
        ),
        (
            "kubernetes-kubernetes-105838.txt",
            vec![open(
                "k8s-scheduler-test-w0-5",
                Some("k8s-scheduler-test-w0-5"),
                "api-timeout",
                [2, 0, 0, 0, 1, 0],
            )],
            [4, 4, 3, 0, 0, 0],
        ),
        // rsyslog's file: `Sep  3`, no PID.
        (
            "kubernetes-kubernetes-68270.txt",
            vec![open(
                "engine02",
                Some("engine02"),
                "api-unreachable",
                [3, 0, 0, 0, 0, 0],
            )],
            [3, 3, 3, 0, 0, 0],
        ),
        // OpenShift 3.9's origin-node.
        (
            "openshift-openshift-ansible-7486.txt",
            vec![open(
                "ip-172-18-15-75.ec2.internal",
                Some("ip-172-18-15-75.ec2.internal"),
                "api-unreachable",
                [3, 0, 0, 0, 0, 0],
            )],
            [3, 3, 3, 0, 0, 0],
        ),
        // OpenShift 3.7's atomic-openshift-node registers cleanly; the
        // ovs-vsctl lines are another unit's.
        ("openshift-origin-18507.txt", vec![], [7, 2, 2, 0, 0, 0]),
        // hyperkube; 'connect: invalid argument' to the API VIP.
        (
            "openshift-metal3-dev-scripts-354.txt",
            vec![open(
                "master-1",
                Some("master-1"),
                "api-unreachable",
                [2, 0, 0, 0, 0, 0],
            )],
            [3, 3, 2, 0, 0, 0],
        ),
        // Pager-cut lines ending in '>': the retries count, the cause is
        // cut away.
        (
            "okd-project-okd-680.txt",
            vec![open(
                "summit-odience-infra-xk4z8-master-0",
                Some("summit-odience-infra-xk4z8-master-0"),
                "unknown",
                [3, 0, 0, 0, 0, 0],
            )],
            [5, 5, 3, 0, 0, 0],
        ),
        // Other units' lines around one retry cut inside '(Client'.
        (
            "kubernetes-sigs-cluster-api-182.txt",
            vec![open(
                "gce-master-cluster-api-test",
                Some("gce-master-cluster-api-test"),
                "api-timeout",
                [1, 0, 0, 0, 0, 0],
            )],
            [7, 1, 1, 0, 0, 0],
        ),
        // MicroK8s' microk8s.daemon-kubelet: 'exceeds retry count' names no
        // node, so the node is the host's.
        (
            "canonical-microk8s-3423.txt",
            vec![open("xxxx", Some("xxxx"), "unknown", [0, 1, 0, 0, 0, 0])],
            [8, 8, 1, 0, 0, 0],
        ),
        // kubelite behind 'journal.log: ': its own plain lines are foreign.
        ("canonical-microk8s-2916.txt", vec![], [4, 2, 0, 0, 0, 2]),
        // Bare klog from 'docker logs'.
        (
            "rancher-rancher-21178.txt",
            vec![open("10.1.25.205", None, "api-timeout", [1, 0, 0, 0, 0, 0])],
            [4, 4, 1, 0, 0, 0],
        ),
        // Headers cut off: four lister misses with no time anywhere; the
        // status output's CGroup line is systemctl's, not the kubelet's
        // (foreign, issue 20).
        (
            "kubernetes-kubernetes-108687.txt",
            vec![open("aaaaaaa43", None, "lister-lag", [0, 0, 4, 0, 0, 0])],
            [5, 4, 4, 0, 0, 1],
        ),
        // Only 'kubelet[PID]: ' of the prefix: an identifier, not a host.
        // The start-up aggregate of 1.18 (`skipping pod synchronization -
        // [container runtime status check may not have completed yet., PLEG
        // is not healthy: pleg has yet to be successful.]`): recognised,
        // the start-up state, no incident.
        (
            "superedge-superedge-90.txt",
            vec![open(
                "11-22-00-ff-bb-cd",
                None,
                "lister-lag",
                [0, 0, 1, 0, 0, 0],
            )],
            [9, 9, 2, 0, 0, 0],
        ),
        // Kubernetes 1.2: update conflicts, then 'exceeds retry count'.
        (
            "kubernetes-kubernetes-20566.txt",
            vec![open(
                "e2e-test-yjhong-minion-49kb",
                None,
                "conflict",
                [4, 1, 0, 0, 0, 0],
            )],
            [5, 5, 5, 0, 0, 0],
        ),
        // A shell prompt line (not understood), eight lister misses and a
        // pager-cut Pod list.
        (
            "kubernetes-website-13612.txt",
            vec![open(
                "ubuntu",
                Some("ubuntu"),
                "lister-lag",
                [0, 0, 8, 0, 0, 1],
            )],
            [10, 10, 9, 1, 0, 0],
        ),
        // The kernel (no kubelet line): an ext4 error, the root's data
        // partition remounted read-only (NPD's ReadonlyFilesystem).
        (
            "coreos-bugs-1811.txt",
            vec![kernel("<IP>", Some("<IP>"), "readonly-fs")],
            [14, 0, 0, 0, 0, 0],
        ),
        // The kernel: one kworker blocked 120 s (printk's time in the
        // syslog line): no longer than not_ready_after, nothing.
        (
            "kubernetes-kubernetes-23342.txt",
            vec![],
            [10, 0, 0, 0, 0, 0],
        ),
        // kubelet-wrapper: registration starts, the Pod list is refused.
        ("kubernetes-website-4166.txt", vec![], [7, 7, 2, 0, 0, 0]),
        // TAB-indented start-up lines.
        (
            "kubernetes-kubernetes-25795.txt",
            vec![],
            [11, 11, 1, 0, 0, 0],
        ),
    ]
}

/// Fixtures pasted from a terminal that hard-wrapped them: physical lines
/// joined to the entry they continue.
const WRAPPED: &[(&str, u64)] = &[("pahud-eks-templates-1.txt", 8)];

#[test]
fn real_logs_give_the_expected_incidents() {
    let settings = Settings::default();
    for (
        file,
        expected,
        [
            entries,
            kubelet,
            recognized,
            unparsed,
            continuations,
            foreign,
        ],
    ) in cases()
    {
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
            [
                entries,
                kubelet,
                recognized,
                unparsed,
                continuations,
                foreign
            ],
            "{file}: summary {s:?}"
        );
        let mut got: Vec<IncidentOut> = r
            .incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect();
        got.sort_by(|a, b| (&a.node, a.kind).cmp(&(&b.node, b.kind)));
        assert_eq!(got.len(), expected.len(), "{file}: {got:#?}");
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.node, e.node, "{file}");
            assert_eq!(g.kind.as_str(), e.kind, "{file} {}", e.node);
            assert_eq!(g.host.as_deref(), e.host, "{file} {}", e.node);
            assert_eq!(
                (g.status.as_str(), g.verdict.as_str(), g.cause.as_str()),
                (e.status, e.verdict, e.cause),
                "{file} {}",
                e.node
            );
            assert_eq!(
                [
                    g.counters.retries,
                    g.counters.exhausted,
                    g.counters.lister_misses,
                    g.counters.register_failures,
                    g.counters.lease_failures,
                    g.counters.watch_failures
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

/// The starts in the real logs (design 5.5): only two excerpts hold a
/// kubelet's start mark (its `Kubelet version` as JSON logging writes it;
/// the `Started kubelet` of `OpenShift`), and both end before a ready marker:
/// each is one start, `starting`. No other excerpt makes one: a retry,
/// a registration or a ready marker alone begins no start.
#[test]
fn real_logs_give_the_expected_starts() {
    let expected: &[(&str, &str, Option<&str>)] = &[
        (
            "kubernetes-kubernetes-61117-a.txt",
            "10.200.1.3",
            Some("v1.32.4"),
        ),
        (
            "openshift-openshift-ansible-12040.txt",
            "cp4app-m1.cpolab.local",
            None,
        ),
    ];
    for (file, ..) in cases() {
        let r = scan_path(&fixture(&format!("real-logs/{file}")), Format::Auto);
        let want = expected.iter().find(|(f, ..)| *f == file);
        match want {
            Some((_, node, version)) => {
                assert_eq!(r.starts.len(), 1, "{file}: {:#?}", r.starts);
                let s = &r.starts[0];
                assert_eq!(s.node, *node, "{file}");
                assert_eq!(s.kubelet_version.as_deref(), *version, "{file}");
                assert_eq!(s.verdict.as_str(), "starting", "{file}");
            }
            None => assert!(r.starts.is_empty(), "{file}: {:#?}", r.starts),
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
        let wrapped = WRAPPED
            .iter()
            .find(|(f, _)| *f == file)
            .map_or(0, |(_, n)| *n);
        assert_eq!(s.entries + wrapped, lines, "{file}");
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
    assert_eq!(i.verdict.as_str(), "startup-race");
    assert_eq!(i.cause.as_str(), "lister-lag");
    assert_eq!(i.counters.retries, 1);
    assert_eq!(i.counters.exhausted, 0);
    assert_eq!(i.opened_at, "2025-07-15T16:24:50.198Z");
    assert!(
        i.diagnosis
            .contains("a status update found no Node in the lister 0 ms later"),
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
    // `scan --details` (as `show`) counts what the kubelet gave: no
    // "lister misses 0" above "found no Node in the lister".
    let out = crate::support::run(
        crate::support::bin()
            .args(["scan", "--details"])
            .arg(fixture("sync-guide/problematic.log")),
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  retries 1\n"), "{text}");
    assert!(!text.contains("lister misses 0"), "{text}");
}

#[test]
fn sync_guide_healthy_sequence_has_no_incident() {
    let r = scan_path(&fixture("sync-guide/healthy.log"), Format::Auto);
    assert!(r.incidents.is_empty(), "{:?}", r.incidents);
    assert_eq!(r.summary.recognized, 3);
    assert_eq!(r.summary.unparsed, 0);
}
