//! Alert admission: which channels an alert goes to, whether it is too old
//! to deliver (`[alert] max_age`), and which unannounced incidents are
//! announced now. Pure: ingest asks, then queues what it is told.

use std::collections::BTreeSet;

use crate::config::Config;
use crate::store::{Channel, OutboxEntry};
use sentinel_core::time::Micros;
use sentinel_core::tracker::AlertKind;

/// The channels that deliver with these settings.
pub(super) fn channels(config: &Config) -> Vec<Channel> {
    let mut c = Vec::new();
    if config.alert.emails() {
        c.push(Channel::Email);
    }
    if !config.alert.alertmanager.urls.is_empty() {
        c.push(Channel::Alertmanager);
    }
    c
}

/// What becomes of one alert the tracker raised.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Admit {
    /// No channel delivers: recorded, nothing queued.
    Undeliverable,
    /// The end of an incident nobody was told of: no notice.
    Unannounced,
    /// Already old when read: recorded, not delivered. `withhold`: the
    /// incident waits for its host's next live line to be announced.
    TooOld { withhold: bool },
    /// Queued on these channels.
    Queue(Vec<Channel>),
}

/// The alert an incident raised, as admission sees it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Raised {
    pub kind: AlertKind,
    /// Its incident was announced before.
    pub announced: bool,
    /// Its host is written now (a host written now is live however its
    /// clock is set).
    pub live: bool,
    /// Its host's clock cannot be trusted (lines dated in the future, or
    /// before there were kubelets): its age is when its lines were read,
    /// now, not what they say.
    pub clock_untrusted: bool,
    pub at: Micros,
}

/// Decides one alert at wall time `now`.
pub(super) fn admit(channels: Vec<Channel>, a: Raised, now: Micros, max_age: Micros) -> Admit {
    if channels.is_empty() {
        return Admit::Undeliverable;
    }
    if a.kind == AlertKind::Resolved && !a.announced {
        return Admit::Unannounced;
    }
    // Only what was already old when first read.
    if !a.live && !a.clock_untrusted && now - a.at > max_age {
        return Admit::TooOld {
            withhold: a.kind != AlertKind::Resolved,
        };
    }
    Admit::Queue(channels)
}

/// One outbox entry per channel for an admitted alert.
pub(super) fn outbox_entries(
    channels: &[Channel],
    kind: AlertKind,
    incident: &str,
    node: &str,
    raised_at: Micros,
    now: Micros,
) -> Vec<OutboxEntry> {
    channels
        .iter()
        .map(|&channel| OutboxEntry {
            seq: 0,
            channel,
            kind,
            incident: incident.to_string(),
            node: node.to_string(),
            raised_at,
            queued_at: now,
            attempts: 0,
            next_attempt_at: now,
            last_error: None,
            in_doubt: 0,
            hold: None,
        })
        .collect()
}

/// An open incident over threshold that nobody was told of.
#[derive(Debug, Clone)]
pub(super) struct Unannounced {
    pub id: String,
    /// When it crossed its threshold.
    pub crossed: Micros,
    pub last_trouble_at: Micros,
}

/// Which unannounced incidents are announced now (their trouble is younger
/// than `max_age`; with the time they crossed), and which are withheld.
pub(super) fn split_unannounced(
    all: impl Iterator<Item = Unannounced>,
    now: Micros,
    max_age: Micros,
) -> (Vec<(String, Micros)>, Vec<String>) {
    let (due, old): (Vec<_>, Vec<_>) = all.partition(|u| now - u.last_trouble_at <= max_age);
    (
        due.into_iter().map(|u| (u.id, u.crossed)).collect(),
        old.into_iter().map(|u| u.id).collect(),
    )
}

/// Whether a withheld incident whose host is followed is announced once
/// the reader has caught up: its trouble is within `max_age` of its host's
/// own newest entry (`host_now`, see `Pipeline::followed_clock`).
///
/// Why the host's clock, and only then: a line read while following was
/// written after the service started, whatever it is dated. A host whose
/// clock is days behind (and not before 2014, which is distrusted
/// outright) dates its trouble of now days ago, and by the wall clock it
/// would never be paged if it uploads its trouble once and nothing more
/// (S14). Measured against its own newest entry, its trouble is as young
/// as it is. A backlog uploaded late keeps its old trouble old: what ended
/// long before the upload's end is old by the host's clock too, and what
/// resolved within the upload is never announced (its end releases it
/// before the reader catches up). The catch-up at the start still goes by
/// the wall clock: there a host is not followed, and ancient history in
/// files already there is not paged.
pub(super) fn due_by_host_clock(
    last_trouble_at: Micros,
    host_now: Option<Micros>,
    max_age: Micros,
) -> bool {
    host_now.is_some_and(|h| h - last_trouble_at <= max_age)
}

/// What admission remembers between alerts.
#[derive(Debug, Default)]
pub(super) struct Admission {
    /// Open incidents whose alert `max_age` withheld (trouble already old
    /// when read): announced at their host's next live line.
    withheld: BTreeSet<String>,
    /// Withheld incidents that gained a line since the reader last caught
    /// up: judged by their hosts' own clocks once it has (see
    /// [`due_by_host_clock`]).
    recheck: BTreeSet<String>,
    /// The announcement after the first catch-up was made.
    announced_after_catch_up: bool,
}

