//! not-ready incidents (design 5.3): the kubelet's readiness lines
//! replayed through the pipeline.

use super::*;
use crate::signals::Cause;
use crate::testing::Replay;
use crate::time::SECOND;

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z

const STARTED: &str = "Started kubelet: The Kubernetes Node Agent.";
const STOPPING: &str = "Stopping kubelet: The Kubernetes Node Agent...";
const STOPPED: &str = "Stopped kubelet: The Kubernetes Node Agent.";
const EXITED: &str = "kubelet.service: Main process exited, code=exited, status=1/FAILURE";
const CNI: &str = r#"E0715 16:24:50.000000    2001 kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;
const RUNTIME: &str = r#"E0715 16:24:50.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="container runtime is down""#;
const PLEG: &str = r#"E0715 16:24:50.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#;
const DISK: &str = r#"W0715 16:24:50.000000    2001 eviction_manager.go:369] "Eviction manager: attempting to reclaim" resourceName="ephemeral-storage""#;
const READY: &str = r#"I0715 16:24:50.000000    2001 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#;
const REGISTERED: &str = r#"I0715 16:24:50.000000    2001 kubelet_node_status.go:78] "Successfully registered node" node="w1""#;

/// The lines (ms after `T0`) as one host's journal, scanned and followed
/// (the host's clock moved to every entry's time as it arrives): the two
/// must agree; the scan's.
fn judged(lines: &[(i64, String)], end_ms: i64) -> Replay {
    crate::testing::judged_lines(T0, lines, end_ms)
}

/// `line` every 5 s from `from` ms for `count` times.
fn every_5s(line: &str, from: i64, count: i64) -> Vec<(i64, String)> {
    (0..count)
        .map(|k| (from + k * 5_000, line.to_string()))
        .collect()
}

fn lines(v: &[(i64, &str)]) -> Vec<(i64, String)> {
    v.iter().map(|(t, s)| (*t, (*s).to_string())).collect()
}

/// The attack report's D33: a node whose kubelet started and became ready;
/// two minutes later containerd stops and starts again 20 s later. Within
/// `not_ready_after` of the kubelet's start, but the node had been ready:
/// a running node's trouble, transient, not the start-up race.
#[test]
fn a_runtime_restart_on_a_node_that_was_ready_is_transient() {
    let mut l = lines(&[(0, STARTED), (1_000, REGISTERED), (5_000, READY)]);
    l.extend(every_5s(RUNTIME, 120_000, 5));
    l.push((141_000, READY.to_string()));
    let r = judged(&l, 600_000);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::NotReady);
    assert_eq!(i.cause(), Cause::Runtime);
    assert_eq!(i.verdict(&r.settings), Verdict::Transient, "{i:#?}");
    assert!(r.alert_kinds().is_empty());
    // Without the ready line before it, the same lines are the race.
    let mut l = lines(&[(0, STARTED), (1_000, REGISTERED)]);
    l.extend(every_5s(RUNTIME, 120_000, 5));
    l.push((141_000, READY.to_string()));
    let r = judged(&l, 600_000);
    assert_eq!(r.one().verdict(&r.settings), Verdict::StartupRace);
}

#[test]
fn a_network_ready_40s_after_the_start_is_the_startup_race() {
    let mut l = lines(&[(0, STARTED), (1_000, REGISTERED)]);
    l.extend(every_5s(CNI, 2_000, 8));
    l.push((42_000, READY.to_string()));
    let r = judged(&l, 600_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.kind(), IncidentKind::NotReady);
    assert_eq!(i.node, "w1");
    assert_eq!(i.cause(), Cause::Cni);
    assert_eq!(i.not_ready_signals(), 8);
    assert_eq!(i.resolution, Some(Resolution::NodeReady));
    assert_eq!(i.resolved_at, Some(T0 + 42_000_000));
    assert_eq!(i.verdict(&r.settings), Verdict::StartupRace);
    assert!(r.alert_kinds().is_empty(), "{:?}", r.alert_kinds());
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("start-up race"), "{d}");
    assert!(d.contains("cni plugin not initialized"), "{d}");
}

#[test]
fn a_network_never_ready_is_persistent_and_alerts_once() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(CNI, 2_000, 14 * 12));
    let r = judged(&l, 14 * 60_000 + 2_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.cause(), Cause::Cni);
    assert_eq!(i.status(), Status::Open);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    // Over 3 min of trouble: the first line after 2 s + 180 s.
    assert_eq!(i.over_threshold_at, Some(T0 + 187_000_000));
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    assert_eq!(i.counters(), Counters::default());
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("Persistent"), "{d}");
}

