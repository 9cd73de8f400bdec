//! Acknowledgements: an operator's `ack` of an open incident, recorded on
//! the tracker's incident (ingest owns it; ingest then commits at once, so
//! that no reminder goes out after the answer).

use crate::status::{AckError, AckRequest};
use crate::store::{Store, StoreError};
use sentinel_core::time::Micros;
use sentinel_core::tracker::{Ack, Tracker};

/// What became of an acknowledgement in the tracker.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Acked {
    /// Recorded on this open incident.
    Open(String),
    /// No open incident has that id or prefix: the store says whether it
    /// names a resolved one.
    NotOpen,
    Refused(AckError),
}

/// Acknowledges the open incident `a` names (its id or a unique prefix)
/// at `at`, in `tracker`.
pub(super) fn acknowledge(tracker: &mut Tracker, a: &AckRequest, at: Micros) -> Acked {
    let matches: Vec<String> = tracker
        .open_incidents()
        .filter(|i| i.id.starts_with(a.id.as_str()) && !a.id.is_empty())
        .map(|i| i.id.clone())
        .collect();
    let id = match matches.as_slice() {
        [one] => one.clone(),
        [] => return Acked::NotOpen,
        _ => return Acked::Refused(AckError::Ambiguous(a.id.clone())),
    };
    let ack = Ack {
        by: a.by.clone(),
        at,
        comment: a.comment.clone(),
    };
    if tracker.acknowledge(&id, ack) {
        Acked::Open(id)
    } else {
        Acked::NotOpen
    }
}

/// Why no open incident has the id (or prefix) `id`: it names a resolved
/// one, or none at all (the store says).
pub(super) async fn not_open(store: &Store, id: &str) -> Result<AckError, StoreError> {
    let s = store.clone();
    let prefix = id.to_string();
    let known = tokio::task::spawn_blocking(move || s.incidents_with_prefix(&prefix, 1))
        .await
        .map_err(|e| StoreError::interrupted(store.path(), "looking up an incident", &e))??;
    Ok(match known.first() {
        Some(i) => AckError::Resolved(i.id.clone()),
        None => AckError::NotOpen(id.to_string()),
    })
}
