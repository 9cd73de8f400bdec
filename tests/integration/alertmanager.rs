//! Alertmanager delivery against a real Alertmanager on loopback (Debian's
//! `prometheus-alertmanager`, read back with `amtool`), mailing its
//! notifications to aiosmtpd: two kubelet-sentinel instances reporting the
//! same nodes (a node's own and a collector's) post the same alerts, which
//! the Alertmanager deduplicates and groups into one mail; alerts raised
//! while it is down arrive when it is back, and a restarted Alertmanager has
//! the firing ones back within a resend interval; resolved incidents end
//! their alerts there. Two Alertmanagers gossiping as a cluster notify an
//! outage once, and the one left when the other is killed mid-outage
//! neither repeats nor misses a notification.

use kubelet_sentinel::{Micros, SECOND};

use crate::collector::{retry, upload};
use crate::support::{
    Alertmanager, Duration, PEER_TIMEOUT, Service, Smtpd, Webhook, subject, wait_for,
};

fn storm(start: Micros, node: &str, n: i64) -> Vec<(Micros, String)> {
    (0..n).map(|k| retry(start + k * 200_000, node)).collect()
}

fn nodes(alerts: &[serde_json::Value]) -> Vec<String> {
    let mut v: Vec<String> = alerts
        .iter()
        .map(|a| a["labels"]["node"].as_str().unwrap_or("").to_string())
        .collect();
    v.sort();
    v
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, in order
fn alerts_reach_alertmanager_once_survive_its_outage_and_resolve() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("mail");
    let smtp = Smtpd::aiosmtpd(&maildir, &[]);
    let mut am = Alertmanager::start(smtp.port, &tmp.path().join("am"));
    let journals = tmp.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let now = kubelet_sentinel::now();
    upload(
        &journals,
        "remote-10.0.0.1.journal",
        "n1",
        &storm(now, "n1", 8),
    );
    upload(
        &journals,
        "remote-10.0.0.2.journal",
        "n2",
        &storm(now, "n2", 8),
    );

    // Node alerts as a per-node deployment posts them: n1, n2 and n3 are
    // no endpoint incident (issue 19) here.
    let extra = format!(
        "[fleet]\nmin_nodes = 4\n[incidents]\nresolve_after = \"15s\"\n\n[alert]\nmax_age = \"1h\"\nretry_max = \"2s\"\n\n\
         [alert.alertmanager]\nurls = [\"{}\"]\nresend_interval = \"1s\"\nlabels = {{ cluster = \"test\" }}\n",
        am.url()
    );
    let section = format!("directory = \"{}\"", journals.display());
    // The node's own instance and a collector's: both report n1 and n2.
    let mut a = Service::new(&section, &extra);
    let mut b = Service::new(&section, &extra);
    a.start();
    b.start();

    wait_for(
        Duration::from_secs(20),
        || nodes(&am.alerts()) == ["n1", "n2"],
        "both nodes' alerts in Alertmanager",
    );
    let alerts = am.alerts();
    assert_eq!(alerts.len(), 2, "deduplicated: {alerts:?}");
    // amtool lists alerts in fingerprint order, which the alertname
    // changes: n1's by its label.
    let n1 = alerts.iter().find(|a| a["labels"]["node"] == "n1").unwrap();
    let l = &n1["labels"];
    assert_eq!(l["alertname"], "KubeletNodeStatusTrouble");
    assert_eq!(l["node"], "n1");
    assert_eq!(l["host"], "n1");
    assert_eq!(l["cause"], "api-unreachable");
    assert_eq!(l["verdict"], "persistent");
    assert_eq!(l["severity"], "critical");
    assert_eq!(l["cluster"], "test");
    let summary = n1["annotations"]["summary"].as_str().unwrap();
    // Posted when it crossed the threshold (more than 5), updated since.
    assert!(
        summary.starts_with("n1: ") && summary.contains(" node status retries in "),
        "{summary}"
    );
    assert!(
        n1["annotations"]["first_evidence"]
            .as_str()
            .unwrap()
            .contains("Error updating node status")
    );
    // Four posts (two nodes, two instances), one mail: Alertmanager grouped
    // them by cause. The mail holds the group's whole set of alerts, both
    // already in Alertmanager: it notifies again only when that set
    // changes, so no second mail can follow (none is waited for).
    wait_for(
        Duration::from_secs(15),
        || !smtp.mails().is_empty(),
        "Alertmanager's notification mail",
    );
    let mails = smtp.mails();
    let subjects: Vec<String> = mails.iter().map(|m| subject(m)).collect();
    assert_eq!(mails.len(), 1, "{subjects:?}");
    assert!(subjects[0].contains("[FIRING:2]"), "{subjects:?}");
    assert!(mails[0].contains("n1") && mails[0].contains("n2"));
    // An acknowledgement shows in Alertmanager at the next resend.
    let id = a
        .incidents()
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "n1")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = a.query(&["ack", &id, "--comment", "on it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(
        Duration::from_secs(10),
        || {
            am.alerts().iter().any(|x| {
                x["labels"]["node"] == "n1"
                    && x["annotations"]["acknowledged_by"] == "root"
                    && x["annotations"]["acknowledged_comment"] == "on it"
            })
        },
        "the acknowledgement in Alertmanager",
    );

    // Alertmanager down; n3 gets into trouble meanwhile; it comes back with
    // nothing in memory.
    am.stop();
    let later = kubelet_sentinel::now();
    upload(
        &journals,
        "remote-10.0.0.3.journal",
        "n3",
        &storm(later, "n3", 8),
    );
    // Until the service has tried to post n3's alert and failed.
    wait_for(
        Duration::from_secs(20),
        || {
            a.status()["deliveries"].as_array().is_some_and(|d| {
                d.iter().any(|c| {
                    c["channel"] == "alertmanager" && c["failing_attempts"].as_u64() >= Some(1)
                })
            })
        },
        "a post refused while Alertmanager is down",
    );
    am.restart();
    wait_for(
        Duration::from_secs(20),
        || nodes(&am.alerts()) == ["n1", "n2", "n3"],
        "the firing alerts back and n3's delivered after the outage",
    );
    assert_eq!(am.alerts().len(), 3);

    // Quiet for resolve_after: the incidents resolve and so do the alerts.
    wait_for(
        Duration::from_secs(45),
        || am.alerts().is_empty(),
        "the alerts to resolve in Alertmanager",
    );
    wait_for(
        Duration::from_secs(15),
        || smtp.mails().iter().any(|m| subject(m).contains("RESOLVED")),
        "Alertmanager's resolved notification",
    );
    // The heartbeat fires all along, one for this host however many
    // instances post it, routed apart (no mail) as a dead man's switch is.
    let beats = am.heartbeats();
    assert_eq!(beats.len(), 1, "{beats:?}");
    assert!(
        beats[0]["labels"]["host"]
            .as_str()
            .is_some_and(|h| !h.is_empty())
    );
    assert_eq!(beats[0]["labels"]["cluster"], "test");
    assert!(
        smtp.mails()
            .iter()
            .all(|m| !m.contains("KubeletSentinelHeartbeat"))
    );
    for svc in [&a, &b] {
        let st = svc.status();
        let d = st["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["channel"] == "alertmanager")
            .cloned()
            .unwrap();
        assert_eq!(d["outbox"], 0, "{st}");
        assert!(d["sent"].as_u64().unwrap() >= 2, "{st}");
        assert!(d["last_success_at"].is_string(), "{st}");
        assert!(
            svc.incidents()
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["status"] == "resolved")
        );
    }
    assert_eq!(a.signal("TERM"), Some(0));
    assert_eq!(b.signal("TERM"), Some(0));
}

