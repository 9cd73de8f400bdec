//! What a pressure incident tells beyond its cause (design 5.3), as the
//! JSON contract shows it: the pods evicted, and what the host's last image
//! garbage collection did.

use serde::{Deserialize, Serialize};

use sentinel_core::signals::{Cause, GcOutcome};
use sentinel_core::time::rfc3339;
use sentinel_core::tracker::{ImageGc, Incident, one_line};

/// What the last image garbage collection did (design 3.3 `image_gc`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImageGcOut {
    pub at: String,
    /// `freed`, `not-enough` (it found fewer unused images than it had to
    /// free: deleting images could not free the disk) or `failed`.
    pub outcome: GcOutcome,
    /// What it had to free (null when its line does not say).
    pub wanted_bytes: Option<u64>,
    /// What it freed, or found eligible to free.
    pub freed_bytes: Option<u64>,
    /// Its line.
    pub text: String,
}

impl ImageGcOut {
    fn new(g: &ImageGc) -> Self {
        Self {
            at: rfc3339(g.at),
            outcome: g.outcome,
            wanted_bytes: g.wanted_bytes,
            freed_bytes: g.freed_bytes,
            text: one_line(&g.text, 300),
        }
    }
}

/// A not-ready incident's evicted pods (the first 16, distinct).
pub(super) fn evicted_pods(i: &Incident) -> Vec<String> {
    i.not_ready()
        .map(|n| n.evicted_pods.clone())
        .unwrap_or_default()
}

/// A disk-pressure incident's last image garbage collection.
pub(super) fn image_gc(i: &Incident) -> Option<ImageGcOut> {
    if i.cause() != Cause::DiskPressure {
        return None;
    }
    i.not_ready()?.image_gc.as_ref().map(ImageGcOut::new)
}
