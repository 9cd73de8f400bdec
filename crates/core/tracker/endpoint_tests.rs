#![allow(
    clippy::wildcard_enum_match_arm,
    reason = "tests pick the decisions they check"
)]
//! Endpoint incidents (design 5.2): scenarios through the pipeline, with
//! time injected.

use super::*;
use crate::model::{Entry, EntryFilter};
use crate::pipeline::Pipeline;
use crate::signals::Cause;
use crate::time::SECOND;
use crate::tracker::machine::endpoint::groups as endpoint;
use std::collections::BTreeSet;

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z
const MS: Micros = 1000;

fn refused(node: &str, ep: &str) -> String {
    format!(
        r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://{ep}/api/v1/nodes/{node}?timeout=10s\": dial tcp {ep}: connect: connection refused""#
    )
}

fn unauthorized(node: &str, ep: &str) -> String {
    format!(
        r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://{ep}/api/v1/nodes/{node}?timeout=10s\": Unauthorized""#
    )
}

struct Run {
    incidents: Vec<Incident>,
    alerts: Vec<(AlertKind, String)>,
    /// After each line: the open incidents (endpoint ones, and each node's
    /// with its cover), and the incidents the store was told of.
    steps: Vec<(Vec<Incident>, BTreeSet<String>)>,
}

/// `(ms after T0, host, text)`: every host's node is its host name.
fn run(lines: &[(i64, String, String)], settings: Settings, end_ms: i64) -> Run {
    run_with(lines, settings, end_ms, false, false).0
}

/// As [`run`]; `long_way`: every group derived again at each change (no
/// shortcut); `record`: the state after each line, in `steps`. Also
/// gives how many shortcuts were taken.
fn run_with(
    lines: &[(i64, String, String)],
    settings: Settings,
    end_ms: i64,
    long_way: bool,
    record: bool,
) -> (Run, u64) {
    let mut p = Pipeline::new(EntryFilter::default(), settings);
    p.tracker_mut().outages.long_way = long_way;
    let mut decisions = Vec::new();
    let mut steps = Vec::new();
    for (ms, host, text) in lines {
        let e = Entry {
            at: Some(T0 + ms * MS),
            host: Some(host.as_str().into()),
            unit: Some("kubelet.service".into()),
            identifier: Some("kubelet".into()),
            message: text.as_bytes().to_vec(),
            ..Entry::default()
        };
        let from = decisions.len();
        p.push(e, &mut decisions);
        if record {
            let told = decisions[from..]
                .iter()
                .filter_map(|d| match d {
                    Decision::OpenIncident { id }
                    | Decision::UpdateIncident { id }
                    | Decision::ResolveIncident { id }
                    | Decision::ForgetIncident { id } => Some(format!("{id} {d:?}")),
                    Decision::CoverIncident { id, by } => Some(format!("{id} {by:?}")),
                    Decision::QueueAlert { .. } => None,
                })
                .collect();
            steps.push((p.tracker().open_incidents().cloned().collect(), told));
        }
    }
    p.flush(&mut decisions);
    p.advance(T0 + end_ms * MS, &mut decisions);
    let alerts = decisions
        .iter()
        .filter_map(|d| match d {
            Decision::QueueAlert { id, kind, .. } => Some((*kind, id.clone())),
            _ => None,
        })
        .collect();
    let mut incidents = p.tracker_mut().take_resolved();
    incidents.extend(p.tracker().open_incidents().cloned());
    incidents.sort_by_key(|i| (i.opened_at, i.node.clone()));
    let shortcuts = p.tracker().outages.shortcuts;
    let run = Run {
        incidents,
        alerts,
        steps,
    };
    (run, shortcuts)
}

/// `hosts` each retrying every 10 s for `tries` tries, starting `gap_ms`
/// apart, against `ep`.
fn outage(hosts: &[&str], ep: &str, gap_ms: i64, tries: i64) -> Vec<(i64, String, String)> {
    let mut v = Vec::new();
    for (n, h) in hosts.iter().enumerate() {
        for t in 0..tries {
            v.push((
                n as i64 * gap_ms + t * 10_000,
                (*h).to_string(),
                refused(h, ep),
            ));
        }
    }
    v.sort_by_key(|l| l.0);
    v
}