impl Admission {
    pub(super) fn withhold(&mut self, id: &str) {
        self.withheld.insert(id.to_string());
        self.recheck.insert(id.to_string());
    }

    /// A withheld incident gained a line: judged again once caught up.
    pub(super) fn touch(&mut self, id: &str) {
        if self.withheld.contains(id) {
            self.recheck.insert(id.to_string());
        }
    }

    /// The withheld incidents to judge by their hosts' clocks now.
    pub(super) fn take_recheck(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.recheck)
    }

    pub(super) fn withhold_all(&mut self, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            self.withhold(&id);
        }
    }

    pub(super) fn is_withheld(&self, id: &str) -> bool {
        self.withheld.contains(id)
    }

    /// No longer withheld (announced, resolved or forgotten).
    pub(super) fn release(&mut self, id: &str) {
        self.withheld.remove(id);
        self.recheck.remove(id);
    }

    /// True the first time the reader caught up.
    pub(super) fn first_catch_up(&mut self) -> bool {
        !std::mem::replace(&mut self.announced_after_catch_up, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::time::SECOND;

    const HOUR: Micros = 3600 * SECOND;

    fn raised(kind: AlertKind, announced: bool, live: bool, raised_at: Micros) -> Raised {
        Raised {
            kind,
            announced,
            live,
            clock_untrusted: false,
            at: raised_at,
        }
    }

    #[test]
    fn an_alert_goes_to_every_channel_unless_it_is_old_or_says_nothing() {
        let both = vec![Channel::Email, Channel::Alertmanager];
        let now = 10 * HOUR;
        let fresh = raised(AlertKind::Opened, false, false, now - 1);
        assert_eq!(admit(Vec::new(), fresh, now, HOUR), Admit::Undeliverable);
        assert_eq!(
            admit(both.clone(), fresh, now, HOUR),
            Admit::Queue(both.clone())
        );
        // The end of what nobody heard of.
        let end = raised(AlertKind::Resolved, false, false, now);
        assert_eq!(admit(both.clone(), end, now, HOUR), Admit::Unannounced);
        // Old when read: withheld, unless it is a resolved notice.
        let old = raised(AlertKind::Opened, false, false, now - 2 * HOUR);
        assert_eq!(
            admit(both.clone(), old, now, HOUR),
            Admit::TooOld { withhold: true }
        );
        let old_end = raised(AlertKind::Resolved, true, false, now - 2 * HOUR);
        assert_eq!(
            admit(both.clone(), old_end, now, HOUR),
            Admit::TooOld { withhold: false }
        );
        // A host written now is live, whatever its clock says.
        let live = raised(AlertKind::Repeat, true, true, 0);
        assert_eq!(
            admit(both.clone(), live, now, HOUR),
            Admit::Queue(both.clone())
        );
        // A host whose clock cannot be trusted (1971, 2150): its trouble
        // is as old as when it was read, now, on its first upload too.
        let wrong_clock = Raised {
            clock_untrusted: true,
            ..raised(AlertKind::Opened, false, false, 0)
        };
        assert_eq!(
            admit(both.clone(), wrong_clock, now, HOUR),
            Admit::Queue(both)
        );
    }

    #[test]
    fn one_entry_per_channel_due_now() {
        let e = outbox_entries(
            &[Channel::Email, Channel::Alertmanager],
            AlertKind::Opened,
            "abc",
            "w-1",
            5,
            9,
        );
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].channel, Channel::Alertmanager);
        assert!(e.iter().all(|e| e.incident == "abc"
            && e.node == "w-1"
            && e.raised_at == 5
            && e.queued_at == 9
            && e.next_attempt_at == 9
            && e.attempts == 0));
    }

    #[test]
    fn only_young_trouble_is_announced_late() {
        let now = 10 * HOUR;
        let all = [
            Unannounced {
                id: "young".into(),
                crossed: 3,
                last_trouble_at: now - HOUR,
            },
            Unannounced {
                id: "old".into(),
                crossed: 4,
                last_trouble_at: now - HOUR - 1,
            },
        ];
        let (due, old) = split_unannounced(all.into_iter(), now, HOUR);
        assert_eq!(due, [("young".to_string(), 3)]);
        assert_eq!(old, ["old".to_string()]);
    }

    #[test]
    fn a_followed_host_is_judged_by_its_own_clock() {
        let day = 24 * HOUR;
        // Two days behind: its trouble of now is young by its clock.
        assert!(due_by_host_clock(100 * day, Some(100 * day + HOUR), day));
        // A late backlog's old trouble stays old by its own clock.
        assert!(!due_by_host_clock(100 * day, Some(102 * day), day));
        // A host read only in the catch-up has no clock to go by.
        assert!(!due_by_host_clock(100 * day, None, day));
    }

    #[test]
    fn withheld_incidents_and_the_first_catch_up() {
        let mut a = Admission::default();
        a.withhold("x");
        a.withhold_all(["y".to_string()]);
        assert!(a.is_withheld("x") && a.is_withheld("y"));
        a.touch("z");
        assert_eq!(a.take_recheck(), ["x", "y"].map(String::from).into());
        a.touch("x");
        a.release("x");
        assert!(!a.is_withheld("x") && a.take_recheck().is_empty());
        assert!(a.first_catch_up());
        assert!(!a.first_catch_up());
    }
}
