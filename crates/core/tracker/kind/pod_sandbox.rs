//! pod-sandbox incidents (design 5.6): pods' sandboxes keep failing on a
//! node that is Ready. Its own data (the failing pods, bounded; the
//! attempts counted once however many lines each writes), its verdict by
//! the presence of success (a pod started: a failing one, or another's
//! first start while it is open), its cause vote
//! and its diagnosis.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::signals::{Cause, sandbox_specificity};
use crate::time::{Micros, SECOND, clock, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{Resolution, Verdict};
use crate::tracker::words::{cause_explanation, one_line};

/// The failing pods an incident keeps (a node holds 110 pods by default;
/// a storm of new pods past this forgets the quietest, which counts again
/// if it fails again).
pub(crate) const PODS_KEPT: usize = 64;

/// One attempt writes its lines within this of its first (the runtime's
/// call, the sandbox's, the runtime manager's, the pod worker's: a few
/// milliseconds); the kubelet tries a failing pod again after 10 s.
pub(crate) const ATTEMPT: Micros = SECOND;

/// A failing pod: since when its sandbox fails (its first failure since it
/// last started), and its latest attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingPod {
    pub failing_since: Micros,
    pub attempt_at: Micros,
    /// The most specific cause its latest attempt's lines named.
    pub cause: Cause,
    /// Its container started since its last failure: its sandbox was made.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub started: bool,
}

/// An attempt whose lines have named no pod yet: the runtime's own line
/// comes first and names none; the next line of a pod claims it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub at: Micros,
    pub cause: Cause,
}

/// A pod-sandbox incident's own data (design 5.6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodSandbox {
    /// Distinct pods whose sandbox failed while it was open (of the
    /// [`PODS_KEPT`] kept at once).
    pub pods_failed: u64,
    /// Failed sandbox creations: one attempt's several lines of one pod
    /// within a second are one.
    pub sandbox_failures: u64,
    /// Pods started while it was open: a failing pod that started (its
    /// sandbox was made), or another pod's first start (a new pod's, or a
    /// running pod's container restarting: once a pod, so a crash-looping
    /// neighbour is not a stream of successes).
    pub sandbox_successes: u64,
    /// The failing pods, by `namespace/name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pods: BTreeMap<String, FailingPod>,
    /// The pods that never failed whose start was counted (at most
    /// [`PODS_KEPT`]; past it, no more such starts count).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub started_pods: BTreeSet<String>,
    /// An attempt no pod's line has claimed yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Attempt>,
    /// The first failure since the last pod started: how long sandboxes
    /// have failed with none made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Micros>,
    /// The cause of its latest attempt: a tie between causes goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cause: Option<Cause>,
    /// When it was judged flapping (failures and starts interleaved for
    /// `sandbox_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flapping_at: Option<Micros>,
    /// Its kubelet writes PLEG's events (`--v=2` or more): a start would
    /// have been seen. Below it, only the same pods failing for
    /// `sandbox_after` say that nothing starts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub starts_visible: bool,
}

/// One failure line's cause moved `causes` from `old` to `new` (the
/// attempt's most specific so far).
fn revote(causes: &mut BTreeMap<Cause, u64>, old: Option<Cause>, new: Cause) {
    if old == Some(new) {
        return;
    }
    if let Some(o) = old {
        if let Some(n) = causes.get_mut(&o) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                causes.remove(&o);
            }
        }
    }
    *causes.entry(new).or_default() += 1;
}

/// The more specific of two causes of one attempt.
fn sharper(a: Cause, b: Cause) -> Cause {
    if sandbox_specificity(b) > sandbox_specificity(a) {
        b
    } else {
        a
    }
}

/// What a sandbox's cause means: the network and the runtime in a
/// sandbox's words (theirs for a node not ready say too much).
fn explain(c: Cause) -> &'static str {
    if c == Cause::Cni {
        "the network plugin failed to set up the pod's network (its own error, not a shortage of addresses)"
    } else if c == Cause::Runtime {
        "the container runtime could not create the sandbox (its shim, task, OCI runtime or cgroups, or the node's open files)"
    } else {
        cause_explanation(c)
    }
}

