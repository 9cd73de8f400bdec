//! Acknowledgements: an operator's `ack` of an open incident, recorded on
//! the tracker's incident (ingest owns it) and committed at once, so that
//! no reminder goes out after the answer.

use super::Ingest;
use crate::status::{AckError, AckRequest, Acknowledged};
use crate::store::StoreError;

impl Ingest {
    /// Acknowledges an open incident (its id or a unique prefix): recorded
    /// on the tracker's incident and committed at once.
    pub(super) async fn acknowledge(
        &mut self,
        a: &AckRequest,
        wake: &crate::notify::Wake,
    ) -> Result<Result<Acknowledged, AckError>, StoreError> {
        let matches: Vec<String> = self
            .pipeline
            .tracker()
            .open_incidents()
            .filter(|i| i.id.starts_with(a.id.as_str()) && !a.id.is_empty())
            .map(|i| i.id.clone())
            .collect();
        let id = match matches.as_slice() {
            [one] => one.clone(),
            [] => {
                let store = self.store.clone();
                let prefix = a.id.clone();
                let known =
                    tokio::task::spawn_blocking(move || store.incidents_with_prefix(&prefix, 1))
                        .await
                        .map_err(|e| {
                            StoreError::interrupted(self.store.path(), "looking up an incident", &e)
                        })??;
                return Ok(Err(match known.first() {
                    Some(i) => AckError::Resolved(i.id.clone()),
                    None => AckError::NotOpen(a.id.clone()),
                }));
            }
            _ => return Ok(Err(AckError::Ambiguous(a.id.clone()))),
        };
        let ack = crate::tracker::Ack {
            by: a.by.clone(),
            at: (self.now)(),
            comment: a.comment.clone(),
        };
        self.pipeline.tracker_mut().acknowledge(&id, ack);
        self.changed.insert(id.clone());
        self.commit(Some(wake)).await?;
        let settings = self.pipeline.tracker().settings().clone();
        let node = self
            .pipeline
            .tracker()
            .incident(&id)
            .map(|i| i.node.clone())
            .unwrap_or_default();
        tracing::info!(
            "incident {id} (node {}) acknowledged by {}; no more reminders for it",
            crate::tracker::one_line(&node, 80),
            crate::tracker::one_line(&a.by, 80)
        );
        Ok(match self.pipeline.tracker().incident(&id) {
            Some(i) => Ok(Acknowledged {
                incident: i.clone(),
                settings,
            }),
            None => Err(AckError::NotOpen(id)),
        })
    }
}
