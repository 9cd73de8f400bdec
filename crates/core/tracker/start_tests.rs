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
