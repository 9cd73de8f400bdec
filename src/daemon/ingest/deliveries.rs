//! Delivery bookkeeping: the delivery tasks report which incidents' alerts
//! went out, and ingest (which owns the incidents) records it on them.

use tokio::sync::mpsc;

use super::Ingest;
use crate::status::DeliveryReport;
use crate::store::StoreError;

impl Ingest {
    /// The delivery of these incidents' alerts is recorded (open ones
    /// through the tracker, resolved ones from the store).
    pub(super) async fn delivered(&mut self, r: DeliveryReport) {
        for id in r.incidents {
            let open = self
                .pipeline
                .tracker()
                .incident(&id)
                .is_some_and(|i| i.resolved_at.is_none());
            if open {
                self.pipeline.tracker_mut().mark_alerted(&id, r.at);
                self.changed.insert(id);
                continue;
            }
            let store = self.store.clone();
            let wanted = id.clone();
            let found = tokio::task::spawn_blocking(move || store.incident(&wanted))
                .await
                .unwrap_or_else(|e| {
                    Err(StoreError::interrupted(
                        self.store.path(),
                        "reading an incident",
                        &e,
                    ))
                });
            match found {
                Ok(Some(mut i)) => {
                    if i.alerted_at.is_none() {
                        i.alerted_at = Some(r.at);
                        self.pending.extra.push(i);
                    }
                }
                // Pruned or forgotten since it was queued: nothing to record.
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    incident = %id,
                    "the delivery of incident {id} is not recorded on it: {e}"
                ),
            }
        }
    }

    /// Records the reports of deliveries made after ingest stopped
    /// (`run --once`), and commits them.
    pub(in crate::daemon) async fn finish_deliveries(
        &mut self,
        reports: &mut mpsc::UnboundedReceiver<DeliveryReport>,
    ) -> Result<(), StoreError> {
        while let Ok(r) = reports.try_recv() {
            self.delivered(r).await;
        }
        if self.dirty() {
            self.commit(None).await?;
        }
        Ok(())
    }
}
