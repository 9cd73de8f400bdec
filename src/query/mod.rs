//! The queries, answered from the store and, while the service runs, its
//! snapshots: the same code serves the query socket and the CLI's
//! direct-store path, so both print the same.
//!
//! Architecture invariant: answers are typed values and failures a
//! [`QueryError`]; nothing here knows HTTP status codes or JSON text
//! (`api::http` maps both, the CLI renders the values).
//!
//! - [`incidents()`], [`incident()`], [`nodes()`], [`ack()`]: the history;
//! - [`starts()`]: the kubelets' starts;
//! - [`status()`]: the service's state;
//! - [`silences`]: `list`, `add`, `expire`.

mod incidents;
pub(crate) mod silences;
mod starts;
mod status;

pub(crate) use crate::status::AckRequest;
pub(crate) use incidents::{IncidentList, NodeList, ack, incident, incidents, nodes};
pub(crate) use silences::{MAX_SILENCE, MAX_SILENCES, NewSilence, SilenceList, SilenceOut};
pub(crate) use starts::{StartList, starts};
pub(crate) use status::{Delivery, DeliveryOut, StatusOut, lag, status};

use crate::status::{DeliveryStats, StatusSnapshot};
use crate::store::{Channel, Store, StoreError};
use sentinel_core::time::Micros;
use sentinel_core::tracker::Settings;

/// What the running service adds to the store.
#[derive(Debug, Clone, Default)]
pub(crate) struct Live {
    pub status: StatusSnapshot,
    pub deliveries: Vec<(Channel, DeliveryStats)>,
    /// Wall-clock time of the question.
    pub now: Micros,
    /// Silences in force at `now`.
    pub silences_active: u64,
    /// Records of the store set aside because they could not be read.
    pub store_damaged: u64,
}

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QueryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no incident {0}")]
    NoIncident(String),
    #[error(
        "no incident {0}: give at least 4 characters of the id (a prefix names an \
         incident when no other id starts with it)"
    )]
    ShortPrefix(String),
    #[error("{0} names more than one incident; give more of the id")]
    AmbiguousIncident(String),
    #[error("incident {0} has already resolved")]
    IncidentResolved(String),
    /// A silence that cannot be: which flag, and what it takes.
    #[error("{0}")]
    InvalidSilence(String),
    #[error(
        "{0} silences are in force, the most there may be ({MAX_SILENCES}); expire some, \
         or silence a pattern (worker-*) or a cause"
    )]
    TooManySilences(usize),
    #[error("no silence {0}")]
    NoSilence(String),
    #[error("silence {0} has already ended")]
    SilenceEnded(String),
    #[error("{0} names more than one silence; give more of the id")]
    AmbiguousSilence(String),
}

/// The time of the question: the service's, or this process's clock.
fn now(live: Option<&Live>) -> Micros {
    live.map_or_else(crate::clock::now, |l| l.now)
}

/// The settings incidents are judged by: the running service's, or the
/// ones the store recorded.
fn settings(store: &Store, live: Option<&Live>) -> Result<Settings, StoreError> {
    match live {
        Some(l) => Ok(l.status.settings.clone()),
        None => store.settings(),
    }
}

/// An id (16 hex digits, 64 bits) from what makes a record unique.
#[must_use]
pub(crate) fn new_id(parts: &[&[u8]]) -> String {
    // FNV-1a over the parts and a process-wide counter.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let h = sentinel_core::model::fnv1a(
        parts
            .iter()
            .copied()
            .chain(std::iter::once(&n.to_be_bytes()[..])),
    );
    format!("{h:016x}")
}
