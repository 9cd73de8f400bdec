//! Scenario tests: kubelet lines replayed through the pipeline into the
//! tracker, with time injected (a day replays in a millisecond).

use super::*;
use crate::model::{Entry, EntryFilter};
use crate::pipeline::Pipeline;
use crate::signals::{Cause, Role, SignalKind};
use crate::testing::{End, Replay, unit_line};
use crate::time::SECOND;

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z

/// A kubelet line at `ms` after T0 from `host`.
type Line<'a> = (i64, &'a str, &'a str);

fn replay_with(lines: &[Line<'_>], settings: &Settings, end_ms: i64) -> Replay {
    let entries = lines
        .iter()
        .map(|(ms, host, text)| unit_line(T0 + ms * 1000, host, text));
    crate::testing::replay(entries, settings, End::At(T0 + end_ms * 1000))
}

fn replay(lines: &[Line<'_>], end_ms: i64) -> Replay {
    replay_with(lines, &Settings::default(), end_ms)
}

const REFUSED: &str = r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#;
const EXHAUSTED: &str = r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:522] "Unable to update node status" err="update node status exceeds retry count""#;
const DELETED: &str = r#"E0322 17:40:06.941770    1272 kubelet_node_status.go:390] Error updating node status, will retry: error getting node "w3": nodes "w3" not found"#;

/// One failing status cycle: 5 tries back to back, then "exhausted".
fn cycle<'a>(at_ms: i64, host: &'a str, retry: &'a str) -> Vec<Line<'a>> {
    let mut v: Vec<Line<'a>> = (0..5).map(|n| (at_ms + n, host, retry)).collect();
    v.push((at_ms + 5, host, EXHAUSTED));
    v
}

#[test]
fn startup_race_is_recognised_and_never_alerts() {
    let r = replay(
        &[
            (
                0,
                "w1",
                r#"I0715 16:24:50.000000    2425 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#,
            ),
            (
                100,
                "w1",
                r#"I0715 16:24:50.100000    2425 shared_informer.go:320] "Caches are synced" controller="node""#,
            ),
            (
                191,
                "w1",
                r#"I0715 16:24:50.191000    2425 kubelet_node_status.go:72] "Attempting to register node" node="w1""#,
            ),
            (
                198,
                "w1",
                r#"I0715 16:24:50.198000    2425 kubelet_node_status.go:75] "Successfully registered node" node="w1""#,
            ),
            (
                198,
                "w1",
                r#"E0715 16:24:50.198000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": node \"w1\" not found""#,
            ),
        ],
        120_000,
    );
    assert_eq!(r.incidents.len(), 1);
    let i = &r.incidents[0];
    assert_eq!(i.node, "w1");
    assert_eq!(i.counters().retries, 1);
    assert_eq!(i.verdict(&r.settings), Verdict::StartupRace);
    assert_eq!(i.cause(), Cause::ListerLag);
    assert_eq!(i.status(), Status::Resolved);
    assert_eq!(i.resolution, Some(Resolution::Quiet));
    assert_eq!(i.resolved_at, Some(T0 + 198_000 + 60 * SECOND));
    let d = i.diagnosis(&r.settings);
    assert!(
        d.contains(
            "Registered at 16:24:50.198 UTC; a status update found no Node in the lister 0 ms later"
        ),
        "{d}"
    );
    assert!(
        d.contains("caches reported synced 98 ms before registration"),
        "{d}"
    );
    // Markers before the opening are kept as evidence.
    let kinds: Vec<_> = i.evidence().map(|e| e.signal).collect();
    assert_eq!(
        kinds,
        [
            SignalKind::KubeletStarted,
            SignalKind::CachesSynced,
            SignalKind::RegisterAttempt,
            SignalKind::Registered,
            SignalKind::StatusRetry
        ]
    );
    assert!(r.alerts().is_empty());
}

#[test]
fn persistent_outage_alerts_once_then_resolves_with_a_notice() {
    let mut lines = Vec::new();
    for c in 0..3 {
        lines.extend(cycle(c * 10_000, "w2", REFUSED));
    }
    let r = replay(&lines, 200_000);
    assert_eq!(r.incidents.len(), 1);
    let i = &r.incidents[0];
    assert_eq!((i.counters().retries, i.counters().exhausted), (15, 3));
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(i.cause(), Cause::ApiUnreachable);
    // The 6th retry (more than 5) crossed the threshold: in the second cycle.
    assert_eq!(i.over_threshold_at, Some(T0 + 10_000_000));
    assert_eq!(i.status(), Status::Resolved);
    let kinds: Vec<AlertKind> = r.alerts().iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [AlertKind::Opened, AlertKind::Resolved]);
    assert!(
        i.diagnosis(&r.settings)
            .contains("crossed the alert threshold")
    );
}

