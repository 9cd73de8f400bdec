//! `sd_notify`: `READY=1` once the journal is open and the store loaded,
//! `STATUS=` with one line of health when it changes (at most once a
//! second), and `WATCHDOG=1` only while ingest and the reader answer: a
//! ping goes through ingest to the reader thread and back, so a stuck
//! reader or a stuck ingest stops the pings and systemd restarts the
//! service.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Control;
use crate::notify::sleep_until;
use crate::status::{DeliveryStats, StatusSnapshot};

/// Sends a notification; a failure is logged at debug level (outside
/// systemd nobody listens, and that is not an error).
pub(super) fn notify(state: &[(&str, &str)]) {
    if let Err(e) = systemd::daemon::notify(state.iter()) {
        tracing::debug!("sd_notify: {e}");
    }
}

/// The `STATUS=` line.
#[must_use]
pub(super) fn status_line(s: &StatusSnapshot, mail: &DeliveryStats, am: &DeliveryStats) -> String {
    let open = s.open.len();
    let mut line = format!(
        "{} {}: {} entries read, {} open incident{}",
        if s.caught_up {
            "following"
        } else {
            "catching up on"
        },
        s.journal,
        s.summary.entries,
        open,
        if open == 1 { "" } else { "s" }
    );
    if let Some(why) = &mail.disabled {
        if am.disabled.is_some() || mail.unusable {
            line.push_str(&format!("; mail off ({why})"));
        }
    } else if mail.outbox > 0 && mail.failing_attempts > 0 {
        line.push_str(&format!(
            "; mail outbox {}, delivery failing: {}",
            mail.outbox,
            mail.last_result.as_deref().unwrap_or("?")
        ));
    }
    if am.disabled.is_none() && am.outbox > 0 && am.failing_attempts > 0 {
        line.push_str(&format!(
            "; Alertmanager outbox {}, delivery failing: {}",
            am.outbox,
            am.last_result.as_deref().unwrap_or("?")
        ));
    }
    if !s.config.restart_needed.is_empty() {
        line.push_str("; restart needed for ");
        line.push_str(&s.config.restart_needed.join(", "));
    }
    line
}

pub(super) async fn run(
    mut status: watch::Receiver<StatusSnapshot>,
    mut mail: watch::Receiver<DeliveryStats>,
    mut am: watch::Receiver<DeliveryStats>,
    control: mpsc::Sender<Control>,
    stop: CancellationToken,
) {
    let watchdog = systemd::daemon::watchdog_enabled()
        .ok()
        .filter(|us| *us > 0)
        .map(|us| Duration::from_micros(us / 2));
    let mut next_ping = watchdog.map(|every| Instant::now() + every);
    let mut sent = String::new();
    let mut last_sent = Instant::now() - Duration::from_secs(1);
    let mut pending: Option<Instant> = None;
    loop {
        let line = status_line(&status.borrow(), &mail.borrow(), &am.borrow());
        if line != sent {
            if last_sent.elapsed() >= Duration::from_secs(1) {
                notify(&[("STATUS", &line)]);
                sent = line;
                last_sent = Instant::now();
                pending = None;
            } else {
                pending = Some(last_sent + Duration::from_secs(1));
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            r = status.changed() => if r.is_err() { return },
            r = mail.changed() => if r.is_err() { return },
            r = am.changed() => if r.is_err() { return },
            () = sleep_until(pending), if pending.is_some() => {}
            () = sleep_until(next_ping), if next_ping.is_some() => {
                let every = watchdog.unwrap_or(Duration::from_secs(30));
                next_ping = Some(Instant::now() + every);
                let (tx, rx) = oneshot::channel();
                if control.send(Control::Watchdog(tx)).await.is_err() {
                    return;
                }
                if let Ok(Ok(())) = tokio::time::timeout(every, rx).await {
                    notify(&[("WATCHDOG", "1")]);
                } else {
                    tracing::warn!(
                        "the journal reader or ingest did not answer the watchdog within {}s",
                        every.as_secs()
                    );
                }
            }
        }
    }
}
