//! Context (design 5.4) through the pipeline: the node's other units'
//! lines join the incidents they explain, never open one, and forged ones
//! are ignored.

use super::*;
use crate::context::ContextKind;
use crate::model::{Entry, EntryFilter};
use crate::pipeline::{Pipeline, PipelineState};
use crate::signals::Cause;
use crate::time::SECOND;
use crate::tracker::{Member, MemberWrite};

const T0: Micros = 1_796_205_600_000_000; // 2026-12-02T10:00:00Z

fn at(s: i64) -> Micros {
    T0 + s * SECOND
}

fn kubelet(s: i64, host: &str, body: &str) -> Entry {
    let t = chrono::DateTime::from_timestamp_micros(at(s)).unwrap();
    Entry {
        at: Some(at(s)),
        host: Some(host.into()),
        unit: Some("kubelet.service".into()),
        identifier: Some("kubelet".into()),
        pid: Some(4242),
        uid: Some(0),
        message: format!(
            "E{}    4242 kubelet_node_status.go:549] {body}",
            t.format("%m%d %H:%M:%S%.6f")
        )
        .into_bytes(),
        ..Entry::default()
    }
}

/// An info line of the kubelet (no signal): its host's journal goes on.
fn info(s: i64, host: &str) -> Entry {
    let e = kubelet(
        s,
        host,
        r#""SyncLoop (PLEG): event for pod" pod="kube-system/x""#,
    );
    let mut m = e.message.clone();
    m[0] = b'I';
    Entry { message: m, ..e }
}