fn of_kind(r: &Run, kind: IncidentKind) -> Vec<&Incident> {
    r.incidents.iter().filter(|i| i.kind() == kind).collect()
}

#[test]
fn nodes_losing_one_endpoint_are_one_incident_and_one_page() {
    let ep = "10.0.0.1:6443";
    let mut lines = outage(&["n1", "n2", "n3", "n4"], ep, 1000, 8);
    for t in 0..8 {
        lines.push((
            500 + t * 10_000,
            "n5".into(),
            unauthorized("n5", "10.0.0.2:6443"),
        ));
    }
    lines.sort_by_key(|l| l.0);
    let r = run(&lines, Settings::default(), 10 * 60_000);
    let eps = of_kind(&r, IncidentKind::Endpoint);
    assert_eq!(eps.len(), 1, "{:#?}", r.incidents);
    let e = eps[0];
    assert_eq!(e.api_endpoint(), Some(ep));
    assert_eq!(e.cause(), Cause::ApiUnreachable);
    assert_eq!(e.nodes(), ["n1", "n2", "n3", "n4"]);
    assert_eq!(e.opened_at, T0, "opened at the first node's trouble");
    let nodes = of_kind(&r, IncidentKind::NodeStatus);
    assert_eq!(nodes.len(), 5);
    let last_end = nodes
        .iter()
        .filter(|i| i.covered_by().is_some())
        .filter_map(|i| i.resolved_at)
        .max();
    assert_eq!(e.resolved_at, last_end, "resolved with the last node");
    for n in &nodes {
        if n.node == "n5" {
            assert_eq!(
                n.covered_by(),
                None,
                "the lone Unauthorized node stays alone"
            );
            assert_eq!(n.api_endpoint(), Some("10.0.0.2:6443"));
        } else {
            assert_eq!(n.covered_by(), Some(e.id.as_str()), "{}", n.node);
            assert_eq!(n.api_endpoint(), Some(ep));
            assert!(n.over_threshold_at.is_some());
        }
    }
    // One page for the outage, one for the lone node; their ends.
    let lone = nodes.iter().find(|n| n.node == "n5").unwrap();
    let key = |a: &(AlertKind, String)| (a.0.words(), a.1.clone());
    let mut alerts = r.alerts.clone();
    alerts.sort_by_key(key);
    let mut want = vec![
        (AlertKind::Opened, e.id.clone()),
        (AlertKind::Opened, lone.id.clone()),
        (AlertKind::Resolved, e.id.clone()),
        (AlertKind::Resolved, lone.id.clone()),
    ];
    want.sort_by_key(key);
    assert_eq!(alerts, want);
}

#[test]
fn one_node_or_too_few_or_too_far_apart_is_no_outage() {
    let ep = "10.0.0.1:6443";
    // One node, however long.
    let r = run(&outage(&["n1"], ep, 0, 30), Settings::default(), 3_600_000);
    assert!(of_kind(&r, IncidentKind::Endpoint).is_empty());
    // Two nodes, three needed.
    let r = run(
        &outage(&["n1", "n2"], ep, 100, 8),
        Settings::default(),
        3_600_000,
    );
    assert!(of_kind(&r, IncidentKind::Endpoint).is_empty());
    assert_eq!(
        r.alerts.iter().filter(|a| a.0 == AlertKind::Opened).count(),
        2
    );
    // Three nodes opened further apart than the window.
    let s = Settings {
        fleet_window: 30 * SECOND,
        ..Settings::default()
    };
    let r = run(
        &outage(&["n1", "n2", "n3"], ep, 20_000, 12),
        s.clone(),
        3_600_000,
    );
    assert!(of_kind(&r, IncidentKind::Endpoint).is_empty());
    // Closer together, with two nodes needed: one.
    let s = Settings {
        fleet_min_nodes: 2,
        ..s
    };
    let r = run(&outage(&["n1", "n2"], ep, 20_000, 12), s, 3_600_000);
    assert_eq!(of_kind(&r, IncidentKind::Endpoint).len(), 1);
}

