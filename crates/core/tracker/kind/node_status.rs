//! node-status incidents (design 5): a running kubelet cannot update or
//! register its Node. Its own data, its verdict (the start-up race or
//! not), its cause and its diagnosis.

use serde::{Deserialize, Serialize};

use crate::context::Trouble;
use crate::signals::{Cause, SignalKind};
use crate::time::{Micros, clock, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{IncidentKind, Resolution, Verdict};
use crate::tracker::words::{cause_explanation, one_line};

/// The six node-status counters (design 3.3): the JSON contract shows them
/// for every incident, flattened (zeros for the other kinds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub retries: u64,
    pub exhausted: u64,
    pub lister_misses: u64,
    pub register_failures: u64,
    pub lease_failures: u64,
    pub watch_failures: u64,
}

impl Counters {
    /// What was counted, in words (`3 status retries, 1 lister miss`).
    fn in_words(&self) -> String {
        let mut counts = Vec::new();
        for (n, one, many) in [
            (self.retries, "status retry", "status retries"),
            (
                self.exhausted,
                "exhausted retry cycle",
                "exhausted retry cycles",
            ),
            (
                self.register_failures,
                "failed registration",
                "failed registrations",
            ),
            (self.lister_misses, "lister miss", "lister misses"),
            (self.lease_failures, "lease failure", "lease failures"),
            (self.watch_failures, "watch failure", "watch failures"),
        ] {
            if n > 0 {
                counts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        counts.join(", ")
    }

    /// Status retries and failed registrations: what the threshold counts.
    #[must_use]
    pub fn counted_retries(&self) -> u64 {
        self.retries + self.register_failures
    }
}

/// A node-status incident's own data: a running kubelet cannot update or
/// register its Node (design 5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    #[serde(flatten)]
    pub counters: Counters,
    /// The last cache-sync marker before the anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_synced_at: Option<Micros>,
    /// Trouble signals whose cause was not the local lister.
    #[serde(default)]
    pub non_lister_trouble: u64,
    /// The API endpoint (`host:port`) its first error naming one named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// The endpoint incident that stands for it (its alerts are that
    /// incident's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_by: Option<String>,
    /// A line of it was dated by a clock that cannot be trusted (before any
    /// kubelet, or more than a day past the reader's clock): its times say nothing of
    /// when the others' trouble was, so it is no member of an outage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clock_untrusted: bool,
}

impl NodeStatus {
    /// Design section 5: persistent once over threshold; the start-up race
    /// when it began within `race_window` of a registration or kubelet
    /// start, only ever missed the node in the local lister, never
    /// exhausted a retry cycle and never crossed the threshold; transient
    /// when it ended otherwise; undetermined while open and neither.
    pub(crate) fn verdict<D>(&self, i: &IncidentOf<D>, s: &Settings, ended: Verdict) -> Verdict {
        if i.over_threshold_at.is_some() {
            return Verdict::Persistent;
        }
        let soon_after_start = i
            .anchor
            .is_some_and(|a| i.opened_at - a.at <= s.race_window && i.opened_at >= a.at);
        if soon_after_start && self.non_lister_trouble == 0 && self.counters.exhausted == 0 {
            Verdict::StartupRace
        } else {
            ended
        }
    }

    /// Quiet for `resolve_after` after its last trouble.
    pub(crate) fn due<D>(i: &IncidentOf<D>, resolve_after: Micros) -> Micros {
        i.last_trouble_at + resolve_after
    }

