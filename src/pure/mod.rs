//! The walled core: entries in, incidents and alert decisions out.
//!
//! Nothing here does I/O or reads a clock: no store, no tokio, no sled, no
//! lettre, no files, sockets or threads, no `now()`. Time comes in with
//! the entries and the caller's ticks, so the same journal gives the same
//! incidents whoever reads it and whenever. `tests/integration/
//! architecture.rs` fails the build's tests if a file here names an edge or
//! a module outside the core; the crate root re-exports these modules at
//! their old paths (`crate::tracker`, `crate::parse`, …).

pub(crate) mod advice;
pub(crate) mod defaults;
pub(crate) mod kinds;
pub(crate) mod model;
pub(crate) mod parse;
pub(crate) mod picture;
pub(crate) mod pipeline;
pub(crate) mod signals;
pub(crate) mod time;
pub(crate) mod tracker;
