//! One incident: its counters, the evidence kept, and what is derived from
//! them (status, verdict, cause, diagnosis). Verdict and cause are computed,
//! never stored, so they cannot disagree with the counters.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::decision::{AlertKind, Alerted, Decision, Observation};
use super::detail::{Counters, Detail, Down, NodeStatus};
use super::evidence::Evidence;
use super::settings::{Limits, Settings};
use super::terms::{IncidentKind, Resolution, Status, Verdict};
use super::timeline::Timeline;
use super::words::{cause_explanation, one_line};
use crate::signals::{Cause, Role, SignalKind};
use crate::time::{Micros, clock, human_duration};

/// A deterministic id from an incident's key (the parts of the string it
/// is, hashed as one) and its opening: the same entries give the same ids
/// in `scan`, catch-up and live following.
pub(crate) fn incident_id(key: &[&str], opened_at: Micros) -> String {
    let h = crate::model::fnv1a(
        key.iter()
            .map(|p| p.as_bytes())
            .chain([&opened_at.to_le_bytes()[..]]),
    );
    format!("{:012x}", h >> 16)
}

/// The marker an incident's start is measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub kind: SignalKind,
    pub at: Micros,
}

/// An operator acknowledged an incident: no more reminders for it; its
/// resolved notice says who.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    pub by: String,
    pub at: Micros,
    #[serde(default)]
    pub comment: String,
}

/// One incident: what every kind has (its node and host, times, evidence,
/// alert state) and its kind's own [`Detail`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    pub id: String,
    pub node: String,
    pub host: Option<String>,
    pub opened_at: Micros,
    pub last_signal_at: Micros,
    pub last_trouble_at: Micros,
    pub resolved_at: Option<Micros>,
    pub resolution: Option<Resolution>,
    /// When the threshold was first crossed.
    pub over_threshold_at: Option<Micros>,
    /// When an alert was last raised for it (opened or repeat).
    pub last_alert_at: Option<Micros>,
    /// When the first alert mail was delivered (set by the service).
    pub alerted_at: Option<Micros>,
    /// An alert for it went into the outbox (set by the service; an incident
    /// over threshold while nothing could be delivered is announced later).
    #[serde(default)]
    pub announced: bool,
    /// The registration (or kubelet start) that preceded it.
    pub anchor: Option<Anchor>,
    /// When and what the first trouble signal was.
    pub first_trouble: SignalKind,
    /// Trouble and supporting signals by cause.
    pub causes: BTreeMap<Cause, u64>,
    /// Times of the last counted events (status retries and failed
    /// registrations; restarts), for the threshold window.
    pub recent: VecDeque<Micros>,
    pub evidence_head: Vec<Evidence>,
    pub evidence_tail: VecDeque<Evidence>,
    pub evidence_dropped: u64,
    /// Acknowledged by an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<Ack>,
    /// The node's other units' lines that explain it (design 5.4; at
    /// most [`crate::context::INCIDENT_LINES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<crate::context::ContextLine>,
    /// Its trouble and supporting signals over time (bounded).
    #[serde(default, skip_serializing_if = "Timeline::is_empty")]
    pub timeline: Timeline,
    /// Its kind's own data.
    pub detail: Detail,
}

impl Incident {
    /// One more counted event (a status retry, a restart) at `at`: over the
    /// threshold once more than `allowed` fall within the window. Crossing
    /// it raises the alert; staying over it a reminder every
    /// `repeat_interval`. Returns whether it is over now.
    pub(super) fn count_toward_threshold(
        &mut self,
        at: Micros,
        allowed: u32,
        limits: &Limits,
        out: &mut Vec<Decision>,
    ) -> bool {
        self.recent.push_back(at);
        while self.recent.len() > allowed as usize + 1 {
            self.recent.pop_front();
        }
        let over = self.recent.len() > allowed as usize
            && self
                .recent
                .front()
                .is_some_and(|&first| at - first <= limits.window);
        if !over {
            return false;
        }
        let kind = if self.over_threshold_at.is_none() {
            self.over_threshold_at = Some(at);
            AlertKind::Opened
        } else if self
            .last_alert_at
            .is_some_and(|last| at - last >= limits.repeat_interval)
        {
            AlertKind::Repeat
        } else {
            return true;
        };
        self.last_alert_at = Some(at);
        out.push(self.raise(kind, at));
        true
    }