    /// What its context would explain: a network that is down, or a
    /// clock that makes good certificates look expired.
    pub(crate) fn trouble<D>(i: &IncidentOf<D>, cause: Cause) -> Option<Trouble> {
        #[allow(
            clippy::wildcard_enum_match_arm,
            reason = "a cause not named here explains nothing of this trouble"
        )]
        match cause {
            Cause::ApiUnreachable | Cause::ApiTimeout => Some(Trouble::Network),
            Cause::Auth if Self::certificate_time(i) => Some(Trouble::Clock),
            _ => None,
        }
    }

    /// Its errors say a certificate is expired or not yet valid: what a
    /// clock that is wrong makes of a good certificate.
    fn certificate_time<D>(i: &IncidentOf<D>) -> bool {
        i.evidence()
            .any(|e| e.cause == Some(Cause::Auth) && e.text.contains("expired or is not yet valid"))
    }

    pub(crate) fn diagnosis<D>(
        &self,
        i: &IncidentOf<D>,
        verdict: Verdict,
        cause: Cause,
        s: &Settings,
    ) -> String {
        let n = self;
        let c = &n.counters;
        if verdict == Verdict::StartupRace {
            return self.race_diagnosis(i);
        }
        let mut parts = Vec::new();
        let span = i.last_signal_at - i.opened_at;
        parts.push(format!(
            "{} on node {} from {} over {}.",
            c.in_words(),
            i.node,
            clock(i.opened_at),
            human_duration(span)
        ));
        parts.push(format!(
            "The errors point at {}: {}.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        parts.push(i.context_words());
        if let Some(at) = i.over_threshold_at {
            let limits = s.limits(IncidentKind::NodeStatus, &i.node, cause);
            parts.push(format!(
                "It crossed the alert threshold (more than {} retries within {}) at {}.",
                limits.retries,
                human_duration(limits.window),
                clock(at)
            ));
        }
        if let Some(a) = i.anchor {
            let gap = i.opened_at - a.at;
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
        match i.resolution {
            Some(Resolution::NodeReady) => parts.push(format!(
                "Resolved at {} when the node reported Ready.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved after {} without trouble (last at {}).",
                human_duration(s.resolve_after),
                clock(i.last_trouble_at)
            )),
            Some(Resolution::Evicted) => parts.push(format!(
                "Closed at {} to make room: more nodes were in trouble than [incidents] \
                 max_nodes_per_host or max_nodes allow, and this one had been quiet longest \
                 (last trouble at {}); nothing confirmed that it ended.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at)),
                clock(i.last_trouble_at)
            )),
            Some(Resolution::Stopped) => parts.push(format!(
                "Ended at {} by a stop that was asked for.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(Resolution::SourceChanged) => parts.push(format!(
                "Closed at {}, not resolved: the service was switched to another journal \
                 (last trouble read at {}).",
                clock(i.resolved_at.unwrap_or(i.last_signal_at)),
                clock(i.last_trouble_at)
            )),
            Some(Resolution::Wrote | Resolution::Rotated | Resolution::Rebooted) | None => {}
        }
        if let Some(e) = i.first_evidence() {
            parts.push(format!("First error: {}", one_line(&e.text, 300)));
        }
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }

    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    fn race_diagnosis<D>(&self, i: &IncidentOf<D>) -> String {
        let n = self;
        let Some(a) = i.anchor else {
            return String::new();
        };
        // Which line found no Node: the lister's own miss, or the status
        // update whose error is the lister's (counted as a status retry, so
        // `show`'s "lister misses" can be 0 above it).
        let missed = match i.first_trouble {
            SignalKind::ListerMiss => "the lister missed the node",
            _ => "a status update found no Node in the lister",
        };
        let mut text = format!(
            "{} at {}; {missed} {} ms later",
            match a.kind {
                SignalKind::Registered => "Registered",
                _ => "The kubelet started",
            },
            clock(a.at),
            (i.opened_at - a.at) / 1000
        );
        match n.caches_synced_at {
            Some(c) if c <= a.at => text.push_str(&format!(
                "; caches reported synced {} ms before {}: the informer had not yet seen the node's watch event",
                (a.at - c) / 1000,
                if a.kind == SignalKind::Registered { "registration" } else { "the start" }
            )),
            _ => text.push_str("; the informer had not yet seen the node's watch event"),
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
        text.push_str(&format!(
            ". {}, no exhausted retry cycle: the kubelet found the node once its informer caught up. \
             This is the harmless start-up race; nothing to do.",
            counts.join(" and ")
        ));
        text
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
