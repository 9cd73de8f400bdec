//! Issue 25's fixtures: real `NotReady` pastes from public reports (kubeadm,
//! minikube, `OpenShift`, EKS, Usernetes; the container network, the runtime,
//! PLEG, memory and disk pressure), verbatim in `fixtures/real-logs/`, with
//! the incidents an operator would expect written down by reading each one
//! against design 5.3, and no line silently lost.

use kubelet_sentinel::Format;
use kubelet_sentinel::IncidentOut;
use kubelet_sentinel::Settings;

use crate::support::{fixture, scan_path};

/// One incident as written down.
struct Expect {
    kind: &'static str,
    node: &'static str,
    host: Option<&'static str>,
    status: &'static str,
    verdict: &'static str,
    cause: &'static str,
    not_ready_signals: u64,
    opened_at: &'static str,
}

/// Still open when the paste ends (every paste here ends inside its
/// trouble), neither persistent nor resolved.
const fn open(
    node: &'static str,
    host: Option<&'static str>,
    cause: &'static str,
    not_ready_signals: u64,
    opened_at: &'static str,
) -> Expect {
    Expect {
        kind: "not-ready",
        node,
        host,
        status: "open",
        verdict: "undetermined",
        cause,
        not_ready_signals,
        opened_at,
    }
}