#[test]
fn a_node_joining_later_is_added_without_a_new_page() {
    let ep = "10.0.0.1:6443";
    let mut lines = outage(&["n1", "n2", "n3"], ep, 1000, 12);
    // n4 begins four minutes later, past the window, while the outage lasts.
    for t in 0..8 {
        lines.push((240_000 + t * 10_000, "n4".into(), refused("n4", ep)));
    }
    // The first three keep failing meanwhile.
    for h in ["n1", "n2", "n3"] {
        for t in 12..40 {
            lines.push((t * 10_000, h.into(), refused(h, ep)));
        }
    }
    lines.sort_by_key(|l| l.0);
    let r = run(&lines, Settings::default(), 3_600_000);
    let eps = of_kind(&r, IncidentKind::Endpoint);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].nodes(), ["n1", "n2", "n3", "n4"]);
    let opened: Vec<_> = r
        .alerts
        .iter()
        .filter(|a| a.0 == AlertKind::Opened)
        .collect();
    assert_eq!(opened, [&(AlertKind::Opened, eps[0].id.clone())]);
}

/// What a reading made of one incident: id, kind, end, nodes, cover.
type Outcome = (
    String,
    IncidentKind,
    Option<Micros>,
    Vec<String>,
    Option<String>,
);

/// The endpoint incidents and covers of a run, to compare readings.
fn outcome(r: &Run) -> Vec<Outcome> {
    let mut v: Vec<_> = r
        .incidents
        .iter()
        .map(|i| {
            (
                i.id.clone(),
                i.kind(),
                i.resolved_at,
                i.nodes().to_vec(),
                i.covered_by().map(str::to_string),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn hosts_read_one_after_another_give_the_outage_read_together() {
    let ep = "10.0.0.1:6443";
    let mut lines = outage(&["n1", "n2", "n3", "n4"], ep, 3000, 10);
    // n2 recovers early; n4 fails again later, alone.
    lines.retain(|l| !(l.1 == "n2" && l.0 > 30_000));
    for t in 0..6 {
        lines.push((900_000 + t * 10_000, "n4".into(), refused("n4", ep)));
    }
    lines.sort_by_key(|l| l.0);
    let together = run(&lines, Settings::default(), 3_600_000);
    assert_eq!(of_kind(&together, IncidentKind::Endpoint).len(), 1);
    // A directory scan reads host by host: every order of the hosts.
    for order in [
        ["n1", "n2", "n3", "n4"],
        ["n4", "n3", "n2", "n1"],
        ["n2", "n4", "n1", "n3"],
    ] {
        let mut apart = Vec::new();
        for h in order {
            apart.extend(lines.iter().filter(|l| l.1 == h).cloned());
        }
        let r = run(&apart, Settings::default(), 3_600_000);
        assert_eq!(outcome(&r), outcome(&together), "{order:?}");
    }
}

#[test]
fn a_node_whose_cause_moves_on_leaves_the_outage() {
    let ep = "10.0.0.1:6443";
    let mut lines = outage(&["n1", "n2", "n3"], ep, 1000, 3);
    // n3's errors turn into "node not found" (the Node was deleted), which
    // is no outage of the endpoint.
    for t in 0..8 {
        lines.push((
            35_000 + t * 10_000,
            "n3".into(),
            r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"n3\": nodes \"n3\" not found""#.to_string(),
        ));
    }
    lines.sort_by_key(|l| l.0);
    let r = run(&lines, Settings::default(), 3_600_000);
    let n3 = r.incidents.iter().find(|i| i.node == "n3").unwrap();
    assert_eq!(n3.cause(), Cause::NodeMissing, "{n3:#?}");
    assert_eq!(n3.covered_by(), None, "no longer one of the outage's");
    // Two hosts left: no outage at all.
    assert!(of_kind(&r, IncidentKind::Endpoint).is_empty());
}

#[test]
fn a_thousand_nodes_are_one_endpoint_incident() {
    let ep = "10.0.0.1:6443";
    let hosts: Vec<String> = (0..1000).map(|n| format!("big-{n:04}")).collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let lines = outage(&names, ep, 5, 12);
    let r = run(&lines, Settings::default(), 3_600_000);
    let eps = of_kind(&r, IncidentKind::Endpoint);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].nodes().len(), 1000);
    let opened = r.alerts.iter().filter(|a| a.0 == AlertKind::Opened).count();
    assert_eq!(opened, 1, "one page, not a thousand");
}

#[test]
fn the_groups_kept_are_bounded() {
    let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
    let mut d = Vec::new();
    for k in 0..(endpoint::GROUPS_MAX as i64 + 20) {
        let ep = format!("10.0.{}.{}:6443", k / 200, k % 200);
        let e = Entry {
            at: Some(T0 + k * 1000 * MS),
            host: Some(format!("h{k}").as_str().into()),
            unit: Some("kubelet.service".into()),
            identifier: Some("kubelet".into()),
            message: refused(&format!("h{k}"), &ep).into_bytes(),
            ..Entry::default()
        };
        p.push(e, &mut d);
    }
    p.flush(&mut d);
    assert!(p.tracker().outages.groups.len() <= endpoint::GROUPS_MAX);
}

/// Past [`endpoint::MEMBERS_MAX`] members, all of them open, a node new to
/// the groups stays out of them: the bound holds, and the outage keeps the
/// nodes it had (the others are incidents of their own).
#[test]
fn the_members_kept_are_bounded_when_all_are_open() {
    let n = endpoint::MEMBERS_MAX + 50;
    let hosts: Vec<String> = (0..n).map(|k| format!("m{k:05}")).collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let lines = outage(&names, "10.0.0.1:6443", 1, 1);
    let r = run(&lines, Settings::default(), 60_000);
    let eps = of_kind(&r, IncidentKind::Endpoint);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].nodes().len(), endpoint::MEMBERS_MAX);
    let alone = of_kind(&r, IncidentKind::NodeStatus)
        .iter()
        .filter(|i| i.covered_by().is_none())
        .count();
    assert_eq!(alone, 50);
}

