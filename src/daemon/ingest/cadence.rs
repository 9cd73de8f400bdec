//! When ingest commits: at once for an alert, within [`BATCH_INTERVAL`] for
//! what a query or the mailer waits for, later for what only a restart
//! reads (each commit is a sled transaction and a flush).

use std::time::Duration;

use tokio::time::Instant;

use super::Ingest;

/// A batch commits after [`super::BATCH_ENTRIES`] entries, or this long
/// after the previous commit, whichever comes first, when
/// something of note changed (an incident, a decision, a delivery's
/// report) or while catching up…
pub(super) const BATCH_INTERVAL: Duration = Duration::from_millis(500);
/// …or this long, once caught up, when only entries were read that changed
/// nothing of note (a busy node's chatter): the cursor and the tracker's
/// state wait, as a kill -9 meanwhile only has the restart read those
/// entries again (the same incidents: the state is the one committed with
/// the cursor). Each commit is a transaction and a flush, which wakes every
/// idle thread of sled's I/O pool: at 500 ms a busy node committed twice a
/// second for nothing a query or a restart needs sooner.
const CURSOR_INTERVAL: Duration = Duration::from_secs(5);
/// …and this long when what changed is only open incidents' counts and
/// evidence (a retry joining an incident already open): what `incidents`
/// and `show` say of them lags by this much at most, and an open, a
/// resolution or an alert still commits within [`BATCH_INTERVAL`].
const UPDATE_INTERVAL: Duration = Duration::from_secs(2);

impl Ingest {
    /// Anything to commit: entries read (a cursor moved), a group's files
    /// told, or something of note.
    pub(super) fn dirty(&self) -> bool {
        self.pending.entries > 0 || !self.pending.files_changed.is_empty() || self.of_note()
    }

    /// Something a query or the mailer reads changed, besides entries
    /// read: committed within [`BATCH_INTERVAL`], the rest within
    /// [`CURSOR_INTERVAL`].
    fn of_note(&self) -> bool {
        !self.changed.is_empty() || self.marked()
    }

    /// Of note, and more than open incidents' updates.
    fn marked(&self) -> bool {
        self.pending.marked
            || !self.pending.decisions.is_empty()
            || !self.pending.extra.is_empty()
            || !self.pending.covers.is_empty()
            || self.pending.state_changed
    }

    /// When the next commit is due, if anything waits for one.
    pub(super) fn commit_at(&self) -> Option<Instant> {
        // Catching up, the entries read are progress `status` shows (and a
        // restart need not read again): each interval's are committed.
        let wait = if self.marked() || !self.caught_up {
            BATCH_INTERVAL
        } else if self.of_note() {
            UPDATE_INTERVAL
        } else {
            CURSOR_INTERVAL
        };
        self.dirty().then(|| self.commits.last + wait)
    }
}