/// What one webhook notification told: who sent it (the instance's
/// external URL), its status, the nodes of its firing and of its resolved
/// alerts.
#[derive(Debug, Clone, PartialEq)]
struct Told {
    from: String,
    status: String,
    firing: Vec<String>,
    resolved: Vec<String>,
}

fn told(n: &serde_json::Value) -> Told {
    let alerts = n["alerts"].as_array().cloned().unwrap_or_default();
    let with = |status: &str| {
        let them: Vec<serde_json::Value> = alerts
            .iter()
            .filter(|a| a["status"] == status)
            .cloned()
            .collect();
        nodes(&them)
    };
    Told {
        from: n["externalURL"].as_str().unwrap_or("").to_string(),
        status: n["status"].as_str().unwrap_or("").to_string(),
        firing: with("firing"),
        resolved: with("resolved"),
    }
}

fn ready(at: Micros) -> (Micros, String) {
    (
        at,
        format!(
            "I{}    4242 kubelet_node_status.go:493] \"Fast updating node status as it just became ready\"",
            crate::collector::klog_time(at)
        ),
    )
}

/// An Alertmanager cluster of two gossiping on loopback, both posted to by
/// two instances reporting the same nodes (a node's own and a
/// collector's): an outage is one notification. The instance that sent it
/// killed mid-outage (SIGKILL), the other does not send it again, misses
/// nothing the outage adds, and sends the resolved notice once.
///
/// What Alertmanager promises a cluster, and so what is asserted: a group
/// is notified again when its set of firing alerts grows, or, with
/// `send_resolved`, when alerts in it resolve; the same alerts firing and
/// resolved are never notified twice while gossip reaches the other
/// instance within the peer timeout (here it has: the test waits for the
/// notification log entry to arrive before the kill). Alertmanager
/// promises no more than that: an instance killed between notifying and
/// gossiping it would have the survivor notify again.
#[test]
#[allow(clippy::too_many_lines)] // one scenario, in order
fn a_cluster_notifies_once_and_its_survivor_loses_and_repeats_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let hook = Webhook::start();
    let yml = format!(
        "route:\n  receiver: hook\n  group_by: ['cause']\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h\n\
         \x20 routes:\n  - receiver: deadman\n    matchers: ['alertname=\"KubeletSentinelHeartbeat\"']\n\
         receivers:\n- name: hook\n  webhook_configs:\n  - url: '{}'\n    send_resolved: true\n- name: deadman\n",
        hook.url()
    );
    let mut ams = Alertmanager::cluster_pair(&tmp.path().join("am"), &yml);
    let journals = tmp.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let now = kubelet_sentinel::now();
    for (node, ip) in [("n1", 1), ("n2", 2)] {
        let file = format!("remote-10.0.0.{ip}.journal");
        upload(&journals, &file, node, &storm(now, node, 8));
    }
    // Node alerts as per-node deployments post them (no endpoint incident:
    // issue 19); they resolve when the nodes say they are ready, not by a
    // clock racing the test. Resends every 2 s keep the alerts firing in
    // Alertmanager (each ends 8 s later) on a busy machine.
    let extra = format!(
        "[fleet]\nmin_nodes = 4\n[incidents]\nresolve_after = \"1h\"\n\n[alert]\nmax_age = \"1h\"\nretry_max = \"2s\"\n\n\
         [alert.alertmanager]\nurls = [\"{}\", \"{}\"]\nresend_interval = \"2s\"\n",
        ams[0].url(),
        ams[1].url()
    );
    let section = format!("directory = \"{}\"", journals.display());
    let mut a = Service::new(&section, &extra);
    let mut b = Service::new(&section, &extra);
    a.start();
    b.start();

    // Four posts to each instance (two nodes, two posters), one
    // notification from one instance.
    wait_for(
        Duration::from_secs(30),
        || !hook.notifications().is_empty(),
        "the outage's notification",
    );
    let first = told(&hook.notifications()[0]);
    assert_eq!(first.status, "firing", "{first:?}");
    assert_eq!(first.firing, ["n1", "n2"], "{first:?}");
    let sender = ams
        .iter()
        .position(|am| am.url() == first.from)
        .unwrap_or_else(|| panic!("sent by neither instance: {first:?}"));
    let survivor = 1 - sender;
    // The other instance has it in its notification log (a gossiped entry
    // it had not seen, passed on): it will not send it when its turn comes.
    // (Had it sent it too, its own entry would be in the log first: the
    // count below tells.)
    wait_for(
        Duration::from_secs(20),
        || {
            hook.notifications().len() > 1
                || ams[survivor]
                    .metric("alertmanager_nflog_gossip_messages_propagated_total")
                    .is_some_and(|n| n >= 1.0)
        },
        "the notification gossiped to the other instance",
    );

    // The sender killed mid-outage; the outage goes on and reaches n3.
    ams[sender].stop();
    let later = kubelet_sentinel::now();
    for (node, ip) in [("n1", 1), ("n2", 2), ("n3", 3)] {
        let file = format!("remote-10.0.0.{ip}.journal");
        upload(&journals, &file, node, &storm(later, node, 8));
    }
    wait_for(
        Duration::from_secs(40),
        || {
            hook.notifications()
                .iter()
                .any(|n| told(n).firing.contains(&"n3".to_string()))
        },
        "n3's alert notified by the instance left",
    );

    // The nodes recover: every incident resolves, after the last retry
    // (the storms' lines run 1.4 s ahead of when they were written).
    let back = kubelet_sentinel::now().max(later + 2 * SECOND);
    for (node, ip) in [("n1", 1), ("n2", 2), ("n3", 3)] {
        let file = format!("remote-10.0.0.{ip}.journal");
        upload(&journals, &file, node, &[ready(back)]);
    }
    wait_for(
        Duration::from_secs(40),
        || {
            hook.notifications()
                .iter()
                .any(|n| n["status"] == "resolved")
        },
        "the resolved notice",
    );
    // Long enough for a second notice to come if one would: two group
    // intervals and the peer timeout.
    std::thread::sleep(Duration::from_secs(4) + PEER_TIMEOUT);

    let all: Vec<Told> = hook.notifications().iter().map(told).collect();
    // Only the first came from the instance killed.
    assert!(
        all[1..].iter().all(|t| t.from == ams[survivor].url()),
        "{all:#?}"
    );
    // No notification told twice (the first not again by the instance
    // left): each tells another set of firing or of resolved alerts. (As
    // the nodes recover one by one, a set that fired before may fire again
    // beside one resolved: that is news.) ...
    for (k, t) in all.iter().enumerate() {
        let same =
            |u: &Told| (&u.status, &u.firing, &u.resolved) == (&t.status, &t.firing, &t.resolved);
        assert!(!all[k + 1..].iter().any(same), "{t:?} twice: {all:#?}");
    }
    // ... every node's alert notified firing and resolved, ...
    let mut fired: Vec<String> = all.iter().flat_map(|t| t.firing.clone()).collect();
    let mut ended: Vec<String> = all.iter().flat_map(|t| t.resolved.clone()).collect();
    for v in [&mut fired, &mut ended] {
        v.sort();
        v.dedup();
        assert_eq!(*v, ["n1", "n2", "n3"], "{all:#?}");
    }
    // ... and one resolved notice, the last.
    let resolved = all.iter().filter(|t| t.status == "resolved").count();
    assert_eq!(resolved, 1, "{all:#?}");
    assert_eq!(all.last().unwrap().status, "resolved", "{all:#?}");
    assert!(all.last().unwrap().firing.is_empty(), "{all:#?}");

    for svc in [&a, &b] {
        let st = svc.status();
        let d = st["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["channel"] == "alertmanager")
            .cloned()
            .unwrap();
        assert_eq!(d["outbox"], 0, "{st}");
        assert!(
            svc.incidents()
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["status"] == "resolved")
        );
    }
    assert_eq!(a.signal("TERM"), Some(0));
    assert_eq!(b.signal("TERM"), Some(0));
}