/// The shortcuts (`machine/endpoint/groups/fast.rs`) give what deriving every group again
/// gives: the same incidents (endpoint ones, and each node's cover) and
/// the same alerts, in order, over random fleets: nodes opening at random,
/// retrying at random gaps (some past `resolve_after`, so they resolve and
/// open again), against two endpoints and two causes. And they are taken.
#[test]
fn the_shortcuts_agree_with_deriving_again() {
    let mut seed: u64 = 11;
    let mut rnd = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % n
    };
    let mut taken = 0;
    for round in 0..40 {
        let nodes = 3 + rnd(30);
        let mut lines = Vec::new();
        for n in 0..nodes {
            let host = format!("n{n:02}");
            let ep = if rnd(5) == 0 {
                "10.0.0.2:6443"
            } else {
                "10.0.0.1:6443"
            };
            let mut at = rnd(120_000) as i64;
            for _ in 0..=rnd(12) {
                let text = if rnd(10) == 0 {
                    unauthorized(&host, ep)
                } else {
                    refused(&host, ep)
                };
                lines.push((at, host.clone(), text));
                at += [1_000, 10_000, 30_000, 200_000][rnd(4) as usize];
            }
        }
        lines.sort_by_key(|l| (l.0, l.1.clone()));
        let s = Settings {
            fleet_window: 60 * SECOND,
            resolve_after: 120 * SECOND,
            ..Settings::default()
        };
        let (quick, n) = run_with(&lines, s.clone(), 3_600_000, false, true);
        let (slow, _) = run_with(&lines, s, 3_600_000, true, true);
        assert_eq!(quick.incidents, slow.incidents, "round {round}");
        for (k, (a, b)) in quick.steps.iter().zip(&slow.steps).enumerate() {
            assert_eq!(a.0, b.0, "round {round}, line {k}");
            assert_eq!(a.1, b.1, "round {round}, line {k}");
        }
        assert_eq!(quick.alerts, slow.alerts, "round {round}");
        taken += n;
    }
    assert!(taken > 100, "shortcuts taken: {taken}");
}

/// One endpoint lost by many nodes: after the first few, each line of
/// the outage is a shortcut, not a derivation of the whole group (counted,
/// not timed).
#[test]
fn an_outage_of_many_nodes_is_not_derived_again_at_each_line() {
    let hosts: Vec<String> = (0..200).map(|n| format!("node-{n:03}")).collect();
    let refs: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let lines = outage(&refs, "10.0.0.1:6443", 10, 6);
    let (r, shortcuts) = run_with(&lines, Settings::default(), 3_600_000, false, false);
    assert_eq!(of_kind(&r, IncidentKind::Endpoint).len(), 1);
    // 1 200 lines: all but the few before the outage is one.
    assert!(shortcuts >= 1_190, "shortcuts: {shortcuts}");
}

