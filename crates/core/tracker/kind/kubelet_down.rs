//! kubelet-down incidents (design 5.1): the kubelet's own life under
//! systemd. Its own data, its verdict (a crash loop, systemd giving up),
//! its cause (the fatal line's words, else the exit status, and the OOM
//! killer) and its diagnosis.

use serde::{Deserialize, Serialize};

use crate::context::{ContextKind, Trouble};
use crate::signals::Cause;
use crate::time::{Micros, clock, human_duration};
use crate::tracker::evidence::Evidence;
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{Resolution, Verdict};
use crate::tracker::words::{cause_explanation, one_line};

/// A kubelet-down incident's own counters (design 5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Down {
    /// Starts after an unrequested exit (systemd's restart lines, or a
    /// start after a failed exit where they are missing).
    pub restarts: u64,
    /// Unrequested exits systemd reported.
    pub exits: u64,
    /// The kubelet's fatal lines.
    pub fatals: u64,
    /// systemd's last word on how it ended (`code=exited, status=1/FAILURE`).
    pub last_exit: Option<String>,
    /// The kubelet's last fatal line (bounded like all evidence).
    pub last_fatal: Option<Evidence>,
    /// An unrequested exit (or fatal line) with no start after it yet.
    pub pending: Option<Micros>,
    /// When more than `[alert] restarts` restarts first fell within `window`.
    pub crash_loop_at: Option<Micros>,
    /// When systemd gave up (or the unit stayed failed for `resolve_after`).
    pub gave_up_at: Option<Micros>,
    /// The cause the last exit status says (no fatal line: `exec`, `killed`).
    pub exit_cause: Option<Cause>,
    /// The cause of the last fatal line: a tie between causes goes to it.
    pub last_cause: Option<Cause>,
    /// The first restart seen.
    pub first_restart_at: Option<Micros>,
    /// systemd scheduled a restart that has not started yet (its `Stopped`
    /// line is part of the restart, not a stop that was asked for).
    #[serde(default)]
    pub restarting: bool,
    /// The limit systemd's watchdog killed it at (`Watchdog timeout (limit
    /// 1min)!`): a kubelet killed again and again is one incident, so its
    /// quiet after a start must outlast that limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog_limit: Option<Micros>,
}

/// A systemd time span as systemd writes it (`1min`, `3min 20s`, `500ms`,
/// `1h 30min`), in microseconds; `None` for anything else.
pub(crate) fn systemd_span(text: &str) -> Option<Micros> {
    const UNITS: &[(&str, Micros)] = &[
        ("us", 1),
        ("ms", 1_000),
        ("min", 60_000_000),
        ("s", 1_000_000),
        ("h", 3_600_000_000),
        ("d", 86_400_000_000),
    ];
    let mut total: Micros = 0;
    let mut any = false;
    for word in text.split_whitespace() {
        let digits = word.find(|c: char| !c.is_ascii_digit())?;
        let n: Micros = word[..digits].parse().ok()?;
        let unit = &word[digits..];
        let (_, per) = UNITS.iter().find(|(u, _)| *u == unit)?;
        total = total.checked_add(n.checked_mul(*per)?)?;
        any = true;
    }
    any.then_some(total)
}

impl Down {
    /// Quiet came at `due` after an exit no restart followed: systemd is
    /// not restarting it, judged failed (true); otherwise nothing waits.
    pub(crate) fn judged_at_due(&mut self, due: Micros) -> bool {
        if self.pending.is_none() {
            return false;
        }
        self.gave_up_at = Some(due);
        true
    }

    /// Failed once systemd gave up, a crash loop over its threshold;
    /// else as every incident ends.
    pub(crate) fn verdict(&self, ended: Verdict) -> Verdict {
        if self.gave_up_at.is_some() {
            Verdict::Failed
        } else if self.crash_loop_at.is_some() {
            Verdict::CrashLoop
        } else {
            ended
        }
    }

    /// The fatal words, most frequent first, a tie to the latest; else
    /// what the exit status says; killed by a signal, and the OOM killer
    /// named the kubelet: `oom`.
    pub(crate) fn cause<D>(&self, i: &IncidentOf<D>) -> Cause {
        let best = i.causes.values().copied().max().unwrap_or(0);
        let top: Vec<Cause> = i
            .causes
            .iter()
            .filter(|(_, n)| **n == best && best > 0)
            .map(|(c, _)| *c)
            .collect();
        let cause = match top.as_slice() {
            [] => self.exit_cause.unwrap_or(Cause::Unknown),
            [one] if *one == Cause::Unknown => self.exit_cause.unwrap_or(Cause::Unknown),
            [one] => *one,
            many => self
                .last_cause
                .filter(|c| many.contains(c))
                .unwrap_or(many[many.len() - 1]),
        };
        if cause == Cause::Killed && Self::oom_killed(i) {
            Cause::Oom
        } else {
            cause
        }
    }

    /// The OOM killer killed the kubelet (a line in its context).
    pub(crate) fn oom_killed<D>(i: &IncidentOf<D>) -> bool {
        i.context.iter().any(|l| l.kind == ContextKind::OomKill)
    }

    /// An exit with no restart after it is judged failed `resolve_after`
    /// later (not once systemd gave up: then it stays open); else quiet
    /// for `resolve_after` after its last trouble.
    pub(crate) fn due<D>(&self, i: &IncidentOf<D>, resolve_after: Micros) -> Option<Micros> {
        // Killed by the watchdog: the next kill comes the limit after the
        // kubelet stops answering, whenever that is after its start.
        let resolve_after = self
            .watchdog_limit
            .map_or(resolve_after, |l| resolve_after.max(l.saturating_mul(2)));
        match self.pending {
            Some(_) if self.gave_up_at.is_some() => None,
            Some(p) => Some(p + resolve_after),
            None => Some(i.last_trouble_at + resolve_after),
        }
    }

    /// What its context would explain: the kubelet's own death (the OOM
    /// killer naming its pid).
    pub(crate) fn trouble(kubelet_pid: Option<u32>) -> Trouble {
        Trouble::KubeletDown { pid: kubelet_pid }
    }

    pub(crate) fn diagnosis<D>(
        &self,
        i: &IncidentOf<D>,
        verdict: Verdict,
        cause: Cause,
        s: &Settings,
    ) -> String {
        let d = self;
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
            i.node,
            clock(i.opened_at),
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
        parts.push(i.context_words());
        match verdict {
            Verdict::CrashLoop => parts.push(format!(
                "A crash loop: more than {} restarts within {}.",
                s.restarts,
                human_duration(s.window)
            )),
            Verdict::Failed => parts.push(format!(
                "systemd gave up at {}: the unit is failed and the kubelet is not running.",
                clock(d.gave_up_at.unwrap_or(i.last_trouble_at))
            )),
            Verdict::StartupRace
            | Verdict::Transient
            | Verdict::Persistent
            | Verdict::Undetermined
            | Verdict::Flapping => {}
        }
        match i.resolution {
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved: the kubelet ran {} after its last start without dying.",
                human_duration(s.resolve_after)
            )),
            Some(Resolution::NodeReady) => {
                parts.push("Resolved when the node reported Ready.".into());
            }
            Some(Resolution::Stopped) => parts.push(format!(
                "Ended at {} by a stop that was asked for.",
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
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }
}
