//! `/metrics` (prometheus-client, `OpenMetrics` text). Every value comes from
//! the snapshots the service's tasks keep up to date, never from reading the
//! history: a scrape costs the same with 10 incidents or 100 000.

use std::collections::BTreeMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::query::{Live, lag};
use crate::status::START_BUCKETS;
use sentinel_core::time::{Micros, SECOND};
use sentinel_core::tracker::{Phase, StartVerdict, Verdict};

type Labels = Vec<(&'static str, String)>;

/// A label value as the exposition format wants it. prometheus-client
/// writes label values as given, and node and host names come from log
/// lines: a quote or a newline in one must not end the value.
fn label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug)]
struct Snapshot(Live);

fn seconds(us: Micros) -> f64 {
    us as f64 / SECOND as f64
}

impl Snapshot {
    fn counter(
        enc: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        samples: &[(Labels, u64)],
    ) -> std::fmt::Result {
        let probe = ConstCounter::new(0u64);
        let mut m = enc.encode_descriptor(name, help, None, probe.metric_type())?;
        if let [(labels, v)] = samples {
            if labels.is_empty() {
                return ConstCounter::new(*v).encode(m);
            }
        }
        for (labels, v) in samples {
            ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn gauge(
        enc: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        samples: &[(Labels, f64)],
    ) -> std::fmt::Result {
        let probe = ConstGauge::new(0.0f64);
        let mut m = enc.encode_descriptor(name, help, None, probe.metric_type())?;
        if let [(labels, v)] = samples {
            if labels.is_empty() {
                return ConstGauge::new(*v).encode(m);
            }
        }
        for (labels, v) in samples {
            ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
        }
        Ok(())
    }
}

fn one<T>(v: T) -> Vec<(Labels, T)> {
    vec![(Vec::new(), v)]
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        self.encode_reading(&mut enc)?;
        self.encode_incidents(&mut enc)?;
        self.encode_starts(&mut enc)?;
        self.encode_delivery(&mut enc)
    }
}

impl Snapshot {
    /// The metrics of the service and its reader: build, entries, lines, hosts, lag.
    fn encode_reading(&self, enc: &mut DescriptorEncoder) -> std::fmt::Result {
        let l = &self.0;
        let s = &l.status;
        let sum = &s.summary;
        Self::gauge(
            enc,
            "build_info",
            "The running version.",
            &[(
                vec![("version", env!("CARGO_PKG_VERSION").to_string())],
                1.0,
            )],
        )?;
        Self::counter(
            enc,
            "entries_read",
            "Journal entries read.",
            &one(sum.entries),
        )?;
        Self::counter(
            enc,
            "kubelet_lines",
            "Entries that belong to the kubelet.",
            &one(sum.kubelet_lines),
        )?;
        Self::counter(
            enc,
            "recognized",
            "Kubelet lines recognised as a signal.",
            &one(sum.recognized),
        )?;
        Self::counter(
            enc,
            "unparsed",
            "Kubelet entries that are neither a line nor a continuation.",
            &one(sum.unparsed),
        )?;
        Self::counter(
            enc,
            "context_lines",
            "Lines of the node's other units and the kernel kept for context: they explain \
             incidents, never open one.",
            &one(sum.context_lines),
        )?;
        Self::counter(
            enc,
            "hosts_refused",
            "Entries of hosts new past [fleet] max_hosts: not read (every host had an open \
             incident).",
            &one(sum.hosts_refused),
        )?;
        Self::counter(
            enc,
            "hosts_given_way",
            "Hosts whose records gave way to new hosts past [fleet] max_hosts: idle a day, or \
             the quietest with no open incident.",
            &one(sum.hosts_given_way),
        )?;
        Self::counter(
            enc,
            "untrusted_lines",
            "Entries that look like the kubelet's (identifier or container name) from a writer \
             that is not trusted: ignored.",
            &one(sum.untrusted),
        )?;
        Self::counter(
            enc,
            "entries_lost",
            "Journal entries removed (rotation, vacuum) before they were read.",
            &one(sum.entries_lost),
        )?;
        Self::counter(
            enc,
            "entries_missing",
            "Entries damaged journal files record that the reader could not walk.",
            &one(sum.entries_missing),
        )?;
        let hosts: Vec<(Labels, f64)> = s
            .hosts
            .iter()
            .map(|(h, t)| (vec![("host", label(h))], seconds(*t)))
            .collect();
        Self::gauge(
            enc,
            "host_last_entry_timestamp_seconds",
            "The newest entry's time, by host the reader has seen since it started (a collector: \
             one a host); a host far behind the others has gone silent.",
            &hosts,
        )?;
        Self::counter(
            enc,
            "incidents_evicted",
            "Incidents closed to stay within [incidents] max_nodes_per_host and max_nodes.",
            &one(s.evicted),
        )?;
        Self::counter(
            enc,
            "incidents_forgotten",
            "Of the evicted, those below the threshold and never announced, which the history \
             does not keep.",
            &one(s.forgotten),
        )?;
        Self::counter(
            enc,
            "future_dated",
            "Entries dated more than a day after this machine's clock, read at their host's time.",
            &one(sum.future_dated),
        )?;
        Self::counter(
            enc,
            "reader_restarts",
            "Times the journal reader was restarted after a failure.",
            &one(s.reader_restarts),
        )?;
        Ok(())
    }

