//! Tables for people, drawn from the typed answers (the JSON of `-o json`
//! is those answers serialised, nothing else).

use crate::query::{IncidentList, NodeList, SilenceList, SilenceOut, StatusOut};
use crate::report::{self, IncidentOut, terminal_text};
use sentinel_core::time::Zone;

pub(crate) fn incidents(list: &IncidentList, zone: Zone) -> String {
    if list.incidents.is_empty() {
        "no incidents\n".to_string()
    } else {
        report::table(&list.incidents, zone)
    }
}

pub(crate) fn incident(i: &IncidentOut, zone: Zone) -> String {
    report::details(i, zone)
}

/// An RFC 3339 time of an answer as people read it: the one human format,
/// in `zone`, the zone said (what is not a time is shown as it is).
fn when(t: &str, zone: Zone) -> String {
    sentinel_core::time::parse_rfc3339(t)
        .map_or_else(|| t.to_string(), |us| sentinel_core::time::human(us, zone))
}

fn when_opt(t: Option<&String>, zone: Zone) -> String {
    t.map_or_else(|| "-".to_string(), |t| when(t, zone))
}

pub(crate) fn nodes(list: &NodeList, zone: Zone) -> String {
    let rows: Vec<Vec<String>> = list
        .nodes
        .iter()
        .map(|r| {
            vec![
                terminal_text(&r.node, 80),
                terminal_text(&r.hosts.join(","), 80),
                r.incidents.to_string(),
                r.open.to_string(),
                r.retries.to_string(),
                when_opt(r.last_trouble_at.as_ref(), zone),
                r.last_verdict.clone().unwrap_or_default(),
            ]
        })
        .collect();
    report::columns(
        &[
            "NODE",
            "HOSTS",
            "INCIDENTS",
            "OPEN",
            "RETRIES",
            "LAST TROUBLE",
            "LAST VERDICT",
        ],
        &rows,
    )
}

pub(crate) fn silences(list: &SilenceList, zone: Zone) -> String {
    if list.silences.is_empty() {
        return "no silences\n".into();
    }
    let rows: Vec<Vec<String>> = list
        .silences
        .iter()
        .map(|s| {
            vec![
                s.id.clone(),
                terminal_text(&s.node, 60),
                s.kind.map_or("any", |k| k.as_str()).to_string(),
                s.cause.map_or("any", |c| c.as_str()).to_string(),
                match &s.expired_by {
                    Some(by) => format!("expired by {}", terminal_text(by, 30)),
                    None => s.state.to_string(),
                },
                when(&s.ends_at, zone),
                terminal_text(&s.created_by, 30),
                terminal_text(&s.comment, 60),
            ]
        })
        .collect();
    report::columns(
        &[
            "ID", "NODE", "KIND", "CAUSE", "STATE", "ENDS", "BY", "COMMENT",
        ],
        &rows,
    )
}

pub(crate) fn silence_added(s: &SilenceOut) -> String {
    let zone = crate::clock::zone(false);
    format!(
        "silence {} added: node {}{} until {} (by {})\n",
        s.id,
        terminal_text(&s.node, 60),
        s.cause
            .as_ref()
            .map(|c| format!(", cause {c}"))
            .unwrap_or_default()
            + &s.kind
                .as_ref()
                .map(|k| format!(", kind {k}"))
                .unwrap_or_default(),
        when(&s.ends_at, zone),
        terminal_text(&s.created_by, 30)
    )
}

pub(crate) fn silence_expired(s: &SilenceOut) -> String {
    format!(
        "silence {} ended; what it held back is delivered now if still due\n",
        s.id
    )
}

pub(crate) fn acknowledged(i: &IncidentOut) -> String {
    format!(
        "incident {} (node {}) acknowledged by {}: no more reminders; its resolved notice will say so\n",
        i.id,
        terminal_text(&i.node, 60),
        i.acknowledged
            .as_ref()
            .map(|a| a.by.as_str())
            .unwrap_or_default()
    )
}

