//! How a node starts (design 5.5): one record a kubelet start, from its
//! start mark to the node's first ready marker, with the marks between
//! (the registration attempt, the registration, the last CNI not-ready
//! line). The phases, the slowest of them and the time to Ready are
//! derived from the marks, never stored, so they cannot disagree with
//! them. The machine that moves a start is `machine/start.rs`.

use serde::{Deserialize, Serialize};

use crate::time::Micros;

const MILLI: Micros = 1_000;

/// Starts kept a host (the store's, and `scan`'s): the latest. A kubelet
/// restarting every second keeps its last hundred.
pub const STARTS_KEPT: usize = 100;

/// Incidents listed on one start: the first that opened during it.
pub const START_INCIDENTS: usize = 16;

/// A kubelet version as the start keeps it (`v1.31.2`, at most this
/// long; anything longer or stranger is not kept).
const VERSION_MAX: usize = 40;

/// A phase of a start, named by the mark that ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Start to the first registration attempt (or the registration the
    /// kubelet finds already done).
    Init,
    /// To the registration.
    Register,
    /// To the last CNI not-ready line before Ready.
    Network,
    /// To the ready marker.
    Ready,
}

crate::kinds::spelling!(Phase {
    Init => "init",
    Register => "register",
    Network => "network",
    Ready => "ready",
});

/// How a start went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StartVerdict {
    /// Ready within `[alert] start_budget`.
    Ready,
    /// Ready after it.
    Slow,
    /// Not Ready within it (by its host's journal), or ended by the next
    /// start without Ready.
    NeverReady,
    /// Not Ready yet, within it.
    Starting,
}

crate::kinds::spelling!(StartVerdict {
    Ready => "ready",
    Slow => "slow",
    NeverReady => "never-ready",
    Starting => "starting",
});

/// Which of the kubelet's own start marks a start has seen (a second of
/// one kind, with no pid to tell, is the next start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarksSeen(u8);

impl MarksSeen {
    pub(crate) const VERSION: u8 = 1;
    pub(crate) const STARTED: u8 = 2;

    pub(crate) fn has(self, m: u8) -> bool {
        self.0 & m != 0
    }

    pub(crate) fn add(&mut self, m: u8) {
        self.0 |= m;
    }

    #[allow(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes a reference"
    )]
    fn is_empty(&self) -> bool {
        self.0 == 0
    }
}

/// One kubelet start of one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    pub host: String,
    /// The node it started as: the one it registers, else the one its
    /// host's kubelet last named, else `[node] name`, else the host.
    pub node: String,
    pub started_at: Micros,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_version: Option<String>,
    /// The first registration attempt (or the registration found done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_from: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<Micros>,
    /// The last CNI not-ready line so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_until: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at: Option<Micros>,
    /// The next start came first (with no ready marker before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Micros>,
    pub verdict: StartVerdict,
    /// The incidents that opened during it (the first
    /// [`START_INCIDENTS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incidents: Vec<String>,
    /// The kubelet's pid, once a line of it told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
    /// The kubelet's own start marks seen.
    #[serde(default, skip_serializing_if = "MarksSeen::is_empty")]
    pub(crate) marks: MarksSeen,
}

/// One phase of a start, from mark to mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PhaseSpan {
    pub phase: Phase,
    pub from: Micros,
    pub to: Micros,
}

impl PhaseSpan {
    #[must_use]
    pub fn ms(&self) -> i64 {
        (self.to - self.from) / MILLI
    }
}

/// The mark something in a start came after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Start,
    RegisterAttempt,
    Registered,
    Network,
    Ready,
}

crate::kinds::spelling!(Mark {
    Start => "start",
    RegisterAttempt => "register-attempt",
    Registered => "registered",
    Network => "network",
    Ready => "ready",
});

impl Mark {
    fn words(self) -> &'static str {
        match self {
            Mark::Start => "the kubelet's start",
            Mark::RegisterAttempt => "the registration attempt",
            Mark::Registered => "registration",
            Mark::Network => "the CNI's last not-ready line",
            Mark::Ready => "Ready",
        }
    }
}

/// Where in a start an incident opened: kept on the incident, for its
/// `show` and its mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartPlace {
    pub started_at: Micros,
    /// The mark before it.
    pub after: Mark,
    pub after_ms: i64,
    /// The phase it opened in, once the start has the mark that ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
}