/// An outage's page delivered after the outage ended (an old one read in a
/// catch-up, mailed after `group_wait`) is recorded on it; a late member
/// whose trouble began earlier (the outage starts earlier: another id)
/// does not page it again.
#[test]
fn a_page_delivered_after_the_outage_ended_is_recorded() {
    let ep = "10.0.0.1:6443";
    let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
    let mut d = Vec::new();
    let push = |p: &mut Pipeline, d: &mut Vec<Decision>, ms: i64, host: &str| {
        let e = Entry {
            at: Some(T0 + ms * MS),
            host: Some(host.into()),
            unit: Some("kubelet.service".into()),
            identifier: Some("kubelet".into()),
            message: refused(host, ep).into_bytes(),
            ..Entry::default()
        };
        p.push(e, d);
    };
    for (ms, host, _) in outage(&["n1", "n2", "n3"], ep, 1000, 12) {
        push(&mut p, &mut d, ms, &host);
    }
    p.flush(&mut d);
    p.advance(T0 + 3_600_000 * MS, &mut d);
    let paged = |d: &[Decision]| -> Vec<String> {
        d.iter()
            .filter_map(|x| match x {
                Decision::QueueAlert {
                    kind: AlertKind::Opened,
                    id,
                    about,
                    ..
                } if about.host.is_empty() => Some(id.clone()),
                _ => None,
            })
            .collect()
    };
    let first = paged(&d);
    assert_eq!(first.len(), 1, "{d:?}");
    let id = &first[0];
    assert!(p.tracker().incident(id).unwrap().resolved_at.is_some());
    // As ingest does: queued, committed, then delivered.
    p.tracker_mut().mark_announced(id);
    p.tracker_mut().take_resolved();
    assert!(p.tracker_mut().mark_alerted(id, T0 + 3_700_000 * MS));
    assert!(p.tracker().incident(id).unwrap().alerted_at.is_some());
    // A late host's trouble from before the others'.
    let mut late = Vec::new();
    for t in 0..12 {
        push(&mut p, &mut late, -30_000 + t * 10_000, "n0");
    }
    p.flush(&mut late);
    p.advance(T0 + 3_600_000 * MS, &mut late);
    assert!(paged(&late).is_empty(), "paged again: {late:?}");
}