/// One instance that accepts connections and never answers delays no
/// other: each alert reaches the real Alertmanager at its usual latency,
/// not after the hung one's timeout (D16).
#[test]
fn a_hung_instance_delays_no_other() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("mail");
    let smtp = Smtpd::aiosmtpd(&maildir, &[]);
    let am = Alertmanager::start(smtp.port, &tmp.path().join("am"));
    // Never accepted, never answered: the kernel completes the handshakes.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_url = format!("http://{}", hung.local_addr().unwrap());
    let journals = tmp.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let extra = format!(
        "[alert]\nmax_age = \"1h\"\n\n[alert.alertmanager]\nurls = [\"{hung_url}\", \"{}\"]\n\
         timeout = \"20s\"\nresend_interval = \"1s\"\n",
        am.url()
    );
    let mut svc = Service::new(&format!("directory = \"{}\"", journals.display()), &extra);
    svc.start();
    // One alert, then another while the hung instance still holds the
    // first post (and the resends, one a second) unanswered.
    for (k, node) in ["n1", "n2"].iter().enumerate() {
        let now = kubelet_sentinel::now();
        upload(
            &journals,
            &format!("remote-10.0.0.{k}.journal"),
            node,
            &storm(now, node, 8),
        );
        wait_for(
            Duration::from_secs(8),
            || nodes(&am.alerts()).contains(&(*node).to_string()),
            "the alert in the answering Alertmanager",
        );
    }
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    drop(hung);
}

