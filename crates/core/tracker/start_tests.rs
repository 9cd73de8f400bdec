//! Starts (design 5.5) replayed from whole journals: issue 37's six
//! nodes, from a one-shot read and a following one alike.

use super::*;
use crate::testing::{End, replay, replay_following, six_starts};
use crate::time::SECOND;

const T0: Micros = 1_796_374_800_000_000; // 2026-12-04T09:00:00Z

fn of<'a>(starts: &'a [Start], host: &str) -> Vec<&'a Start> {
    starts.iter().filter(|s| s.host == host).collect()
}

fn summary(s: &Start) -> (StartVerdict, Option<Phase>, Option<i64>) {
    (s.verdict, s.slowest(), s.time_to_ready_ms())
}

#[test]
fn six_nodes_make_seven_starts_with_their_phases_and_verdicts() {
    let r = replay(six_starts(T0), &Settings::default(), End::Finish);
    assert_eq!(r.starts.len(), 7, "{:#?}", r.starts);
    let one = |h: &str| {
        let v = of(&r.starts, h);
        assert_eq!(v.len(), 1, "{h}: {v:#?}");
        v[0].clone()
    };
    let healthy = one("healthy");
    assert_eq!(
        summary(&healthy),
        (StartVerdict::Ready, Some(Phase::Network), Some(12_000))
    );
    assert_eq!(healthy.kubelet_version.as_deref(), Some("v1.31.2"));
    assert_eq!(healthy.node, "healthy");
    let race = one("race");
    assert_eq!(
        summary(&race),
        (StartVerdict::Ready, Some(Phase::Init), Some(1_420))
    );
    let raced: Vec<&Incident> = r.incidents.iter().filter(|i| i.node == "race").collect();
    assert_eq!(raced.len(), 1);
    assert_eq!(raced[0].verdict(&r.settings), Verdict::StartupRace);
    assert_eq!(race.incidents, vec![raced[0].id.clone()]);
    let place = raced[0].start.expect("the race incident knows its start");
    assert_eq!(
        place.phase, None,
        "told when shown, from the start's record"
    );
    assert_eq!(
        race.place(raced[0].opened_at).words(),
        "opened 0 ms after registration, in the ready phase of the start at 09:00:00.000 UTC"
    );
    let refused = one("refused");
    assert_eq!(
        summary(&refused),
        (StartVerdict::Ready, Some(Phase::Register), Some(100_000))
    );
    assert_eq!(refused.incidents.len(), 1, "its node-status incident");
    let cni = one("cni");
    assert_eq!(
        summary(&cni),
        (StartVerdict::Slow, Some(Phase::Network), Some(366_000))
    );
    let runtime = one("runtime");
    assert_eq!(summary(&runtime), (StartVerdict::NeverReady, None, None));
    let restarted = of(&r.starts, "restarted");
    assert_eq!(restarted.len(), 2);
    for s in &restarted {
        assert_eq!(s.verdict, StartVerdict::Ready);
        let ms = s.time_to_ready_ms().unwrap();
        assert!((4_900..=5_100).contains(&ms), "{ms}");
    }
    assert_eq!(restarted[1].started_at, T0 + 60_300 * 1000);
}

#[test]
fn a_following_read_makes_the_same_starts_as_a_one_shot_read() {
    let once = replay(six_starts(T0), &Settings::default(), End::Finish);
    let follow = replay_following(six_starts(T0), &Settings::default(), End::Finish);
    assert_eq!(once.starts, follow.starts);
}

#[test]
fn a_start_is_starting_until_its_hosts_journal_passes_the_budget() {
    let entries: Vec<_> = six_starts(T0)
        .into_iter()
        .filter(|e| e.host.as_deref() == Some("runtime") && e.at.unwrap() < T0 + 200 * SECOND)
        .collect();
    let r = replay(entries, &Settings::default(), End::Finish);
    assert_eq!(r.starts.len(), 1);
    assert_eq!(r.starts[0].verdict, StartVerdict::Starting);
}