/// Issue 27 (D29): members whose host's clock cannot be trusted (lines
/// dated 1971, or 2150: past the reader's clock, read at no time of
/// their own) are no members of an outage: three trusted hosts make one
/// without them; with two trusted hosts there is none, and every node
/// keeps its own incident and alert.
#[test]
fn a_host_whose_clock_is_wrong_neither_makes_nor_swells_an_outage() {
    let ep = "10.0.0.1:6443";
    let y1971: Micros = 36_000_000_000_000; // 1971-02-21
    let y2150: Micros = 5_680_000_000_000_000; // 2149-12-28
    let run = |trusted: &[&str]| {
        let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
        p.set_now(T0 + 3_600_000 * MS);
        let mut d = Vec::new();
        let mut lines: Vec<(Micros, String)> = Vec::new();
        for (n, h) in trusted.iter().enumerate() {
            for t in 0..12 {
                lines.push((T0 + (n as i64 * 1000 + t * 10_000) * MS, (*h).to_string()));
            }
        }
        for t in 0..12 {
            lines.push((y1971 + t * 10_000 * MS, "h1971".into()));
            lines.push((y2150 + t * 10_000 * MS, "h2150".into()));
            lines.push((T0 + (3 * 86_400_000 + t * 10_000) * MS, "hlate".into()));
        }
        for (at, host) in lines {
            let e = Entry {
                at: Some(at),
                host: Some(host.as_str().into()),
                unit: Some("kubelet.service".into()),
                identifier: Some("kubelet".into()),
                message: refused(&host, ep).into_bytes(),
                ..Entry::default()
            };
            p.push(e, &mut d);
        }
        p.finish(&mut d);
        let mut all = p.tracker_mut().take_resolved();
        all.extend(p.tracker().open_incidents().cloned());
        all.extend(p.tracker().outages.outages().cloned());
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all.dedup_by(|a, b| a.id == b.id);
        (all, d)
    };
    let (all, _) = run(&["n1", "n2", "n3"]);
    let eps: Vec<&Incident> = all
        .iter()
        .filter(|i| i.kind() == IncidentKind::Endpoint)
        .collect();
    assert_eq!(eps.len(), 1, "{all:#?}");
    assert_eq!(eps[0].nodes(), ["n1", "n2", "n3"]);
    let wrong = all.iter().find(|i| i.node == "h1971").unwrap();
    assert!(wrong.covered_by().is_none(), "{wrong:#?}");
    let (all, d) = run(&["n1", "n2"]);
    assert!(
        all.iter().all(|i| i.kind() != IncidentKind::Endpoint),
        "{all:#?}"
    );
    let paged: BTreeSet<&str> = d
        .iter()
        .filter_map(|x| match x {
            Decision::QueueAlert {
                kind: AlertKind::Opened,
                about,
                ..
            } => Some(about.node.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        paged,
        BTreeSet::from(["h1971", "h2150", "hlate", "n1", "n2"])
    );
    // The wrong clocks alone: no outage either.
    let (all, _) = run(&[]);
    assert!(
        all.iter().all(|i| i.kind() != IncidentKind::Endpoint),
        "{all:#?}"
    );
}

/// The member records as a store holds them after `writes`.
type Stored = BTreeMap<(String, Micros, String), Member>;

fn apply(stored: &mut Stored, writes: Vec<MemberWrite>) {
    for w in writes {
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
}

/// A commit and a restart, as the service makes them: the state, the open
/// incidents, the per-host and per-member records written and read back.
/// `old`: the state as a store from before the members were kept apart
/// holds it (each group's members inside it, no member records).
fn restarted(p: &mut Pipeline, stored: &mut Stored, old: bool) -> Pipeline {
    // What a commit takes, as the service takes it.
    let changes = p.take_changes();
    apply(stored, changes.members);
    // One restart a run: the held lines' records are what their writes
    // since the start left.
    let mut held = BTreeMap::new();
    for (k, line) in changes.held {
        match line {
            Some(l) => held.insert(k, l),
            None => held.remove(&k),
        };
    }
    let mut state: serde_json::Value = serde_json::to_value(p.state()).unwrap();
    assert!(
        !state.to_string().contains("\"members\""),
        "members are not in the state"
    );
    let mut members: Vec<(String, Member)> = stored
        .iter()
        .map(|((g, ..), m)| (g.clone(), m.clone()))
        .collect();
    if old {
        for (g, v) in state["tracker"]["fleet_groups"]
            .as_object_mut()
            .unwrap()
            .iter_mut()
        {
            let of: Vec<serde_json::Value> = members
                .iter()
                .filter(|(mg, _)| mg == g)
                .map(|(_, m)| serde_json::to_value(m).unwrap())
                .collect();
            v["members"] = serde_json::Value::Array(of);
        }
        members.clear();
        stored.clear();
        // The held lines inside the state too, no records.
        state["joiner"]["pending"] = serde_json::to_value(&held).unwrap();
        held.clear();
    }
    let mut state: crate::pipeline::PipelineState = serde_json::from_value(state).unwrap();
    let open: Vec<Incident> = p.tracker().open_incidents().cloned().collect();
    let origins: Vec<(String, Origin)> = p
        .tracker()
        .hosts
        .iter()
        .map(|(h, o)| (h.clone(), o.clone()))
        .collect();
    state.tracker.restore(open, origins);
    state.tracker.restore_members(members);
    let mut q = Pipeline::from_state(EntryFilter::default(), state);
    q.track_held_writes();
    q.restore_held(held.into_iter().collect());
    q.tracker_mut().ledger.resolved = p.tracker_mut().take_resolved();
    q
}

/// What one run of [`members_run`] ended with: incidents, alerts (id,
/// kind, time), and how many member deletes and group drops its commits
/// wrote.
type MembersOutcome = (
    Vec<Incident>,
    Vec<(String, AlertKind, Micros)>,
    usize,
    usize,
);

/// `lines` through a pipeline that commits (takes its member writes into
/// a stored set) after every line and, with `restart`, is restarted from
/// what it committed before line `cut` (`Some(true)`: from a state of
/// before, its members inside it). `single`: a line at which exactly one
/// member's record must be written.
fn members_run(
    lines: &[(i64, String, String)],
    cut: usize,
    restart: Option<bool>,
    single: usize,
) -> MembersOutcome {
    let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
    p.track_held_writes();
    let mut d = Vec::new();
    let mut stored = Stored::new();
    let (mut deletes, mut drops) = (0, 0);
    let mut commit = |p: &mut Pipeline, stored: &mut Stored| {
        let w = p.tracker_mut().take_member_writes();
        deletes += w
            .iter()
            .filter(|w| matches!(w, MemberWrite::Delete(..)))
            .count();
        drops += w
            .iter()
            .filter(|w| matches!(w, MemberWrite::DropGroup(..)))
            .count();
        apply(stored, w);
        // What the store holds is what the groups hold.
        let held: Vec<(String, Member)> = stored
            .iter()
            .map(|((g, ..), m)| (g.clone(), m.clone()))
            .collect();
        assert!(
            held == p.tracker().members_of(),
            "the records differ from the groups"
        );
    };
    for (n, (ms, host, text)) in lines.iter().enumerate() {
        if n == cut {
            commit(&mut p, &mut stored);
            if let Some(old) = restart {
                let before = p.tracker().members_of();
                p = restarted(&mut p, &mut stored, old);
                assert!(
                    before == p.tracker().members_of(),
                    "the groups read back differ"
                );
                if old {
                    // Read from the state; written apart at the next commit.
                    commit(&mut p, &mut stored);
                }
            }
        }
        if n == single {
            p.flush(&mut d);
            commit(&mut p, &mut stored);
        }
        p.push(
            Entry {
                at: Some(T0 + ms * MS),
                host: Some(host.as_str().into()),
                unit: Some("kubelet.service".into()),
                identifier: Some("kubelet".into()),
                message: text.as_bytes().to_vec(),
                ..Entry::default()
            },
            &mut d,
        );
        if n == single {
            p.flush(&mut d);
            let w = p.tracker_mut().take_member_writes();
            assert!(
                matches!(&w[..], [MemberWrite::Put(_, m)] if m.key().1 == p.tracker().ledger.open.get(&super::open::OpenKey::new(IncidentKind::NodeStatus, host)).unwrap().id),
                "one line of {host} writes its record alone: {w:?}"
            );
            apply(&mut stored, w);
        }
        // A commit after every line: a change not marked shows at once.
        commit(&mut p, &mut stored);
    }
    p.flush(&mut d);
    p.advance(T0 + 3_600_000 * MS, &mut d);
    let mut v = p.tracker_mut().take_resolved();
    v.extend(p.tracker().open_incidents().cloned());
    v.sort_by(|a, b| (a.opened_at, &a.id).cmp(&(b.opened_at, &b.id)));
    let alerts = d
        .into_iter()
        .filter_map(|d| match d {
            Decision::QueueAlert { id, kind, at, .. } => Some((id, kind, at)),
            _ => None,
        })
        .collect();
    (v, alerts, deletes, drops)
}

/// Issue 27: the endpoint groups are persisted one record a member, as
/// members change (a line of one member writes that member's record, not
/// the group), outside the state written at every commit. A commit after
/// each line keeps a stored set as the store would, checked against the
/// groups each time; a restart from it in
/// the middle of an outage (from the records, or from a state of before
/// with the members inside it) goes on exactly as the service that never
/// stopped. The records went through deletes (a node whose cause moved to
/// another group) and a group dropped (emptied when its one node's cause
/// left every group) before the restart.
#[test]
fn the_members_are_written_one_record_each_as_they_change() {
    let ep = "10.0.0.1:6443";
    let hosts: Vec<String> = (0..300).map(|n| format!("node-{n:03}")).collect();
    let refs: Vec<&str> = hosts.iter().map(String::as_str).collect();
    // Half the nodes stop retrying before the restart (nothing after it
    // brings them back to their group); the others go on past it.
    let mut lines = outage(&refs[..150], ep, 10, 12);
    lines.extend(outage(&refs[150..], ep, 10, 6));
    // One node refused, then Unauthorized (the auth group), then its Node
    // deleted (no group: the auth group empties and goes).
    let mover = "mover-1";
    // (A cause is the incident's most frequent: the moves need the counts.)
    for t in 0..16 {
        let text = match t {
            0..3 => refused(mover, ep),
            3..7 => unauthorized(mover, ep),
            _ => format!(
                r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{mover}\": nodes \"{mover}\" not found""#
            ),
        };
        lines.push((5 + t * 5_000, mover.to_string(), text));
    }
    lines.sort_by_key(|l| l.0);
    // After the page (the first node over the threshold at 50 s) and the
    // mover's last move; one line of node-000 at 75 s alone.
    let cut = lines.partition_point(|l| l.0 < 95_000);
    let single = lines
        .iter()
        .position(|l| l.0 >= 75_000 && l.1 == "node-000")
        .unwrap();
    let never = members_run(&lines, cut, None, single);
    assert_eq!(of_one(&never.0).len(), 1, "{:#?}", of_one(&never.0));
    assert!(
        never.2 > 0 && never.3 > 0,
        "deletes {} drops {}",
        never.2,
        never.3
    );
    for old in [false, true] {
        let (incidents, alerts, ..) = members_run(&lines, cut, Some(old), single);
        assert_eq!(incidents, never.0, "restarted (old state {old}): incidents");
        assert_eq!(alerts, never.1, "restarted (old state {old}): alerts");
    }
}

fn of_one(v: &[Incident]) -> Vec<&Incident> {
    v.iter()
        .filter(|i| i.kind() == IncidentKind::Endpoint)
        .collect()
}

/// A group emptied and made again between two commits (its one node's
/// cause left it, another node's came to it) is written anew: its old
/// records go, or the store would give the old node back at a restart.
#[test]
fn a_group_made_again_between_commits_drops_its_old_records() {
    let ep = "10.0.0.1:6443";
    let not_found = |n: &str| {
        format!(
            r#"E0715 16:24:50.000000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{n}\": nodes \"{n}\" not found""#
        )
    };
    let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
    let mut d = Vec::new();
    let mut stored = Stored::new();
    let mut at = 0;
    let mut push = |p: &mut Pipeline, host: &str, text: String, d: &mut Vec<Decision>| {
        at += 1_000;
        p.push(
            Entry {
                at: Some(T0 + at * MS),
                host: Some(host.into()),
                unit: Some("kubelet.service".into()),
                identifier: Some("kubelet".into()),
                message: text.into_bytes(),
                ..Entry::default()
            },
            d,
        );
    };
    for _ in 0..2 {
        push(&mut p, "node-a", unauthorized("node-a", ep), &mut d);
    }
    apply(&mut stored, p.tracker_mut().take_member_writes());
    assert_eq!(stored.len(), 1, "{stored:?}");
    let group = stored.keys().next().unwrap().0.clone();
    // Between two commits: node-a's cause moves out of every group (its
    // group empties and goes), then node-b makes the same group again.
    for _ in 0..4 {
        push(&mut p, "node-a", not_found("node-a"), &mut d);
    }
    for _ in 0..2 {
        push(&mut p, "node-b", unauthorized("node-b", ep), &mut d);
    }
    let held: Vec<_> = p.tracker().members_of();
    assert!(
        held.len() == 1
            && held[0].0 == group
            && held[0].1.key().1
                == p.tracker()
                    .ledger
                    .open
                    .get(&super::open::OpenKey::new(
                        IncidentKind::NodeStatus,
                        "node-b"
                    ))
                    .unwrap()
                    .id,
        "{held:?}"
    );
    let w = p.tracker_mut().take_member_writes();
    assert!(w.contains(&MemberWrite::DropGroup(group.clone())), "{w:?}");
    apply(&mut stored, w);
    let records: Vec<(String, Member)> = stored
        .iter()
        .map(|((g, ..), m)| (g.clone(), m.clone()))
        .collect();
    assert_eq!(records, held);
}