#[test]
fn a_runtime_down_five_minutes_is_persistent_then_resolved_on_quiet() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(RUNTIME, 600_000, 60));
    // The kubelet still writes after the runtime came back.
    l.push((1_000_000, REGISTERED.to_string()));
    let r = judged(&l, 1_000_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.cause(), Cause::Runtime);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(i.resolution, Some(Resolution::Quiet));
    assert_eq!(
        i.resolved_at,
        Some(T0 + (600_000 + 59 * 5_000 + 60_000) * 1000)
    );
    assert_eq!(
        r.alert_kinds(),
        vec![AlertKind::Opened, AlertKind::Resolved]
    );
}

#[test]
fn trouble_that_ends_sooner_long_after_the_start_is_transient() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(DISK, 600_000, 12));
    l.push((800_000, REGISTERED.to_string()));
    let r = judged(&l, 800_000);
    let i = &r.incidents[0];
    assert_eq!(i.cause(), Cause::DiskPressure);
    assert_eq!(i.verdict(&r.settings), Verdict::Transient);
    assert!(r.alert_kinds().is_empty());
}

#[test]
fn the_most_frequent_cause_wins_and_a_tie_goes_to_the_latest() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(PLEG, 1_000, 3));
    l.extend(every_5s(RUNTIME, 16_000, 2));
    let r = judged(&l, 30_000);
    assert_eq!(r.incidents[0].cause(), Cause::Pleg);
    assert_eq!(r.incidents[0].not_ready_signals(), 5);
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(PLEG, 1_000, 2));
    l.extend(every_5s(RUNTIME, 11_000, 2));
    let r = judged(&l, 30_000);
    assert_eq!(r.incidents[0].cause(), Cause::Runtime);
    l.extend(every_5s(PLEG, 21_000, 1));
    l.extend(every_5s(RUNTIME, 26_000, 1));
    l.extend(every_5s(PLEG, 31_000, 1));
    let r = judged(&l, 40_000);
    assert_eq!(r.incidents[0].cause(), Cause::Pleg);
}

#[test]
fn it_stays_open_while_the_kubelet_is_down() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(RUNTIME, 1_000, 4));
    // The kubelet dies and stays dead for 10 min; the not-ready incident
    // must not resolve on quiet meanwhile.
    l.push((20_000, EXITED.to_string()));
    let r = judged(&l, 400_000);
    let nr: Vec<&Incident> = r
        .incidents
        .iter()
        .filter(|i| i.kind() == IncidentKind::NotReady)
        .collect();
    assert_eq!(nr.len(), 1);
    assert_eq!(nr[0].status(), Status::Open, "{:#?}", nr[0]);
    // Once the kubelet runs again (kubelet-down resolved after 60 s), its
    // quiet counts from then.
    l.push((620_000, STARTED.to_string()));
    let r = judged(&l, 900_000);
    let down = r
        .incidents
        .iter()
        .find(|i| i.kind() == IncidentKind::KubeletDown)
        .unwrap();
    let nr = r
        .incidents
        .iter()
        .find(|i| i.kind() == IncidentKind::NotReady)
        .unwrap();
    let down_end = down.resolved_at.unwrap();
    assert_eq!(nr.resolution, Some(Resolution::Quiet));
    assert_eq!(nr.resolved_at, Some(down_end + 60 * SECOND));
}

/// Its quiet was over before the kubelet died: it resolved then, as a
/// following service's moving clock decides it, and the kubelet-down
/// incident that opens later does not hold it (found by the time
/// property: scan held it to the next stop).
#[test]
fn a_quiet_over_before_the_kubelet_dies_resolves_it_then() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(CNI, 1_000, 4));
    // 16 s: the last line; quiet from then; the kubelet dies at 140 s.
    l.push((140_000, EXITED.to_string()));
    l.push((150_000, STARTED.to_string()));
    let r = judged(&l, 400_000);
    let nr = r
        .incidents
        .iter()
        .find(|i| i.kind() == IncidentKind::NotReady)
        .unwrap();
    assert_eq!(nr.resolution, Some(Resolution::Quiet), "{nr:#?}");
    assert_eq!(nr.resolved_at, Some(T0 + 76_000_000));
}

#[test]
fn a_requested_stop_ends_it() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(CNI, 1_000, 60));
    l.push((300_000, STOPPING.to_string()));
    l.push((300_100, STOPPED.to_string()));
    let r = judged(&l, 300_100);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.resolution, Some(Resolution::Stopped));
    assert_eq!(i.resolved_at, Some(T0 + 300_000_000));
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
}

/// Every kubelet writes the start-up aggregate once as it starts
/// (fixtures/real-logs/kubernetes-kubernetes-21248.txt): it opens nothing;
/// beside real trouble it joins and votes.
const STARTING: &str = r#"E0610 02:55:28.384965   64201 kubelet.go:1870] "Skipping pod synchronization" err="[container runtime status check may not have completed yet, PLEG is not healthy: pleg has yet to be successful]""#;

