//! not-ready incidents (design 5.3): the node is not ready while its
//! kubelet runs. Its own data, its verdict, its cause vote and its
//! diagnosis.

use serde::{Deserialize, Serialize};

use crate::context::Trouble;
use crate::signals::{Cause, GcOutcome, GcReport, SignalKind};
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
    /// The pods the eviction manager evicted while it was open, distinct,
    /// the first [`EVICTED_KEPT`] (design 5.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evicted_pods: Vec<String>,
    /// Its evictions, all of them (a pod evicted twice, twice).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub evictions: u64,
    /// When the last of them was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_evicted_at: Option<Micros>,
    /// What the host's last image garbage collection did, before it opened
    /// (since the kubelet's start) or while it was open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_gc: Option<ImageGc>,
}

#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's signature")]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The evicted pods an incident names at most (its count goes on).
pub const EVICTED_KEPT: usize = 16;

/// What a host's image garbage collection last did (design 5.3): its
/// outcome, the bytes it had to free and freed (or found eligible), and
/// its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageGc {
    pub at: Micros,
    pub outcome: GcOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wanted_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed_bytes: Option<u64>,
    pub text: String,
}

/// Image deletions this close to the one before are one collection's.
const ONE_COLLECTION: Micros = 60 * crate::time::SECOND;

impl ImageGc {
    /// The collection `report` (read from `text` at `at`) tells, after
    /// `last`: a deletion within a minute of the one before adds its bytes
    /// to that collection's; an older line than the last changes nothing.
    #[must_use]
    pub fn after(last: Option<Self>, at: Micros, report: GcReport, text: &str) -> Self {
        let mut next = Self {
            at,
            outcome: report.outcome,
            wanted_bytes: report.wanted_bytes,
            freed_bytes: report.freed_bytes,
            // Cut, not cleaned: cleaned where it is shown (a collection
            // every few seconds in a busy journal costs a copy, no more).
            text: crate::model::cut(text, 300).to_string(),
        };
        let Some(last) = last else {
            return next;
        };
        if at < last.at {
            return last;
        }
        if last.outcome == GcOutcome::Freed
            && next.outcome == GcOutcome::Freed
            && at - last.at <= ONE_COLLECTION
        {
            next.freed_bytes = match (last.freed_bytes, next.freed_bytes) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    /// Whether deleting images could have freed the disk, in words.
    fn words(&self, evicted_after: bool) -> String {
        let when = clock(self.at);
        match self.outcome {
            GcOutcome::NotEnough => format!(
                "Image garbage collection at {when} had to free {} but found only {} eligible: \
                 deleting images could not have freed the disk (the images left are in use or \
                 too new to delete); something else fills it: containers' writable layers, \
                 emptyDir volumes, logs.",
                bytes(self.wanted_bytes),
                bytes(self.freed_bytes)
            ),
            GcOutcome::Failed => format!(
                "Image garbage collection at {when} failed ({}): whether deleting images could \
                 have freed the disk is not known.",
                one_line(&self.text, 200)
            ),
            GcOutcome::Freed => format!(
                "Image garbage collection at {when} freed {}: deleting images frees this disk{}.",
                self.freed_bytes
                    .map_or_else(|| "space".to_string(), |b| bytes(Some(b))),
                if evicted_after {
                    ", but not enough: pods were evicted after it"
                } else {
                    ""
                }
            ),
        }
    }
}

/// Bytes as a person reads them (`2.9 GiB`); the eviction manager's
/// "as much as can be" (`math.MaxInt64`) as that.
fn bytes(n: Option<u64>) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let Some(n) = n else {
        return "an unstated amount".into();
    };
    if n >= i64::MAX as u64 {
        return "all it could".into();
    }
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

impl NotReady {
    /// The eviction manager evicted `pod` (none: a line naming no pod
    /// plausibly) at `at`.
    pub(crate) fn evicted(&mut self, pod: Option<String>, at: Micros) {
        self.evictions += 1;
        self.last_evicted_at = Some(self.last_evicted_at.map_or(at, |t| t.max(at)));
        if let Some(pod) = pod {
            if self.evicted_pods.len() < EVICTED_KEPT && !self.evicted_pods.contains(&pod) {
                self.evicted_pods.push(pod);
            }
        }
    }

    /// What it tells of evictions and, under disk pressure, of image
    /// garbage collection: whether deleting images could have freed the
    /// disk (design 5.3).
    fn eviction_words(&self, cause: Cause) -> Vec<String> {
        let mut parts = Vec::new();
        if self.evictions > 0 {
            let (n, named) = (self.evictions, self.evicted_pods.len());
            let head = if named == 0 || named as u64 == n {
                format!("evicted {n} pod{}", if n == 1 { "" } else { "s" })
            } else if named < EVICTED_KEPT {
                // Some pods evicted again (a recreated pod of the same name).
                format!(
                    "made {n} evictions of {named} pod{}",
                    if named == 1 { "" } else { "s" }
                )
            } else {
                format!("evicted {n} pods, the first {named} named")
            };
            let list = if named == 0 {
                String::new()
            } else {
                format!(": {}", self.evicted_pods.join(", "))
            };
            parts.push(format!("The eviction manager {head}{list}."));
        }
        if cause == Cause::DiskPressure {
            parts.push(self.image_gc.as_ref().map_or_else(
                || {
                    "No result of image garbage collection is in the kubelet's log since its \
                     start (a failure is always written, a success only after a failure or at \
                     --v=4): whether deleting images could have freed the disk is not known."
                        .to_string()
                },
                |gc| gc.words(self.last_evicted_at.is_some_and(|t| t > gc.at)),
            ));
        }
        parts
    }

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
        parts.extend(self.eviction_words(cause));
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
