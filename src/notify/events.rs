//! Incidents and starts as journal events (issue 41): each change of an
//! incident that matters to a person (opened, over threshold, verdict
//! changed, resolved, acknowledged), each silence added and each start
//! whose verdict was reached is written to the journal as one structured
//! entry, with a stable `MESSAGE_ID` a type and fields a log store can
//! group by (the contract: [`FIELDS`]; `packaging/kubelet-sentinel.catalog`
//! explains each type to `journalctl -x`). One event a change, never one
//! a retry line.
//!
//! The service writes them through libsystemd (`sd_journal_send`) when it
//! runs under systemd (its stderr is the journal); `scan`, `run --once`
//! from a terminal and the tests write none. On a collector, the nodes'
//! events arrive with their journals under `kubelet-sentinel.service`:
//! never a kubelet line, so they open nothing twice.

use sentinel_core::time::rfc3339;
use sentinel_core::tracker::{Incident, Settings, Start};

/// The types of event, each with its `MESSAGE_ID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Opened,
    OverThreshold,
    VerdictChanged,
    Resolved,
    Acknowledged,
    Silenced,
    Start,
}

impl EventType {
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the contract the catalog test holds the catalog to"
        )
    )]
    pub(crate) const ALL: [EventType; 7] = [
        EventType::Opened,
        EventType::OverThreshold,
        EventType::VerdictChanged,
        EventType::Resolved,
        EventType::Acknowledged,
        EventType::Silenced,
        EventType::Start,
    ];

    /// Its `MESSAGE_ID` (128 bits, hex, as `journalctl --new-id128` makes
    /// them): a contract, never changed.
    #[must_use]
    pub(crate) fn message_id(self) -> &'static str {
        match self {
            EventType::Opened => "aea17aef24704ef7876e52c35c89e46b",
            EventType::OverThreshold => "4c5887387c3b46729e84d68e630ff796",
            EventType::VerdictChanged => "28df947843374897a5b199948a4cf816",
            EventType::Resolved => "db0afe5c905349219a8d277283106f1a",
            EventType::Acknowledged => "f5ba2c1ead7e45f78eada9e294dbbd5f",
            EventType::Silenced => "46ed979641004599bc6a195cec7b6980",
            EventType::Start => "41390a88e37e4dad8ea9e7befff580cb",
        }
    }

    /// Its `KUBELET_SENTINEL_EVENT`.
    #[must_use]
    pub(crate) fn name(self) -> &'static str {
        match self {
            EventType::Opened => "opened",
            EventType::OverThreshold => "over-threshold",
            EventType::VerdictChanged => "verdict-changed",
            EventType::Resolved => "resolved",
            EventType::Acknowledged => "acknowledged",
            EventType::Silenced => "silenced",
            EventType::Start => "start",
        }
    }

    /// The syslog priority: notice for what a person acts on, info for the
    /// rest.
    fn priority(self) -> u8 {
        match self {
            EventType::OverThreshold | EventType::Resolved => 5,
            _ => 6,
        }
    }
}

/// Every field an event may carry besides `MESSAGE`, `MESSAGE_ID`,
/// `PRIORITY` and `SYSLOG_IDENTIFIER`: one spelling, documented in the
/// README and used by the catalog (a test holds the three together).
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the contract the catalog test holds the catalog and README to"
    )
)]
pub(crate) const FIELDS: &[&str] = &[
    "KUBELET_SENTINEL_EVENT",
    "KUBELET_SENTINEL_INCIDENT",
    "KUBELET_SENTINEL_NODE",
    "KUBELET_SENTINEL_HOST",
    "KUBELET_SENTINEL_KIND",
    "KUBELET_SENTINEL_CAUSE",
    "KUBELET_SENTINEL_VERDICT",
    "KUBELET_SENTINEL_STATUS",
    "KUBELET_SENTINEL_ENDPOINT",
    "KUBELET_SENTINEL_OPENED_AT",
    "KUBELET_SENTINEL_RESOLVED_AT",
    "KUBELET_SENTINEL_RETRIES",
    "KUBELET_SENTINEL_BY",
    "KUBELET_SENTINEL_SILENCE",
    "KUBELET_SENTINEL_MATCH",
    "KUBELET_SENTINEL_ENDS_AT",
    "KUBELET_SENTINEL_STARTED_AT",
    "KUBELET_SENTINEL_TIME_TO_READY_MS",
    "KUBELET_SENTINEL_SLOWEST",
    "KUBELET_SENTINEL_KUBELET_VERSION",
];

