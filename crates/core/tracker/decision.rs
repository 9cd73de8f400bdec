//! What the tracker is told (an [`Observation`]) and what it answers (a
//! [`Decision`]): the vocabulary between the tracker and its caller, below
//! the incident so that every kind speaks it.

use serde::{Deserialize, Serialize};

use crate::signals::Signal;
use crate::time::Micros;

/// One recognised line, as the tracker sees it.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    pub signal: &'a Signal,
    pub at: Micros,
    pub host: Option<&'a str>,
    pub cursor: Option<&'a str>,
    /// The line's text, kept as evidence when the incident keeps it.
    pub text: &'a str,
    /// The line's own time cannot be trusted (before any kubelet, or more
    /// than a day past the reader's clock).
    pub clock_untrusted: bool,
    /// The writer's pid (the kubelet's, or pid 1's for systemd's lines).
    pub pid: Option<u32>,
    /// systemd's own word about the kubelet's unit, not the kubelet's.
    pub from_systemd: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlertKind {
    Opened,
    Repeat,
    Resolved,
}

impl AlertKind {
    /// In words, for log lines.
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            AlertKind::Opened => "alert",
            AlertKind::Repeat => "reminder",
            AlertKind::Resolved => "resolved notice",
        }
    }
}

/// What the tracker decided; the caller persists and acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    OpenIncident {
        id: String,
    },
    UpdateIncident {
        id: String,
    },
    /// The incident is now in [`Tracker::take_resolved`](crate::tracker::Tracker::take_resolved).
    ResolveIncident {
        id: String,
    },
    /// The incident leaves the history (see [`Tracker::take_forgotten`](crate::tracker::Tracker::take_forgotten)).
    ForgetIncident {
        id: String,
    },
    /// An alert is due; `about` carries what admission needs of its
    /// incident, so the caller need not look it up again.
    QueueAlert {
        id: String,
        kind: AlertKind,
        at: Micros,
        about: Alerted,
    },
    /// Node incident `id` is now covered by endpoint incident `by` (or by
    /// none): changed here if the tracker still holds it, else the caller
    /// changes its stored copy.
    CoverIncident {
        id: String,
        by: Option<String>,
    },
}

/// What an alert's incident is, as admission weighs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alerted {
    pub node: String,
    /// Its host ("" for none).
    pub host: String,
    /// The hosts whose trouble it is: its own, or an endpoint incident's
    /// nodes' (it is live when one of them is written now).
    pub hosts: Vec<String>,
    /// An alert for it went into the outbox before this one was raised.
    pub announced: bool,
}