    /// The metrics of the history and the open incidents.
    fn encode_incidents(&self, enc: &mut DescriptorEncoder) -> std::fmt::Result {
        let l = &self.0;
        let s = &l.status;
        let sum = &s.summary;
        // The history by verdict: resolved ones as stored, open ones as now.
        let mut by_verdict: BTreeMap<&str, u64> =
            Verdict::ALL.iter().map(|v| (v.as_str(), 0)).collect();
        for (v, n) in &s.history.resolved {
            *by_verdict.entry(v.as_str()).or_default() += n;
        }
        for o in &s.open {
            *by_verdict.entry(o.verdict.as_str()).or_default() += 1;
        }
        let samples: Vec<(Labels, f64)> = by_verdict
            .iter()
            .map(|(v, n)| (vec![("verdict", (*v).to_string())], *n as f64))
            .collect();
        Self::gauge(
            enc,
            "incidents",
            "Incidents in the history, by verdict (open ones by their verdict so far).",
            &samples,
        )?;
        Self::gauge(
            enc,
            "open_incidents",
            "Incidents still open.",
            &one(s.open.len() as f64),
        )?;
        let open: Vec<(Labels, f64)> = s
            .open
            .iter()
            .map(|o| {
                (
                    vec![
                        ("node", label(&o.node)),
                        ("host", label(&o.host)),
                        ("kind", o.kind.as_str().to_string()),
                        ("cause", o.cause.as_str().to_string()),
                        ("verdict", o.verdict.as_str().to_string()),
                        ("id", label(&o.id)),
                    ],
                    1.0,
                )
            })
            .collect();
        Self::gauge(
            enc,
            "open_incident",
            "One series per open incident (1), labelled with its node, host, kind, cause and verdict.",
            &open,
        )?;
        let retries: Vec<(Labels, f64)> = s
            .open
            .iter()
            .map(|o| {
                (
                    vec![
                        ("node", label(&o.node)),
                        ("cause", o.cause.as_str().to_string()),
                        ("verdict", o.verdict.as_str().to_string()),
                    ],
                    o.retries as f64,
                )
            })
            .collect();
        Self::gauge(
            enc,
            "open_incident_retries",
            "Retries (status updates and registrations) of each node's open incident.",
            &retries,
        )?;
        let per_node: Vec<(Labels, u64)> = s
            .retries_by_node
            .iter()
            .map(|(n, r)| (vec![("node", label(n))], *r))
            .collect();
        Self::counter(
            enc,
            "node_status_retries",
            "Status update retries and failed registrations since the service started, by node; a \
             node's series ends when its incident resolves.",
            &per_node,
        )?;
        Self::gauge(
            enc,
            "journal_lag_seconds",
            "How far behind the journal the reader is (0 once caught up).",
            &one(seconds(lag(s, l.now))),
        )?;
        Self::gauge(
            enc,
            "last_entry_timestamp_seconds",
            "Time of the last entry read.",
            &one(sum.last_at.map_or(0.0, seconds)),
        )?;
        Ok(())
    }

