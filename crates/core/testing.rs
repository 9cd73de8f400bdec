//! Test helpers, for this crate's tests and (feature `testing`) the tests
//! of the crates above it: entries made the way the journal gives them,
//! and one `replay` that pushes them through a [`Pipeline`] with time
//! injected (a day replays in a millisecond). Never in a release build.

use crate::model::{Entry, EntryFilter};
use crate::pipeline::{Pipeline, Summary};
use crate::time::Micros;
use crate::tracker::{AlertKind, Decision, Incident, Settings, Start};

/// A kubelet line (`_SYSTEMD_UNIT=kubelet.service`, identifier `kubelet`)
/// of `host` at `at`.
#[must_use]
pub fn kubelet(at: Micros, host: &str, text: &str) -> Entry {
    Entry {
        at: Some(at),
        host: (!host.is_empty()).then(|| host.into()),
        unit: Some("kubelet.service".into()),
        identifier: Some("kubelet".into()),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

/// systemd's own line about `kubelet.service` (pid 1) of `host` at `at`.
#[must_use]
pub fn systemd(at: Micros, host: &str, text: &str) -> Entry {
    Entry {
        at: Some(at),
        host: (!host.is_empty()).then(|| host.into()),
        identifier: Some("systemd".into()),
        pid: Some(1),
        from_systemd: true,
        about_unit: Some("kubelet.service".into()),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

/// The kernel's own line (`_TRANSPORT=kernel`) of `host` at `at`.
#[must_use]
pub fn kernel(at: Micros, host: &str, text: &str) -> Entry {
    Entry {
        at: Some(at),
        host: (!host.is_empty()).then(|| host.into()),
        identifier: Some("kernel".into()),
        kernel: true,
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    }
}

/// A line of the kubelet's unit, made by its text: systemd's words about
/// the unit (`kubelet.service: …`, `Started …`, `Stopping …`) come from
/// pid 1, the rest from the kubelet.
#[must_use]
pub fn unit_line(at: Micros, host: &str, text: &str) -> Entry {
    let systemd_words = [
        "kubelet.service",
        "Started ",
        "Stopped ",
        "Stopping ",
        "Starting ",
    ];
    if systemd_words.iter().any(|w| text.starts_with(w)) {
        systemd(at, host, text)
    } else {
        kubelet(at, host, text)
    }
}

/// How a replay ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Held lines handed on, then every host's clock moved to this time.
    At(Micros),
    /// The end of a one-shot read ([`Pipeline::finish`]: each host's clock
    /// reaches its own last entry; silent hosts judged).
    Finish,
}

/// What a replay made.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Every incident, resolved or open, by opening and node.
    pub incidents: Vec<Incident>,
    /// Every decision, in order.
    pub decisions: Vec<Decision>,
    pub settings: Settings,
    /// What the pipeline counted.
    pub summary: Summary,
    /// The kubelets' starts, by host and start time.
    pub starts: Vec<Start>,
}

impl Replay {
    /// The alerts raised, in order: kind and incident id.
    #[must_use]
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "decisions not named here change nothing here"
    )]
    pub fn alerts(&self) -> Vec<(AlertKind, String)> {
        self.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::QueueAlert { id, kind, .. } => Some((*kind, id.clone())),
                _ => None,
            })
            .collect()
    }

    /// The kinds of the alerts raised, in order.
    #[must_use]
    pub fn alert_kinds(&self) -> Vec<AlertKind> {
        self.alerts().into_iter().map(|(kind, _)| kind).collect()
    }

    /// The one incident there is.
    ///
    /// # Panics
    /// When there is not exactly one.
    #[must_use]
    pub fn one(&self) -> &Incident {
        assert_eq!(self.incidents.len(), 1, "{:#?}", self.incidents);
        &self.incidents[0]
    }
}

/// Pushes `entries` through a [`Pipeline`] with `settings`, in order, and
/// ends as `end` says.
pub fn replay(entries: impl IntoIterator<Item = Entry>, settings: &Settings, end: End) -> Replay {
    replay_through(
        Pipeline::new(EntryFilter::default(), settings.clone()),
        entries,
        end,
    )
}

/// [`replay`] through a pipeline set up by the caller (its clock, a
/// collector's fleet mode, a filter).
pub fn replay_through(
    mut p: Pipeline,
    entries: impl IntoIterator<Item = Entry>,
    end: End,
) -> Replay {
    let settings = p.tracker().settings().clone();
    let mut decisions = Vec::new();
    for e in entries {
        p.push(e, &mut decisions);
    }
    match end {
        End::At(t) => {
            p.flush(&mut decisions);
            p.advance(t, &mut decisions);
        }
        End::Finish => p.finish(&mut decisions),
    }
    let mut incidents = p.tracker_mut().take_resolved();
    incidents.extend(p.tracker().open_incidents().cloned());
    incidents.sort_by(|a, b| (a.opened_at, &a.node, &a.id).cmp(&(b.opened_at, &b.node, &b.id)));
    Replay {
        incidents,
        decisions,
        settings,
        summary: p.summary().clone(),
        starts: p.tracker_mut().take_starts(),
    }
}