/// `status` as rows: a key and its value a line, a line a delivery channel
/// and a line a silence (never a JSON blob in a table). The keys are the
/// JSON's, in its order.
pub(crate) fn status(s: &StatusOut, zone: Zone) -> String {
    let mut out = String::new();
    let mut row = |k: &str, shown: &str| {
        out.push_str(&format!("{k:<22} {}\n", terminal_text(shown, 400)));
    };
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    let secs = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:.1}"));
    row("service", &s.service);
    row("started_at", &when_opt(s.started_at.as_ref(), zone));
    row("journal", &opt(&s.journal));
    row("cursor", &opt(&s.cursor));
    row("last_entry_at", &when_opt(s.last_entry_at.as_ref(), zone));
    row(
        "caught_up",
        &s.caught_up.map_or_else(|| "-".into(), |b| b.to_string()),
    );
    row("lag_seconds", &secs(s.lag_seconds));
    for (k, v) in [
        ("entries", s.entries),
        ("kubelet_lines", s.kubelet_lines),
        ("recognized", s.recognized),
        ("unparsed", s.unparsed),
        ("open_incidents", s.open_incidents),
        ("incidents", s.incidents),
        ("entries_lost", s.entries_lost),
        ("entries_missing", s.entries_missing),
        ("untrusted", s.untrusted),
        ("evicted", s.evicted),
        ("evicted_forgotten", s.evicted_forgotten),
        ("hosts", s.hosts),
        ("hosts_refused", s.hosts_refused),
        ("hosts_given_way", s.hosts_given_way),
    ] {
        row(k, &v.to_string());
    }
    row(
        "max_hosts",
        &s.max_hosts.map_or_else(|| "-".into(), |n| n.to_string()),
    );
    row("silent_hosts", &list(&s.silent_hosts));
    row(
        "silent_incidents",
        match s.silent_incidents {
            Some(true) => "on",
            Some(false) => "off",
            None => "-",
        },
    );
    row("future_dated", &s.future_dated.to_string());
    row(
        "mail",
        &s.mail
            .as_ref()
            .map_or_else(|| "-".into(), ToString::to_string),
    );
    row("outbox", &s.outbox.to_string());
    row("outbox_oldest_seconds", &secs(s.outbox_oldest_seconds));
    row("mails_sent", &s.mails_sent.to_string());
    row("mails_failed", &s.mails_failed.to_string());
    row("last_delivery", &opt(&s.last_delivery));
    row(
        "last_delivery_at",
        &when_opt(s.last_delivery_at.as_ref(), zone),
    );
    if s.deliveries.is_empty() {
        row("deliveries", "-");
    }
    for d in &s.deliveries {
        row("delivery", &delivery_line(d, zone));
    }
    row("config", &opt(&s.config));
    row(
        "config_applied_at",
        &when_opt(s.config_applied_at.as_ref(), zone),
    );
    row("restart_needed", &list(&s.restart_needed));
    row("config_error", &opt(&s.config_error));
    row("store", &s.store);
    row("store_bytes", &s.store_bytes.to_string());
    row(
        "store_damaged",
        &if s.store_damaged > 0 {
            format!(
                "{} (records that could not be read, set aside; the rest is served)",
                s.store_damaged
            )
        } else {
            "0".to_string()
        },
    );
    if s.silences.is_empty() {
        row("silences", "-");
    }
    for x in &s.silences {
        row(
            "silence",
            &format!(
                "{}  node {}  kind {}  cause {}  until {}  by {}{}",
                x.id,
                x.node,
                x.kind.map_or("any", |k| k.as_str()),
                x.cause.map_or("any", |c| c.as_str()),
                when(&x.ends_at, zone),
                x.created_by,
                if x.comment.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", x.comment)
                }
            ),
        );
    }
    row("deliveries_failing", &s.deliveries_failing.to_string());
    out
}

/// One delivery channel's state on one line.
fn delivery_line(d: &crate::query::DeliveryOut, zone: Zone) -> String {
    let mut line = format!(
        "{}  {}  {}  outbox {}",
        d.channel,
        d.state,
        if d.target.is_empty() { "-" } else { &d.target },
        d.outbox
    );
    if let Some(w) = d.outbox_oldest_seconds {
        line.push_str(&format!(" (oldest {w:.0}s)"));
    }
    line.push_str(&format!("  sent {}  failed {}", d.sent, d.failed));
    if d.in_doubt > 0 {
        line.push_str(&format!("  in doubt {}", d.in_doubt));
    }
    if let Some(r) = &d.last_result {
        line.push_str(&format!(
            "  last: {r}{}",
            d.last_at
                .as_deref()
                .map(|t| format!(" at {}", when(t, zone)))
                .unwrap_or_default()
        ));
    }
    if let Some(t) = &d.last_success_at {
        line.push_str(&format!("  last success {}", when(t, zone)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_table_has_a_row_for_every_key_of_the_json_in_its_order() {
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&tmp.path().join("store")).unwrap();
        let s = crate::query::status(&store, None).unwrap();
        let json = serde_json::to_value(&s).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let table = status(&s, sentinel_core::time::Zone::Utc);
        let rows: Vec<&str> = table
            .lines()
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(rows, keys);
        assert!(
            table.contains("service                not running\n"),
            "{table}"
        );
        assert!(table.contains("lag_seconds            -\n"), "{table}");
    }

    /// A silence's kind is shown where its cause is (first-hour N23: a
    /// `--kind kubelet-down` silence read `cause any`).
    #[test]
    fn a_silences_kind_is_shown() {
        let silence = crate::store::Silence {
            id: "s1".into(),
            node: "n1".into(),
            cause: None,
            kind: Some(sentinel_core::tracker::IncidentKind::KubeletDown),
            starts_at: 0,
            ends_at: i64::MAX,
            created_by: "root".into(),
            comment: String::new(),
            expired_by: None,
            expired_at: None,
        };
        let out = crate::query::SilenceOut::new(&silence, 1);
        let table = silences(
            &crate::query::SilenceList {
                silences: vec![out],
            },
            sentinel_core::time::Zone::Utc,
        );
        let mut lines = table.lines();
        let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(&head[..4], ["ID", "NODE", "KIND", "CAUSE"], "{table}");
        assert_eq!(&row[..4], ["s1", "n1", "kubelet-down", "any"], "{table}");
    }
}