impl StartPlace {
    /// "opened 7 ms after registration, in the ready phase of the start
    /// at 16:24:50.198 UTC".
    #[must_use]
    pub fn words(&self) -> String {
        let when = crate::time::clock(self.started_at);
        let after = self.after.words();
        match self.phase {
            Some(p) => format!(
                "opened {} ms after {after}, in the {p} phase of the start at {when}",
                self.after_ms
            ),
            None => format!(
                "opened {} ms after {after}, during the start at {when}",
                self.after_ms
            ),
        }
    }
}

impl Start {
    #[must_use]
    pub fn new(host: &str, node: &str, at: Micros) -> Self {
        Self {
            host: host.to_string(),
            node: node.to_string(),
            started_at: at,
            kubelet_version: None,
            register_from: None,
            registered_at: None,
            network_until: None,
            ready_at: None,
            ended_at: None,
            verdict: StartVerdict::Starting,
            incidents: Vec::new(),
            pid: None,
            marks: MarksSeen::default(),
        }
    }

    /// The marks in phase order, each with the phase it ends.
    fn marks(&self) -> [(Phase, Option<Micros>); 4] {
        // The last CNI line counts only before Ready.
        let network = self
            .network_until
            .filter(|&n| self.ready_at.is_none_or(|r| n <= r));
        [
            (Phase::Init, self.register_from),
            (Phase::Register, self.registered_at),
            (Phase::Network, network),
            (Phase::Ready, self.ready_at),
        ]
    }

    /// The phases from mark to mark; a mark the journal does not have (or
    /// one out of order) folds its phase into the next.
    #[must_use]
    pub fn phases(&self) -> Vec<PhaseSpan> {
        let mut out = Vec::with_capacity(4);
        let mut from = self.started_at;
        for (phase, mark) in self.marks() {
            if let Some(to) = mark.filter(|&t| t >= from) {
                out.push(PhaseSpan { phase, from, to });
                from = to;
            }
        }
        out
    }

    /// The longest phase (the first of equals), once the start is Ready.
    #[must_use]
    pub fn slowest(&self) -> Option<Phase> {
        self.ready_at?;
        let phases = self.phases();
        let longest = phases.iter().map(|p| p.to - p.from).max()?;
        phases
            .iter()
            .find(|p| p.to - p.from == longest)
            .map(|p| p.phase)
    }

    /// Start to Ready.
    #[must_use]
    pub fn time_to_ready_ms(&self) -> Option<i64> {
        self.ready_at.map(|r| (r - self.started_at) / MILLI)
    }

    /// Its end: the ready marker, or the next start.
    #[must_use]
    pub fn end(&self) -> Option<Micros> {
        self.ready_at.or(self.ended_at)
    }

    /// Still waiting for its ready marker (not ended by the next start).
    #[must_use]
    pub fn in_progress(&self) -> bool {
        self.ready_at.is_none() && self.ended_at.is_none()
    }

    /// Its verdict by its marks, with `budget` and its host's journal at
    /// `now`.
    #[must_use]
    pub fn judge(&self, budget: Micros, now: Micros) -> StartVerdict {
        match self.ready_at {
            Some(r) if r - self.started_at <= budget => StartVerdict::Ready,
            Some(_) => StartVerdict::Slow,
            None if self.ended_at.is_some() || now - self.started_at > budget => {
                StartVerdict::NeverReady
            }
            None => StartVerdict::Starting,
        }
    }

    /// Where in this start something at `at` happened: after which mark,
    /// and in which phase once the start has the mark that ends it.
    #[must_use]
    pub fn place(&self, at: Micros) -> StartPlace {
        let names = [
            Mark::RegisterAttempt,
            Mark::Registered,
            Mark::Network,
            Mark::Ready,
        ];
        let mut after = (Mark::Start, self.started_at);
        for ((_, mark), name) in self.marks().iter().zip(names) {
            if let Some(t) = mark.filter(|&t| t <= at && t >= after.1) {
                after = (name, t);
            }
        }
        // At a mark: the phase it begins (the last one's end is its own).
        let phases = self.phases();
        let phase = phases
            .iter()
            .find(|p| p.from <= at && at < p.to)
            .or_else(|| phases.last().filter(|p| p.to == at))
            .map(|p| p.phase);
        StartPlace {
            started_at: self.started_at,
            after: after.0,
            after_ms: (at - after.1) / MILLI,
            phase,
        }
    }

    /// Keeps `version` when it looks like one (`v1.31.2`, `v1.28.3-eks-…`).
    pub(crate) fn set_version(&mut self, version: &str) {
        let v = version.trim().trim_matches('"');
        let fits = v.len() <= VERSION_MAX
            && v.starts_with('v')
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-._".contains(&b));
        if fits && v.len() > 1 {
            self.kubelet_version = Some(v.to_string());
        }
    }