/// systemd's own line (pid 1) about `unit`.
fn systemd(s: i64, host: &str, unit: &str, text: &str) -> Entry {
    Entry {
        at: Some(at(s)),
        host: Some(host.into()),
        identifier: Some("systemd".into()),
        pid: Some(1),
        uid: Some(0),
        from_systemd: true,
        about_unit: Some(unit.into()),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

/// A line `unit` writes itself.
fn own(s: i64, host: &str, unit: &str, ident: &str, text: &str) -> Entry {
    Entry {
        at: Some(at(s)),
        host: Some(host.into()),
        unit: Some(unit.into()),
        identifier: Some(ident.into()),
        pid: Some(700),
        uid: Some(0),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

/// The kernel's line (`_TRANSPORT=kernel`).
fn kernel(s: i64, host: &str, text: &str) -> Entry {
    Entry {
        at: Some(at(s)),
        host: Some(host.into()),
        identifier: Some("kernel".into()),
        kernel: true,
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

fn unreachable(node: &str) -> String {
    format!(
        r#""Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: network is unreachable""#
    )
}

fn expired(node: &str) -> String {
    format!(
        r#""Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T08:00:05Z is before 2026-12-02T09:00:00Z""#
    )
}

const OOM: &str = "Out of memory: Killed process 4242 (kubelet) total-vm:2048000kB, anon-rss:1536000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4000kB oom_score_adj:-999";
const OOM_JAVA: &str = "Out of memory: Killed process 9001 (java) total-vm:8048000kB, anon-rss:6536000kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:9000kB oom_score_adj:1000";
const KILLED: &str = "kubelet.service: Main process exited, code=killed, status=9/KILL";

fn oom_journal(host: &str) -> Vec<Entry> {
    let k = "kubelet.service";
    vec![
        // The kubelet writes as pid 4242: the OOM kill of pid 4242 is its.
        kubelet(-5, host, r#""Pod status is inconsistent" pod="default/x""#),
        kernel(0, host, OOM),
        kernel(
            0,
            host,
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/kubelet.service,task=kubelet,pid=4242,uid=0",
        ),
        systemd(1, host, k, KILLED),
        systemd(1, host, k, "kubelet.service: Failed with result 'signal'."),
        systemd(
            11,
            host,
            k,
            "kubelet.service: Scheduled restart job, restart counter is at 1.",
        ),
        systemd(
            11,
            host,
            k,
            "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
        ),
        info(100, host),
    ]
}

fn the_journal() -> Vec<Entry> {
    let mut v = oom_journal("w-oom");
    // The link: networkd says the carrier is gone, then the status updates fail.
    v.push(own(
        20,
        "w-net",
        "systemd-networkd.service",
        "systemd-networkd",
        "eth0: Lost carrier",
    ));
    for i in 0..8 {
        v.push(kubelet(25 + i * 10, "w-net", &unreachable("w-net")));
    }
    // The clock: chronyd steps it back two hours, then x509 errors.
    let c = "chronyd.service";
    v.push(own(
        30,
        "w-clock",
        c,
        "chronyd",
        "System clock wrong by -7200.410000 seconds",
    ));
    v.push(own(
        30,
        "w-clock",
        c,
        "chronyd",
        "System clock was stepped by -7200.410000 seconds",
    ));
    for i in 0..8 {
        v.push(kubelet(35 + i * 10, "w-clock", &expired("w-clock")));
    }
    // A bystander: containerd restarts once, the OOM killer kills java.
    let d = "containerd.service";
    v.push(systemd(
        40,
        "w-ok",
        d,
        "containerd.service: Main process exited, code=killed, status=9/KILL",
    ));
    v.push(systemd(
        40,
        "w-ok",
        d,
        "containerd.service: Failed with result 'signal'.",
    ));
    v.push(systemd(
        45,
        "w-ok",
        d,
        "containerd.service: Scheduled restart job, restart counter is at 1.",
    ));
    v.push(systemd(
        45,
        "w-ok",
        d,
        "Started containerd.service - containerd container runtime.",
    ));
    v.push(kernel(50, "w-ok", OOM_JAVA));
    v.sort_by_key(|e| e.at);
    v
}

fn run(entries: &[Entry], batches: &[usize]) -> Vec<Incident> {
    let settings = Settings::default();
    let filter = EntryFilter::default();
    let mut p = Pipeline::new(filter.clone(), settings);
    p.track_held_writes();
    let mut d = Vec::new();
    let mut cuts = batches.iter().copied().peekable();
    let mut stored: std::collections::BTreeMap<(String, i64, String), Member> =
        std::collections::BTreeMap::new();
    // The held-line records, as the store holds them.
    let mut held = std::collections::BTreeMap::new();
    for (n, e) in entries.iter().enumerate() {
        p.push(e.clone(), &mut d);
        // A commit and a restart: the state and the per-host records
        // written, read back.
        if cuts.peek() == Some(&n) {
            cuts.next();
            let mut state: PipelineState =
                serde_json::from_str(&serde_json::to_string(&p.state()).unwrap()).unwrap();
            let open: Vec<Incident> = p.tracker().open_incidents().cloned().collect();
            // What a commit takes, as the service takes it.
            let changes = p.take_changes();
            let resolved = changes.resolved;
            let origins: Vec<(String, Origin)> = p
                .tracker()
                .hosts
                .iter()
                .map(|(h, o)| {
                    (
                        h.clone(),
                        serde_json::from_str(&serde_json::to_string(o).unwrap()).unwrap(),
                    )
                })
                .collect();
            // The member records, as the store holds them by now.
            for w in changes.members {
                match w {
                    MemberWrite::DropGroup(g) => stored.retain(|(sg, ..), _| *sg != g),
                    MemberWrite::Put(g, m) => {
                        let (at, id) = m.key();
                        stored.insert((g, at, id.to_string()), m);
                    }
                    MemberWrite::Delete(g, at, id) => {
                        stored.remove(&(g, at, id));
                    }
                }
            }
            let members = stored
                .iter()
                .map(|((g, ..), m)| (g.clone(), m.clone()))
                .collect();
            for (k, line) in changes.held {
                match line {
                    Some(l) => held.insert(k, l),
                    None => held.remove(&k),
                };
            }
            state.tracker.restore(open, origins);
            state.tracker.restore_members(members);
            let mut q = Pipeline::from_state(filter.clone(), state);
            q.track_held_writes();
            q.restore_held(
                held.iter()
                    .map(|(k, l)| {
                        (
                            k.clone(),
                            serde_json::from_value(serde_json::to_value(l).unwrap()).unwrap(),
                        )
                    })
                    .collect(),
            );
            q.tracker_mut().ledger.resolved = resolved;
            p = q;
        }
    }
    p.finish(&mut d);
    let mut v = p.tracker_mut().take_resolved();
    v.extend(p.tracker().open_incidents().cloned());
    v.sort_by_key(|i| (i.opened_at, i.node.clone()));
    v
}

fn by_node<'a>(v: &'a [Incident], node: &str) -> &'a Incident {
    v.iter()
        .find(|i| i.node == node)
        .unwrap_or_else(|| panic!("{node}: {v:#?}"))
}

#[test]
fn other_units_explain_the_kubelets_trouble() {
    let v = run(&the_journal(), &[]);
    let s = Settings::default();
    assert_eq!(v.len(), 3, "{v:#?}");
    let oom = by_node(&v, "w-oom");
    assert_eq!(oom.kind(), IncidentKind::KubeletDown);
    assert_eq!(oom.cause(), Cause::Oom);
    assert_eq!(oom.verdict(&s), Verdict::Transient);
    assert!(
        oom.context
            .iter()
            .all(|l| l.unit == "kernel" && l.kind == ContextKind::OomKill)
    );
    assert!(
        oom.diagnosis(&s).contains("OOM killer killed the kubelet"),
        "{}",
        oom.diagnosis(&s)
    );
    let net = by_node(&v, "w-net");
    assert_eq!(net.cause(), Cause::ApiUnreachable);
    assert!(net.lost_link());
    assert_eq!(net.context[0].text, "eth0: Lost carrier");
    assert!(
        net.diagnosis(&s).contains("lost its network"),
        "{}",
        net.diagnosis(&s)
    );
    let clock = by_node(&v, "w-clock");
    assert_eq!(clock.cause(), Cause::Auth);
    assert_eq!(clock.context.len(), 2);
    assert!(
        clock.diagnosis(&s).contains("clock was stepped"),
        "{}",
        clock.diagnosis(&s)
    );
    // The bystander opened nothing.
    assert!(v.iter().all(|i| i.host.as_deref() != Some("w-ok")));
}

#[test]
fn the_same_in_any_batches_across_restarts() {
    let j = the_journal();
    let once = run(&j, &[]);
    for cuts in [vec![0, 1, 2], vec![5, 17], (0..j.len()).collect::<Vec<_>>()] {
        assert_eq!(run(&j, &cuts), once, "cut at {cuts:?}");
    }
}

#[test]
fn the_kubelet_killed_without_the_oom_killer_stays_killed() {
    // java's OOM kill just before the kubelet's SIGKILL is not the kubelet's.
    let k = "kubelet.service";
    let v = run(
        &[
            kernel(0, "w1", OOM_JAVA),
            systemd(1, "w1", k, KILLED),
            systemd(1, "w1", k, "kubelet.service: Failed with result 'signal'."),
        ],
        &[],
    );
    assert_eq!(v[0].cause(), Cause::Killed);
    assert!(v[0].context.is_empty());
    // An OOM kill by pid alone names it too (the kubelet's pid on the host).
    let mut j = vec![kubelet(-5, "w1", &unreachable("w1"))];
    j.push(kernel(
        0,
        "w1",
        "Memory cgroup out of memory: Killed process 4242 (kubelet-wrap) total-vm:1kB",
    ));
    j.push(systemd(1, "w1", k, KILLED));
    let v = run(&j, &[]);
    let down = v
        .iter()
        .find(|i| i.kind() == IncidentKind::KubeletDown)
        .unwrap();
    assert_eq!(down.cause(), Cause::Oom);
}

#[test]
fn forged_context_lines_are_ignored() {
    let k = "kubelet.service";
    let forged_kernel = Entry {
        kernel: false,
        uid: Some(1000),
        unit: Some("session-3.scope".into()),
        ..kernel(0, "w1", OOM)
    };
    let forged_systemd = Entry {
        pid: Some(3333),
        uid: Some(1000),
        from_systemd: false,
        unit: Some("session-3.scope".into()),
        ..systemd(20, "w2", "systemd-networkd.service", "eth0: Lost carrier")
    };
    let forged_unit = own(
        20,
        "w3",
        "user@1000.service",
        "systemd-networkd",
        "eth0: Lost carrier",
    );
    let mut j = vec![
        forged_kernel,
        systemd(1, "w1", k, KILLED),
        systemd(1, "w1", k, "kubelet.service: Failed with result 'signal'."),
        forged_systemd,
        forged_unit,
    ];
    for i in 0..8 {
        j.push(kubelet(25 + i * 10, "w2", &unreachable("w2")));
        j.push(kubelet(25 + i * 10, "w3", &unreachable("w3")));
    }
    j.sort_by_key(|e| e.at);
    let v = run(&j, &[]);
    assert_eq!(by_node(&v, "w1").cause(), Cause::Killed);
    assert!(v.iter().all(|i| i.context.is_empty()), "{v:#?}");
    assert!(!by_node(&v, "w2").lost_link());
}

#[test]
fn context_is_off_when_not_configured() {
    let filter = EntryFilter {
        context_units: Vec::new(),
        kernel: false,
        ..EntryFilter::default()
    };
    let mut p = Pipeline::new(filter, Settings::default());
    let mut d = Vec::new();
    for e in oom_journal("w1") {
        p.push(e, &mut d);
    }
    p.finish(&mut d);
    let v = p.tracker_mut().take_resolved();
    assert_eq!(v[0].cause(), Cause::Killed);
    assert_eq!(p.summary().context_lines, 0);
}

/// Ten nodes lose one endpoint; an eleventh loses its own link at the same
/// time: one endpoint incident of ten, and the eleventh its own.
#[test]
fn a_node_that_lost_its_link_is_no_part_of_an_endpoint_outage() {
    let mut j = Vec::new();
    j.push(own(
        0,
        "w-link",
        "systemd-networkd.service",
        "systemd-networkd",
        "eth0: Lost carrier",
    ));
    for n in 0..11 {
        let host = if n == 10 {
            "w-link".to_string()
        } else {
            format!("w{n:02}")
        };
        for i in 0..8 {
            j.push(kubelet(1 + i * 10, &host, &unreachable(&host)));
        }
    }
    j.sort_by_key(|e| e.at);
    let v = run(&j, &[]);
    let outages: Vec<&Incident> = v
        .iter()
        .filter(|i| i.kind() == IncidentKind::Endpoint)
        .collect();
    assert_eq!(outages.len(), 1, "{v:#?}");
    assert_eq!(outages[0].nodes().len(), 10);
    assert!(!outages[0].nodes().iter().any(|n| n == "w-link"));
    let own = by_node(&v, "w-link");
    assert!(own.covered_by().is_none());
    assert!(own.lost_link());
}

/// First-hour N18: a runtime not-ready incident whose context has the
/// runtime's own stop listed `systemctl status containerd` twice in its
/// next steps: once now, with what the context adds.
#[test]
fn a_runtime_incident_with_the_runtimes_context_names_each_step_once() {
    let d = "containerd.service";
    let mut v = vec![
        systemd(
            10,
            "w-rt",
            d,
            "Stopping containerd.service - containerd container runtime...",
        ),
        systemd(
            11,
            "w-rt",
            d,
            "containerd.service: Deactivated successfully.",
        ),
        systemd(
            11,
            "w-rt",
            d,
            "Stopped containerd.service - containerd container runtime.",
        ),
    ];
    for i in 0..40 {
        v.push(kubelet(
            12 + i * 10,
            "w-rt",
            r#""Skipping pod synchronization" err="container runtime is down""#,
        ));
    }
    let all = run(&v, &[]);
    let i = by_node(&all, "w-rt");
    assert_eq!(i.kind(), IncidentKind::NotReady, "{all:#?}");
    assert_eq!(i.cause(), Cause::Runtime);
    assert!(!i.context.is_empty(), "{i:#?}");
    let steps = crate::advice::next_steps(i);
    let status: Vec<&String> = steps
        .iter()
        .filter(|s| s.contains("systemctl status containerd"))
        .collect();
    assert_eq!(status.len(), 1, "{steps:#?}");
    assert!(status[0].contains("who stopped it"), "{steps:#?}");
}

/// First-hour N17: a crash-looping kubelet's incident quoted a containerd
/// start four minutes before it as its explanation. A runtime's start
/// alone is a healthy runtime: it explains nothing (its start after its
/// own stop or failure still does, see the tests above).
#[test]
fn a_runtimes_start_alone_explains_no_trouble() {
    let (d, k) = ("containerd.service", "kubelet.service");
    let mut v = vec![systemd(
        10,
        "w-boot",
        d,
        "Started containerd.service - containerd container runtime.",
    )];
    for n in 0..6 {
        let t = 250 + n * 12;
        v.push(systemd(
            t,
            "w-boot",
            k,
            "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
        ));
        v.push(systemd(
            t,
            "w-boot",
            k,
            "kubelet.service: Failed with result 'exit-code'.",
        ));
        v.push(systemd(
            t + 10,
            "w-boot",
            k,
            "kubelet.service: Scheduled restart job, restart counter is at 1.",
        ));
        v.push(systemd(
            t + 10,
            "w-boot",
            k,
            "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
        ));
    }
    let all = run(&v, &[]);
    let i = by_node(&all, "w-boot");
    assert_eq!(i.kind(), IncidentKind::KubeletDown, "{all:#?}");
    assert!(i.context.is_empty(), "{:#?}", i.context);
    let steps = crate::advice::next_steps(i);
    assert!(
        !steps.iter().any(|s| s.contains("journalctl -u containerd")),
        "{steps:#?}"
    );
}
