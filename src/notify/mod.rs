//! Alerts: the durable outbox and its delivery (design section 6).
//!
//! An alert is written to the outbox (sled) in the same transaction as the
//! incident change that raised it, and deleted only after the transport
//! accepted it: at least once, never lost. The [`mailer`] task delivers
//! the oldest due entry first, groups alerts raised within `group_wait` into
//! one email, retries with capped, jittered backoff, and bounds every
//! delivery in time and in what the server may send.
//!
//! Duplicates are possible in two windows only: the transport accepted a
//! mail and the process died before the outbox entry was deleted; or the
//! server's answer to the message body never came (the mail may have been
//! accepted), which is retried at most [`mailer::MAX_IN_DOUBT`] times and
//! counted.
//!
//! - [`render`]: the email (pure);
//! - `words`: each incident kind's words, one file a kind (pure): the
//!   mail's and Alertmanager's, asked once instead of matched at each site;
//! - [`outbox`]: grouping and backoff (pure);
//! - [`smtp`]: one SMTP delivery, bounded;
//! - [`transport`]: the configured transport and where its password comes from;
//! - [`mailer`]: the email task;
//! - [`alertmanager`]: the Alertmanager task (its own outbox entries and
//!   retries, firing alerts posted again);
//! - `worker`: the loop both tasks run under the service;
//! - [`events`]: incidents and starts as journal events.

pub(crate) mod alertmanager;
pub(crate) mod control;
pub(crate) mod events;
pub(crate) mod mailer;
pub(crate) mod outbox;
pub(crate) mod render;
pub(crate) mod smtp;
pub(crate) mod transport;
mod words;
mod worker;

pub(crate) use outbox::{backoff, next_group};
pub(crate) use render::{Rendered, render};
pub use transport::EmailTransport;
pub(crate) use transport::PasswordSource;

use sentinel_core::time::Micros;
use sentinel_core::tracker::{Incident, Settings};

/// Wakes the delivery tasks after a commit queued alerts (or a reload).
#[derive(Debug, Clone, Default)]
pub(crate) struct Wake {
    pub email: std::sync::Arc<tokio::sync::Notify>,
    pub alertmanager: std::sync::Arc<tokio::sync::Notify>,
}

impl Wake {
    pub(crate) fn notify(&self) {
        self.email.notify_one();
        self.alertmanager.notify_one();
    }
}

/// Sleeps until `at`, or forever without one: a `select!` arm for an
/// optional deadline (the tasks' one helper for it).
pub(crate) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Why a mail was not delivered, in the words an operator needs.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DeliveryError {
    #[error("cannot connect to {server}: {detail}")]
    Connect { server: String, detail: String },
    #[error("TLS with {server} failed: {detail}")]
    Tls { server: String, detail: String },
    #[error("{server} rejected the login: {detail}")]
    Auth { server: String, detail: String },
    /// `username` is set and the server offers no login (no AUTH PLAIN or
    /// LOGIN in its EHLO answer).
    #[error(
        "{server} offers no login (no AUTH PLAIN or LOGIN), and [alert.smtp] username is set: \
         remove username (and the password) for a relay that takes mail without one, or use \
         the port or TLS setting where it offers AUTH (often 587 with STARTTLS)"
    )]
    NoLogin { server: String },
    #[error("{server} rejected the mail or a recipient: {detail}")]
    Rejected { server: String, detail: String },
    /// 552: the message is larger than the server takes; a smaller one may go.
    #[error("{server} refused the mail's size: {detail}")]
    TooBig { server: String, detail: String },
    #[error("the conversation with {server} broke off: {detail}")]
    Lost { server: String, detail: String },
    #[error("{server} deferred the mail: {detail}")]
    Deferred { server: String, detail: String },
    #[error("{server} did not answer within {seconds}s{}", if *in_doubt { " after the message was sent (it may have been delivered)" } else { "" })]
    Timeout {
        server: String,
        seconds: u64,
        /// The message body was sent: the server may have accepted it.
        in_doubt: bool,
    },
    #[error(
        "{server} dropped the connection after the message was sent (it may have been delivered): {detail}"
    )]
    InDoubt { server: String, detail: String },
    #[error("{0}")]
    Other(String),
}

impl DeliveryError {
    /// The mail may have been accepted although no acceptance was seen.
    #[must_use]
    pub fn in_doubt(&self) -> bool {
        matches!(
            self,
            DeliveryError::InDoubt { .. } | DeliveryError::Timeout { in_doubt: true, .. }
        )
    }
}