impl PodSandbox {
    /// A failure line of `pod` (none: the runtime's line) at `at`
    /// pointing at `cause`: a new attempt (counted), or one more line of
    /// one counted; `causes` is the incident's vote, one an attempt.
    pub(crate) fn failed(
        &mut self,
        pod: Option<&str>,
        at: Micros,
        cause: Cause,
        causes: &mut BTreeMap<Cause, u64>,
    ) {
        let within = |t: Micros| at >= t && at - t < ATTEMPT;
        let pending = self.pending.filter(|p| within(p.at));
        let Some(pod) = pod else {
            if let Some(p) = pending {
                let c = sharper(p.cause, cause);
                revote(causes, Some(p.cause), c);
                self.pending = Some(Attempt { at: p.at, cause: c });
                return;
            }
            self.pending = Some(Attempt { at, cause });
            self.count_failure(at, cause, causes);
            return;
        };
        if let Some(e) = self.pods.get_mut(pod).filter(|e| within(e.attempt_at)) {
            let c = sharper(e.cause, cause);
            revote(causes, Some(e.cause), c);
            e.cause = c;
            self.last_cause = Some(c);
            return;
        }
        // The runtime's line of this attempt, just before: the pod's.
        let (attempt_at, cause) = if let Some(p) = pending {
            self.pending = None;
            let c = sharper(p.cause, cause);
            revote(causes, Some(p.cause), c);
            (p.at, c)
        } else {
            self.count_failure(at, cause, causes);
            (at, cause)
        };
        self.last_cause = Some(cause);
        self.keep_pod(pod, attempt_at, cause);
    }

    fn count_failure(&mut self, at: Micros, cause: Cause, causes: &mut BTreeMap<Cause, u64>) {
        self.sandbox_failures += 1;
        self.failing_since.get_or_insert(at);
        self.last_cause = Some(cause);
        revote(causes, None, cause);
    }

    /// `pod`'s new attempt at `at`: failing since then if it is new, or
    /// started since its last failure.
    fn keep_pod(&mut self, pod: &str, at: Micros, cause: Cause) {
        if let Some(e) = self.pods.get_mut(pod) {
            if e.started {
                e.failing_since = at;
                e.started = false;
            }
            e.attempt_at = at;
            e.cause = cause;
            return;
        }
        if self.pods.len() >= PODS_KEPT {
            // Room for the new one: the pod whose last attempt is oldest
            // (a pod deleted, or started where no start is written).
            let quietest = self
                .pods
                .iter()
                .min_by_key(|(_, e)| e.attempt_at)
                .map(|(p, _)| p.clone());
            if let Some(q) = quietest {
                self.pods.remove(&q);
            }
        }
        self.pods_failed += 1;
        self.pods.insert(
            pod.to_string(),
            FailingPod {
                failing_since: at,
                attempt_at: at,
                cause,
                started: false,
            },
        );
    }

    /// A container of `pod` started: a success when the pod had failed
    /// and not started since (its sandbox is made), or at the first start
    /// of a pod that never failed; the failures after it count anew.
    pub(crate) fn started(&mut self, pod: Option<&str>) -> bool {
        self.starts_visible = true;
        let Some(pod) = pod else {
            return false;
        };
        if let Some(e) = self.pods.get_mut(pod) {
            if e.started {
                return false;
            }
            e.started = true;
        } else if self.started_pods.len() >= PODS_KEPT || !self.started_pods.insert(pod.into()) {
            return false;
        }
        self.sandbox_successes += 1;
        self.failing_since = None;
        true
    }

    /// Persistent at `at` (a failure of `pod`): failures for
    /// `sandbox_after` with no pod started since, on a kubelet
    /// whose starts would show; where they would not (below `--v=2`), the
    /// same pod failing that long.
    pub(crate) fn persistent_at(&self, pod: Option<&str>, at: Micros, s: &Settings) -> bool {
        let long = |since: Micros| at - since >= s.sandbox_after;
        if !self.failing_since.is_some_and(long) {
            return false;
        }
        self.starts_visible
            || pod
                .and_then(|p| self.pods.get(p))
                .is_some_and(|e| !e.started && long(e.failing_since))
    }

    /// Flapping at `at`: failures for `sandbox_after` since it opened,
    /// with failing pods starting among them.
    pub(crate) fn flaps_at<D>(&self, i: &IncidentOf<D>, at: Micros, s: &Settings) -> bool {
        self.sandbox_successes > 0 && at - i.opened_at >= s.sandbox_after
    }