/// [`replay`] as a following service reads: the host's clock moves to
/// every entry's time as it arrives (what quiet time decides on the way
/// is kept), then the end as `end` says.
pub fn replay_following(
    entries: impl IntoIterator<Item = Entry>,
    settings: &Settings,
    end: End,
) -> Replay {
    let mut p = Pipeline::new(EntryFilter::default(), settings.clone());
    let mut decisions = Vec::new();
    for e in entries {
        let at = e.at.unwrap_or(0);
        p.push(e, &mut decisions);
        p.flush(&mut decisions);
        p.advance(at, &mut decisions);
    }
    let mut r = replay_through(p, Vec::new(), end);
    decisions.append(&mut r.decisions);
    r.decisions = decisions;
    r
}

/// `entries` replayed as `scan` reads them and as a following service
/// does, which must agree (incidents and alerts); the scan's.
///
/// # Panics
///
/// When the two disagree.
#[must_use]
pub fn judged(entries: &[Entry], settings: &Settings, end: End) -> Replay {
    let scan = replay(entries.to_vec(), settings, end);
    let follow = replay_following(entries.to_vec(), settings, end);
    assert_eq!(scan.incidents, follow.incidents);
    assert_eq!(scan.alerts(), follow.alerts());
    scan
}

/// The lines (ms after `t0`, in order) as one host's (`w1`) journal,
/// [`judged`] with the default settings up to `end_ms`.
#[must_use]
pub fn judged_lines(t0: Micros, lines: &[(i64, String)], end_ms: i64) -> Replay {
    let entries: Vec<Entry> = lines
        .iter()
        .map(|(ms, text)| unit_line(t0 + ms * 1000, "w1", text))
        .collect();
    judged(&entries, &Settings::default(), End::At(t0 + end_ms * 1000))
}

/// The kubelet's fatal line when swap is on (kubelet 1.33).
pub const SWAP: &str = r#"E0715 16:24:50.000000    2425 run.go:74] "command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename Type Size Used Priority /swap.img file 2009084 0 -2]""#;

/// `n` crash cycles of `host`'s kubelet from `t0`, 10.5 s apart: systemd
/// starts it, it writes the fatal swap line, systemd reports the exit and
/// the failure, schedules a restart and stops the unit.
#[must_use]
pub fn crash_loop(t0: Micros, host: &str, n: i64) -> Vec<Entry> {
    let ms = |k: i64| t0 + k * 1000;
    let mut v = Vec::new();
    for k in 0..n {
        let t = k * 10_500;
        v.push(systemd(
            ms(t),
            host,
            "Started kubelet: The Kubernetes Node Agent.",
        ));
        v.push(kubelet(ms(t + 100), host, SWAP));
        v.push(systemd(
            ms(t + 150),
            host,
            "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
        ));
        v.push(systemd(
            ms(t + 151),
            host,
            "kubelet.service: Failed with result 'exit-code'.",
        ));
        v.push(systemd(
            ms(t + 10_400),
            host,
            &format!(
                "kubelet.service: Scheduled restart job, restart counter is at {}.",
                k + 1
            ),
        ));
        v.push(systemd(
            ms(t + 10_401),
            host,
            "Stopped kubelet: The Kubernetes Node Agent.",
        ));
    }
    v
}

/// The kubelet's line of `host` written as `pid`.
fn kubelet_as(pid: u32, at: Micros, host: &str, text: &str) -> Entry {
    Entry {
        pid: Some(pid),
        ..kubelet(at, host, text)
    }
}