/// The shipped example (`packaging/alertmanager/`) in a real Alertmanager:
/// three nodes losing one endpoint are one notification naming it, a lone
/// node with another cause is its own; an endpoint alert inhibits the node
/// alerts it covers; the heartbeat goes to the dead man's switch, not to
/// people.
#[test]
fn the_shipped_alertmanager_example_pages_once_per_outage() {
    let tmp = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&tmp.path().join("mail"), &[]);
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/packaging/alertmanager/kubelet-sentinel.alertmanager.yml"
    ))
    .unwrap();
    // Its timings shortened for a test; everything else as shipped.
    let yml = example
        .replace("localhost:25", &format!("127.0.0.1:{}", smtp.port))
        .replace("group_wait: 30s", "group_wait: 3s")
        .replace("group_interval: 5m", "group_interval: 2s");
    let am = Alertmanager::with_config(&tmp.path().join("am"), &yml);
    let journals = tmp.path().join("journals");
    std::fs::create_dir_all(&journals).unwrap();
    let now = kubelet_sentinel::now();
    for (n, ip) in [("e1", 1), ("e2", 2), ("e3", 3)] {
        upload(
            &journals,
            &format!("remote-10.0.1.{ip}.journal"),
            n,
            &storm(now, n, 8),
        );
    }
    let lone: Vec<(Micros, String)> = (0..8)
        .map(|k| {
            let at = now + k * 200_000;
            (
                at,
                format!(
                    "E{}    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" \
                     err=\"error getting node \\\"lone\\\": Unauthorized\"",
                    crate::collector::klog_time(at)
                ),
            )
        })
        .collect();
    upload(&journals, "remote-10.0.1.9.journal", "lone", &lone);
    let mut svc = Service::new(
        &format!("directory = \"{}\"", journals.display()),
        &format!(
            // Node alerts as per-node deployments post them (no endpoint
            // incident of the collector's: issue 19), for the example's
            // grouping and inhibition.
            "[fleet]\nmin_nodes = 4\n[incidents]\nresolve_after = \"1h\"\n\n[alert]\nmax_age = \"1h\"\n\n\
             [alert.alertmanager]\nurls = [\"{}\"]\nresend_interval = \"1s\"\n",
            am.url()
        ),
    );
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || nodes(&am.alerts()) == ["e1", "e2", "e3", "lone"],
        "the four nodes' alerts",
    );
    let endpoints: Vec<String> = am
        .alerts()
        .iter()
        .map(|a| {
            a["labels"]["api_endpoint"]
                .as_str()
                .unwrap_or("-")
                .to_string()
        })
        .collect();
    assert_eq!(
        endpoints.iter().filter(|e| *e == "10.0.0.1:6443").count(),
        3,
        "{endpoints:?}"
    );
    // Each group's mail holds its whole set (three and one, all in
    // Alertmanager above): no later mail can follow for either.
    wait_for(
        Duration::from_secs(20),
        || smtp.mails().len() >= 2,
        "the notifications",
    );
    let subjects: Vec<String> = smtp.mails().iter().map(|m| subject(m)).collect();
    assert_eq!(subjects.len(), 2, "{subjects:?}");
    assert!(
        subjects.iter().any(|s| s.contains("[FIRING:3]")
            && s.contains("10.0.0.1:6443")
            && s.contains("api-unreachable")),
        "{subjects:?}"
    );
    assert!(
        subjects
            .iter()
            .any(|s| s.contains("[FIRING:1]") && s.contains("auth")),
        "{subjects:?}"
    );
    // The heartbeat fires, routed to the dead man's switch.
    assert_eq!(am.heartbeats().len(), 1);
    // An endpoint alert inhibits the node alerts of that endpoint and cause.
    let out = crate::support::run(
        std::process::Command::new("/usr/bin/amtool").args([
            "alert",
            "add",
            "alertname=KubeletAPIEndpointDown",
            "api_endpoint=10.0.0.1:6443",
            "cause=api-unreachable",
            &format!("--alertmanager.url={}", am.url()),
        ]),
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(
        Duration::from_secs(10),
        || nodes(&am.alerts()) == ["", "lone"],
        "the endpoint's node alerts inhibited (amtool lists the endpoint alert and lone's)",
    );
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// The shipped example inhibits a node's not-ready alert while its
/// kubelet-down alert fires (a node cannot be ready without its kubelet:
/// one page, the one that says why); another node's stays.
#[test]
fn the_shipped_example_inhibits_not_ready_while_the_kubelet_is_down() {
    let tmp = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/packaging/alertmanager/kubelet-sentinel.alertmanager.yml"
    ))
    .unwrap();
    let am = Alertmanager::with_config(&tmp.path().join("am"), &example);
    let add = |labels: &[&str]| {
        let url = format!("--alertmanager.url={}", am.url());
        let mut args = vec!["alert", "add"];
        args.extend_from_slice(labels);
        args.push(&url);
        let out = crate::support::run(
            std::process::Command::new("/usr/bin/amtool").args(&args),
            None,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for node in ["n1", "n2"] {
        add(&[
            "alertname=KubeletNodeNotReady",
            &format!("node={node}"),
            "kind=not-ready",
            "cause=runtime",
        ]);
    }
    wait_for(
        Duration::from_secs(10),
        || nodes(&am.alerts()) == ["n1", "n2"],
        "both not-ready alerts",
    );
    add(&[
        "alertname=KubeletServiceDown",
        "node=n1",
        "kind=kubelet-down",
        "cause=runtime",
    ]);
    wait_for(
        Duration::from_secs(10),
        || {
            let names: Vec<(String, String)> = am
                .alerts()
                .iter()
                .map(|a| {
                    (
                        a["labels"]["alertname"].as_str().unwrap_or("").to_string(),
                        a["labels"]["node"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            names.len() == 2
                && names.contains(&("KubeletServiceDown".into(), "n1".into()))
                && names.contains(&("KubeletNodeNotReady".into(), "n2".into()))
        },
        "n1's not-ready alert inhibited by its kubelet-down alert, n2's firing",
    );
}
