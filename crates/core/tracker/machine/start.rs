//! What a host's lines do to its kubelet's start (design 5.5): a start
//! mark begins one (systemd's `Started` for the unit; else the kubelet's
//! `Kubelet version` or `Started kubelet`; else a line of a new kubelet
//! pid), the registration lines and the CNI's not-ready lines mark it,
//! the node's ready marker ends it, and so does the next start. Judged on
//! the host's own journal clock, so `scan`, `run --once` and a following
//! service make the same records.

use std::collections::BTreeMap;

use super::super::decision::{Decision, Observation};
use super::super::hosts::Hosts;
use super::super::ledger::Ledger;
use super::super::start::{MarksSeen, Start, StartPlace, StartVerdict, version_in};
use crate::signals::{Cause, SignalKind};
use crate::time::Micros;

/// The starts changed since the last [`Starts::take`], to persist: one
/// record a start, by host and start time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::tracker) struct Starts {
    changed: BTreeMap<(String, Micros), Start>,
    /// Starts whose verdict was reached since the last take (a
    /// never-ready start that becomes Ready later is judged again).
    judged: Vec<Start>,
}

impl Starts {
    /// The starts changed since the last call, by host and start time.
    pub(in crate::tracker) fn take(&mut self) -> Vec<Start> {
        std::mem::take(&mut self.changed).into_values().collect()
    }

    /// The starts judged since the last call.
    pub(in crate::tracker) fn take_judged(&mut self) -> Vec<Start> {
        std::mem::take(&mut self.judged)
    }

    fn judged(&mut self, s: &Start) {
        self.judged.push(s.clone());
    }

    fn changed(&mut self, s: &Start) {
        self.changed
            .insert((s.host.clone(), s.started_at), s.clone());
    }

    /// Begins `host`'s next start at `at`, ending the one under way.
    fn begin(&mut self, h: &mut Hosts, host: &str, node: &str, at: Micros, pid: Option<u32>) {
        let origin = h.entry(host);
        if let Some(mut old) = origin.start.take() {
            old.ended_at = Some(at);
            if old.verdict != StartVerdict::NeverReady {
                old.verdict = StartVerdict::NeverReady;
                self.judged(&old);
            }
            self.changed(&old);
            origin.last_start = Some(old);
        }
        let mut s = Start::new(host, node, at);
        s.pid = pid;
        self.changed(&s);
        origin.start = Some(s);
        h.touch(host);
    }

    /// A recognised line of `host`'s kubelet written as `pid`: a start
    /// systemd began takes the first pid after it; a pid other than its
    /// latest start's is the next start. Only the kubelet's recognised
    /// lines count: a wrapper's output beside it in the unit is no start.
    fn pid(&mut self, h: &mut Hosts, host: &str, node: &str, pid: u32, at: Micros) {
        let Some(origin) = h.get_mut(host) else {
            return;
        };
        match origin.start.as_mut() {
            Some(s) if s.pid.is_none() => {
                s.pid = Some(pid);
                let s = s.clone();
                self.changed(&s);
                h.touch(host);
            }
            Some(s) if s.pid == Some(pid) || at < s.started_at => {}
            Some(_) => self.begin(h, host, node, at, Some(pid)),
            None => {
                let last = origin.last_start.as_ref();
                if last.is_some_and(|s| s.pid.is_some_and(|p| p != pid) && at >= s.started_at) {
                    self.begin(h, host, node, at, Some(pid));
                }
            }
        }
    }

