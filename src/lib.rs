//! kubelet-sentinel: tells the kubelet's harmless node-registration race
//! from real node-status trouble, keeps a per-node incident history, and
//! alerts.
//!
//! # Layout
//!
//! The pure core (no clock, no I/O) turns entries into incidents; the
//! edges around it read journals, keep the store, deliver alerts and
//! answer queries.
//!
//! - [`model`]: the entry that sources produce and the core consumes.
//! - [`journal`]: where entries come from: the journal through libsystemd
//!   (its own thread), `journalctl -o export|json` streams, saved text logs.
//! - [`parse`]: bytes to lines (nom; total: any bytes give a line).
//! - [`signals`]: lines to signals, the one table of kubelet messages.
//! - [`kinds`]: one spelling per kind (cause, verdict, status, ...) for
//!   serde, clap and `Display`.
//! - [`tracker`]: signals and time to incidents and alert decisions, the
//!   incident rules in one place; each host has its own clock.
//! - [`pipeline`]: entries through the joiner, parser, signal table and
//!   tracker, wired once for `scan`, catch-up and live following.
//! - [`store`]: sled; every key layout, one transaction per batch.
//! - [`notify`]: the alert email (pure) and its delivery (lettre).
//! - [`advice`]: what to check next for an incident's cause, shared by
//!   the email and the views (pure).
//! - [`query`]: typed answers from the store and the service's snapshots,
//!   for the socket and the CLI's offline path (no HTTP, no JSON text).
//! - [`api`]: the only place that knows HTTP: the query server and
//!   `/metrics`, the CLI's client, and who may change what (the socket
//!   peer's credentials).
//! - [`status`]: the snapshots the service's tasks publish.
//! - [`daemon`]: `run`: the tasks on tokio, signals, `sd_notify`, reloads.
//! - [`config`]: raw TOML to validated settings.
//! - [`defaults`]: every default, in one pure file that the tracker, the
//!   config and the command line read.
//! - [`report`], [`scan`], [`cli`]: output, the `scan` driver, the
//!   command line.
//! - [`time`]: microseconds, durations, and placing text logs' times.

mod pure;
pub use pure::{advice, defaults, kinds, model, parse, picture, pipeline, signals, time, tracker};

pub mod api;
pub mod cli;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod journal;
pub mod notify;
pub mod query;
pub mod report;
pub mod scan;
pub mod status;
pub mod store;
pub(crate) mod users;
