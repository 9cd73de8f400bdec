//! Queries and metrics: what the service answers on its socket, and the
//! client the CLI asks it with.
//!
//! The answers themselves are [`crate::query`]'s (typed; the CLI uses the
//! same code on the store when the service is stopped); this module is
//! the only place that knows HTTP.
//!
//! - [`metrics`]: `/metrics` from the snapshots (prometheus-client);
//! - [`http`]: the axum server on the Unix socket and TCP, with its limits;
//! - [`budget`]: what one listener may spend on answers being built and sent;
//! - [`peer`]: who is asking on the socket, and who may change what;
//! - [`client`]: the CLI's request over the socket.
//!
//! sled allows one process per store, so while the service runs, the CLI
//! asks it here instead of opening the store.

pub(crate) mod budget;
pub(crate) mod client;
pub(crate) mod http;
pub(crate) mod metrics;
pub(crate) mod peer;

pub(crate) use client::{ClientError, Refusal, Request, ask};
