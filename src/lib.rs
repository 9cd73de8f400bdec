//! kubelet-sentinel: tells the kubelet's harmless node-registration race
//! from real node-status trouble, keeps a per-node incident history, and
//! alerts.
//!
//! # Layout
//!
//! Floors, bottom first; each module's job in one line.
//!
//! - `crates/core`, the walled core, a crate of its own (the package
//!   `kubelet-sentinel-core`, named `sentinel_core` at every use site, as
//!   in `sentinel_core::tracker::Incident`; no I/O, no clock, no zone but
//!   UTC, no tokio, no sled):
//!   `model` (entries, positions, globs), `time` (µs, durations, placing
//!   text logs' times), `defaults` (every default), `kinds` (one spelling
//!   per cause, verdict, status, incident kind, channel, signal kind),
//!   `parse` (bytes to lines with nom; total), `signals` (lines to
//!   signals: the one table of kubelet messages), `tracker` (signals and
//!   time to incidents and alert decisions; a clock per host), `pipeline`
//!   (joiner → parser → table → tracker, wired once for every reader),
//!   `picture` and `advice` (what an incident looks like, what to check),
//!   `testing` (tests' entries and one `replay`; feature `testing`).
//! - `clock` (the wall clock and the machine's zone, decided here for the
//!   core: `--utc` or local; durations and `--since` as people type them)
//!   and `users` (users and groups through NSS).
//! - `journal/` (where entries come from: libsystemd on its own thread, one
//!   host or a collector's directory; export, json and text streams; `open`
//!   is the one place that picks a reader) and `config/` (raw TOML with
//!   places → typed settings; validation per section; the reload diff).
//! - `store/`: sled; every key layout, one transaction per batch.
//! - `status`: what the service's tasks publish and tell each other.
//! - `notify/` (the email, each incident kind's words in `words/`, one
//!   file a kind, grouping and backoff, SMTP and Alertmanager delivery)
//!   and `report` (the JSON contract and tables).
//! - `query/` (typed answers and typed errors; no HTTP, no JSON text) and
//!   `scan` (the `scan` driver).
//! - `api/`: the only place that knows HTTP: the query server and what it
//!   may spend on answers (`budget`), `/metrics`,
//!   the CLI's client, who is asking (peer credentials).
//! - `daemon/`: `run`: the tasks on tokio (`tasks.rs`), the single writer
//!   (`ingest/` and its parts), `sd_notify`, the config watcher.
//! - `cli/`: arguments, one file per command, tables from typed answers.
//!
//! # Architecture invariants
//!
//! - A module imports only modules on floors below its own, never one
//!   beside it: no circle, nothing upward. The core names no module of
//!   this crate (it cannot: it is another crate, below) and no edge
//!   (tokio, sled, lettre, hyper, libsystemd, files, sockets, threads,
//!   `now()`, the machine's zone): time comes in with the entries and the
//!   zone from `clock`, so the same journal gives the same incidents
//!   whoever reads it, wherever and whenever. The compiler and the core's
//!   own `clippy.toml` keep that; `tests/integration/architecture.rs`
//!   parses both crates and checks the floors, the core's names, that
//!   tests come last and that no file passes 720 lines of non-test code;
//!   clippy keeps functions under 120 lines (100 in the core).
//! - One writer per store tree. The ingest task (`daemon/ingest`) writes
//!   incidents, their indexes, positions, the tracker's state, counts and
//!   new outbox entries, each batch in one transaction; the delivery tasks
//!   (`notify`) write only their outbox entries' attempts and removals;
//!   silences are written by the query server's control handlers
//!   (`query::silences`, root or the admin group only) and pruned by
//!   ingest. `store/mod.rs`'s key table names the writer of every tree.
//! - HTTP status codes and JSON text exist only in `api/`; below it,
//!   answers and errors are types.
//! - Everything a stranger can grow (nodes, hosts, connections, silences)
//!   has a bound in `defaults` or the config.
//! - The crate's interface is the list re-exported below (what the binary,
//!   the integration tests, the benches and the examples use); everything
//!   else is `pub(crate)`, and `unreachable_pub` keeps it so.

mod api;
mod cli;
mod clock;
mod config;
mod daemon;
mod journal;
mod notify;
mod query;
mod report;
mod scan;
mod status;
mod store;
mod users;

// The interface.
pub use cli::{Cli, main};
pub use clock::now;
pub use config::Config;
pub use daemon::{Edges, RunOptions, Source, run};
pub use journal::collector::discover;
pub use journal::handle::add_matches;
pub use journal::{Format, Mode, ReadError, ReadOptions, Reader, ReaderCtl, ReaderEvent};
pub use notify::render::{FULL, Rendered, render, render_with};
pub use notify::{EmailTransport, smtp::Progress};
pub use report::IncidentOut;
pub use scan::{Input, ScanResult, scan};
pub use sentinel_core::model::{Entry, EntryFilter};
pub use sentinel_core::parse::parse_line;
pub use sentinel_core::pipeline::{Pipeline, Summary};
pub use sentinel_core::signals::recognize;
pub use sentinel_core::time::{Clock, Micros, SECOND, Zone, rfc3339};
pub use sentinel_core::tracker::{AlertKind, Incident, Settings};
pub use store::{Batch, Filter, Silence, StatsDelta, Store, StoreError};