/// Six nodes starting (issue 37's journal), from `t0`: `healthy`
/// registered at 3 s, its CNI not ready until 10 s, Ready at 12 s;
/// `race` registered at 1.005 s with one lister miss in the same
/// millisecond, Ready at 1.42 s; `refused` refused registration every
/// 7 s for 93 s, Ready at 100 s; `cni` not ready on its CNI for six
/// minutes, Ready at 366 s; `runtime` whose runtime never comes up (to
/// 420 s); `restarted` restarted on request at 60 s, each start Ready 5 s
/// later (the second through the `NodeReady` event line). Seven starts.
#[must_use]
#[allow(
    clippy::too_many_lines,
    reason = "a journal written down node by node, read as one"
)]
pub fn six_starts(t0: Micros) -> Vec<Entry> {
    let ms = |k: i64| t0 + k * 1000;
    let started = "Started kubelet.service - kubelet: The Kubernetes Node Agent.";
    let version =
        r#"I1204 09:00:00.050000    PID server.go:484] "Kubelet version" kubeletVersion="v1.31.2""#;
    let attempt = r#"I1204 09:00:00.000000    PID kubelet_node_status.go:72] "Attempting to register node" node="NODE""#;
    let registered = r#"I1204 09:00:00.000000    PID kubelet_node_status.go:75] "Successfully registered node" node="NODE""#;
    let cni = r#"E1204 09:00:00.000000    PID kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;
    let ready = r#"I1204 09:00:00.000000    PID kubelet_node_status.go:493] "Fast updating node status as it just became ready""#;
    let mut v = Vec::new();
    let mut line = |host: &str, pid: u32, at: i64, text: &str| {
        let text = text.replace("PID", &pid.to_string()).replace("NODE", host);
        if text.starts_with("Started ") || text.starts_with("Stop") {
            v.push(systemd(ms(at), host, &text));
        } else {
            v.push(kubelet_as(pid, ms(at), host, &text));
        }
    };
    // healthy
    line("healthy", 101, 0, started);
    line("healthy", 101, 50, version);
    line("healthy", 101, 2_900, attempt);
    line("healthy", 101, 3_000, registered);
    for k in 0..5 {
        line("healthy", 101, 3_100 + k * 1_700, cni);
    }
    line("healthy", 101, 10_000, cni);
    line("healthy", 101, 12_000, ready);
    // race
    line("race", 102, 0, started);
    line("race", 102, 50, version);
    line("race", 102, 1_000, attempt);
    line("race", 102, 1_005, registered);
    line(
        "race",
        102,
        1_005,
        r#"E1204 09:00:01.005000    102 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"race\": node \"race\" not found""#,
    );
    line("race", 102, 1_420, ready);
    // refused
    line("refused", 103, 0, started);
    line("refused", 103, 50, version);
    for k in 0..14 {
        let at = 7_000 + k * 7_000;
        line("refused", 103, at, attempt);
        line(
            "refused",
            103,
            at + 3,
            r#"E1204 09:00:07.000000    103 kubelet_node_status.go:96] "Unable to register node with API server" err="Post \"https://10.0.0.1:6443/api/v1/nodes\": dial tcp 10.0.0.1:6443: connect: connection refused" node="refused""#,
        );
    }
    line("refused", 103, 99_000, attempt);
    line("refused", 103, 99_200, registered);
    line("refused", 103, 100_000, ready);
    // cni
    line("cni", 104, 0, started);
    line("cni", 104, 50, version);
    line("cni", 104, 2_000, attempt);
    line("cni", 104, 3_000, registered);
    for k in 0..=12 {
        line("cni", 104, 4_000 + k * 29_500, cni);
    }
    line("cni", 104, 366_000, ready);
    // runtime
    line("runtime", 105, 0, started);
    line("runtime", 105, 50, version);
    line("runtime", 105, 1_000, attempt);
    line("runtime", 105, 2_000, registered);
    for k in 0..=42 {
        line(
            "runtime",
            105,
            2_500 + k * 10_000,
            r#"E1204 09:00:00.000000    105 kubelet.go:2853] "Container runtime not ready" runtimeReady="RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready""#,
        );
    }
    // restarted
    line("restarted", 106, 0, started);
    line("restarted", 106, 50, version);
    line("restarted", 106, 1_000, attempt);
    line(
        "restarted",
        106,
        1_010,
        r#"I1204 09:00:01.010000    106 kubelet_node_status.go:126] "Node was previously registered" node="restarted""#,
    );
    line("restarted", 106, 1_011, registered);
    line("restarted", 106, 5_000, ready);
    line(
        "restarted",
        1,
        60_000,
        "Stopping kubelet.service - kubelet: The Kubernetes Node Agent...",
    );
    line(
        "restarted",
        1,
        60_200,
        "Stopped kubelet.service - kubelet: The Kubernetes Node Agent.",
    );
    line("restarted", 107, 60_300, started);
    line("restarted", 107, 60_350, version);
    line("restarted", 107, 61_000, attempt);
    line(
        "restarted",
        107,
        61_010,
        r#"I1204 09:01:01.010000    107 kubelet_node_status.go:126] "Node was previously registered" node="restarted""#,
    );
    line("restarted", 107, 61_011, registered);
    line(
        "restarted",
        107,
        65_300,
        r#"I1204 09:01:05.300000    107 kubelet_node_status.go:679] "Recording event message for node" node="restarted" event="NodeReady""#,
    );
    v.sort_by_key(|e| e.at);
    v
}
