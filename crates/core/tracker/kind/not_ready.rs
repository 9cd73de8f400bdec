//! not-ready incidents (design 5.3): the node is not ready while its
//! kubelet runs. Its own data, its verdict, its cause vote and its
//! diagnosis.

use serde::{Deserialize, Serialize};

use crate::context::Trouble;
use crate::signals::{Cause, SignalKind};
use crate::time::{Micros, clock, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{Resolution, Verdict};
use crate::tracker::words::{cause_explanation, one_line};

/// A not-ready incident's own data: the node is not ready while its
/// kubelet runs (design 5.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotReady {
    /// Its lines, trouble and supporting.
    pub not_ready_signals: u64,
    /// The cause of its latest line: a tie between causes goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cause: Option<Cause>,
    /// Its quiet is counted from here: the end of the node's kubelet-down
    /// incident that held it open (0: from its last trouble).
    #[serde(default)]
    pub quiet_from: Micros,
    /// The node was ready after its kubelet's last start and before this
    /// opened: not the start-up race, however soon after the start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ready_since_start: bool,
}

impl NotReady {
    /// Its node's kubelet-down incident, which held it open, ended at
    /// `at`: its quiet is counted from then.
    pub(crate) fn released(&mut self, at: Micros) {
        self.quiet_from = self.quiet_from.max(at);
    }

    /// Design 5.3: the start-up race when it opened within
    /// `not_ready_after` of the kubelet's start, the node not ready since
    /// that start (a node that was ready, then not, is a running node's
    /// trouble: a runtime restarted), and ended before its trouble lasted
    /// that long (persistent is decided before); transient when it ended
    /// otherwise; undetermined while open.
    pub(crate) fn verdict<D>(&self, i: &IncidentOf<D>, s: &Settings, ended: Verdict) -> Verdict {
        if i.over_threshold_at.is_some() {
            return Verdict::Persistent;
        }
        let closed = matches!(
            i.resolution,
            Some(Resolution::Evicted | Resolution::SourceChanged)
        );
        let soon_after_start = i.anchor.is_some_and(|a| {
            a.kind == SignalKind::KubeletStarted
                && i.opened_at >= a.at
                && i.opened_at - a.at <= s.not_ready_after
        });
        if ended == Verdict::Transient && soon_after_start && !closed && !self.ready_since_start {
            Verdict::StartupRace
        } else {
            ended
        }
    }

    /// The most frequent cause of its lines (`unknown` only when no line
    /// said more), a tie to the latest line's.
    pub(crate) fn cause<D>(&self, i: &IncidentOf<D>) -> Cause {
        i.most_frequent_cause(self.last_cause)
    }

    /// Quiet for `resolve_after` after its last trouble, or after the end
    /// of the kubelet-down incident that held it open.
    pub(crate) fn due<D>(&self, i: &IncidentOf<D>, resolve_after: Micros) -> Micros {
        i.last_trouble_at.max(self.quiet_from) + resolve_after
    }

    /// What its context would explain: a runtime that is down or slow
    /// (its unit stopped, failed or restarting around it, tasks hung), a
    /// disk gone bad.
    pub(crate) fn trouble(cause: Cause) -> Trouble {
        // The runtime's unit and the kernel's hung tasks explain a slow or
        // dead runtime; a read-only file system or I/O errors any not-ready
        // node (design 5.8).
        if matches!(cause, Cause::Runtime | Cause::Pleg) {
            Trouble::Runtime
        } else {
            Trouble::Disk
        }
    }

    /// One paragraph: what the kubelet said, since when, the verdict in
    /// words and how it ended.
    pub(crate) fn diagnosis<D>(
        &self,
        i: &IncidentOf<D>,
        verdict: Verdict,
        cause: Cause,
        s: &Settings,
    ) -> String {
        let r = self;
        let span = i.last_trouble_at - i.opened_at;
        let mut parts = vec![format!(
            "Node {} not ready while its kubelet runs, from {} over {} ({} line{}).",
            i.node,
            clock(i.opened_at),
            human_duration(span),
            r.not_ready_signals,
            if r.not_ready_signals == 1 { "" } else { "s" }
        )];
        if let Some(e) = i.first_evidence() {
            parts.push(format!("The kubelet said: {}", one_line(&e.text, 300)));
            if crate::signals::says_only_starting(&e.text.to_ascii_lowercase()) {
                parts.push(format!(
                    "It has said only its start-up state since {}, longer than {}: it never \
                     finished starting (the runtime's first status check or PLEG's first relist \
                     did not succeed).",
                    clock(i.opened_at),
                    human_duration(s.not_ready_after)
                ));
            } else if e.at > i.opened_at
                && crate::signals::pleg_unhealthy_for(&e.text.to_ascii_lowercase()).is_some()
            {
                parts.push(format!(
                    "By the kubelet's own count (PLEG's last relist less its threshold) it was \
                     not ready from {} on, {} before that line.",
                    clock(i.opened_at),
                    human_duration(e.at - i.opened_at)
                ));
            }
        }
        parts.push(format!(
            "Cause {}: {}.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        parts.push(i.context_words());
        parts.retain(|p| !p.is_empty());
        match (verdict, i.anchor) {
            (Verdict::StartupRace, Some(a)) => parts.push(format!(
                "It began {} after the kubelet started ({}) and ended sooner than {}: \
                 the start-up race (the network's pods or the runtime's first status check \
                 arrive after the kubelet); nothing to do.",
                human_duration(i.opened_at - a.at),
                clock(a.at),
                human_duration(s.not_ready_after)
            )),
            (Verdict::Persistent, _) => parts.push(format!(
                "Persistent: not ready longer than {} (since {}).",
                human_duration(s.not_ready_after),
                clock(i.opened_at)
            )),
            _ => {}
        }
        match i.resolution {
            Some(Resolution::NodeReady) => parts.push(format!(
                "Resolved at {} when the node became ready.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved after {} without a not-ready line (last at {}).",
                human_duration(s.resolve_after),
                clock(i.last_trouble_at)
            )),
            Some(Resolution::Stopped) => parts.push(format!(
                "Ended at {} by a stop of the kubelet that was asked for.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(
                Resolution::Evicted
                | Resolution::SourceChanged
                | Resolution::Wrote
                | Resolution::Rotated
                | Resolution::Rebooted,
            ) => {
                parts.push("Closed without confirmation that it ended.".into());
            }
            None => {}
        }
        parts.join(" ")
    }
}
