//! host-silent incidents (design 5.2): a collector's host whose journal
//! stopped while the others' went on. Its own data and its diagnosis; it
//! ends only with its host's next entry.

use serde::{Deserialize, Serialize};

use crate::time::{Micros, clock, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::Resolution;

/// A host-silent incident's own data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silent {
    /// The time the host's journal had reached when it stopped.
    pub last_entry_at: Micros,
}

impl Silent {
    /// One paragraph for a person: which host, since when, its last node.
    pub(crate) fn diagnosis<D>(&self, i: &IncidentOf<D>, settings: &Settings) -> String {
        let h = self;
        let host = i.host.as_deref().unwrap_or(&i.node);
        let last = h.last_entry_at;
        // Opened `silent_after` past its last entry; a late upload that
        // went on while it was behind moved its last entry, not the
        // opening.
        let after = (i.opened_at - last).max(settings.silent_after);
        let mut s = format!(
            "Host {host} (last node {}) has written nothing since {}: silent for {} or more \
             while the other hosts' journals went on. The host may be down, cut off from the \
             collector, or its journal upload (systemd-journal-upload) stopped.",
            i.node,
            clock(last),
            human_duration(after),
        );
        match (i.resolution, i.resolved_at) {
            (Some(Resolution::Wrote), Some(r)) if r - last >= settings.silent_after => {
                s.push_str(&format!(
                    " Resolved at {}: the host wrote again after {} of silence.",
                    clock(r),
                    human_duration(r - last)
                ));
            }
            (Some(Resolution::Wrote), Some(r)) => s.push_str(&format!(
                " Resolved at {}: its journal, uploaded late, caught up with the other hosts'.",
                clock(r)
            )),
            _ => {}
        }
        s
    }
}
