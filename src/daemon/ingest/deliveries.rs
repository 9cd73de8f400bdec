//! Delivery bookkeeping. The delivery tasks record a delivery themselves
//! (the store's `deliveries` tree, in the transaction that removes the
//! delivered entries) and tell ingest; ingest only tells the tracker, whose
//! open incidents carry `alerted_at` with them (an incident closed to make
//! room is forgotten only if nothing was ever said of it). Nothing is
//! written again for a delivery.

use crate::status::DeliveryReport;
use sentinel_core::tracker::Tracker;

/// Marks the reported incidents still open in `tracker` as alerted; true
/// when one changed (the tracker's state is then written with the next
/// commit: an endpoint incident's alert state lives there).
pub(super) fn record(tracker: &mut Tracker, r: &DeliveryReport) -> bool {
    let mut changed = false;
    for id in &r.incidents {
        changed |= tracker.mark_alerted(id, r.at);
    }
    changed
}