#[test]
fn reminders_repeat_while_over_threshold() {
    let mut lines = Vec::new();
    for c in 0..10 {
        lines.extend(cycle(c * 10_000, "w2", REFUSED));
    }
    let settings = Settings {
        repeat_interval: 30 * SECOND,
        ..Settings::default()
    };
    let r = replay_with(&lines, &settings, 95_000);
    let kinds: Vec<AlertKind> = r.alerts().iter().map(|(k, _)| *k).collect();
    // Over at 10 s; reminders at 40 s and 70 s; still open at the end.
    assert_eq!(
        kinds,
        [AlertKind::Opened, AlertKind::Repeat, AlertKind::Repeat]
    );
    assert_eq!(r.incidents[0].status(), Status::Open);
}

#[test]
fn deleted_node_is_node_missing() {
    let mut lines = Vec::new();
    for c in 0..4 {
        lines.extend(cycle(c * 10_000, "ip-1", DELETED));
    }
    let r = replay(&lines, 40_000);
    let i = &r.incidents[0];
    assert_eq!(i.node, "w3");
    assert_eq!(i.host.as_deref(), Some("ip-1"));
    assert_eq!(i.cause(), Cause::NodeMissing);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    // The exhausted lines name no node: they go to the node the host's lines named.
    assert_eq!(i.counters().exhausted, 4);
}

#[test]
fn flapping_makes_separate_transient_incidents() {
    let lines = [
        (0, "w2", REFUSED),
        (1, "w2", REFUSED),
        (90_000, "w2", REFUSED),
        (180_000, "w2", REFUSED),
    ];
    let r = replay(&lines, 400_000);
    assert_eq!(r.incidents.len(), 3);
    for i in &r.incidents {
        assert_eq!(i.verdict(&r.settings), Verdict::Transient);
        assert_eq!(i.status(), Status::Resolved);
    }
    assert_eq!(r.incidents[0].counters().retries, 2);
    assert!(r.alerts().is_empty());
}

