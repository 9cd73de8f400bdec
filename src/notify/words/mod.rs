//! Each incident kind's words at the edge: its mail subject and counters,
//! its group table's count column, what a group of it is called, and its
//! Alertmanager alertname, severity and summary. One file a kind, each
//! implementing [`KindWords`] for that kind's [`Detail`] variant; the mail
//! ([`super::render`]) and Alertmanager (`alertmanager/alerts.rs`) ask
//! [`words`] once instead of matching on the kind at each site. Pure.

mod certificate;
mod endpoint;
mod host_silent;
mod kernel;
mod kubelet_down;
mod node_status;
mod not_ready;
mod pod_sandbox;

use sentinel_core::signals::Cause;
use sentinel_core::time::{Micros, human_duration};
use sentinel_core::tracker::{AlertKind, Detail, Incident, Settings};

// The alertnames, for the test that reads the shipped rules.
#[cfg(test)]
pub(crate) use {
    certificate::ALERTNAME_CERT, endpoint::ALERTNAME_ENDPOINT, host_silent::ALERTNAME_SILENT,
    kernel::ALERTNAME_KERNEL, kubelet_down::ALERTNAME_DOWN, node_status::ALERTNAME,
    not_ready::ALERTNAME_NOT_READY, pod_sandbox::ALERTNAME_SANDBOX,
};

/// What one kind of incident is called where people and Alertmanager read
/// it. `self` is the incident's own [`Detail`]; methods that need the rest
/// of the incident (its node, cause, times) take it too.
pub(crate) trait KindWords {
    /// One incident's mail subject, for an alert of `kind`.
    fn subject(&self, i: &Incident, kind: AlertKind) -> String;

    /// The mail's `counters:` line.
    fn counters(&self, i: &Incident) -> String;

    /// What a group table's count column shows, in the unit
    /// [`count_label`](Self::count_label) names.
    fn count_cell(&self) -> String;

    /// The count column's name in a group of this kind alone.
    fn count_label(&self) -> &'static str;

    /// A group of this kind alone, for a subject ("kubelets down").
    fn group_words(&self) -> &'static str;

    /// What the `persistent` verdict means for this kind.
    fn persistent(&self, s: &Settings) -> String {
        format!(
            "persistent: more than {} retries within {}",
            s.retries,
            human_duration(s.window)
        )
    }

    /// The nodes an incident stands for, at most `rows` by name, as a
    /// mail's line: only an endpoint incident has any.
    fn lost_nodes(&self, _i: &Incident, _rows: usize) -> Option<String> {
        None
    }

    /// Its Alertmanager alert's `alertname`.
    fn alertname(&self) -> &'static str;

    /// Its alert carries a `kind` label (node-status alerts keep the
    /// labels they had, so their fingerprints do not change on upgrade).
    fn kind_label(&self) -> bool {
        true
    }

    /// Its alert's `severity`: `critical` for trouble that does not go
    /// away by itself, `warning` else.
    fn severity(&self, i: &Incident) -> &'static str;

    /// Its alert's `summary` annotation.
    fn summary(&self, i: &Incident) -> String;
}

/// The words of `i`'s kind.
#[must_use]
pub(crate) fn words(i: &Incident) -> &dyn KindWords {
    match &i.detail {
        Detail::NodeStatus(n) => n,
        Detail::KubeletDown(d) => d,
        Detail::NotReady(r) => r,
        Detail::HostSilent(h) => h,
        Detail::Endpoint(o) => o,
        Detail::Certificate(c) => c,
        Detail::PodSandbox(p) => p,
        Detail::Kernel(k) => k,
    }
}

/// The words of a group's one kind (the mailer groups alerts of one kind);
/// `None` when its kinds differ, or it has none.
#[must_use]
pub(crate) fn group<'a>(incidents: &[&'a Incident]) -> Option<&'a dyn KindWords> {
    let first = incidents.first()?;
    let kind = first.kind();
    if incidents.iter().any(|i| i.kind() != kind) {
        return None;
    }
    Some(words(first))
}

/// How long the trouble lasted: first to last signal (the quiet time that
/// resolved it is not trouble).
#[must_use]
pub(crate) fn span(i: &Incident) -> Micros {
    i.last_signal_at - i.opened_at
}

/// How long an alert says the trouble lasted: to its resolution, or to its
/// last signal while it lasts.
fn alert_span(i: &Incident) -> Micros {
    i.resolved_at.unwrap_or(i.last_signal_at) - i.opened_at
}

/// The one format times are shown in; mails say UTC.
#[must_use]
pub(crate) fn when(us: Micros) -> String {
    // 0: no time was known (a line with none, a clock not believed), as
    // the tables say; never "1970-01-01" (D29, M5).
    if us == 0 {
        return "unknown".to_string();
    }
    sentinel_core::time::human(us, sentinel_core::time::Zone::Utc)
}

/// What an endpoint is doing, for a subject: "unreachable", "timing out".
#[must_use]
pub(crate) fn endpoint_words(c: Cause) -> &'static str {
    match c {
        Cause::ApiUnreachable => "unreachable",
        Cause::ApiTimeout => "timing out",
        Cause::Auth => "refusing the kubelets' credentials",
        Cause::Etcd => "reporting etcd unavailable",
        Cause::NodeMissing => "missing their Nodes",
        Cause::Conflict => "conflicting on their status",
        _ => "failing",
    }
}

/// The severity of trouble with the API server, by its cause: the Node is
/// gone, credentials refused, the API server unreachable are `critical`.
fn api_severity(c: Cause) -> &'static str {
    match c {
        Cause::NodeMissing | Cause::Auth | Cause::ApiUnreachable => "critical",
        _ => "warning",
    }
}

#[cfg(test)]
mod tests {
    use sentinel_core::testing::{End, crash_loop, replay};
    use sentinel_core::tracker::{Detail, Incident, Settings, Silent};

    /// A group's words are its one kind's; mixed kinds (or none) have
    /// none, and the mail says "incidents" and "count".
    #[test]
    fn a_group_has_words_only_of_one_kind() {
        let t0 = 1_752_596_690_000_000;
        let down = replay(
            crash_loop(t0, "w1", 40),
            &Settings::default(),
            End::At(t0 + 40 * 10_500 * 1000),
        )
        .one()
        .clone();
        let silent = Incident {
            detail: Detail::HostSilent(Silent { last_entry_at: t0 }),
            ..down.clone()
        };
        let words = |g: &[&Incident]| super::group(g).map(|w| (w.group_words(), w.count_label()));
        assert_eq!(words(&[&down, &down]), Some(("kubelets down", "restarts")));
        assert_eq!(words(&[&silent]), Some(("hosts silent", "-")));
        assert_eq!(words(&[&down, &silent]), None);
        assert_eq!(words(&[]), None);
    }

    /// An unknown time (0) reads "unknown" in a mail, never 1970 (M5).
    #[test]
    fn an_unknown_time_is_said_so() {
        assert_eq!(super::when(0), "unknown");
        assert!(super::when(1_752_596_690_000_000).starts_with("2025-07-15 16:24:50"));
    }
}
