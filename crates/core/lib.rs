//! kubelet-sentinel's walled core: entries in, incidents and alert
//! decisions out.
//!
//! # Architecture invariant: the wall
//!
//! Nothing here does I/O or reads a clock: no store, no tokio, no sled, no
//! lettre, no files, sockets, processes or threads, no environment, no
//! `now()`, no zone but UTC, and no decision that depends on a hash map's
//! order. Time comes in with the entries and the caller's ticks, and the
//! zone a saved log's wall times are read in comes from the edge
//! ([`time::Zone`]), so the same journal gives the same incidents whoever
//! reads it, wherever and whenever. What keeps it:
//!
//! - this is its own crate, below the service's: it cannot name the
//!   service's modules, and its dependencies are few and pure;
//! - chrono is built without its `clock` feature here (built alone, as
//!   `make lint` does), so `chrono::Local` and `Utc::now` do not exist;
//!   in the workspace build, where features unify and they do, the same
//!   `clippy.toml` disallows them;
//! - `clippy.toml` beside this file disallows the std items that reach out
//!   (`std::fs`, sockets, `std::process`, `std::thread`, `std::env`,
//!   `Instant`, `SystemTime`, stdio) and `HashMap`/`HashSet`;
//! - `clippy::wildcard_enum_match_arm` (below) makes a new incident kind a
//!   compile error at every dispatch, and no function here passes 100
//!   lines (`clippy.toml`);
//! - clippy's `items_after_test_module` keeps tests last, and the service's
//!   `tests/integration/architecture.rs` parses these files again (every
//!   item, macros' tokens, aliases resolved): the second net.
//!
//! # Layout
//!
//! Floors, bottom first (a module imports only lower floors):
//! `time` (µs, RFC 3339, the human format, placing wall times);
//! `defaults` (every default); `kinds` (one spelling per kind) and `model`
//! (entries, positions, globs); `parse` (bytes to lines with nom; total);
//! `signals` (lines to signals: the one table of kubelet messages) and
//! `context` (the node's other units' and the kernel's lines that explain trouble;
//! `context/kernel.rs`: the kernel's that node-problem-detector knows);
//! `tracker` (signals and time to incidents and decisions: each incident
//! kind's data and rules in `tracker/kind/`, what its lines do in
//! `tracker/machine/`, over the ledger of incidents (`tracker/ledger.rs`)
//! and the hosts' records (`tracker/hosts.rs`); its words at the edge in
//! `notify/words/`); `pipeline`
//! (joiner → parser → table → tracker, wired once; the hosts read in
//! `pipeline/hosts.rs`), `picture` and `advice`
//! (what an incident looks like, what to check next); `testing` (feature
//! `testing`: entries and one `replay`, for every crate's tests).

// A new incident kind (or verdict, or decision) is a compile error at
// each place that dispatches on it: no `_` arm stands in for it. Where a
// wildcard is meant (the many signal kinds a place does not care about),
// an `allow` with its reason says so.
#![warn(clippy::wildcard_enum_match_arm)]

pub mod advice;
pub mod context;
pub mod defaults;
pub mod keyed;
pub mod kinds;
pub mod model;
pub mod parse;
pub mod picture;
pub mod pipeline;
pub mod signals;
pub mod time;
pub mod tracker;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