/// A transport could not be set up from the config.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SetupError {
    #[error("[alert] {0}")]
    Invalid(String),
    #[error("SMTP password ({source_}): {detail}")]
    Password { source_: String, detail: String },
    #[error("[alert.smtp] ca_file {path}: {detail}")]
    Ca { path: String, detail: String },
}

/// A realistic sample incident for `test-email`: one more refused status
/// update than `[alert] retries`, two seconds apart, the last at `at`,
/// each stamped (klog's header, UTC) with its own time, replayed through
/// the tracker.
///
/// # Panics
/// Never: the lines always open an incident.
#[must_use]
pub(crate) fn sample_incident(at: Micros, settings: &Settings) -> Incident {
    use sentinel_core::model::{Entry, EntryFilter};
    let mut p = sentinel_core::pipeline::Pipeline::new(EntryFilter::default(), settings.clone());
    let mut decisions = Vec::new();
    let n = i64::from(settings.retries.min(50)) + 1;
    for k in 0..n {
        let t = at - (n - 1 - k) * 2 * sentinel_core::time::SECOND;
        let stamp = chrono::DateTime::from_timestamp_micros(t)
            .map(|d| d.format("%m%d %H:%M:%S%.6f").to_string())
            .unwrap_or_default();
        let line = format!(
            "E{stamp}    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"sample-node\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/sample-node?timeout=10s\\\": dial tcp 10.0.0.1:6443: connect: connection refused\""
        );
        p.push(
            Entry {
                at: Some(t),
                host: Some("sample-host".into()),
                unit: Some("kubelet.service".into()),
                message: line.into_bytes(),
                ..Entry::default()
            },
            &mut decisions,
        );
    }
    p.flush(&mut decisions);
    p.tracker()
        .open_incidents()
        .next()
        .cloned()
        .expect("the sample lines open an incident")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28: the test mail's sample is stamped with its own times (not
    /// `E0101 00:00:00`), and its picture spans the seconds it took.
    #[test]
    fn the_sample_incident_reads_like_a_real_one() {
        let settings = sentinel_core::tracker::Settings::default();
        let at = 1_764_600_000_000_000; // 2025-12-01 14:40:00 UTC
        let i = sample_incident(at, &settings);
        let n = i64::from(settings.retries) + 1;
        assert_eq!(i.opened_at, at - (n - 1) * 2 * sentinel_core::time::SECOND);
        assert_eq!(i.last_signal_at, at);
        let first = &i.evidence().next().unwrap().text;
        assert!(first.starts_with("E1201 14:39:"), "{first}");
        assert!(!i.evidence().any(|e| e.text.contains("E0101 00:00:00")));
        let mail =
            crate::notify::render(&[&i], sentinel_core::tracker::AlertKind::Opened, &settings);
        assert!(mail.text.contains("(10s; a column is"), "{}", mail.text);
    }

    /// Issue 27 (M1): a 1 MB node and host name (a collector's host can
    /// claim any `_HOSTNAME`) make a mail of a few KB, the names cut with
    /// an ellipsis, in the subject, the text and the HTML, alone and among
    /// others.
    #[test]
    fn huge_names_are_cut_in_mails() {
        let settings = sentinel_core::tracker::Settings::default();
        let at = 1_764_600_000_000_000;
        let mut i = sample_incident(at, &settings);
        let huge = "h".repeat(1 << 20);
        i.node.clone_from(&huge);
        i.host = Some(huge.clone());
        let other = sample_incident(at, &settings);
        for group in [vec![&i], vec![&i, &other]] {
            let mail =
                crate::notify::render(&group, sentinel_core::tracker::AlertKind::Opened, &settings);
            let size = mail.subject.len() + mail.text.len() + mail.html.len();

            assert!(
                size < 64 << 10,
                "{size} bytes for {} incident(s)",
                group.len()
            );
            assert!(
                mail.text.contains(&format!("{}…", "h".repeat(253))),
                "{}",
                mail.text
            );
        }
    }

    use crate::store::{Channel, OutboxEntry};
    use sentinel_core::time::SECOND;
    use sentinel_core::tracker::AlertKind;

    fn entry(seq: u64, kind: AlertKind, queued_at: Micros) -> OutboxEntry {
        OutboxEntry {
            seq,
            channel: Channel::Email,
            kind,
            incident: format!("i{seq}"),
            node: format!("n{seq}"),
            raised_at: queued_at,
            queued_at,
            attempts: 0,
            next_attempt_at: queued_at,
            last_error: None,
            in_doubt: 0,
            hold: None,
        }
    }

    /// A resolved notice held while its incident is open again (a hold of
    /// no silence) holds back the reminder queued after it, lets other
    /// incidents' alerts go, and never makes a group of nothing: the mail
    /// pass would look again at once, for ever.
    #[test]
    fn a_notice_waiting_for_its_incidents_end_holds_only_its_own() {
        let s = SECOND;
        let mut held = entry(1, AlertKind::Resolved, 0);
        held.hold = Some(crate::store::Hold {
            until: 0,
            silences: Vec::new(),
            nodes: None,
        });
        let mut reminder = entry(2, AlertKind::Repeat, s);
        reminder.incident = held.incident.clone();
        let other = entry(3, AlertKind::Opened, 2 * s);
        assert!(held.held_at(100 * s), "held past its look-again time");
        let alone = [held.clone(), reminder.clone()];
        assert_eq!(next_group(&alone, 0, 100 * s), None);
        assert_eq!(outbox::next_due(&alone, 0, 100 * s), None);
        let all = [held, reminder, other];
        let g = next_group(&all, 0, 100 * s).unwrap();
        assert_eq!(g.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn grouping_waits_then_takes_what_came_together() {
        let s = SECOND;
        let e = [
            entry(1, AlertKind::Opened, 0),
            entry(2, AlertKind::Opened, 10 * s),
            entry(3, AlertKind::Resolved, 12 * s),
            entry(4, AlertKind::Opened, 45 * s),
        ];
        assert_eq!(next_group(&e, 30 * s, 20 * s), None, "still gathering");
        let g = next_group(&e, 30 * s, 31 * s).unwrap();
        assert_eq!(g.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(next_group(&e[2..], 0, 12 * s).unwrap()[0].seq, 3);
        assert_eq!(next_group(&[], 0, 0), None);
    }

    #[test]
    fn a_reminder_never_overtakes_its_alert() {
        let s = SECOND;
        // The opening alert failed past the head-of-line limit and waits
        // for its backoff; its reminder and another incident's alert are due.
        let mut opened = entry(1, AlertKind::Opened, 0);
        opened.attempts = 9;
        opened.next_attempt_at = 100 * s;
        let mut reminder = entry(2, AlertKind::Repeat, 10 * s);
        reminder.incident = "i1".into();
        let other = entry(3, AlertKind::Opened, 10 * s);
        let e = [opened, reminder, other];
        let g = next_group(&e, 0, 20 * s).unwrap();
        assert_eq!(g.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
        let g = next_group(&e, 0, 100 * s).unwrap();
        assert_eq!(g[0].seq, 1, "the alert first, once it is due");
    }

    #[test]
    fn backoff_is_capped_and_jittered() {
        for seq in 0..50 {
            let b = backoff(0, 300 * SECOND, seq);
            assert!((SECOND..=SECOND * 5 / 4).contains(&b), "{b}");
            let b = backoff(3, 300 * SECOND, seq);
            assert!((8 * SECOND..=10 * SECOND).contains(&b), "{b}");
            assert_eq!(backoff(30, 300 * SECOND, seq), 300 * SECOND);
        }
        let spread: std::collections::BTreeSet<_> =
            (0..50).map(|s| backoff(4, 300 * SECOND, s)).collect();
        assert!(spread.len() > 10, "jitter spreads retries: {spread:?}");
    }

    /// A crash loop's alert says what a crash loop is, in Alertmanager's
    /// labels and in the mail (design 5.1).
    #[test]
    fn a_swap_crash_loops_alert_and_mail() {
        use sentinel_core::testing::{End, crash_loop, replay};
        let t0 = 1_752_596_690_000_000;
        let r = replay(
            crash_loop(t0, "w1", 40),
            &Settings::default(),
            End::At(t0 + 40 * 10_500 * 1000),
        );
        let i = r.one();
        let labels = crate::notify::alertmanager::labels(
            i,
            &r.settings,
            &std::collections::BTreeMap::default(),
        );
        assert_eq!(labels["alertname"], "KubeletServiceDown");
        assert_eq!(labels["kind"], "kubelet-down");
        assert_eq!(labels["cause"], "swap");
        assert_eq!(labels["verdict"], "crash-loop");
        let mail = crate::notify::render::render(&[i], AlertKind::Opened, &r.settings);
        assert!(
            mail.subject
                .starts_with("[kubelet-sentinel] w1: kubelet crash-looping, 40 restarts in"),
            "{}",
            mail.subject
        );
        assert!(mail.subject.ends_with("(swap)"), "{}", mail.subject);
        assert!(mail.text.contains("swapon --show"), "{}", mail.text);
        assert!(
            mail.text.contains("40 restarts by systemd"),
            "{}",
            mail.text
        );
    }
}
