//! An incident's evidence: the log lines it keeps, bounded at its start
//! and at its end, so a retry storm grows neither memory nor the store.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::signals::{Cause, Role, SignalKind};
use crate::time::Micros;

/// Evidence lines kept at the start and at the end of an incident: bounded,
/// so a retry storm does not grow memory or the store. The first lines are
/// never replaced, so what is quoted from them never moves: at most
/// [`EVIDENCE_HEAD_MARKERS`] of them are markers (the last before the
/// trouble began), so the first trouble line always has its place; beyond
/// [`EVIDENCE_HEAD`], the first line of each cause still joins them (one
/// more per [`Cause`] at most).
pub(crate) const EVIDENCE_HEAD: usize = 8;
pub(crate) const EVIDENCE_HEAD_MARKERS: usize = 4;
pub(crate) const EVIDENCE_TAIL: usize = 8;
/// At most this many of the last lines are markers: a crash loop's
/// restarts after the trouble never push its last trouble lines out.
pub(crate) const EVIDENCE_TAIL_MARKERS: usize = 4;
/// Longest evidence text kept, in bytes.
pub(crate) const EVIDENCE_TEXT: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub at: Micros,
    pub cursor: Option<String>,
    pub signal: SignalKind,
    pub text: String,
    /// What the line's error points at (trouble and supporting lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

impl Evidence {
    #[must_use]
    pub fn new(at: Micros, cursor: Option<&str>, signal: SignalKind, text: &str) -> Self {
        let kept_part = crate::model::cut(text, EVIDENCE_TEXT);
        let mut kept = kept_part.to_string();
        if kept_part.len() < text.len() {
            kept.push('…');
        }
        Self {
            at,
            cursor: cursor.map(str::to_string),
            signal,
            text: kept,
            cause: None,
        }
    }

    #[must_use]
    pub fn with_cause(mut self, cause: Option<Cause>) -> Self {
        self.cause = cause;
        self
    }

    pub(crate) fn is_marker(&self) -> bool {
        self.signal.role() == Role::Marker
    }
}

/// Keeps `e` among the first lines (see [`EVIDENCE_HEAD`]) or the last,
/// counting what falls out in `dropped`.
pub(crate) fn keep(
    e: Evidence,
    head: &mut Vec<Evidence>,
    tail: &mut VecDeque<Evidence>,
    dropped: &mut u64,
) {
    let markers = head.iter().filter(|h| h.is_marker()).count();
    let trouble_kept = markers < head.len();
    if e.is_marker() {
        if !trouble_kept {
            // Before the trouble: the markers just before it matter most.
            head.push(e);
            if markers + 1 > EVIDENCE_HEAD_MARKERS {
                head.remove(0);
                *dropped += 1;
            }
            return;
        }
        if head.len() < EVIDENCE_HEAD && markers < EVIDENCE_HEAD_MARKERS {
            head.push(e);
            return;
        }
    } else if head.len() < EVIDENCE_HEAD
        || e.cause
            .is_some_and(|c| !head.iter().any(|h| h.cause == Some(c)))
    {
        head.push(e);
        return;
    }
    let marker = e.is_marker();
    tail.push_back(e);
    let over_markers =
        marker && tail.iter().filter(|t| t.is_marker()).count() > EVIDENCE_TAIL_MARKERS;
    if over_markers {
        // The oldest marker gives way, not a trouble line.
        if let Some(p) = tail.iter().position(Evidence::is_marker) {
            tail.remove(p);
            *dropped += 1;
        }
    } else if tail.len() > EVIDENCE_TAIL {
        tail.pop_front();
        *dropped += 1;
    }
}

/// The first lines and the last, merged in time order.
pub(crate) fn in_order<'a>(
    head: &'a [Evidence],
    tail: &'a VecDeque<Evidence>,
) -> impl Iterator<Item = &'a Evidence> {
    let mut head = head.iter().peekable();
    let mut tail = tail.iter().peekable();
    std::iter::from_fn(move || match (head.peek(), tail.peek()) {
        (Some(h), Some(t)) if t.at < h.at => tail.next(),
        (Some(_), _) => head.next(),
        (None, _) => tail.next(),
    })
}