/// One event: its type, its one-line `MESSAGE` and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub kind: EventType,
    pub message: String,
    pub fields: Vec<(&'static str, String)>,
}

/// Text from logs (node and host names) on one line, bounded.
fn one(s: &str) -> String {
    sentinel_core::tracker::one_line(s, 253)
}

impl Event {
    /// An incident's event of `kind`.
    #[must_use]
    pub(crate) fn incident(kind: EventType, i: &Incident, s: &Settings) -> Self {
        let node = one(&i.node);
        let verdict = i.verdict(s);
        let cause = i.cause();
        let message = match kind {
            EventType::Opened => format!("{} incident {} opened for node {node}", i.kind(), i.id),
            EventType::OverThreshold => format!(
                "{} incident {} of node {node} is over its threshold ({cause})",
                i.kind(),
                i.id
            ),
            EventType::VerdictChanged => {
                format!(
                    "{} incident {} of node {node} is now {verdict}",
                    i.kind(),
                    i.id
                )
            }
            EventType::Resolved => format!(
                "{} incident {} of node {node} resolved ({verdict}, {cause})",
                i.kind(),
                i.id
            ),
            EventType::Acknowledged => format!(
                "{} incident {} of node {node} acknowledged by {}",
                i.kind(),
                i.id,
                i.ack.as_ref().map_or("?".to_string(), |a| one(&a.by))
            ),
            EventType::Silenced | EventType::Start => String::new(),
        };
        let mut fields = vec![
            ("KUBELET_SENTINEL_EVENT", kind.name().to_string()),
            ("KUBELET_SENTINEL_INCIDENT", i.id.clone()),
            ("KUBELET_SENTINEL_NODE", node),
            ("KUBELET_SENTINEL_KIND", i.kind().as_str().to_string()),
            ("KUBELET_SENTINEL_CAUSE", cause.as_str().to_string()),
            ("KUBELET_SENTINEL_VERDICT", verdict.as_str().to_string()),
            ("KUBELET_SENTINEL_STATUS", i.status().as_str().to_string()),
            ("KUBELET_SENTINEL_OPENED_AT", rfc3339(i.opened_at)),
            ("KUBELET_SENTINEL_RETRIES", i.counted_retries().to_string()),
        ];
        if let Some(h) = &i.host {
            fields.push(("KUBELET_SENTINEL_HOST", one(h)));
        }
        if let Some(e) = i.api_endpoint() {
            fields.push(("KUBELET_SENTINEL_ENDPOINT", one(e)));
        }
        if let Some(r) = i.resolved_at {
            fields.push(("KUBELET_SENTINEL_RESOLVED_AT", rfc3339(r)));
        }
        if let (EventType::Acknowledged, Some(a)) = (kind, &i.ack) {
            fields.push(("KUBELET_SENTINEL_BY", one(&a.by)));
        }
        Self {
            kind,
            message,
            fields,
        }
    }

    /// A start whose verdict was reached.
    #[must_use]
    pub(crate) fn start(s: &Start) -> Self {
        let node = one(&s.node);
        let message = match s.time_to_ready_ms() {
            Some(ms) => format!(
                "node {node} started: Ready in {ms} ms ({}{})",
                s.verdict,
                s.slowest()
                    .map(|p| format!(", slowest phase {p}"))
                    .unwrap_or_default()
            ),
            None => format!("node {node} started and is not Ready ({})", s.verdict),
        };
        let mut fields = vec![
            (
                "KUBELET_SENTINEL_EVENT",
                EventType::Start.name().to_string(),
            ),
            ("KUBELET_SENTINEL_NODE", node),
            ("KUBELET_SENTINEL_HOST", one(&s.host)),
            ("KUBELET_SENTINEL_VERDICT", s.verdict.as_str().to_string()),
            ("KUBELET_SENTINEL_STARTED_AT", rfc3339(s.started_at)),
        ];
        if let Some(ms) = s.time_to_ready_ms() {
            fields.push(("KUBELET_SENTINEL_TIME_TO_READY_MS", ms.to_string()));
        }
        if let Some(p) = s.slowest() {
            fields.push(("KUBELET_SENTINEL_SLOWEST", p.as_str().to_string()));
        }
        if let Some(v) = &s.kubelet_version {
            fields.push(("KUBELET_SENTINEL_KUBELET_VERSION", v.clone()));
        }
        Self {
            kind: EventType::Start,
            message,
            fields,
        }
    }

