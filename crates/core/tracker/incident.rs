//! One incident, whatever its kind: its node and host, its times, the
//! evidence kept, its alert state, its context. What is derived from them
//! (verdict, cause, diagnosis) is each kind's (`kind/`), computed, never
//! stored, so it cannot disagree with what it is derived from.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::evidence::Evidence;
use super::terms::{Resolution, Status};
use super::timeline::Timeline;
use super::words::one_line;
use crate::context::{ContextKind, ContextLine};
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
/// alert state) and its kind's own data `D` (the tracker's incidents are
/// `IncidentOf<Detail>`, [`super::Incident`]). The kinds' rules read it
/// whatever `D` is, so they sit below the one enum of kinds that holds
/// them, and nothing here names a kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentOf<D> {
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
    /// Where in its host's kubelet start it opened, when it opened during
    /// one (design 5.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<super::start::StartPlace>,
    /// Its kind's own data.
    pub detail: D,
}

impl<D> IncidentOf<D> {
    /// The most frequent of its causes (`unknown` only when no other
    /// voted), a tie to `latest` (else the last of the tied in order).
    pub(crate) fn most_frequent_cause(&self, latest: Option<Cause>) -> Cause {
        let votes = |c: &Cause| *c != Cause::Unknown;
        let best = self
            .causes
            .iter()
            .filter(|(c, _)| votes(c))
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
        let top: Vec<Cause> = self
            .causes
            .iter()
            .filter(|(c, n)| votes(c) && **n == best && best > 0)
            .map(|(c, _)| *c)
            .collect();
        match top.as_slice() {
            [] => Cause::Unknown,
            [one] => *one,
            many => latest
                .filter(|c| many.contains(c))
                .unwrap_or(many[many.len() - 1]),
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

    /// The most frequent cause that says something; ties go to the more
    /// serious one.
    pub(crate) fn top_cause(&self) -> Cause {
        self.causes
            .iter()
            .filter(|(c, n)| **c != Cause::Unknown && **n > 0)
            .max_by_key(|(c, n)| (**n, c.severity_rank()))
            .map_or(Cause::Unknown, |(c, _)| *c)
    }

    /// What the kernel's lines in its context say (design 5.8).
    fn kernel_words(
        &self,
        when: &dyn Fn(&ContextLine) -> String,
        quote: &dyn Fn(&ContextLine) -> String,
        parts: &mut Vec<String>,
    ) {
        let find = |k: ContextKind| self.context.iter().find(|l| l.kind == k);
        // Lines of a kind beyond the first quoted, those a run folded too.
        let more = |l: &ContextLine| {
            let n: u64 = self
                .context
                .iter()
                .filter(|c| c.kind == l.kind)
                .map(|c| u64::from(c.repeats) + 1)
                .sum::<u64>()
                - 1;
            match n {
                0 => String::new(),
                n => format!(", and {n} more like it"),
            }
        };
        if let Some(l) = find(ContextKind::HungTask) {
            parts.push(format!(
                "The kernel reported tasks hung at {} ({}{}): the runtime and the kubelet wait on \
                 what they wait on.",
                when(l),
                quote(l),
                more(l)
            ));
        }
        if let Some(l) = find(ContextKind::NetdevWait) {
            parts.push(format!(
                "The kernel was waiting to free a network device at {} ({}): pod sandboxes \
                 cannot be torn down or set up meanwhile.",
                when(l),
                quote(l)
            ));
        }
        if let Some(l) = self.context.iter().find(|l| l.kind.is_readonly()) {
            parts.push(format!(
                "The kernel made a file system read-only at {} ({}).",
                when(l),
                quote(l)
            ));
        } else if let Some(l) = self.context.iter().find(|l| l.kind.is_disk()) {
            parts.push(format!(
                "The kernel reported disk errors at {} ({}{}).",
                when(l),
                quote(l),
                more(l)
            ));
        }
        if let Some(l) = find(ContextKind::ConntrackFull) {
            parts.push(format!(
                "The node's conntrack table was full at {} ({}{}): the kernel dropped new \
                 connections, the API server's among them; the API server may well be fine.",
                when(l),
                quote(l),
                more(l)
            ));
        }
        if let Some(l) = find(ContextKind::Oops) {
            parts.push(format!("The kernel oopsed at {} ({}).", when(l), quote(l)));
        }
    }

    /// What its context says, in words for the diagnosis ("" for none).
    #[must_use]
    pub fn context_words(&self) -> String {
        let Some(first) = self.context.first() else {
            return String::new();
        };
        let when = |l: &ContextLine| {
            let d = l.at - self.opened_at;
            let s = human_duration(d.abs());
            if d < 0 {
                format!("{} ({s} before it began)", clock(l.at))
            } else {
                format!("{} ({s} after it began)", clock(l.at))
            }
        };
        let quote = |l: &ContextLine| format!("{}: {}", l.unit, one_line(&l.text, 200));
        let find = |k: ContextKind| self.context.iter().find(|l| l.kind == k);
        let mut parts = Vec::new();
        if let Some(l) = find(ContextKind::OomKill) {
            parts.push(format!(
                "The kernel's OOM killer killed the kubelet at {} ({}).",
                when(l),
                quote(l)
            ));
        }
        let runtime: Vec<&ContextLine> = self
            .context
            .iter()
            .filter(|l| l.kind.is_runtime())
            .collect();
        if let Some(l) = runtime.first() {
            let how = if runtime.iter().any(|l| l.kind == ContextKind::RuntimeFailed) {
                "failed (nobody asked it to stop)"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeRestarting)
            {
                "was restarted by systemd after it died"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeStopping)
            {
                "was stopped on request (systemctl stop or restart, an upgrade)"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeStopped)
            {
                "stopped"
            } else {
                "was started"
            };
            parts.push(format!(
                "The container runtime {} {how} at {} ({}).",
                l.unit,
                when(l),
                quote(l)
            ));
        }
        if let Some(l) = find(ContextKind::LinkLost) {
            parts.push(format!(
                "The node lost its network: its own link went down at {} ({}); the API server \
                 may well be fine, and this node is not counted toward an endpoint outage.",
                when(l),
                quote(l)
            ));
        }
        if let Some(l) = find(ContextKind::ClockStep) {
            parts.push(format!(
                "The node's clock was stepped at {} ({}): certificates look expired or not yet \
                 valid to a clock that is wrong; check the node's time sync before the \
                 certificates.",
                when(l),
                quote(l)
            ));
        }
        self.kernel_words(&when, &quote, &mut parts);
        if parts.is_empty() {
            parts.push(format!("Context: {} at {}.", quote(first), when(first)));
        }
        parts.join(" ")
    }
}