    /// Lists an incident that opened during it (the first few).
    pub(crate) fn list(&mut self, id: &str) -> bool {
        if self.incidents.len() >= START_INCIDENTS || self.incidents.iter().any(|i| i == id) {
            return false;
        }
        self.incidents.push(id.to_string());
        true
    }
}

/// The kubelet's version in its start line: `"Kubelet version"
/// kubeletVersion="v1.31.0"`, the JSON format's field, or the legacy
/// `Version: v1.18.0`.
#[must_use]
pub fn version_in(text: &str) -> Option<&str> {
    if let Some((_, rest)) = text.split_once("kubeletVersion") {
        let rest = rest.trim_start_matches(['"', ':', '=', ' ']);
        let end = rest.find(['"', ' ', ',', '}']).unwrap_or(rest.len());
        return Some(&rest[..end]);
    }
    let (_, rest) = text.split_once("] Version: ")?;
    Some(rest.split_whitespace().next().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND;

    fn start() -> Start {
        Start::new("h", "n", 0)
    }

    #[test]
    fn phases_go_mark_to_mark_and_a_missing_mark_folds_into_the_next() {
        let mut s = start();
        s.register_from = Some(2 * SECOND);
        s.registered_at = Some(3 * SECOND);
        s.network_until = Some(10 * SECOND);
        s.ready_at = Some(12 * SECOND);
        let p: Vec<_> = s.phases().iter().map(|p| (p.phase, p.ms())).collect();
        assert_eq!(
            p,
            [
                (Phase::Init, 2000),
                (Phase::Register, 1000),
                (Phase::Network, 7000),
                (Phase::Ready, 2000)
            ]
        );
        assert_eq!(s.slowest(), Some(Phase::Network));
        assert_eq!(s.time_to_ready_ms(), Some(12_000));
        // No attempt seen: its time is the registration's.
        s.register_from = None;
        s.network_until = Some(SECOND);
        let p: Vec<_> = s.phases().iter().map(|p| (p.phase, p.ms())).collect();
        assert_eq!(p, [(Phase::Register, 3000), (Phase::Ready, 9000)]);
        assert_eq!(s.slowest(), Some(Phase::Ready));
    }

    #[test]
    fn verdicts_by_budget_and_the_hosts_journal() {
        let budget = 300 * SECOND;
        let mut s = start();
        assert_eq!(s.judge(budget, 299 * SECOND), StartVerdict::Starting);
        assert_eq!(s.judge(budget, 301 * SECOND), StartVerdict::NeverReady);
        s.ready_at = Some(366 * SECOND);
        assert_eq!(s.judge(budget, 0), StartVerdict::Slow);
        s.ready_at = Some(5 * SECOND);
        assert_eq!(s.judge(budget, 0), StartVerdict::Ready);
        let mut e = start();
        e.ended_at = Some(SECOND);
        assert_eq!(e.judge(budget, SECOND), StartVerdict::NeverReady);
    }

    #[test]
    fn places_name_the_mark_before_and_the_phase() {
        let mut s = start();
        s.register_from = Some(1_000 * MILLI);
        s.registered_at = Some(1_005 * MILLI);
        let p = s.place(1_012 * MILLI);
        assert_eq!((p.after, p.after_ms, p.phase), (Mark::Registered, 7, None));
        s.ready_at = Some(1_420 * MILLI);
        assert_eq!(s.place(1_012 * MILLI).phase, Some(Phase::Ready));
        assert_eq!(s.place(500 * MILLI).phase, Some(Phase::Init));
        assert_eq!(s.place(500 * MILLI).after, Mark::Start);
    }

    #[test]
    fn versions_are_read_from_every_wording_and_kept_only_when_they_look_like_one() {
        let lines = [
            (
                r#"I0101 00:00:00.000000    1 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#,
                "v1.31.0",
            ),
            (
                r#"{"ts":1,"msg":"Kubelet version","v":0,"kubeletVersion":"v1.32.4"}"#,
                "v1.32.4",
            ),
            (
                "I0101 00:00:00.000000    1 server.go:416] Version: v1.18.0",
                "v1.18.0",
            ),
        ];
        for (line, want) in lines {
            assert_eq!(version_in(line), Some(want), "{line}");
        }
        let mut s = start();
        s.set_version("v1.28.3-eks-4f4795d");
        assert_eq!(s.kubelet_version.as_deref(), Some("v1.28.3-eks-4f4795d"));
        s.set_version("v1<script>");
        s.set_version(&"v9".repeat(100));
        assert_eq!(s.kubelet_version.as_deref(), Some("v1.28.3-eks-4f4795d"));
    }
}