#[test]
fn two_nodes_interleaved_stay_apart() {
    let mut lines = vec![(
        0,
        "a",
        r#"I0715 16:24:50.000000    1 kubelet_node_status.go:75] "Successfully registered node" node="a""#,
    )];
    for c in 0..3 {
        lines.extend(cycle(c * 10_000 + 3, "b", DELETED));
        if c == 0 {
            lines.push((40, "a", r#"E0715 16:24:50.040000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"a\": node \"a\" not found""#));
        }
    }
    lines.sort_by_key(|l| l.0);
    let r = replay(&lines, 30_000);
    assert_eq!(r.incidents.len(), 2);
    let a = r.incidents.iter().find(|i| i.node == "a").unwrap();
    let b = r.incidents.iter().find(|i| i.node == "w3").unwrap();
    assert_eq!(a.verdict(&r.settings), Verdict::StartupRace);
    assert_eq!(a.counters().retries, 1);
    assert_eq!(b.counters().retries, 15);
    assert_eq!(b.verdict(&r.settings), Verdict::Persistent);
    assert!(a.evidence().all(|e| !e.text.contains("w3")));
}

#[test]
fn kubelet_restart_does_not_resolve() {
    let mut lines = cycle(0, "w2", REFUSED);
    lines.push((
        5_000,
        "w2",
        "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
    ));
    lines.push((6_000, "w2", "Started kubelet: The Kubernetes Node Agent."));
    lines.push((6_500, "w2", r#"I0715 16:24:56.500000    2500 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#));
    lines.extend(cycle(20_000, "w2", REFUSED));
    let r = replay(&lines, 30_000);
    // The failed exit is a kubelet-down incident of its own (design 5.1).
    let status: Vec<&Incident> = r
        .incidents
        .iter()
        .filter(|i| i.kind() == IncidentKind::NodeStatus)
        .collect();
    assert_eq!(status.len(), 1);
    let i = status[0];
    assert_eq!(i.status(), Status::Open);
    assert_eq!((i.counters().retries, i.counters().exhausted), (10, 2));
    // Over threshold across the restart.
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
}

#[test]
fn node_ready_resolves_at_once() {
    let r = replay(
        &[
            (
                0,
                "w4",
                r#"I0418 22:07:55.000000    2425 server.go:484] "Kubelet version" kubeletVersion="v1.30.0""#,
            ),
            (
                400,
                "w4",
                r#"E0418 22:07:55.432195    2425 kubelet_node_status.go:462] "Error getting the current node from lister" err="node \"w4\" not found""#,
            ),
            (
                500,
                "w4",
                r#"E0418 22:07:55.533052    2425 kubelet_node_status.go:462] "Error getting the current node from lister" err="node \"w4\" not found""#,
            ),
            (
                600,
                "w4",
                r#"I0418 22:07:55.600000    2425 kubelet_node_status.go:73] "Successfully registered node" node="w4""#,
            ),
            (
                900,
                "w4",
                r#"I0418 22:07:55.900000    2425 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#,
            ),
        ],
        1_000,
    );
    let i = &r.incidents[0];
    assert_eq!(i.counters().lister_misses, 2);
    assert_eq!(i.resolution, Some(Resolution::NodeReady));
    assert_eq!(i.resolved_at, Some(T0 + 900_000));
    // Anchored to the kubelet start: the pre-registration wait is the race.
    assert_eq!(i.verdict(&r.settings), Verdict::StartupRace);
}

#[test]
fn failed_registrations_count_toward_the_threshold() {
    let line = r#"E0830 11:17:55.780886    2417 kubelet_node_status.go:103] Unable to register node "n1" with API server: Post https://10.0.2.15:6443/api/v1/nodes: dial tcp 10.0.2.15:6443: connect: connection refused"#;
    let lines: Vec<Line<'_>> = [0, 100, 300, 700, 1500, 3100, 6300]
        .iter()
        .map(|&ms| (ms, "n1", line))
        .collect();
    let r = replay(&lines, 7_000);
    let i = &r.incidents[0];
    assert_eq!(i.counters().register_failures, 7);
    assert_eq!(i.counters().retries, 0);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(r.alerts().len(), 1);
}

/// The first-hour recheck's mail: a node-status incident, then the kubelet
/// crash-looping a while after its last retry (its restarts are markers of
/// the node). The mail said three ends: its time line ran to the last
/// restart, the diagnosis to the last retry, and its last evidence was the
/// threshold's crossing (the restarts had pushed every later retry out of
/// the kept lines).
#[test]
fn markers_after_the_trouble_neither_extend_it_nor_push_its_last_lines_out() {
    let mut lines: Vec<(i64, &str, String)> = (0..12)
        .map(|n| (n * 200, "w2", REFUSED.to_string()))
        .collect();
    let last_retry = 11 * 200;
    for e in crate::testing::crash_loop(T0 + 5_000_000, "w2", 8) {
        let at = e.at.unwrap();
        lines.push((
            (at - T0) / 1000,
            "w2",
            String::from_utf8(e.message).unwrap(),
        ));
    }
    let lines: Vec<Line<'_>> = lines
        .iter()
        .map(|(ms, h, t)| (*ms, *h, t.as_str()))
        .collect();
    let r = replay(&lines, 200_000);
    let i = r
        .incidents
        .iter()
        .find(|i| i.kind() == IncidentKind::NodeStatus)
        .unwrap();
    assert_eq!(i.counters().retries, 12);
    assert_eq!(i.last_trouble_at, T0 + last_retry * 1000);
    // Its trouble ended with its last retry, whatever came after.
    assert_eq!(i.last_signal_at, i.last_trouble_at, "{i:#?}");
    let last = i.last_evidence().unwrap();
    assert_eq!(
        (last.at, last.signal),
        (T0 + last_retry * 1000, SignalKind::StatusRetry)
    );
    // The restarts are still kept, and the lines stay bounded.
    assert!(
        i.evidence_tail
            .iter()
            .any(|e| e.signal.role() == Role::Marker)
    );
    assert!(i.evidence().count() <= evidence::EVIDENCE_HEAD + evidence::EVIDENCE_TAIL);
}

#[test]
fn evidence_is_bounded_in_a_retry_storm() {
    let lines: Vec<Line<'_>> = (0..5000).map(|n| (n * 10, "w2", REFUSED)).collect();
    let r = replay(&lines, 50_000);
    let i = &r.incidents[0];
    assert_eq!(i.counters().retries, 5000);
    assert_eq!(
        i.evidence().count(),
        evidence::EVIDENCE_HEAD + evidence::EVIDENCE_TAIL
    );
    assert_eq!(i.evidence_dropped, 5000 - 16);
    assert_eq!(i.recent.len(), 6);
}

#[test]
fn ids_are_deterministic_and_state_round_trips() {
    let lines = cycle(0, "w2", REFUSED);
    let a = replay(&lines, 1_000);
    let b = replay(&lines, 1_000);
    assert_eq!(a.incidents[0].id, b.incidents[0].id);
    let t = Tracker::new(Settings::default());
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<Tracker>(&json).unwrap(), t);
}

#[test]
fn nodes_in_trouble_stay_within_the_bounds_quietest_evicted_first() {
    // One host names 10 nodes in trouble (a flood of names), one at a time,
    // each over the threshold; then its own node goes on failing.
    let texts: Vec<String> = (0..10)
        .map(|n| REFUSED.replace("w2", &format!("f{n}")))
        .collect();
    let mut lines: Vec<Line<'_>> = Vec::new();
    for (n, t) in texts.iter().enumerate() {
        for k in 0..7 {
            lines.push((i64::try_from(n).unwrap() * 100 + k, "h1", t.as_str()));
        }
    }
    let own = REFUSED.replace("w2", "h1");
    lines.push((2_000, "h1", own.as_str()));
    // Another host's node is not touched by h1's flood.
    lines.push((2_001, "h2", REFUSED));
    let settings = Settings {
        max_nodes_per_host: 3,
        max_nodes: 4,
        ..Settings::default()
    };
    let r = replay_with(&lines, &settings, 2_500);
    let open: Vec<&str> = r
        .incidents
        .iter()
        .filter(|i| i.resolved_at.is_none())
        .map(|i| i.node.as_str())
        .collect();
    assert_eq!(open, ["f8", "f9", "h1", "w2"], "{open:?}");
    let evicted: Vec<&Incident> = r
        .incidents
        .iter()
        .filter(|i| i.resolution == Some(Resolution::Evicted))
        .collect();
    assert_eq!(evicted.len(), 8);
    assert_eq!(evicted[0].node, "f0", "the quietest goes first");
    // Each was alerted; none gets a resolved notice (nothing says it ended).
    let resolved_notices = r
        .alerts()
        .iter()
        .filter(|(k, _)| *k == AlertKind::Resolved)
        .count();
    assert_eq!(resolved_notices, 0);
    assert!(
        evicted[0].diagnosis(&r.settings).contains("to make room"),
        "{}",
        evicted[0].diagnosis(&r.settings)
    );
}

#[test]
fn systemds_other_words_about_the_unit_are_not_unparsed_kubelet_lines() {
    let texts = [
        "kubelet.service: Deactivated successfully.",
        "kubelet.service: Failed to kill control group /system.slice/kubelet.service, ignoring: Input/output error",
        "Started kubelet: The Kubernetes Node Agent.",
    ];
    let entries = texts.iter().map(|text| Entry {
        at: Some(T0),
        host: Some("w1".into()),
        identifier: Some("systemd".into()),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    });
    let r = crate::testing::replay(entries, &Settings::default(), End::Finish);
    let s = &r.summary;
    assert_eq!((s.unparsed, s.foreign, s.recognized), (0, 2, 1), "{s:?}");
    assert_eq!(s.kubelet_lines, s.lines + s.continuations + s.unparsed);
}

#[test]
fn the_race_picture_draws_the_retry_where_it_happened() {
    let reg = r#"I0715 16:24:50.100000    2425 kubelet_node_status.go:75] "Successfully registered node" node="w1""#;
    let retry = r#"E0715 16:24:50.106000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": node \"w1\" not found""#;
    let ready = r#"I0715 16:24:50.500000    2425 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#;
    let r = replay(
        &[(100, "w1", reg), (106, "w1", retry), (500, "w1", ready)],
        1_000,
    );
    let p = crate::picture::Picture::of(&r.incidents[0]).unwrap();
    let span = p.end_ms - p.start_ms;
    let col = |ms: i64| {
        usize::try_from((ms - p.start_ms) * 60 / span)
            .unwrap()
            .min(59)
    };
    let (_, cols) = p.lanes.iter().find(|(l, _)| l == "status-retry").unwrap();
    let drawn = cols.iter().position(|&n| n > 0).unwrap();
    let registered = p
        .markers
        .iter()
        .find(|m| m.kind == crate::picture::MarkerKind::Registered)
        .unwrap();
    // 6 ms after the registration, on a 400 ms picture: the same column or
    // the next, never half a 50 ms bucket later.
    assert!(
        drawn >= col(registered.at_ms) && drawn <= col(registered.at_ms) + 1,
        "{p:?}"
    );
    let text = p.text(crate::time::Zone::Utc);
    assert!(text.contains("a column is 6.7ms"), "{text}");
}

/// Issue 28 (test-email's picture): six retries 1 ms apart cross the
/// threshold 5 ms after the first; they are counted in one 50 ms bucket,
/// so the threshold's marker is drawn with their block, not 48 columns to
/// its right, and the column says what it stands for (not "1ms").
#[test]
fn a_marker_is_drawn_with_the_signals_counted_beside_it() {
    let retry = r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": Unauthorized""#;
    let lines: Vec<Line<'_>> = (0..6).map(|k| (k, "w1", retry)).collect();
    let r = replay(&lines, 1_000);
    let i = &r.incidents[0];
    assert!(i.over_threshold_at.is_some());
    let p = crate::picture::Picture::of(i).unwrap();
    let (_, cols) = p.lanes.iter().find(|(l, _)| l == "status-retry").unwrap();
    let block = cols.iter().position(|&n| n > 0).unwrap();
    let over = p
        .markers
        .iter()
        .find(|m| m.kind == crate::picture::MarkerKind::OverThreshold)
        .unwrap();
    assert_eq!(p.column(over.drawn()), block, "{p:?}");
    assert_eq!(
        over.at_ms,
        i.over_threshold_at.unwrap() / 1000,
        "the JSON keeps when"
    );
    let text = p.text(crate::time::Zone::Utc);
    assert!(text.contains("a column is 83µs"), "{text}");
}

/// First-hour N25: a registration 20 minutes before an outage was drawn
/// in the picture's first column, as if it had just happened; markers
/// sharing a column were all in the legend though one was drawn.
#[test]
fn a_marker_long_before_is_not_drawn_and_the_legend_says_what_is() {
    let reg = r#"I0715 16:04:50.100000    2425 kubelet_node_status.go:75] "Successfully registered node" node="w1""#;
    let retry = r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": Unauthorized""#;
    let mut lines: Vec<Line<'_>> = vec![(-1_200_000 + 100, "w1", reg)];
    lines.extend((0..6).map(|k| (k, "w1", retry)));
    let r = replay(&lines, 1_000);
    let i = &r.incidents[0];
    assert_eq!(i.anchor.map(|a| a.kind), Some(SignalKind::Registered));
    let p = crate::picture::Picture::of(i).unwrap();
    let reg = p
        .markers
        .iter()
        .find(|m| m.kind == crate::picture::MarkerKind::Registered)
        .unwrap();
    assert!(reg.before, "kept, said to be before: {p:?}");
    let text = p.text(crate::time::Zone::Utc);
    let row = text.lines().find(|l| l.contains("markers")).unwrap();
    assert!(!row.contains('R'), "{text}");
    // Each marker in the legend is drawn, or said to be under one that is.
    let legend = text.lines().last().unwrap();
    for m in p.markers.iter().filter(|m| !m.before) {
        let sym = m.kind.symbol();
        assert!(
            row.contains(sym) || legend.contains(&format!("{sym} {} (under", m.kind.words())),
            "{text}"
        );
    }
}

/// F2: after a restart, markers (the last incident's registration and
/// ready, the stop and start, caches) would fill the first evidence slots;
/// the first trouble line is still kept and quoted as the first error, and
/// it does not move as the incident goes on. The first line of a later
/// cause is kept too.
#[test]
fn the_first_trouble_line_is_quoted_however_many_markers_came_before() {
    const REFUSED_ERR: &str = r#"Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused"#;
    const TIMEOUT_ERR: &str =
        r#"Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": context deadline exceeded"#;
    let retry = |ms: i64, err: &str| {
        let s = ms / 1000;
        format!(
            r#"E0715 16:{:02}:{:02}.{:06}    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": {err}""#,
            25 + s / 60,
            s % 60,
            (ms % 1000) * 1000
        )
    };
    let markers = [
        r#"I0715 16:24:50.000000    2425 kubelet_node_status.go:72] "Attempting to register node" node="w2""#,
        r#"I0715 16:24:50.100000    2425 kubelet_node_status.go:75] "Successfully registered node" node="w2""#,
        r#"I0715 16:24:50.500000    2425 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#,
        "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
        "kubelet.service: Failed with result 'exit-code'.",
        "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
        r#"I0715 16:25:01.000000    2426 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#,
        r#"I0715 16:25:01.100000    2426 shared_informer.go:320] "Caches are synced" controller="node""#,
        r#"I0715 16:25:01.200000    2426 kubelet_node_status.go:72] "Attempting to register node" node="w2""#,
    ];
    let mut texts: Vec<(i64, String)> = markers
        .iter()
        .enumerate()
        .map(|(n, m)| (n as i64 * 1_000 + 2_000, (*m).to_string()))
        .collect();
    for n in 0..40 {
        let ms = 12_000 + n * 2_000;
        let err = if n < 30 { REFUSED_ERR } else { TIMEOUT_ERR };
        texts.push((ms, retry(ms, err)));
    }
    let lines = |upto: usize| -> Vec<Line<'_>> {
        texts[..upto]
            .iter()
            .map(|(ms, t)| (*ms, "w2", t.as_str()))
            .collect()
    };
    let first_trouble = &texts[markers.len()].1;
    let mut quoted = Vec::new();
    for upto in [markers.len() + 1, markers.len() + 12, texts.len()] {
        let r = replay(&lines(upto), 100_000);
        let i = r
            .incidents
            .iter()
            .find(|i| i.node == "w2" && i.kind() == IncidentKind::NodeStatus)
            .unwrap();
        let first = i.first_evidence().unwrap();
        assert_eq!(&first.text, first_trouble);
        assert_eq!(first.signal, SignalKind::StatusRetry);
        let d = i.diagnosis(&r.settings);
        assert!(
            d.contains(&format!("First error: {}", one_line(first_trouble, 300))),
            "{d}"
        );
        assert!(i.last_evidence().unwrap().signal.role() != Role::Marker);
        let head_markers = i
            .evidence_head
            .iter()
            .filter(|e| e.signal.role() == Role::Marker)
            .count();
        assert!(head_markers <= evidence::EVIDENCE_HEAD_MARKERS);
        // The markers nearest the trouble are the ones kept.
        assert!(
            i.evidence().any(|e| e.signal == SignalKind::CachesSynced),
            "{:?}",
            i.evidence().map(|e| e.signal).collect::<Vec<_>>()
        );
        quoted.push((first.at, first.text.clone()));
        if upto == texts.len() {
            // The first timeout is kept, although the first slots were full.
            let timeout = i
                .evidence()
                .find(|e| e.cause == Some(Cause::ApiTimeout))
                .unwrap();
            assert_eq!(timeout.text, texts[markers.len() + 30].1);
            // Time order, whatever slot each line has.
            let at: Vec<Micros> = i.evidence().map(|e| e.at).collect();
            assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
        }
    }
    quoted.dedup();
    assert_eq!(quoted.len(), 1, "{quoted:?}");
}

#[test]
fn a_flood_of_one_line_names_leaves_no_history() {
    let texts: Vec<String> = (0..200)
        .map(|n| REFUSED.replace("w2", &format!("flood-{n}")))
        .collect();
    let lines: Vec<Line<'_>> = texts
        .iter()
        .enumerate()
        .map(|(n, t)| (i64::try_from(n).unwrap(), "h1", t.as_str()))
        .collect();
    let settings = Settings {
        max_nodes_per_host: 8,
        ..Settings::default()
    };
    let mut p = Pipeline::new(EntryFilter::default(), settings);
    let mut d = Vec::new();
    for (ms, host, text) in &lines {
        p.push(
            Entry {
                at: Some(T0 + ms * 1000),
                host: Some((*host).into()),
                unit: Some("kubelet.service".into()),
                identifier: Some("kubelet".into()),
                message: text.as_bytes().to_vec(),
                ..Entry::default()
            },
            &mut d,
        );
    }
    p.flush(&mut d);
    let forgotten = p.tracker_mut().take_forgotten();
    assert_eq!(forgotten.len(), 192);
    assert_eq!(p.tracker().forgotten(), 192);
    assert!(
        p.tracker_mut().take_resolved().is_empty(),
        "nothing kept as evicted"
    );
    assert_eq!(p.tracker().open_incidents().count(), 8);
    assert!(d.iter().all(|x| !matches!(x, Decision::QueueAlert { .. })));
}

/// A host's record leaves out what its kubelet has not told (a
/// collector's hosts mostly know their last entry and pid), and a record
/// written with every field, as before, reads the same.
#[test]
fn a_host_record_leaves_out_what_it_does_not_know() {
    let before = r#"{"registered_node":null,"named_node":null,"started_at":null,"caches_synced_at":null,"markers":[],"last_entry_at":5,"kubelet_pid":2000}"#;
    let o: Origin = serde_json::from_str(before).unwrap();
    assert_eq!(
        serde_json::to_string(&o).unwrap(),
        r#"{"last_entry_at":5,"kubelet_pid":2000}"#
    );
    let known = Origin {
        named_node: Some("n1".into()),
        started_at: Some(1),
        ..o.clone()
    };
    let back: Origin = serde_json::from_str(&serde_json::to_string(&known).unwrap()).unwrap();
    assert_eq!(back, known);
}