#[test]
fn the_start_up_state_alone_opens_nothing() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(STARTING, 100, 3));
    let r = judged(&l, 600_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(CNI, 100, 1));
    l.extend(every_5s(STARTING, 1_000, 3));
    let r = judged(&l, 600_000);
    let i = r.incidents.first().expect("the CNI's incident");
    assert_eq!(i.not_ready_signals(), 4);
    assert_eq!(i.cause(), Cause::Runtime);
}

#[test]
fn readiness_lines_never_open_a_node_status_incident() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(CNI, 1_000, 3));
    l.extend(every_5s(PLEG, 16_000, 3));
    l.extend(every_5s(DISK, 31_000, 3));
    let r = judged(&l, 600_000);
    assert_eq!(r.incidents.len(), 1);
    assert!(
        r.incidents
            .iter()
            .all(|i| i.kind() == IncidentKind::NotReady)
    );
}

/// `kubernetes/kubernetes#61117` (fixtures/real-logs/kubernetes-kubernetes-61117-c.txt):
/// a kubelet that says only its start-up state every 5 s for longer than
/// `not_ready_after` never finished starting: a persistent not-ready
/// incident since its first such line, the runtime's, alerted once.
#[test]
fn the_start_up_state_past_not_ready_after_is_persistent() {
    let mut l = lines(&[(0, STARTED)]);
    l.extend(every_5s(STARTING, 1_000, 60));
    let r = judged(&l, 300_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.kind(), IncidentKind::NotReady);
    assert_eq!(i.opened_at, T0 + 1_000_000);
    assert_eq!(i.cause(), Cause::Runtime);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    // The first line more than 180 s after the first one: 1 s + 185 s.
    assert_eq!(i.over_threshold_at, Some(T0 + 186_000_000));
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    // Its lines from then on: 60 in all, 37 before.
    assert_eq!(i.not_ready_signals(), 23);
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("never finished starting"), "{d}");
    assert!(d.contains("may not have completed yet"), "{d}");
}

/// The start-up state's time counts from the kubelet's last start or
/// ready marker: a restart, or the node becoming ready, begins it anew.
#[test]
fn a_start_or_ready_marker_begins_the_start_up_state_anew() {
    for marker in [STARTED, READY] {
        let mut l = lines(&[(0, STARTED)]);
        l.extend(every_5s(STARTING, 1_000, 30));
        l.push((151_000, marker.to_string()));
        l.extend(every_5s(STARTING, 152_000, 30));
        let r = judged(&l, 400_000);
        assert!(r.incidents.is_empty(), "{marker}: {:#?}", r.incidents);
    }
}

/// `aws-samples/eks-workshop-v2#447` (fixtures/real-logs/aws-samples-eks-workshop-v2-447.txt):
/// two PLEG lines 5 s apart that say PLEG last relisted 2h33m before: not
/// ready since 2h30m before the first, by the kubelet's own count, so
/// persistent and alerted at once; never before the kubelet's last start.
#[test]
fn pleg_s_own_count_dates_the_incident() {
    const OLD: &str = r#"E0715 16:24:50.000000    2001 kubelet.go:2055] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 2h33m12.5s ago; threshold is 3m0s""#;
    let r = judged(&every_5s(OLD, 10_000_000, 2), 10_010_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.cause(), Cause::Pleg);
    assert_eq!(i.opened_at, T0 + 10_000_000_000 - 9_012_500_000);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("By the kubelet's own count"), "{d}");
    // A start 10 min before: not ready since the start at the earliest.
    let mut l = lines(&[(9_400_000, STARTED)]);
    l.extend(every_5s(OLD, 10_000_000, 2));
    let r = judged(&l, 10_010_000);
    assert_eq!(r.incidents[0].opened_at, T0 + 9_400_000_000);
    // The issue's PLEG line (3m0.5s, threshold 3m0s): half a second before.
    let r = judged(&every_5s(PLEG, 1_000, 2), 600_000);
    assert_eq!(r.incidents[0].opened_at, T0 + 500_000);
}

/// `kubernetes/kubernetes#71692` (fixtures/real-logs/kubernetes-kubernetes-71692.txt,
/// `journalctl -r`): lines newest first are placed at their own time; the
/// incident is not ready since the oldest, persistent over 295 s of them.
#[test]
fn lines_newest_first_date_the_incident_from_the_oldest() {
    let mut l = every_5s(CNI, 1_000, 60);
    l.reverse();
    let r = judged(&l, 300_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.opened_at, T0 + 1_000_000);
    assert_eq!(i.last_trouble_at, T0 + 296_000_000);
    assert_eq!(i.not_ready_signals(), 60);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    let d = i.diagnosis(&r.settings);
    assert!(!d.contains("own count"), "{d}");
}