    /// A silence added: its id, who, what it matches, until when.
    #[must_use]
    pub(crate) fn silence(
        id: &str,
        by: &str,
        matcher: &str,
        ends_at: sentinel_core::time::Micros,
    ) -> Self {
        Self {
            kind: EventType::Silenced,
            message: format!(
                "silence {id} added by {}: {} until {}",
                one(by),
                one(matcher),
                rfc3339(ends_at)
            ),
            fields: vec![
                (
                    "KUBELET_SENTINEL_EVENT",
                    EventType::Silenced.name().to_string(),
                ),
                ("KUBELET_SENTINEL_SILENCE", id.to_string()),
                ("KUBELET_SENTINEL_BY", one(by)),
                ("KUBELET_SENTINEL_MATCH", one(matcher)),
                ("KUBELET_SENTINEL_ENDS_AT", rfc3339(ends_at)),
            ],
        }
    }

    /// The entry's fields, as `sd_journal_send` takes them.
    #[must_use]
    pub(crate) fn entry(&self) -> Vec<String> {
        let mut out = vec![
            format!("MESSAGE={}", self.message),
            format!("MESSAGE_ID={}", self.kind.message_id()),
            format!("PRIORITY={}", self.kind.priority()),
            "SYSLOG_IDENTIFIER=kubelet-sentinel".to_string(),
        ];
        out.extend(self.fields.iter().map(|(k, v)| format!("{k}={v}")));
        out
    }
}

/// Where events go: the journal when the service runs under systemd,
/// nowhere otherwise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Events {
    enabled: bool,
}

impl Events {
    /// To the journal when this process's stderr is the journal
    /// (`JOURNAL_STREAM`, as systemd sets it).
    #[must_use]
    pub(crate) fn from_env() -> Self {
        Self {
            enabled: std::env::var_os("JOURNAL_STREAM").is_some(),
        }
    }

    /// Writes `events`, each as one journal entry; a failure is logged
    /// once a call and loses nothing else (the history is in the store).
    pub(crate) fn write(self, events: &[Event]) {
        if !self.enabled {
            return;
        }
        let mut failed = None;
        for e in events {
            let entry = e.entry();
            let args: Vec<&str> = entry.iter().map(String::as_str).collect();
            if let Err(err) = systemd::journal::send(&args) {
                failed = Some(err);
            }
        }
        if let Some(err) = failed {
            tracing::warn!("writing incident events to the journal: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog the package ships explains every type, with the
    /// `MESSAGE_ID`s of the code, and names only fields events carry.
    #[test]
    fn the_catalog_and_the_code_agree() {
        let catalog = include_str!("../../packaging/kubelet-sentinel.catalog");
        let ids: Vec<&str> = catalog
            .lines()
            .filter_map(|l| l.strip_prefix("-- "))
            .map(str::trim)
            .collect();
        let want: Vec<&str> = EventType::ALL.iter().map(|t| t.message_id()).collect();
        assert_eq!(ids, want, "the catalog's entries, in the code's order");
        for word in catalog.split('@').skip(1).step_by(2) {
            assert!(
                FIELDS.contains(&word) || word == "MESSAGE",
                "the catalog names @{word}@, which no event carries"
            );
        }
        let readme = include_str!("../../README.md");
        for f in FIELDS {
            assert!(readme.contains(f), "{f} is not in the README");
        }
        for t in EventType::ALL {
            assert!(
                readme.contains(t.message_id()),
                "{t:?}'s id is not in the README"
            );
        }
    }

    #[test]
    fn every_field_an_event_carries_is_in_the_contract() {
        let s = Settings::default();
        let r = sentinel_core::testing::replay(
            sentinel_core::testing::crash_loop(1_796_374_800_000_000, "h", 6),
            &s,
            sentinel_core::testing::End::Finish,
        );
        let i = r.one();
        let mut events: Vec<Event> = EventType::ALL[..5]
            .iter()
            .map(|k| Event::incident(*k, i, &s))
            .collect();
        events.push(Event::silence("abc", "root", "node worker-*", 0));
        for st in sentinel_core::testing::replay(
            sentinel_core::testing::six_starts(1_796_374_800_000_000),
            &s,
            sentinel_core::testing::End::Finish,
        )
        .starts
        {
            events.push(Event::start(&st));
        }
        for e in &events {
            for (k, v) in &e.fields {
                assert!(FIELDS.contains(k), "{k}");
                assert!(!v.contains('\n'), "{k}={v}");
            }
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{e:?}");
            let entry = e.entry();
            assert!(entry.iter().any(|f| f.starts_with("MESSAGE_ID=")));
        }
    }
}