    /// Persistent once judged so (the page); flapping once failures and
    /// starts interleaved for `sandbox_after`; otherwise transient when it
    /// ended, undetermined while open.
    pub(crate) fn verdict<D>(&self, i: &IncidentOf<D>, ended: Verdict) -> Verdict {
        if i.over_threshold_at.is_some() {
            Verdict::Persistent
        } else if self.flapping_at.is_some() {
            Verdict::Flapping
        } else {
            ended
        }
    }

    /// The most frequent cause of its attempts (`unknown` only when no
    /// attempt said more), a tie to the latest attempt's.
    pub(crate) fn cause<D>(&self, i: &IncidentOf<D>) -> Cause {
        i.most_frequent_cause(self.last_cause)
    }

    /// Quiet for `resolve_after` after its last failure: the kubelet tries
    /// a failing pod again every 10 s, so that long with none, its pods
    /// started (with successes seen or not) or went away.
    pub(crate) fn due<D>(i: &IncidentOf<D>, resolve_after: Micros) -> Micros {
        i.last_trouble_at + resolve_after
    }

    /// One paragraph: how many sandboxes of which pods failed over how
    /// long, whether any started, the cause, the verdict in words, how it
    /// ended.
    pub(crate) fn diagnosis<D>(
        &self,
        i: &IncidentOf<D>,
        verdict: Verdict,
        cause: Cause,
        s: &Settings,
    ) -> String {
        let span = i.last_trouble_at - i.opened_at;
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        let named: Vec<&str> = self.pods.keys().take(3).map(String::as_str).collect();
        let mut parts = vec![format!(
            "Pods' sandboxes failed on node {} from {} over {}: {} failure{} of {} pod{}{}.",
            i.node,
            clock(i.opened_at),
            human_duration(span),
            self.sandbox_failures,
            plural(self.sandbox_failures),
            self.pods_failed,
            plural(self.pods_failed),
            if named.is_empty() {
                String::new()
            } else {
                format!(
                    " ({}{})",
                    one_line(&named.join(", "), 300),
                    if self.pods.len() > named.len() {
                        ", …"
                    } else {
                        ""
                    }
                )
            }
        )];
        if self.starts_visible {
            parts.push(format!(
                "{} pod start{} while it was open (a failing pod that started, or another \
                 pod's first).",
                self.sandbox_successes,
                plural(self.sandbox_successes)
            ));
        } else {
            parts.push(
                "The kubelet wrote no container start (PLEG's events are written at --v=2 and \
                 above): whether other pods start is not known; only the same pods failing \
                 again and again says nothing starts."
                    .into(),
            );
        }
        if let Some(e) = i.first_evidence() {
            parts.push(format!("The kubelet said: {}", one_line(&e.text, 300)));
        }
        parts.push(format!("Cause {}: {}.", cause.as_str(), explain(cause)));
        parts.push(i.context_words());
        let after = human_duration(s.sandbox_after);
        match verdict {
            Verdict::Persistent => parts.push(format!(
                "Persistent: sandboxes failed for longer than {after} with no pod started; \
                 the node is Ready but starts no new pod."
            )),
            Verdict::Flapping => parts.push(format!(
                "Flapping: failures went on for longer than {after} while pods still started \
                 among them (a flaky network plugin or runtime, or one pod's own trouble); \
                 reported, not paged."
            )),
            Verdict::Transient => {
                parts.push(format!("Transient: the failures stopped within {after}."));
            }
            Verdict::StartupRace | Verdict::Undetermined | Verdict::CrashLoop | Verdict::Failed => {
            }
        }
        match i.resolution {
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved at {}: no sandbox failed for {} after the last at {}.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at)),
                human_duration(s.resolve_after),
                clock(i.last_trouble_at)
            )),
            Some(
                Resolution::Evicted
                | Resolution::Rebooted
                | Resolution::SourceChanged
                | Resolution::NodeReady
                | Resolution::Stopped
                | Resolution::Wrote
                | Resolution::Rotated,
            ) => parts.push("Closed without confirmation that it ended.".into()),
            None => {}
        }
        parts.join(" ")
    }
}