    /// The kubelets' starts judged since the service started (design 5.5).
    fn encode_starts(&self, enc: &mut DescriptorEncoder) -> std::fmt::Result {
        let st = &self.0.status.starts;
        let by_verdict: Vec<(Labels, u64)> = StartVerdict::ALL
            .iter()
            .filter(|v| **v != StartVerdict::Starting)
            .map(|v| {
                let n = st.by_verdict.get(v.as_str()).copied().unwrap_or(0);
                (vec![("verdict", v.as_str().to_string())], n)
            })
            .collect();
        Self::counter(
            enc,
            "starts",
            "Kubelet starts by the verdict reached (ready, slow past [alert] start_budget, \
             never-ready), since the service started; a never-ready start that becomes Ready \
             later counts again as ready or slow.",
            &by_verdict,
        )?;
        let mut m = enc.encode_descriptor(
            "start_seconds",
            "Kubelet starts' time to Ready (phase=\"total\") and their phases' times (init, \
             register, network, ready), of the starts that reached Ready since the service \
             started.",
            None,
            prometheus_client::metrics::MetricType::Histogram,
        )?;
        let phases = Phase::NAMES.iter().chain(["total"].iter());
        for phase in phases {
            let h = st.seconds.get(*phase).cloned().unwrap_or_default();
            let counts = if h.buckets.is_empty() {
                vec![0; START_BUCKETS.len() + 1]
            } else {
                h.buckets.clone()
            };
            let buckets: Vec<(f64, u64)> = START_BUCKETS
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(counts)
                .collect();
            let labels: Labels = vec![("phase", (*phase).to_string())];
            m.encode_family(&labels)?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    h.sum, h.count, &buckets, None,
                )?;
        }
        Ok(())
    }

    /// The metrics of deliveries, the outbox and the config.
    fn encode_delivery(&self, enc: &mut DescriptorEncoder) -> std::fmt::Result {
        let l = &self.0;
        let s = &l.status;
        let per = |f: &dyn Fn(&crate::status::DeliveryStats) -> f64| -> Vec<(Labels, f64)> {
            l.deliveries
                .iter()
                .map(|(c, d)| (vec![("channel", c.as_str().to_string())], f(d)))
                .collect()
        };
        Self::gauge(
            enc,
            "outbox_length",
            "Alerts waiting for delivery, by channel.",
            &per(&|d| d.outbox as f64),
        )?;
        Self::gauge(
            enc,
            "outbox_oldest_age_seconds",
            "Age of the oldest alert waiting for delivery, by channel.",
            &per(&|d| {
                d.oldest_queued_at
                    .map_or(0.0, |t| seconds((l.now - t).max(0)))
            }),
        )?;
        let mut deliveries: Vec<(Labels, u64)> = Vec::new();
        for (c, d) in &l.deliveries {
            for (result, n) in [
                ("sent", d.sent),
                ("failed", d.failed),
                ("in_doubt", d.in_doubt),
            ] {
                deliveries.push((
                    vec![
                        ("channel", c.as_str().to_string()),
                        ("result", result.to_string()),
                    ],
                    n,
                ));
            }
        }
        Self::counter(
            enc,
            "deliveries",
            "Delivery attempts by channel and result; in_doubt: failed after the server may have accepted it (a possible duplicate).",
            &deliveries,
        )?;
        Self::gauge(
            enc,
            "last_delivery_success_timestamp_seconds",
            "When a delivery last succeeded, by channel (0: never).",
            &per(&|d| d.last_success_at.map_or(0.0, seconds)),
        )?;
        Self::gauge(
            enc,
            "delivery_enabled",
            "1 when the channel delivers, 0 when it is switched off.",
            &per(&|d| if d.disabled.is_none() { 1.0 } else { 0.0 }),
        )?;
        Self::gauge(
            enc,
            "silences_active",
            "Operators' silences in force now (deliveries they match are held back).",
            &one(l.silences_active as f64),
        )?;
        Self::gauge(
            enc,
            "store_damaged_records",
            "Records of the store that could not be read (damaged on disk), set aside under \
             the store's `damaged` records; the rest of the history is served.",
            &one(l.store_damaged as f64),
        )?;
        Self::gauge(
            enc,
            "config_restart_needed",
            "1 while changed config keys wait for a restart.",
            &one(if s.config.restart_needed.is_empty() {
                0.0
            } else {
                1.0
            }),
        )?;
        Ok(())
    }
}