#[test]
fn a_kubelet_restarting_every_second_makes_one_never_ready_start_a_restart() {
    let mut entries = Vec::new();
    for k in 0..50_i64 {
        let at = T0 + k * SECOND;
        entries.push(crate::testing::systemd(
            at,
            "h",
            "Started kubelet.service - kubelet.",
        ));
        entries.push(crate::model::Entry {
            pid: Some(1000 + u32::try_from(k).unwrap()),
            ..crate::testing::kubelet(at + 10_000, "h", crate::testing::SWAP)
        });
    }
    let r = replay(entries, &Settings::default(), End::Finish);
    assert_eq!(r.starts.len(), 50);
    assert!(
        r.starts[..49]
            .iter()
            .all(|s| s.verdict == StartVerdict::NeverReady && s.ended_at.is_some())
    );
}

fn kubelet_as(pid: u32, ms: i64, text: &str) -> crate::model::Entry {
    crate::model::Entry {
        pid: Some(pid),
        ..crate::testing::kubelet(T0 + ms * 1000, "h", text)
    }
}

const READY: &str = r#"I1204 09:00:00.000000    1 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#;
const REGISTERED: &str = r#"I1204 09:00:00.000000    1 kubelet_node_status.go:75] "Successfully registered node" node="h""#;

/// With no systemd lines and no version line, a recognised line of
/// another pid is the next start; a wrapper's lines beside the kubelet
/// in its unit (its own pid, nothing recognised) are none.
#[test]
fn a_new_kubelet_pid_is_the_next_start_and_a_wrapper_is_none() {
    let entries = vec![
        kubelet_as(
            100,
            0,
            r#"I1204 09:00:00.000000  100 server.go:484] "Kubelet version" kubeletVersion="v1.31.2""#,
        ),
        kubelet_as(
            7,
            10,
            "+ exec /usr/bin/kubelet --config /var/lib/kubelet/config.yaml",
        ),
        kubelet_as(100, 1_000, REGISTERED),
        kubelet_as(7, 1_500, "wrapper: still here"),
        kubelet_as(100, 2_000, READY),
        kubelet_as(200, 60_000, REGISTERED),
        kubelet_as(200, 63_000, READY),
    ];
    let r = replay(entries, &Settings::default(), End::Finish);
    let got: Vec<(Micros, Option<i64>)> = r
        .starts
        .iter()
        .map(|s| (s.started_at - T0, s.time_to_ready_ms()))
        .collect();
    assert_eq!(got, [(0, Some(2_000)), (60_000_000, Some(3_000))]);
}

/// A legacy kubelet (1.18): `Version: v1.18.0`, then its registration and
/// the `NodeReady` event line.
#[test]
fn a_legacy_kubelets_start_reads_the_same() {
    let entries = vec![
        kubelet_as(
            9,
            0,
            "I1204 09:00:00.000000       9 server.go:416] Version: v1.18.0",
        ),
        kubelet_as(
            9,
            400,
            "I1204 09:00:00.400000       9 kubelet.go:1189] Started kubelet",
        ),
        kubelet_as(
            9,
            900,
            "I1204 09:00:00.900000       9 kubelet_node_status.go:70] Attempting to register node h",
        ),
        kubelet_as(
            9,
            950,
            "I1204 09:00:00.950000       9 kubelet_node_status.go:73] Successfully registered node h",
        ),
        kubelet_as(
            9,
            4_000,
            "I1204 09:00:04.000000       9 kubelet_node_status.go:441] Recording NodeReady event message for node h",
        ),
    ];
    let r = replay(entries, &Settings::default(), End::Finish);
    assert_eq!(r.starts.len(), 1, "{:#?}", r.starts);
    let s = &r.starts[0];
    assert_eq!(s.kubelet_version.as_deref(), Some("v1.18.0"));
    assert_eq!(
        summary(s),
        (StartVerdict::Ready, Some(Phase::Ready), Some(4_000))
    );
    assert_eq!(s.phases().len(), 3);
}