    /// The decision to alert of `kind` at `at`, with what admission needs
    /// of this incident.
    #[must_use]
    pub fn raise(&self, kind: AlertKind, at: Micros) -> Decision {
        let host = self.host.clone().unwrap_or_default();
        let hosts = match &self.detail {
            Detail::Endpoint(o) => o.hosts.clone(),
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_) => {
                vec![host.clone()]
            }
        };
        Decision::QueueAlert {
            id: self.id.clone(),
            kind,
            at,
            about: Alerted {
                node: self.node.clone(),
                host,
                hosts,
                announced: self.announced,
            },
        }
    }

    /// A new incident of `kind` for `node`, opened by the observation's
    /// signal at its time: every counter zero, nothing yet said of it.
    #[must_use]
    pub(super) fn opening(
        id: String,
        kind: IncidentKind,
        node: &str,
        obs: &Observation<'_>,
    ) -> Self {
        Self::blank(id, kind, node, obs.host, obs.at, obs.signal.kind)
    }

    /// A new incident of `kind` for `node` of `host`, opened at `at`.
    #[must_use]
    pub(super) fn blank(
        id: String,
        kind: IncidentKind,
        node: &str,
        host: Option<&str>,
        at: Micros,
        first_trouble: SignalKind,
    ) -> Self {
        Self {
            id,
            node: node.to_string(),
            host: host.map(str::to_string),
            opened_at: at,
            last_signal_at: at,
            last_trouble_at: at,
            resolved_at: None,
            resolution: None,
            over_threshold_at: None,
            last_alert_at: None,
            alerted_at: None,
            announced: false,
            anchor: None,
            first_trouble,
            causes: std::collections::BTreeMap::new(),
            recent: std::collections::VecDeque::new(),
            evidence_head: Vec::new(),
            evidence_tail: std::collections::VecDeque::new(),
            evidence_dropped: 0,
            ack: None,
            context: Vec::new(),
            timeline: Timeline::default(),
            detail: Detail::of(kind),
        }
    }

    #[must_use]
    pub fn status(&self) -> Status {
        if self.resolved_at.is_some() {
            Status::Resolved
        } else {
            Status::Open
        }
    }

    /// What it is about.
    #[must_use]
    pub fn kind(&self) -> IncidentKind {
        self.detail.kind()
    }

    /// A kubelet-down incident's record, for its state machine.
    pub(super) fn down_mut(&mut self) -> Option<&mut Down> {
        match &mut self.detail {
            Detail::KubeletDown(d) => Some(d),
            Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => None,
        }
    }

    /// A kubelet-down incident's record.
    #[must_use]
    pub(super) fn down(&self) -> Option<&Down> {
        match &self.detail {
            Detail::KubeletDown(d) => Some(d),
            Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => None,
        }
    }

    /// The node-status counters (zeros for the other kinds, as the JSON
    /// contract shows them).
    #[must_use]
    pub fn counters(&self) -> Counters {
        match &self.detail {
            Detail::NodeStatus(n) => n.counters,
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => Counters::default(),
        }
    }

    /// Status retries and failed registrations: what the threshold counts.
    #[must_use]
    pub fn counted_retries(&self) -> u64 {
        self.counters().counted_retries()
    }

    /// The API endpoint (`host:port`) its errors name: a node-status
    /// incident's first naming one, an endpoint incident's own.
    #[must_use]
    pub fn api_endpoint(&self) -> Option<&str> {
        match &self.detail {
            Detail::NodeStatus(n) => n.api_endpoint.as_deref(),
            Detail::Endpoint(o) => Some(&o.endpoint),
            Detail::KubeletDown(_) | Detail::NotReady(_) | Detail::HostSilent(_) => None,
        }
    }

    /// An endpoint incident's nodes (none for the other kinds).
    #[must_use]
    pub fn nodes(&self) -> &[String] {
        match &self.detail {
            Detail::Endpoint(o) => &o.nodes,
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_) => &[],
        }
    }

    /// The endpoint incident that stands for this node-status one.
    #[must_use]
    pub fn covered_by(&self) -> Option<&str> {
        match &self.detail {
            Detail::NodeStatus(n) => n.covered_by.as_deref(),
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => None,
        }
    }

    /// Marks a node-status incident as covered by endpoint incident `by`
    /// (or by none); the other kinds are never covered.
    pub fn set_covered_by(&mut self, by: Option<String>) {
        if let Detail::NodeStatus(n) = &mut self.detail {
            n.covered_by = by;
        }
    }

    /// Design section 5: persistent once over threshold; the start-up race
    /// when it began within `race_window` of a registration or kubelet start,
    /// only ever missed the node in the local lister, never exhausted a retry
    /// cycle and never crossed the threshold; transient when it ended
    /// otherwise; undetermined while open and neither. kubelet-down (5.1):
    /// failed once systemd gave up, a crash loop over its threshold.
    #[must_use]
    pub fn verdict(&self, s: &Settings) -> Verdict {
        let ended = match self.status() {
            Status::Resolved => Verdict::Transient,
            Status::Open => Verdict::Undetermined,
        };
        match &self.detail {
            Detail::KubeletDown(d) => {
                if d.gave_up_at.is_some() {
                    Verdict::Failed
                } else if d.crash_loop_at.is_some() {
                    Verdict::CrashLoop
                } else {
                    ended
                }
            }
            Detail::Endpoint(_) | Detail::NodeStatus(_) | Detail::NotReady(_)
                if self.over_threshold_at.is_some() =>
            {
                Verdict::Persistent
            }
            Detail::NotReady(_) => self.not_ready_verdict(s, ended),
            Detail::HostSilent(_) | Detail::Endpoint(_) => ended,
            Detail::NodeStatus(n) => {
                let soon_after_start = self.anchor.is_some_and(|a| {
                    self.opened_at - a.at <= s.race_window && self.opened_at >= a.at
                });
                if soon_after_start && n.non_lister_trouble == 0 && n.counters.exhausted == 0 {
                    Verdict::StartupRace
                } else {
                    ended
                }
            }
        }
    }

    /// The most frequent cause class; ties go to the more serious one
    /// (kubelet-down: to the latest fatal line's, else the exit status).
    #[must_use]
    pub fn cause(&self) -> Cause {
        match &self.detail {
            Detail::KubeletDown(d) => {
                // The fatal words, most frequent first, a tie to the latest;
                // else what the exit status says.
                let best = self.causes.values().copied().max().unwrap_or(0);
                let top: Vec<Cause> = self
                    .causes
                    .iter()
                    .filter(|(_, n)| **n == best && best > 0)
                    .map(|(c, _)| *c)
                    .collect();
                let cause = match top.as_slice() {
                    [] => d.exit_cause.unwrap_or(Cause::Unknown),
                    [one] if *one == Cause::Unknown => d.exit_cause.unwrap_or(Cause::Unknown),
                    [one] => *one,
                    many => d
                        .last_cause
                        .filter(|c| many.contains(c))
                        .unwrap_or(many[many.len() - 1]),
                };
                // Killed by a signal, and the OOM killer named the kubelet.
                if cause == Cause::Killed && self.oom_killed() {
                    Cause::Oom
                } else {
                    cause
                }
            }
            Detail::NotReady(r) => self.not_ready_cause(r),
            Detail::NodeStatus(_) | Detail::HostSilent(_) | Detail::Endpoint(_) => self
                .causes
                .iter()
                .filter(|(c, n)| **c != Cause::Unknown && **n > 0)
                .max_by_key(|(c, n)| (**n, c.severity_rank()))
                .map_or(Cause::Unknown, |(c, _)| *c),
        }
    }

    /// Keeps `e` among the first lines or the last (see
    /// [`super::evidence::keep`]).
    pub(super) fn add_evidence(&mut self, e: Evidence) {
        super::evidence::keep(
            e,
            &mut self.evidence_head,
            &mut self.evidence_tail,
            &mut self.evidence_dropped,
        );
    }

    /// Evidence in time order: the first lines and the last, merged (the
    /// first line of a cause may come after lines of the last kept).
    pub fn evidence(&self) -> impl Iterator<Item = &Evidence> {
        super::evidence::in_order(&self.evidence_head, &self.evidence_tail)
    }

    /// The first trouble line: what the diagnosis, the mails, `show` and
    /// Alertmanager quote as the first error. It is kept among the first
    /// lines, which are never replaced, so it never changes once recorded;
    /// markers are never quoted as trouble.
    #[must_use]
    pub fn first_evidence(&self) -> Option<&Evidence> {
        self.evidence_head
            .iter()
            .find(|e| e.signal.role() == Role::Trouble)
    }

    /// The latest trouble or supporting line kept.
    #[must_use]
    pub fn last_evidence(&self) -> Option<&Evidence> {
        self.evidence().filter(|e| !e.is_marker()).last()
    }

    /// Restarts for kubelet-down incidents (0 for the others).
    #[must_use]
    pub fn restarts(&self) -> u64 {
        match &self.detail {
            Detail::KubeletDown(d) => d.restarts,
            Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => 0,
        }
    }

    /// When it is due to resolve (or, kubelet-down with an exit and no
    /// restart, to be judged failed) on quiet; `None`: not on quiet.
    #[must_use]
    pub fn due(&self, resolve_after: Micros) -> Option<Micros> {
        match &self.detail {
            // Only the host's own next entry ends a host-silent one; an
            // endpoint one ends with its last node's incident.
            Detail::HostSilent(_) | Detail::Endpoint(_) => None,
            Detail::NodeStatus(_) => Some(self.last_trouble_at + resolve_after),
            Detail::NotReady(r) => Some(self.last_trouble_at.max(r.quiet_from) + resolve_after),
            Detail::KubeletDown(d) => match d.pending {
                Some(_) if d.gave_up_at.is_some() => None,
                Some(p) => Some(p + resolve_after),
                None => Some(self.last_trouble_at + resolve_after),
            },
        }
    }

    fn down_diagnosis(&self, d: &Down, s: &Settings) -> String {
        let verdict = self.verdict(s);
        let cause = self.cause();
        let mut parts = Vec::new();
        let restarts = match (d.restarts, d.first_restart_at) {
            (0, _) => "systemd did not restart it".to_string(),
            (n, Some(first)) => format!(
                "systemd restarted it {n} time{} since {}",
                if n == 1 { "" } else { "s" },
                clock(first)
            ),
            (n, None) => format!("systemd restarted it {n} times"),
        };
        parts.push(format!(
            "The kubelet on node {} went down at {}{}; {restarts}.",
            self.node,
            clock(self.opened_at),
            d.last_exit
                .as_deref()
                .map(|e| format!(" (last exit: {})", one_line(e, 80)))
                .unwrap_or_default(),
        ));
        match &d.last_fatal {
            Some(f) => parts.push(format!(
                "What it said before dying: {}",
                one_line(&f.text, 300)
            )),
            None => parts.push("It wrote no fatal line before dying.".to_string()),
        }
        parts.push(format!(
            "Cause {}: {}.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        parts.push(self.context_words());
        match verdict {
            Verdict::CrashLoop => parts.push(format!(
                "A crash loop: more than {} restarts within {}.",
                s.restarts,
                human_duration(s.window)
            )),
            Verdict::Failed => parts.push(format!(
                "systemd gave up at {}: the unit is failed and the kubelet is not running.",
                clock(d.gave_up_at.unwrap_or(self.last_trouble_at))
            )),
            Verdict::StartupRace
            | Verdict::Transient
            | Verdict::Persistent
            | Verdict::Undetermined => {}
        }
        match self.resolution {
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved: the kubelet ran {} after its last start without dying.",
                human_duration(s.resolve_after)
            )),
            Some(Resolution::NodeReady) => {
                parts.push("Resolved when the node reported Ready.".into());
            }
            Some(Resolution::Stopped) => parts.push(format!(
                "Ended at {} by a stop that was asked for.",
                clock(self.resolved_at.unwrap_or(self.last_signal_at))
            )),
            Some(Resolution::Evicted | Resolution::SourceChanged | Resolution::Wrote) => {
                parts.push("Closed without confirmation that it ended.".into());
            }
            None => {}
        }
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }

    /// One paragraph for a person.
    #[must_use]
    pub fn diagnosis(&self, s: &Settings) -> String {
        match &self.detail {
            Detail::HostSilent(h) => self.silent_diagnosis(h, s),
            Detail::Endpoint(o) => self.endpoint_diagnosis(o),
            Detail::KubeletDown(d) => self.down_diagnosis(d, s),
            Detail::NotReady(r) => self.not_ready_diagnosis(r, s),
            Detail::NodeStatus(n) => self.status_diagnosis(n, s),
        }
    }

    fn status_diagnosis(&self, n: &NodeStatus, s: &Settings) -> String {
        let c = &n.counters;
        let verdict = self.verdict(s);
        let cause = self.cause();
        if verdict == Verdict::StartupRace {
            return self.race_diagnosis(n);
        }
        let mut parts = Vec::new();
        let mut counts = Vec::new();
        for (n, one, many) in [
            (c.retries, "status retry", "status retries"),
            (
                c.exhausted,
                "exhausted retry cycle",
                "exhausted retry cycles",
            ),
            (
                c.register_failures,
                "failed registration",
                "failed registrations",
            ),
            (c.lister_misses, "lister miss", "lister misses"),
            (c.lease_failures, "lease failure", "lease failures"),
            (c.watch_failures, "watch failure", "watch failures"),
        ] {
            if n > 0 {
                counts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        let span = self.last_signal_at - self.opened_at;
        parts.push(format!(
            "{} on node {} from {} over {}.",
            counts.join(", "),
            self.node,
            clock(self.opened_at),
            human_duration(span)
        ));
        parts.push(format!(
            "The errors point at {}: {}.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        parts.push(self.context_words());
        if let Some(at) = self.over_threshold_at {
            let limits = s.limits(self.kind(), &self.node, cause);
            parts.push(format!(
                "It crossed the alert threshold (more than {} retries within {}) at {}.",
                limits.retries,
                human_duration(limits.window),
                clock(at)
            ));
        }
        if let Some(a) = self.anchor {
            let gap = self.opened_at - a.at;
            if gap >= 0 && gap <= s.race_window {
                let why = if c.exhausted > 0 {
                    "it exhausted a retry cycle"
                } else {
                    "its errors were not all local-lister misses"
                };
                parts.push(format!(
                    "It began {} ms after the kubelet {} but is not the start-up race: {why}.",
                    gap / 1000,
                    anchor_words(a.kind)
                ));
            }
        }
        match self.resolution {
            Some(Resolution::NodeReady) => parts.push(format!(
                "Resolved at {} when the node reported Ready.",
                clock(self.resolved_at.unwrap_or(self.last_signal_at))
            )),
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved after {} without trouble (last at {}).",
                human_duration(s.resolve_after),
                clock(self.last_trouble_at)
            )),
            Some(Resolution::Evicted) => parts.push(format!(
                "Closed at {} to make room: more nodes were in trouble than [incidents] \
                 max_nodes_per_host or max_nodes allow, and this one had been quiet longest \
                 (last trouble at {}); nothing confirmed that it ended.",
                clock(self.resolved_at.unwrap_or(self.last_signal_at)),
                clock(self.last_trouble_at)
            )),
            Some(Resolution::Stopped) => parts.push(format!(
                "Ended at {} by a stop that was asked for.",
                clock(self.resolved_at.unwrap_or(self.last_signal_at))
            )),
            Some(Resolution::SourceChanged) => parts.push(format!(
                "Closed at {}, not resolved: the service was switched to another journal \
                 (last trouble read at {}).",
                clock(self.resolved_at.unwrap_or(self.last_signal_at)),
                clock(self.last_trouble_at)
            )),
            Some(Resolution::Wrote) | None => {}
        }
        if let Some(e) = self.first_evidence() {
            parts.push(format!("First error: {}", one_line(&e.text, 300)));
        }
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }

    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    fn race_diagnosis(&self, n: &NodeStatus) -> String {
        let Some(a) = self.anchor else {
            return String::new();
        };
        // Which line found no Node: the lister's own miss, or the status
        // update whose error is the lister's (counted as a status retry, so
        // `show`'s "lister misses" can be 0 above it).
        let missed = match self.first_trouble {
            SignalKind::ListerMiss => "the lister missed the node",
            _ => "a status update found no Node in the lister",
        };
        let mut s = format!(
            "{} at {}; {missed} {} ms later",
            match a.kind {
                SignalKind::Registered => "Registered",
                _ => "The kubelet started",
            },
            clock(a.at),
            (self.opened_at - a.at) / 1000
        );
        match n.caches_synced_at {
            Some(c) if c <= a.at => s.push_str(&format!(
                "; caches reported synced {} ms before {}: the informer had not yet seen the node's watch event",
                (a.at - c) / 1000,
                if a.kind == SignalKind::Registered { "registration" } else { "the start" }
            )),
            _ => s.push_str("; the informer had not yet seen the node's watch event"),
        }
        let mut counts = Vec::new();
        for (n, one, many) in [
            (n.counters.retries, "status retry", "status retries"),
            (n.counters.lister_misses, "lister miss", "lister misses"),
        ] {
            if n > 0 {
                counts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        s.push_str(&format!(
            ". {}, no exhausted retry cycle: the kubelet found the node once its informer caught up. \
             This is the harmless start-up race; nothing to do.",
            counts.join(" and ")
        ));
        s
    }
}

#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
fn anchor_words(kind: SignalKind) -> &'static str {
    match kind {
        SignalKind::Registered => "registered",
        _ => "started",
    }
}
