//! Delivery to an Alertmanager cluster (its HTTP API v2, design section 6).
//!
//! Alerts go to every configured instance, as Prometheus sends them: the
//! instances share what they notified (their gossip), so one accepting an
//! alert is enough for it to be delivered. An outbox entry (written with the
//! incident change that raised it, like an email's) goes once one instance
//! accepted it; until then it is retried with its own backoff, apart from
//! email. While an incident is firing, its alert is also posted again every
//! `resend_interval` and says it ends four intervals later: an Alertmanager
//! that restarted (it keeps no alerts on disk) has it back within one
//! interval, and one that stops hearing of it lets it end by itself. The
//! resolved alert carries `endsAt`, the time the incident resolved.
//!
//! An alert's labels say what it is about and stay the same for the whole
//! incident (`alertname`, `node`, `host`, `cause`, `verdict`, `severity`,
//! and `[alert.alertmanager] labels`): per-node instances and a collector
//! reporting the same trouble post the same alert, which the Alertmanager
//! deduplicates; its routes group and silence them. When an incident's
//! cause changes, the alert under the old labels is ended.
//!
//! `alerts.rs` makes the JSON (pure); `task.rs` posts it.

mod alerts;
mod task;

pub use alerts::{
    ALERTNAME, ALERTNAME_DOWN, ALERTNAME_ENDPOINT, HEARTBEAT, alert, heartbeat, labels,
};
pub use task::AlertmanagerTask;
