//! The wall clock, for the edges: the service, the CLI and the readers
//! read it here; the walled core ([`crate::pure`]) gets time passed in.

use crate::time::Micros;

/// The current wall-clock time.
#[must_use]
pub fn now() -> Micros {
    chrono::Utc::now().timestamp_micros()
}
