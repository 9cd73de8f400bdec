//! Which incident changes are events (see [`crate::notify::events`]): what
//! was last told of each open incident (its verdict, whether it was over
//! its threshold), so each change is told once, across commits and
//! restarts (the open incidents a restart resumes were told before).

use std::collections::BTreeMap;

use crate::notify::events::{Event, EventType};
use sentinel_core::tracker::{Incident, Settings, Verdict};

/// What was told of each open incident: bounded by the open incidents.
#[derive(Debug, Default)]
pub(super) struct Told(BTreeMap<String, (Verdict, bool)>);

impl Told {
    /// The open incidents a (re)started service resumes: told before.
    pub(super) fn resumed<'a>(open: impl Iterator<Item = &'a Incident>, s: &Settings) -> Self {
        Self(
            open.map(|i| (i.id.clone(), (i.verdict(s), i.over_threshold_at.is_some())))
                .collect(),
        )
    }

    /// An incident taken out of the history (evicted before anything was
    /// said of it): nothing more is told of it, and it is not kept here.
    pub(super) fn forget(&mut self, id: &str) {
        self.0.remove(id);
    }

    /// The events of a commit's incidents (opened, changed or resolved in
    /// it), in order.
    pub(super) fn events(&mut self, incidents: &[Incident], s: &Settings) -> Vec<Event> {
        let mut out = Vec::new();
        for i in incidents {
            let verdict = i.verdict(s);
            let over = i.over_threshold_at.is_some();
            let before = self.0.get(&i.id).copied();
            let mut tell = |k| out.push(Event::incident(k, i, s));
            let resolved = i.resolved_at.is_some();
            match before {
                None => tell(EventType::Opened),
                // The end tells the verdict it ends with.
                Some((v, _)) if v != verdict && !resolved => tell(EventType::VerdictChanged),
                Some(_) => {}
            }
            if over && !before.is_some_and(|(_, o)| o) {
                tell(EventType::OverThreshold);
            }
            if resolved {
                tell(EventType::Resolved);
                self.0.remove(&i.id);
            } else {
                self.0.insert(i.id.clone(), (verdict, over));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::testing::{End, crash_loop, replay};

    /// Each change told once; an end forgets the incident, and so does
    /// its being taken out of the history (a flood of names leaves
    /// nothing behind).
    #[test]
    fn each_change_is_told_once_and_nothing_is_kept_past_the_end() {
        let s = Settings::default();
        let r = replay(crash_loop(1_796_374_800_000_000, "h", 6), &s, End::Finish);
        let mut open = r.one().clone();
        open.resolved_at = None;
        open.resolution = None;
        let mut told = Told::default();
        let kinds = |e: Vec<Event>| e.iter().map(|e| e.kind).collect::<Vec<_>>();
        assert_eq!(
            kinds(told.events(std::slice::from_ref(&open), &s)),
            [EventType::Opened, EventType::OverThreshold]
        );
        assert!(told.events(std::slice::from_ref(&open), &s).is_empty());
        told.forget(&open.id);
        assert!(told.0.is_empty());
        told.events(std::slice::from_ref(&open), &s);
        let mut ended = open.clone();
        ended.resolved_at = Some(open.last_signal_at);
        assert_eq!(
            kinds(told.events(std::slice::from_ref(&ended), &s)),
            [EventType::Resolved]
        );
        assert!(told.0.is_empty());
    }
}