/// The exposition of `live`.
#[must_use]
pub(crate) fn render(live: Live) -> String {
    let mut registry = Registry::with_prefix("kubelet_sentinel");
    registry.register_collector(Box::new(Snapshot(live)));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// The content type of [`render`]'s output.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`render_classic`]'s output.
pub(crate) const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The same metrics in Prometheus's classic text format, for clients that
/// do not ask for `OpenMetrics` (curl, older scrapers, `promtool check
/// metrics`): a counter's HELP and TYPE name its `_total` series, and there
/// is no `# EOF`.
#[must_use]
pub(crate) fn render_classic(live: Live) -> String {
    let open = render(live);
    let mut counters = std::collections::HashSet::new();
    for l in open.lines() {
        if let Some(name) = l
            .strip_prefix("# TYPE ")
            .and_then(|r| r.strip_suffix(" counter"))
        {
            counters.insert(name.to_string());
        }
    }
    let mut out = String::with_capacity(open.len());
    for l in open.lines() {
        if l == "# EOF" || l.starts_with("# UNIT ") {
            continue;
        }
        let meta = l
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| l.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        if let Some((kind, rest)) = meta {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if counters.contains(name) {
                out.push_str(&format!("{kind}{name}_total {tail}\n"));
                continue;
            }
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{DeliveryStats, OpenIncident};
    use crate::store::Channel;

    #[test]
    fn labels_are_escaped_and_families_present() {
        let mut live = Live::default();
        live.status.open.push(OpenIncident {
            id: "0123456789ab".into(),
            kind: sentinel_core::tracker::IncidentKind::KubeletDown,
            node: "evil\"\n\\node".into(),
            host: "h".into(),
            cause: sentinel_core::signals::Cause::Auth,
            verdict: Verdict::Persistent,
            retries: 7,
        });
        live.status.retries_by_node.insert("n1".into(), 3);
        live.deliveries
            .push((Channel::Email, DeliveryStats::default()));
        let text = render(live);
        assert!(text.contains(r#"node="evil\"\n\\node""#), "{text}");
        for family in [
            "kubelet_sentinel_entries_read_total 0",
            "kubelet_sentinel_open_incidents 1",
            "kubelet_sentinel_future_dated_total 0",
            r#"kubelet_sentinel_node_status_retries_total{node="n1"} 3"#,
            r#"kubelet_sentinel_incidents{verdict="persistent"} 1"#,
            r#"kubelet_sentinel_incidents{verdict="crash-loop"} 0"#,
            r#"kind="kubelet-down""#,
            r#"kubelet_sentinel_deliveries_total{channel="email",result="sent"} 0"#,
            "# EOF",
        ] {
            assert!(text.contains(family), "{family} missing:\n{text}");
        }
    }

    #[test]
    fn starts_are_counted_by_verdict_and_timed_by_phase() {
        let mut s = sentinel_core::tracker::Start::new("h", "n", 0);
        s.registered_at = Some(3 * SECOND);
        s.ready_at = Some(12 * SECOND);
        s.verdict = StartVerdict::Ready;
        let mut live = Live::default();
        live.status.starts.judged(&s);
        let text = render(live.clone());
        for family in [
            r#"kubelet_sentinel_starts_total{verdict="ready"} 1"#,
            r#"kubelet_sentinel_starts_total{verdict="slow"} 0"#,
            r#"kubelet_sentinel_start_seconds_bucket{le="10.0",phase="total"} 0"#,
            r#"kubelet_sentinel_start_seconds_bucket{le="20.0",phase="total"} 1"#,
            r#"kubelet_sentinel_start_seconds_bucket{le="5.0",phase="register"} 1"#,
            r#"kubelet_sentinel_start_seconds_count{phase="total"} 1"#,
            r#"kubelet_sentinel_start_seconds_sum{phase="ready"} 9.0"#,
            r#"kubelet_sentinel_start_seconds_count{phase="init"} 0"#,
        ] {
            assert!(text.contains(family), "{family} missing:\n{text}");
        }
        let classic = render_classic(live);
        assert!(
            classic.contains("# TYPE kubelet_sentinel_start_seconds histogram"),
            "{classic}"
        );
        assert!(
            classic.contains("# TYPE kubelet_sentinel_starts_total counter"),
            "{classic}"
        );
    }

    /// Issue 38: a pod-sandbox incident is a series of its own kind, and
    /// its flapping verdict is counted with the others.
    #[test]
    fn a_pod_sandbox_incident_by_kind_and_verdict() {
        let mut live = Live::default();
        live.status.open.push(OpenIncident {
            id: "0123456789ab".into(),
            kind: sentinel_core::tracker::IncidentKind::PodSandbox,
            node: "eks-flaky".into(),
            host: "eks-flaky".into(),
            cause: sentinel_core::signals::Cause::Cni,
            verdict: Verdict::Flapping,
            retries: 0,
        });
        let text = render(live);
        for family in [
            r#"kind="pod-sandbox""#,
            r#"cause="cni""#,
            r#"kubelet_sentinel_incidents{verdict="flapping"} 1"#,
        ] {
            assert!(text.contains(family), "{family} missing:\n{text}");
        }
    }
}