    /// A recognised line of `host` about `node`. A line dated before the
    /// start under way (a line held for its continuation, handed on after
    /// systemd's next `Started`) marks the start before it, as it would
    /// have had it come first.
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here marks no start"
    )]
    pub(in crate::tracker) fn line(
        &mut self,
        h: &mut Hosts,
        l: &Ledger,
        obs: &Observation<'_>,
        node: &str,
    ) {
        let host = obs.host.unwrap_or("");
        let at = obs.at;
        let sig = obs.signal;
        if let (Some(pid), false) = (obs.pid, obs.from_systemd) {
            self.pid(h, host, node, pid, at);
        }
        if sig.kind == SignalKind::KubeletStarted {
            self.started(h, obs, node);
            return;
        }
        let marks = matches!(
            sig.kind,
            SignalKind::RegisterAttempt | SignalKind::Registered | SignalKind::NodeReady
        ) || (matches!(sig.kind, SignalKind::NotReady | SignalKind::NotReadySupport)
            && sig.cause == Some(Cause::Cni));
        if !marks {
            return;
        }
        let Some(origin) = h.get_mut(host) else {
            return;
        };
        let current = origin.start.as_ref().is_some_and(|s| at >= s.started_at);
        let s = if current {
            origin.start.as_mut()
        } else {
            origin
                .last_start
                .as_mut()
                .filter(|s| at >= s.started_at && s.end().is_none_or(|e| at <= e))
        };
        let Some(s) = s else {
            return;
        };
        match sig.kind {
            SignalKind::RegisterAttempt => {
                s.node = node.to_string();
                s.register_from.get_or_insert(at);
            }
            SignalKind::Registered => {
                s.node = node.to_string();
                s.register_from.get_or_insert(at);
                s.registered_at.get_or_insert(at);
            }
            SignalKind::NodeReady if s.ready_at.is_none() => {
                s.ready_at = Some(at);
                s.ended_at = None;
                s.verdict = s.judge(l.settings.start_budget, at);
                let s = s.clone();
                self.judged(&s);
            }
            SignalKind::NodeReady => return,
            _ => s.network_until = Some(s.network_until.map_or(at, |n| n.max(at))),
        }
        let s = s.clone();
        self.changed(&s);
        if current && s.ready_at.is_some() {
            origin.last_start = origin.start.take();
        }
        h.touch(host);
    }

    /// The kubelet's start line (or systemd's `Started`).
    fn started(&mut self, h: &mut Hosts, obs: &Observation<'_>, node: &str) {
        let host = obs.host.unwrap_or("");
        let text = obs.text;
        if obs.from_systemd {
            self.begin(h, host, node, obs.at, None);
            return;
        }
        let mark = if version_in(text).is_some() {
            MarksSeen::VERSION
        } else {
            MarksSeen::STARTED
        };
        let origin = h.entry(host);
        let same = match &origin.start {
            // The pid rule split processes already: a start with a pid is
            // this process's; one without is, unless it saw this mark.
            Some(s) => s.pid.is_some() || !s.marks.has(mark),
            // This process's start ended already (Ready before its
            // `Started kubelet`).
            None => obs.pid.is_some() && origin.last_start.as_ref().and_then(|s| s.pid) == obs.pid,
        };
        if !same {
            self.begin(h, host, node, obs.at, obs.pid);
        }
        let Some(s) = h.get_mut(host).and_then(|o| o.start.as_mut()) else {
            return;
        };
        s.marks.add(mark);
        if let Some(v) = version_in(text) {
            s.set_version(v);
        }
        let s = s.clone();
        self.changed(&s);
        h.touch(host);
    }

    /// `host`'s journal reaches `at`: a start not Ready within the budget
    /// by then is never-ready.
    pub(in crate::tracker) fn tick(
        &mut self,
        h: &mut Hosts,
        budget: Micros,
        host: &str,
        at: Micros,
    ) {
        let Some(s) = h.get_mut(host).and_then(|o| o.start.as_mut()) else {
            return;
        };
        if s.verdict == StartVerdict::Starting && s.judge(budget, at) != StartVerdict::Starting {
            s.verdict = StartVerdict::NeverReady;
            let s = s.clone();
            self.judged(&s);
            self.changed(&s);
            h.touch(host);
        }
    }

    /// Incidents of `host` opened (the decisions from `from` on): listed on
    /// the start they opened during (the one under way, or the one before
    /// it for a line handed on late), and told where in it they opened.
    /// The phase is not told here: it is known once the start has the mark
    /// that ends it, and is read from the start's record when shown.
    pub(in crate::tracker) fn opened(
        &mut self,
        h: &mut Hosts,
        l: &mut Ledger,
        host: &str,
        decisions: &[Decision],
    ) {
        let Some(origin) = h.get_mut(host) else {
            return;
        };
        let mut listed = false;
        for d in decisions {
            let Decision::OpenIncident { id } = d else {
                continue;
            };
            let Some(inc) = l
                .open
                .key_of_id(id)
                .cloned()
                .and_then(|k| l.open.get_mut(&k))
            else {
                continue;
            };
            if inc.host.as_deref() != Some(host) {
                continue;
            }
            let at = inc.opened_at;
            let s = match origin.start.as_mut() {
                Some(s) if at >= s.started_at => Some(s),
                _ => origin
                    .last_start
                    .as_mut()
                    .filter(|s| at >= s.started_at && s.end().is_none_or(|e| at <= e)),
            };
            let Some(s) = s else {
                continue;
            };
            inc.start = Some(StartPlace {
                phase: None,
                ..s.place(at)
            });
            if s.list(id) {
                let s = s.clone();
                self.changed(&s);
                listed = true;
            }
        }
        if listed {
            h.touch(host);
        }
    }
}
