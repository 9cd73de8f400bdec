//! Test helpers, for this crate's tests and (feature `testing`) the tests
//! of the crates above it: entries made the way the journal gives them,
//! and one `replay` that pushes them through a [`Pipeline`] with time
//! injected (a day replays in a millisecond). Never in a release build.

use crate::model::{Entry, EntryFilter};
use crate::pipeline::{Pipeline, Summary};
use crate::time::Micros;
use crate::tracker::{AlertKind, Decision, Incident, Settings};

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
