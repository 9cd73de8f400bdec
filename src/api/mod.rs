//! Queries and metrics: what the service answers on its socket, and the
//! client the CLI asks it with.
//!
//! - [`query`]: the answers, from the store and the service's snapshots;
//!   the CLI uses the same code on the store when the service is stopped;
//! - [`metrics`]: `/metrics` from the snapshots (prometheus-client);
//! - [`http`]: the axum server on the Unix socket and TCP, with its limits;
//! - [`peer`]: who is asking on the socket, and who may change what;
//! - [`client`]: the CLI's request over the socket.
//!
//! sled allows one process per store, so while the service runs, the CLI
//! asks it here instead of opening the store.

pub mod client;
pub mod http;
pub mod metrics;
pub mod peer;
pub mod query;

pub use client::{ClientError, ask};
pub use peer::Peer;
pub use query::{
    AckRequest, Live, NewSilence, NodeRow, Request, Response, SilenceOut, StatusOut, answer,
};
