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