/// (file, incidents, [entries, kubelet lines, recognized, unparsed,
/// continuations, foreign], physical lines joined to the entry before
/// them (hard-wrapped pastes) or dropped as journalctl banners)
type Case = (&'static str, Vec<Expect>, [u64; 6], u64);

#[allow(clippy::too_many_lines)] // the table of real pastes, one row each
fn cases() -> Vec<Case> {
    vec![
        // kubeadm, structured 1.2x behind journald: the CNI never
        // initialised, every 5 s for the 15 s pasted. The shell prompt is not
        // understood; journalctl's banner is dropped.
        (
            "fujitatomoya-ros_k8s-22.txt",
            vec![open(
                "tomoyafujita-HP-Compaq-Elite-8300-SFF",
                Some("tomoyafujita-HP-Compaq-Elite-8300-SFF"),
                "cni",
                4,
                "2025-04-16T22:26:30.150Z",
            )],
            [5, 5, 4, 1, 0, 0],
            1,
        ),
        // kind's node container, legacy 1.14: the supporting `Unable to
        // update cni config` 2 ms before the first trouble line joins
        // nothing (supporting lines never open); the network's line opens.
        (
            "kubernetes-sigs-kind-440.txt",
            vec![open(
                "test-control-plane",
                Some("test-control-plane"),
                "cni",
                1,
                "2025-04-11T17:36:04.494Z",
            )],
            [3, 3, 2, 0, 0, 0],
            0,
        ),
        // kindnet crash-looping on a VM, structured 1.24; the stray `"` line
        // is not understood; CrashLoopBackOff is no readiness line.
        (
            "kubermatic-machine-controller-1304.txt",
            vec![open(
                "ip-172-31-8-126",
                Some("ip-172-31-8-126"),
                "cni",
                1,
                "2025-06-01T13:18:23.556Z",
            )],
            [4, 4, 1, 1, 0, 0],
            0,
        ),
        // Legacy `skipping pod synchronization - [PLEG is not healthy: …]`.
        // PLEG's own count (last relisted 3m5.3s before, threshold 3m0s) dates
        // it 5.3 s before its first line.
        (
            "kubernetes-kubernetes-61117-b.txt",
            vec![open(
                "vk-prod4-node-v18-w3fz",
                Some("vk-prod4-node-v18-w3fz"),
                "pleg",
                5,
                "2025-03-13T16:02:38.634Z",
            )],
            [5, 5, 5, 0, 0, 0],
            0,
        ),
        // EKS on Amazon Linux 2: `kubelet:` with no PID; structured PLEG
        // last seen 2h33m12.7s before: not ready 2h30m by the kubelet's own
        // count, persistent on its two lines 5 s apart.
        (
            "aws-samples-eks-workshop-v2-447.txt",
            vec![Expect {
                verdict: "persistent",
                ..open(
                    "ip-10-42-10-121",
                    Some("ip-10-42-10-121"),
                    "pleg",
                    2,
                    "2025-04-13T08:23:40.139Z",
                )
            }],
            [2, 2, 2, 0, 0, 0],
            0,
        ),
        // The `%+v` condition of 1.6 (no monotonic clock); the NodeNotReady
        // event line says no cause and is not a signal.
        (
            "kubernetes-kubernetes-45419.txt",
            vec![open(
                "ip-10-50-20-208.ec2.internal",
                Some("ip-10-50-20-208.ec2.internal"),
                "pleg",
                1,
                "2025-05-05T13:59:49.243Z",
            )],
            [2, 2, 1, 0, 0, 0],
            0,
        ),
        // PLEG in both legacy forms (skipping, Node became not ready with a
        // CST condition); the sandbox timeout is not a readiness line.
        (
            "kubernetes-kubernetes-51919.txt",
            vec![open(
                "docker34-86",
                Some("docker34-86"),
                "pleg",
                2,
                "2025-09-02T22:01:54.286Z",
            )],
            [3, 3, 2, 0, 0, 0],
            0,
        ),
        // kubeadm join, 1.10: `[container runtime is down]` every 5 s; the
        // prompt is not understood, the banner dropped.
        (
            "kubernetes-website-8030.txt",
            vec![open(
                "k8s-node1",
                Some("k8s-node1"),
                "runtime",
                5,
                "2025-04-09T21:14:19.210Z",
            )],
            [6, 6, 5, 1, 0, 0],
            1,
        ),
        // Bare klog, 1.16: the single error with no brackets. No host and no
        // line naming the node: `unknown`.
        (
            "kubernetes-kubernetes-82346.txt",
            vec![open(
                "unknown",
                None,
                "runtime",
                2,
                "2025-10-24T14:09:16.663Z",
            )],
            [8, 8, 2, 0, 0, 0],
            0,
        ),
        // Legacy eviction, a Russian journald month.
        (
            "kubernetes-kubernetes-58541.txt",
            vec![open(
                "o1.home",
                Some("o1.home"),
                "memory-pressure",
                1,
                "2025-01-20T00:20:07.726Z",
            )],
            [2, 2, 1, 0, 0, 0],
            0,
        ),
        // 1.4's eviction manager: reclaim and must-evict; `no resources are
        // starved` after is its routine line, not a ready marker, and the
        // paste ends 22 s later (under resolve_after). Its `pod … evicted
        // successfully` (1.4's wording, no `is`) is recognised and joins the
        // incident without voting.
        (
            "kubernetes-kubernetes-31939.txt",
            vec![open(
                "localhost.localdomain",
                Some("localhost.localdomain"),
                "memory-pressure",
                2,
                "2025-09-02T15:20:12.963Z",
            )],
            [7, 7, 3, 0, 0, 0],
            0,
        ),
        // k3s in docker-compose, bare klog: legacy image garbage collection
        // found nothing to free (`Wanted to free 11104591052 bytes, but freed
        // 0 bytes`), then the eviction manager reclaims ephemeral-storage
        // every 10 s with no pod to evict: disk pressure, its two reclaims
        // and one must-evict; the GC failure opens nothing and votes for
        // nothing. No host and no line naming the node: `unknown`.
        (
            "k3s-io-k3s-888.txt",
            vec![open(
                "unknown",
                None,
                "disk-pressure",
                3,
                "2025-10-10T09:12:24.938Z",
            )],
            [10, 10, 4, 0, 0, 0],
            0,
        ),
        // minikube, legacy 1.14: reclaim and must-evict for
        // ephemeral-storage; the ranking (only static pods it cannot evict)
        // is no signal; journalctl's banner is dropped.
        (
            "kubernetes-minikube-4084.txt",
            vec![open(
                "Ahmadreza",
                Some("Ahmadreza"),
                "disk-pressure",
                2,
                "2025-04-12T09:28:14.744Z",
            )],
            [5, 5, 2, 0, 0, 0],
            1,
        ),
        // Structured reclaim and must-evict in a French journald month
        // (`janv.`); the pod's ContainerStarted before it is the sandbox
        // kind's success line, recognised, no readiness line.
        (
            "kubernetes-kubernetes-129616.txt",
            vec![open(
                "qpk8s-node-033",
                Some("qpk8s-node-033"),
                "disk-pressure",
                2,
                "2025-01-06T12:44:17.658Z",
            )],
            [4, 4, 3, 0, 0, 0],
            0,
        ),
        // Structured ephemeral-storage reclaim: disk pressure.
        (
            "sustainable-computing-io-kepler-1799.txt",
            vec![open(
                "team",
                Some("team"),
                "disk-pressure",
                1,
                "2025-09-28T05:37:59.659Z",
            )],
            [1, 1, 1, 0, 0, 0],
            0,
        ),
        // The start-up words beside real PLEG trouble: trouble; within the
        // line the runtime comes first in the order (design 5.3). PLEG last
        // relisted 16m6.6s before: persistent by the kubelet's own count.
        (
            "kubernetes-kubernetes-101056.txt",
            vec![Expect {
                verdict: "persistent",
                ..open(
                    "i-ie33j8hy",
                    Some("i-ie33j8hy"),
                    "runtime",
                    1,
                    "2025-04-13T13:09:16.116Z",
                )
            }],
            [1, 1, 1, 0, 0, 0],
            0,
        ),
        // Hard-wrapped bare klog: `Message:container runtime is
        // down,runtime network not ready: …`, the runtime's (first in the
        // order). No node is named in the legacy condition line.
        (
            "kubernetes-kubernetes-44650.txt",
            vec![open(
                "unknown",
                None,
                "runtime",
                1,
                "2025-05-24T16:44:12.241Z",
            )],
            [3, 3, 1, 0, 0, 0],
            2,
        ),
        // OpenShift 3.11's atomic-openshift-node: the old start-up aggregate
        // (`container runtime is down …`, cut by the pager) right after
        // `Started kubelet`; still open when the paste ends.
        (
            "openshift-openshift-ansible-12040.txt",
            vec![open(
                "cp4app-m1.cpolab.local",
                Some("cp4app-m1.cpolab.local"),
                "runtime",
                1,
                "2025-12-03T17:40:58.188Z",
            )],
            // Recognised: the runtime's two lines and image garbage
            // collection's first failure (design 5.3; it opens nothing).
            [8, 5, 3, 0, 0, 0],
            0,
        ),
        // minikube's localkube: its kubelet lines are adopted by content,
        // cAdvisor's are not the kubelet's.
        (
            "kubernetes-minikube-2187.txt",
            vec![open(
                "minikube",
                Some("minikube"),
                "runtime",
                1,
                "2025-11-12T17:20:53.536Z",
            )],
            [9, 3, 1, 0, 0, 0],
            0,
        ),
        // JSON logging behind a collector's host prefix, hard-wrapped: the
        // start-up state at the start, and still nothing else 1h45m later:
        // it never finished starting. Persistent since its first such line
        // (the main sync loop's start), the runtime's (its status check).
        (
            "kubernetes-kubernetes-61117-c.txt",
            vec![Expect {
                verdict: "persistent",
                ..open(
                    "10.200.1.5",
                    Some("10.200.1.5"),
                    "runtime",
                    3,
                    "2025-07-21T23:53:00.841Z",
                )
            }],
            [5, 5, 4, 0, 0, 0],
            3,
        ),
        // Kubernetes 1.1's wording (`Skipping pod synchronization, container
        // runtime is not up.`), quoted in prose: the runtime's.
        (
            "kubernetes-kubernetes-18190.txt",
            vec![open(
                "unknown",
                None,
                "runtime",
                1,
                "2025-12-04T06:26:09.828Z",
            )],
            [1, 1, 1, 0, 0, 0],
            0,
        ),
        // 1.5's `[network state unknown]` (no network plugin, no pod CIDR):
        // the network's.
        (
            "kubernetes-kubernetes-36137.txt",
            vec![open("unknown", None, "cni", 5, "2025-11-03T05:35:07.258Z")],
            [7, 7, 5, 0, 0, 0],
            0,
        ),
        // k3s in a syslog file: the start-up aggregate once as the kubelet
        // inside k3s starts: no incident.
        (
            "vitobotta-hetzner-k3s-397.txt",
            vec![],
            [8, 8, 1, 0, 0, 0],
            0,
        ),
        // A Windows kubelet's own log file: glog's file header is a banner
        // (four lines dropped); the start-up aggregate once opens nothing.
        // The lease controller's `nodes "w1" not found` before any
        // registration is node-status trouble (the Node was not created
        // yet), not readiness.
        (
            "kubernetes-sigs-sig-windows-tools-76.txt",
            vec![Expect {
                kind: "node-status",
                not_ready_signals: 0,
                cause: "node-missing",
                ..open("w1", None, "", 0, "2025-05-03T13:38:42.533Z")
            }],
            [8, 8, 2, 0, 1, 0],
            4,
        ),
        // minikube 0.35, legacy 1.13 CNI every 5 s.
        (
            "kubernetes-minikube-3852.txt",
            vec![open(
                "minikube",
                Some("minikube"),
                "cni",
                5,
                "2025-03-11T16:43:49.893Z",
            )],
            [5, 5, 5, 0, 0, 0],
            0,
        ),
        // Verbose `"Container runtime status"` lines (RuntimeReady=true,
        // NetworkReady=false) are the kubelet's state dump, not signals.
        (
            "kubernetes-kubernetes-129294.txt",
            vec![open("unknown", None, "cni", 2, "2025-12-19T05:56:58.307Z")],
            [4, 4, 2, 0, 0, 0],
            0,
        ),
        // `"Node not becoming ready in time after startup"` (no cause of its
        // own), then the network's lines: the network's by their votes.
        (
            "kubernetes-kubernetes-127563.txt",
            vec![open(
                "lincom-desktop",
                Some("lincom-desktop"),
                "cni",
                5,
                "2025-09-23T19:22:45.353Z",
            )],
            [5, 5, 5, 0, 0, 0],
            1,
        ),
        // A kubelet in a container of a `docker run` unit: its lines are
        // docker's, adopted by content (the static-pod path warning is no
        // signal and stays docker's). PLEG last seen 17h23m48.9s before the
        // first line: persistent since 04:34:56 by the kubelet's own count.
        (
            "kubernetes-retired-kubernetes-anywhere-500.txt",
            vec![Expect {
                verdict: "persistent",
                ..open(
                    "kubernetes-node5",
                    Some("kubernetes-node5"),
                    "pleg",
                    5,
                    "2025-12-12T04:34:56.213Z",
                )
            }],
            [6, 5, 5, 0, 0, 0],
            0,
        ),
        // 1.20's `%+v` condition with a monotonic clock, then the single
        // error without brackets: PLEG, 0.35 s before the condition line.
        (
            "kubernetes-kubernetes-103765.txt",
            vec![open(
                "node1",
                Some("node1"),
                "pleg",
                3,
                "2025-07-21T10:13:09.527Z",
            )],
            [4, 4, 3, 0, 0, 0],
            0,
        ),
        // k3s in a syslog file that got its lines six minutes late, in one
        // burst: the syslog stamp is the entry's time (design 4.1), so all
        // four PLEG lines are at 16:29:51; PLEG's own count (4m51.8s, less
        // the 3m threshold) dates it 1m51.8s before: under 3m, undetermined.
        // The runtime's ListContainers timeout is no readiness line.
        (
            "k3s-io-k3s-2370.txt",
            vec![open(
                "worker9",
                Some("worker9"),
                "pleg",
                4,
                "2025-10-08T16:27:59.236Z",
            )],
            [6, 6, 4, 0, 0, 0],
            0,
        ),
        // `journalctl -r`: newest first, each line cut by the pager. Lines are
        // placed at their own time: not ready since the oldest network line
        // (13:12:52.751); the supporting `Unable to update cni config` lines
        // join it; the cut pod sync error is not understood.
        (
            "kubernetes-kubernetes-71692.txt",
            vec![open(
                "Test-LPAR-Ubuntu",
                Some("Test-LPAR-Ubuntu"),
                "cni",
                4,
                "2025-12-04T13:12:52.751Z",
            )],
            [6, 6, 4, 1, 0, 0],
            1,
        ),
        // kubeadm before weave, legacy 1.9: each network line with its
        // supporting `Unable to update cni config` (the first, before any
        // trouble, joins nothing).
        (
            "kubernetes-kubeadm-491.txt",
            vec![open(
                "ip-10-0-10-187",
                Some("ip-10-0-10-187"),
                "cni",
                5,
                "2025-03-23T03:33:39.290Z",
            )],
            [6, 6, 6, 0, 0, 0],
            0,
        ),
        // A control plane that never boots: node-status trouble (the
        // eviction manager's lister miss, the refused Service list: the API
        // server unreachable) beside the network's not-ready incident; the
        // `> ` quote marker on the first line only.
        (
            "puppetlabs-puppetlabs-kubernetes-97.txt",
            vec![
                Expect {
                    kind: "node-status",
                    not_ready_signals: 0,
                    ..open(
                        "k8s-ctl-01.poc.local",
                        Some("k8s-ctl-01.poc.local"),
                        "api-unreachable",
                        0,
                        "2025-05-04T23:13:16.067Z",
                    )
                },
                open(
                    "k8s-ctl-01.poc.local",
                    Some("k8s-ctl-01.poc.local"),
                    "cni",
                    1,
                    "2025-05-04T23:13:16.524Z",
                ),
            ],
            [4, 4, 4, 0, 0, 0],
            0,
        ),
        // A wrapper script's identifier; the start-up aggregate and its
        // single-error form only: no incident.
        (
            "rootless-containers-usernetes-156.txt",
            vec![],
            [8, 5, 2, 0, 0, 0],
            0,
        ),
    ]
}

#[test]
fn not_ready_pastes_give_the_expected_incidents() {
    let settings = Settings::default();
    for (file, expected, summary, _) in cases() {
        let r = scan_path(&fixture(&format!("real-logs/{file}")), Format::Auto);
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
        let mut got: Vec<IncidentOut> = r
            .incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect();
        got.sort_by(|a, b| (&a.node, a.kind).cmp(&(&b.node, b.kind)));
        assert_eq!(got.len(), expected.len(), "{file}: {got:#?}");
        for (g, e) in got.iter().zip(&expected) {
            let what = format!("{file} {}", e.node);
            assert_eq!(g.kind.as_str(), e.kind, "{what}");
            assert_eq!(g.node, e.node, "{what}");
            assert_eq!(g.host.as_deref(), e.host, "{what}");
            assert_eq!(
                (g.status.as_str(), g.verdict.as_str(), g.cause.as_str()),
                (e.status, e.verdict, e.cause),
                "{what}"
            );
            assert_eq!(g.not_ready_signals, e.not_ready_signals, "{what}");
            assert_eq!(g.opened_at, e.opened_at, "{what}");
            assert!(!g.evidence.is_empty(), "{what}");
            assert!(
                e.kind != "not-ready" || g.diagnosis.contains("not ready while its kubelet runs"),
                "{what}: {}",
                g.diagnosis
            );
        }
    }
}

#[test]
fn not_ready_pastes_lose_no_line() {
    for (file, _, _, joined) in cases() {
        let path = fixture(&format!("real-logs/{file}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count() as u64;
        let s = scan_path(&path, Format::Auto).summary;
        assert_eq!(s.entries + joined, lines, "{file}");
        assert_eq!(
            s.kubelet_lines,
            s.lines + s.continuations + s.unparsed,
            "{file}: {s:?}"
        );
        assert!(s.recognized <= s.lines, "{file}");
    }
}

/// (file, the pods the incident lists as evicted, the last image garbage
/// collection as (outcome, wanted bytes, freed bytes)).
type Storm = (
    &'static str,
    &'static [&'static str],
    Option<(&'static str, Option<u64>, Option<u64>)>,
);

/// The pressure pastes' storms, told (design 5.3): the pods the eviction
/// manager says it evicted, and what image garbage collection last said
/// before or during the incident.
#[test]
fn pressure_pastes_tell_their_storm() {
    let storms: [Storm; 6] = [
        // 1.4: `eviction manager: pod name_ns(uid) evicted successfully`,
        // without the `is` of later releases.
        (
            "kubernetes-kubernetes-31939.txt",
            &["e2e-tests-eviction-test-simple-rkrca/guaranteed-cn933"],
            None,
        ),
        ("kubernetes-kubernetes-58541.txt", &[], None),
        ("sustainable-computing-io-kepler-1799.txt", &[], None),
        // Nothing eligible to free: deleting images could not have freed
        // the disk.
        (
            "k3s-io-k3s-888.txt",
            &[],
            Some(("not-enough", Some(11_104_591_052), Some(0))),
        ),
        // The eviction manager's `attempting to delete unused images` is no
        // result of a collection.
        ("kubernetes-minikube-4084.txt", &[], None),
        ("kubernetes-kubernetes-129616.txt", &[], None),
    ];
    let settings = Settings::default();
    for (file, pods, gc) in storms {
        let r = scan_path(&fixture(&format!("real-logs/{file}")), Format::Auto);
        assert_eq!(r.incidents.len(), 1, "{file}");
        let out = IncidentOut::new(&r.incidents[0], &settings);
        let json = serde_json::to_value(&out).unwrap();
        let got: Vec<&str> = json["evicted_pods"]
            .as_array()
            .map(|a| a.iter().map(|p| p.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(got, pods, "{file}: {json:#}");
        match gc {
            None => assert!(json.get("image_gc").is_none(), "{file}: {json:#}"),
            Some((outcome, wanted, freed)) => {
                let g = &json["image_gc"];
                assert_eq!(g["outcome"], outcome, "{file}: {json:#}");
                assert_eq!(g["wanted_bytes"].as_u64(), wanted, "{file}");
                assert_eq!(g["freed_bytes"].as_u64(), freed, "{file}");
            }
        }
        let diagnosis = json["diagnosis"].as_str().unwrap();
        if !pods.is_empty() {
            assert!(diagnosis.contains(pods[0]), "{file}: {diagnosis}");
        }
        if gc.is_some_and(|g| g.0 == "not-enough") {
            assert!(
                diagnosis.contains("could not have freed the disk"),
                "{file}: {diagnosis}"
            );
        }
    }
}
