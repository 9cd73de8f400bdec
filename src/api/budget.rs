//! What one listener may spend on answers: how many are being built, and
//! how many of their bytes wait for clients that have not read them.
//!
//! An answer is built whole (the store is read on the blocking pool, then
//! serialized); a client that never reads would otherwise keep its bytes
//! until [`super::http::CONNECTION_TIMEOUT`], and nothing bounded how many
//! such clients there were (S21: 200 of them kept 6.7 GB).
//!
//! Architecture invariant: a client that does not read holds at most its
//! share of [`MAX_UNSENT_BYTES`] per listener; what does not fit is refused
//! at once, never queued. Small answers (at most [`SMALL_ANSWER_BYTES`], as
//! `status`) and answers to root do not count, so they never wait behind
//! the bytes others hold; nor do the lists (`/incidents`, `/nodes`,
//! `/metrics`, `/silences`) take the answering slots a `status` needs:
//! they are built [`MAX_BULK_IN_FLIGHT`] at a time in their own queue
//! (root's among the others, so root never queues behind a crowd's lists).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::peer::Peer;

/// Requests per listener being answered at a time, lists apart.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// Lists (`/incidents`, `/nodes`, `/metrics`, `/silences`) per listener
/// being built at a time: each may be tens of MB while it is made.
pub(crate) const MAX_BULK_IN_FLIGHT: usize = 4;
/// How long a list waits for one of those: then it is refused (the
/// connection would otherwise end at its timeout, unanswered).
pub(crate) const BULK_WAIT: Duration = Duration::from_secs(10);
/// Bytes of answers per listener built and not yet taken by their clients.
/// One answer larger than this is sent alone.
pub(crate) const MAX_UNSENT_BYTES: usize = 64 << 20;
/// Answers up to this size do not count toward [`MAX_UNSENT_BYTES`].
pub(crate) const SMALL_ANSWER_BYTES: usize = 64 << 10;
/// What an answer hands hyper at a time: a copy, so that the answer itself
/// is freed with its last piece, whatever hyper still buffers.
const CHUNK_BYTES: usize = 16 << 10;

/// One listener's budgets.
pub(crate) struct Budgets {
    in_flight: Arc<Semaphore>,
    bulk: Arc<Semaphore>,
    unsent: Arc<Semaphore>,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            bulk: Arc::new(Semaphore::new(MAX_BULK_IN_FLIGHT)),
            unsent: Arc::new(Semaphore::new(MAX_UNSENT_BYTES)),
        }
    }
}

/// The answers built were more than the budget: the bytes others hold.
#[derive(Debug)]
pub(crate) struct Full {
    pub held: usize,
}

/// Why a request has no slot to be answered in.
#[derive(Debug)]
pub(crate) enum NoSlot {
    /// The server is closing.
    Closing,
    /// A list waited [`BULK_WAIT`] behind [`MAX_BULK_IN_FLIGHT`] others.
    Busy,
}

impl Budgets {
    /// A slot to build the answer to `method path` in: a list's own
    /// (waited for at most [`BULK_WAIT`]), or one of the others' (root's
    /// lists too: root never queues behind a crowd's lists).
    pub(crate) async fn slot(
        &self,
        peer: Peer,
        method: &str,
        path: &str,
    ) -> Result<OwnedSemaphorePermit, NoSlot> {
        let list = matches!(path, "/incidents" | "/nodes" | "/metrics" | "/silences");
        if method == "GET" && list && !is_root(peer) {
            tokio::time::timeout(BULK_WAIT, self.bulk.clone().acquire_owned())
                .await
                .map_err(|_| NoSlot::Busy)?
                .map_err(|_| NoSlot::Closing)
        } else {
            self.in_flight
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| NoSlot::Closing)
        }
    }

    /// The body that sends `answer` to `peer`, holding its share of the
    /// unsent budget until its last byte is handed over; or [`Full`].
    pub(crate) fn hold(&self, peer: Peer, answer: Bytes) -> Result<axum::body::Body, Full> {
        if answer.len() <= SMALL_ANSWER_BYTES || is_root(peer) {
            return Ok(axum::body::Body::from(answer));
        }
        let share = answer.len().min(MAX_UNSENT_BYTES);
        let permit = u32::try_from(share)
            .ok()
            .and_then(|n| self.unsent.clone().try_acquire_many_owned(n).ok())
            .ok_or(Full {
                held: MAX_UNSENT_BYTES - self.unsent.available_permits(),
            })?;
        Ok(axum::body::Body::new(Held {
            answer,
            sent: 0,
            permit: Some(permit),
        }))
    }
}

fn is_root(peer: Peer) -> bool {
    matches!(peer, Peer::Local { uid: 0, .. })
}

/// An answer handed out in copied pieces; its budget is given back, and
/// its bytes freed, when the last piece is (or the connection ends).
struct Held {
    answer: Bytes,
    sent: usize,
    permit: Option<OwnedSemaphorePermit>,
}

impl Body for Held {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let end = (self.sent + CHUNK_BYTES).min(self.answer.len());
        if self.sent == end {
            return Poll::Ready(None);
        }
        let piece = Bytes::copy_from_slice(&self.answer[self.sent..end]);
        self.sent = end;
        if end == self.answer.len() {
            self.answer = Bytes::new();
            self.sent = 0;
            self.permit = None;
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent == self.answer.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.answer.len() - self.sent) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    #[tokio::test]
    async fn a_held_answer_gives_its_budget_back_with_its_last_piece() {
        let b = Budgets::default();
        let stranger = Peer::Local {
            uid: 1000,
            gid: 1000,
        };
        let big = Bytes::from(vec![b'x'; MAX_UNSENT_BYTES / 2 + 1]);
        let first = b.hold(stranger, big.clone()).unwrap();
        assert!(b.hold(stranger, big.clone()).is_err());
        // Small answers and root's go through whatever is held.
        assert!(b.hold(stranger, Bytes::from_static(b"{}")).is_ok());
        assert!(b.hold(Peer::Local { uid: 0, gid: 0 }, big.clone()).is_ok());
        assert_eq!(first.size_hint().exact(), Some(big.len() as u64));
        let got = first.collect().await.unwrap().to_bytes();
        assert_eq!(got, big);
        assert_eq!(b.unsent.available_permits(), MAX_UNSENT_BYTES);
        // One answer past the whole budget is sent alone.
        let huge = Bytes::from(vec![b'y'; MAX_UNSENT_BYTES + 1]);
        let alone = b.hold(stranger, huge).unwrap();
        assert!(b.hold(stranger, big).is_err());
        drop(alone);
        assert_eq!(b.unsent.available_permits(), MAX_UNSENT_BYTES);
    }
}
