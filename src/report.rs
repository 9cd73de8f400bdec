//! How incidents are shown: the JSON contract of design section 3.3 (field
//! names are a contract: add, never rename), the table for people, and the
//! `--details` view with the timeline.

use std::fmt::Write as _;

mod details;
mod pressure;
pub(crate) mod starts;

pub(crate) use details::details;

use serde::{Deserialize, Serialize};

use sentinel_core::pipeline::Summary;
use sentinel_core::signals::{Cause, SignalKind};
use sentinel_core::time::{Micros, Zone, human, human_duration, rfc3339};
use sentinel_core::tracker::{
    Counters, Detail, HungTask, Incident, IncidentKind, KernelTrouble, NpdCondition, Settings,
    Status, Verdict, one_line,
};

/// Text from logs made safe for a terminal: control characters and escape
/// sequences become spaces (a host name from a log line cannot move the
/// cursor or recolour the screen), on one line, at most `max` bytes.
#[must_use]
pub(crate) fn terminal_text(s: &str, max: usize) -> String {
    one_line(s, max)
}

/// The JSON views of incidents.
#[must_use]
pub(crate) fn views(incidents: &[Incident], s: &Settings) -> Vec<IncidentOut> {
    incidents.iter().map(|i| IncidentOut::new(i, s)).collect()
}

#[derive(Debug, Serialize)]
pub(crate) struct SummaryOut {
    pub entries: u64,
    pub kubelet_lines: u64,
    pub recognized: u64,
    pub unparsed: u64,
    pub lines: u64,
    pub continuations: u64,
    /// Records of the input that could not be read (skipped).
    pub malformed: u64,
    /// Records read with a loss (cut, or an unreadable time).
    pub damaged: u64,
    /// Non-klog lines of the kubelet's units (not kubelet lines).
    pub foreign: u64,
    /// Look-alikes from writers that are not trusted: never read.
    pub untrusted: u64,
    /// Their sources, by identifier and uid.
    pub untrusted_sources: std::collections::BTreeMap<String, u64>,
    /// Lines read as the kubelet's by their content, by identifier.
    pub adopted: std::collections::BTreeMap<String, u64>,
    /// klog lines of other sources, by identifier.
    pub other_klog: std::collections::BTreeMap<String, u64>,
    /// Lines of the node's other units and the kernel kept for context
    /// (design 5.4): they explain incidents, never open one.
    pub context_lines: u64,
    /// Entries with no time of their own and none before them to take.
    pub untimed: u64,
    pub first_at: Option<String>,
    pub last_at: Option<String>,
    /// The nodes named, at most [`sentinel_core::pipeline::NODES_LISTED`] ...
    pub nodes: Vec<String>,
    /// ... and how many more were seen.
    pub nodes_unlisted: u64,
    /// Entries of hosts new past `[fleet] max_hosts`: not read.
    pub hosts_refused: u64,
}

impl SummaryOut {
    #[must_use]
    pub(crate) fn new(s: &Summary) -> Self {
        Self {
            entries: s.entries,
            kubelet_lines: s.kubelet_lines,
            recognized: s.recognized,
            unparsed: s.unparsed,
            lines: s.lines,
            continuations: s.continuations,
            malformed: s.malformed,
            damaged: s.damaged,
            foreign: s.foreign,
            untrusted: s.untrusted,
            untrusted_sources: s.untrusted_sources.clone(),
            adopted: s.adopted.clone(),
            other_klog: s.other_klog.clone(),
            context_lines: s.context_lines,
            untimed: s.untimed,
            first_at: s.first_at.map(rfc3339),
            last_at: s.last_at.map(rfc3339),
            nodes: s.nodes.iter().cloned().collect(),
            nodes_unlisted: s.nodes_unlisted,
            hosts_refused: s.hosts_refused,
        }
    }
}

/// A line of the node's other units that explains an incident (design
/// 3.3 `context`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContextOut {
    pub at: String,
    /// `containerd.service`, `kernel`, ...
    pub unit: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EvidenceOut {
    pub at: String,
    pub cursor: Option<String>,
    pub signal: SignalKind,
    pub text: String,
}

/// One incident as the JSON contract shows it; tables and details render
/// from this too, so the socket and the direct store path print the same.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct IncidentOut {
    pub id: String,
    /// What it is about (design 3.3; `IncidentKind::NAMES`).
    #[serde(default)]
    pub kind: IncidentKind,
    pub node: String,
    pub host: Option<String>,
    pub status: Status,
    pub verdict: Verdict,
    pub cause: Cause,
    /// The API endpoint (`host:port`) its errors name; null when none does.
    #[serde(default)]
    pub api_endpoint: Option<String>,
    /// Endpoint incidents: the nodes in it (`node` is the endpoint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// Node-status incidents: the endpoint incident whose alert stands
    /// for this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_by: Option<String>,
    pub opened_at: String,
    pub last_signal_at: String,
    pub resolved_at: Option<String>,
    /// How it ended: `node-ready`, `quiet`, or `source-changed` (closed,
    /// not resolved: the service was switched to another journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<sentinel_core::tracker::Resolution>,
    /// The node-status counters, flattened (zeros for the other kinds).
    #[serde(flatten)]
    pub counters: Counters,
    /// kubelet-down: the starts after an unrequested exit.
    #[serde(default)]
    pub restarts: u64,
    /// not-ready: its lines (trouble and supporting).
    #[serde(default)]
    pub not_ready_signals: u64,
    /// not-ready under pressure: the pods the eviction manager evicted
    /// (distinct, the first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evicted_pods: Vec<String>,
    /// not-ready under disk pressure: what the last image garbage
    /// collection did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_gc: Option<pressure::ImageGcOut>,
    /// certificate: when the kubelet's client certificate expires (RFC
    /// 3339), as its manager last stated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// certificate: the rotation deadline its manager last stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation_deadline: Option<String>,
    /// certificate: rotations the API server refused.
    #[serde(default)]
    pub rotation_failures: u64,
    /// pod-sandbox: distinct pods whose sandbox failed (design 5.6).
    #[serde(default)]
    pub pods_failed: u64,
    /// pod-sandbox: failed sandbox creations (one attempt's lines, one).
    #[serde(default)]
    pub sandbox_failures: u64,
    /// pod-sandbox: pods started while it was open (a failing pod that
    /// started, another pod's first start).
    #[serde(default)]
    pub sandbox_successes: u64,
    /// kernel: node-problem-detector's condition for it
    /// (`ReadonlyFilesystem`, `XfsShutdown`, `KernelDeadlock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npd_condition: Option<NpdCondition>,
    /// kernel: the devices whose file systems it made read-only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readonly_devices: Vec<String>,
    /// kernel: the tasks blocked longer than `not_ready_after` (`task`,
    /// `pid`, `blocked_secs`), the longest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hung_tasks: Vec<HungTask>,
    /// kubelet-down: systemd's last word on how the kubelet ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_exit: Option<String>,
    /// host-silent: the time its journal had reached when it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_entry_at: Option<String>,
    /// kubelet-down, not-ready, host-silent: what to check next for its
    /// cause (as the mail says).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    pub alerted_at: Option<String>,
    pub diagnosis: String,
    /// The node's other units' lines that explain it (design 5.4).
    #[serde(default)]
    pub context: Vec<ContextOut>,
    pub evidence: Vec<EvidenceOut>,
    /// Who acknowledged it (no reminders since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<AckOut>,
    /// The silences holding its deliveries back now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub silenced_by: Vec<String>,
    /// Evidence lines not kept (between the first lines and the last):
    /// how many, and before which line of `evidence` they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_dropped: Option<Dropped>,
    /// Its signals over time, for the picture `show` draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<sentinel_core::picture::Picture>,
    /// Where in its host's kubelet start it opened, when it opened during
    /// one (design 5.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<starts::StartPlaceOut>,
}

/// Evidence lines an incident did not keep.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Dropped {
    pub count: u64,
    /// The index in `evidence` of the first line after them.
    pub before: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AckOut {
    pub by: String,
    pub at: String,
    #[serde(default)]
    pub comment: String,
}

impl IncidentOut {
    #[must_use]
    pub fn new(i: &Incident, s: &Settings) -> Self {
        let (last_exit, last_entry_at, next_steps) = match &i.detail {
            Detail::KubeletDown(d) => (
                d.last_exit.clone(),
                None,
                sentinel_core::advice::next_steps(i),
            ),
            Detail::NotReady(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => (None, None, sentinel_core::advice::next_steps(i)),
            Detail::HostSilent(h) => (
                None,
                Some(rfc3339(h.last_entry_at)),
                sentinel_core::advice::next_steps(i),
            ),
            Detail::NodeStatus(_) | Detail::Endpoint(_) => (None, None, Vec::new()),
        };
        Self {
            id: i.id.clone(),
            kind: i.kind(),
            node: i.node.clone(),
            host: i.host.clone(),
            status: i.status(),
            verdict: i.verdict(s),
            cause: i.cause(),
            api_endpoint: i.api_endpoint().map(str::to_string),
            nodes: i.nodes().to_vec(),
            covered_by: i.covered_by().map(str::to_string),
            opened_at: rfc3339(i.opened_at),
            last_signal_at: rfc3339(i.last_signal_at),
            resolved_at: i.resolved_at.map(rfc3339),
            resolution: i.resolution,
            counters: i.counters(),
            restarts: i.restarts(),
            not_ready_signals: i.not_ready_signals(),
            evicted_pods: pressure::evicted_pods(i),
            image_gc: pressure::image_gc(i),
            expires_at: i.cert().and_then(|c| c.expires_at).map(rfc3339),
            rotation_deadline: i.cert().and_then(|c| c.rotation_deadline).map(rfc3339),
            rotation_failures: i.cert().map_or(0, |c| c.rotation_failures),
            pods_failed: i.sandbox().map_or(0, |p| p.pods_failed),
            sandbox_failures: i.sandbox().map_or(0, |p| p.sandbox_failures),
            sandbox_successes: i.sandbox().map_or(0, |p| p.sandbox_successes),
            npd_condition: i.kernel().map(KernelTrouble::npd_condition),
            readonly_devices: i
                .kernel()
                .map(|k| k.readonly_devices.clone())
                .unwrap_or_default(),
            hung_tasks: i.kernel().map(|k| k.hung_tasks.clone()).unwrap_or_default(),
            last_exit,
            last_entry_at,
            next_steps,
            alerted_at: i.alerted_at.map(rfc3339),
            diagnosis: i.diagnosis(s),
            context: i
                .context
                .iter()
                .map(|l| ContextOut {
                    at: rfc3339(l.at),
                    unit: l.unit.clone(),
                    text: l.text.clone(),
                })
                .collect(),
            evidence: i
                .evidence()
                .map(|e| EvidenceOut {
                    at: rfc3339(e.at),
                    cursor: e.cursor.clone(),
                    signal: e.signal,
                    text: e.text.clone(),
                })
                .collect(),
            acknowledged: i.ack.as_ref().map(|a| AckOut {
                by: a.by.clone(),
                at: rfc3339(a.at),
                comment: a.comment.clone(),
            }),
            silenced_by: Vec::new(),
            evidence_dropped: dropped(i),
            timeline: sentinel_core::picture::Picture::of(i),
            start: i.start.as_ref().map(starts::StartPlaceOut::new),
        }
    }

    /// Marks it with the silences in force now that match it.
    #[must_use]
    pub fn silenced(
        mut self,
        i: &Incident,
        silences: &[crate::store::Silence],
        now: Micros,
    ) -> Self {
        if i.resolved_at.is_none() {
            self.silenced_by = crate::store::silencing(i, silences, now)
                .map(|s| s.id.clone())
                .collect();
        }
        self
    }

    /// The status column: open or resolved, and acknowledged or silenced;
    /// an incident closed without anything saying it ended (the service
    /// switched journals, or it was closed to make room) is "closed" with
    /// why, as its JSON `resolution` says, not "resolved".
    #[must_use]
    pub fn status_cell(&self) -> String {
        use sentinel_core::tracker::Resolution;
        let mut s = match self.resolution {
            Some(Resolution::SourceChanged) => "closed (source-changed)".to_string(),
            Some(Resolution::Evicted) => "closed (evicted)".to_string(),
            _ => self.status.to_string(),
        };
        if !self.silenced_by.is_empty() {
            s.push_str(" (silenced)");
        } else if self.acknowledged.is_some() && self.status == Status::Open {
            s.push_str(" (acked)");
        }
        s
    }

    /// What its kind has that the others do not: the flat fields that are
    /// its own (the JSON keeps them flat, zeros or nothing for the other
    /// kinds), for the table and `show` to take with one `match`.
    #[must_use]
    pub(crate) fn detail(&self) -> DetailView<'_> {
        match self.kind {
            IncidentKind::NodeStatus => DetailView::NodeStatus {
                counters: &self.counters,
            },
            IncidentKind::KubeletDown => DetailView::KubeletDown {
                restarts: self.restarts,
                last_exit: self.last_exit.as_deref(),
            },
            IncidentKind::NotReady => DetailView::NotReady {
                not_ready_signals: self.not_ready_signals,
                evicted_pods: &self.evicted_pods,
                image_gc: self.image_gc.as_ref(),
            },
            IncidentKind::HostSilent => DetailView::HostSilent {
                last_entry_at: self.last_entry_at.as_deref(),
            },
            IncidentKind::Endpoint => DetailView::Endpoint { nodes: &self.nodes },
            IncidentKind::Certificate => DetailView::Certificate {
                expires_at: self.expires_at.as_deref(),
                rotation_deadline: self.rotation_deadline.as_deref(),
                rotation_failures: self.rotation_failures,
            },
            IncidentKind::PodSandbox => DetailView::PodSandbox {
                pods_failed: self.pods_failed,
                sandbox_failures: self.sandbox_failures,
                sandbox_successes: self.sandbox_successes,
            },
            IncidentKind::Kernel => DetailView::Kernel {
                npd_condition: self.npd_condition,
                readonly_devices: &self.readonly_devices,
                hung_tasks: &self.hung_tasks,
            },
        }
    }
}

/// One kind's own fields of an [`IncidentOut`] ([`IncidentOut::detail`]):
/// one variant per kind, so a reader never takes another kind's zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DetailView<'a> {
    /// The six node-status counters.
    NodeStatus { counters: &'a Counters },
    /// Its restarts, and systemd's last word on how the kubelet ended.
    KubeletDown {
        restarts: u64,
        last_exit: Option<&'a str>,
    },
    /// Its lines (trouble and supporting); under pressure the pods
    /// evicted and the last image garbage collection.
    NotReady {
        not_ready_signals: u64,
        evicted_pods: &'a [String],
        image_gc: Option<&'a pressure::ImageGcOut>,
    },
    /// The time its journal had reached when it stopped (RFC 3339).
    HostSilent { last_entry_at: Option<&'a str> },
    /// The nodes in it.
    Endpoint { nodes: &'a [String] },
    /// When the certificate expires and rotates (RFC 3339), and the
    /// refused rotations.
    Certificate {
        expires_at: Option<&'a str>,
        rotation_deadline: Option<&'a str>,
        rotation_failures: u64,
    },
    /// The pods whose sandbox failed, the failures, and the pods started
    /// since.
    PodSandbox {
        pods_failed: u64,
        sandbox_failures: u64,
        sandbox_successes: u64,
    },
    /// node-problem-detector's condition, the read-only file systems'
    /// devices, the hung tasks.
    Kernel {
        npd_condition: Option<NpdCondition>,
        readonly_devices: &'a [String],
        hung_tasks: &'a [HungTask],
    },
}

#[derive(Debug, Serialize)]
pub(crate) struct ScanOut {
    pub summary: SummaryOut,
    pub incidents: Vec<IncidentOut>,
    /// The kubelets' starts (design 5.5), by host and start time.
    pub starts: Vec<starts::StartOut>,
}

/// Where the lines an incident did not keep were: the last lines kept
/// replace the oldest of them, so they lie before the first of the last
/// lines (or, markers before the trouble, before the first line).
fn dropped(i: &Incident) -> Option<Dropped> {
    if i.evidence_dropped == 0 {
        return None;
    }
    let before = i.evidence_tail.front().map_or(0, |first_of_last| {
        i.evidence()
            .position(|e| std::ptr::eq(e, first_of_last))
            .unwrap_or(0)
    });
    Some(Dropped {
        count: i.evidence_dropped,
        before,
    })
}

/// Incidents in the order people read them: oldest first.
pub(crate) fn sort(incidents: &mut [Incident]) {
    incidents.sort_by(|a, b| (a.opened_at, &a.node).cmp(&(b.opened_at, &b.node)));
}

#[must_use]
pub(crate) fn scan_json(
    summary: &Summary,
    incidents: &[Incident],
    starts: &[sentinel_core::tracker::Start],
    s: &Settings,
) -> String {
    let out = ScanOut {
        summary: SummaryOut::new(summary),
        incidents: incidents.iter().map(|i| IncidentOut::new(i, s)).collect(),
        starts: starts.iter().map(starts::StartOut::new).collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

fn micros(t: &str) -> Micros {
    sentinel_core::time::parse_rfc3339(t).unwrap_or(0)
}

/// How long the trouble lasted: first to last signal (not the quiet time
/// after it that resolved the incident); host-silent: the silence, from its
/// last entry (to its next, if any).
fn duration_of(i: &IncidentOut) -> Micros {
    match i.detail() {
        DetailView::HostSilent {
            last_entry_at: Some(last),
        } => {
            let end = i.resolved_at.as_deref().unwrap_or(&i.opened_at);
            micros(end) - micros(last)
        }
        DetailView::NodeStatus { .. }
        | DetailView::KubeletDown { .. }
        | DetailView::NotReady { .. }
        | DetailView::HostSilent { .. }
        | DetailView::Endpoint { .. }
        | DetailView::Certificate { .. }
        | DetailView::PodSandbox { .. }
        | DetailView::Kernel { .. } => micros(&i.last_signal_at) - micros(&i.opened_at),
    }
}

/// Aligned columns, the last one free.
#[must_use]
pub(crate) fn columns(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (n, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if n + 1 == cells.len() {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header);
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}

/// One row per incident.
#[must_use]
pub(crate) fn table(incidents: &[IncidentOut], zone: Zone) -> String {
    let header = [
        "ID", "NODE", "STATUS", "VERDICT", "CAUSE", "RETRIES", "OPENED", "TROUBLE",
    ];
    let rows: Vec<Vec<String>> = incidents
        .iter()
        .map(|o| {
            // Node-status rows as before; the other kinds say theirs.
            let of_kind = || format!("{} ({})", o.verdict, o.kind);
            let (verdict, count) = match o.detail() {
                DetailView::NodeStatus { counters } => (
                    o.verdict.to_string(),
                    counters.counted_retries().to_string(),
                ),
                DetailView::KubeletDown { restarts, .. } => {
                    (of_kind(), format!("{restarts} restarts"))
                }
                DetailView::NotReady {
                    not_ready_signals, ..
                } => (of_kind(), format!("{not_ready_signals} lines")),
                DetailView::HostSilent { .. } => (of_kind(), "-".to_string()),
                DetailView::Endpoint { nodes } => (of_kind(), format!("{} nodes", nodes.len())),
                DetailView::Certificate {
                    rotation_failures, ..
                } => (of_kind(), format!("{rotation_failures} refused")),
                DetailView::PodSandbox {
                    sandbox_failures, ..
                } => (of_kind(), format!("{sandbox_failures} failures")),
                DetailView::Kernel {
                    readonly_devices,
                    hung_tasks,
                    ..
                } => (
                    of_kind(),
                    if readonly_devices.is_empty() {
                        format!("{} hung", hung_tasks.len())
                    } else {
                        format!("{} read-only", readonly_devices.len())
                    },
                ),
            };
            vec![
                o.id.clone(),
                one_line(&o.node, 60),
                o.status_cell(),
                verdict,
                o.cause.to_string(),
                count,
                match micros(&o.opened_at) {
                    // A log with no time anywhere (headers cut off).
                    0 => "unknown".to_string(),
                    t => human(t, zone),
                },
                human_duration(duration_of(o)),
            ]
        })
        .collect();
    columns(&header, &rows)
}

#[must_use]
pub(crate) fn summary_line(summary: &Summary, incidents: &[Incident], zone: Zone) -> String {
    let open = incidents
        .iter()
        .filter(|i| i.status() == Status::Open)
        .count();
    let nodes: std::collections::BTreeSet<&str> =
        incidents.iter().map(|i| i.node.as_str()).collect();
    let mut s = format!(
        "{} incident{} ({open} open) on {} node{}; {} entr{} read, {} kubelet line{}, {} recognized, {} unparsed",
        incidents.len(),
        if incidents.len() == 1 { "" } else { "s" },
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" },
        summary.entries,
        if summary.entries == 1 { "y" } else { "ies" },
        summary.kubelet_lines,
        if summary.kubelet_lines == 1 { "" } else { "s" },
        summary.recognized,
        summary.unparsed,
    );
    if summary.foreign > 0 {
        let _ = write!(s, ", {} foreign", summary.foreign);
    }
    if summary.untrusted > 0 {
        let _ = write!(
            s,
            ", {} untrusted look-alikes ignored ({})",
            summary.untrusted,
            summary
                .untrusted_sources
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if summary.malformed > 0 {
        let _ = write!(s, ", {} malformed records skipped", summary.malformed);
    }
    if summary.damaged > 0 {
        let _ = write!(s, ", {} records read with a loss", summary.damaged);
    }
    if let (Some(a), Some(b)) = (summary.first_at, summary.last_at) {
        let _ = write!(s, "; from {} to {}", human(a, zone), human(b, zone));
    }
    s.push('\n');
    if summary.untimed > 0 {
        let (n, what) = match summary.untimed {
            1 => (1, "entry carried"),
            n => (n, "entries carried"),
        };
        // Said of incidents only when one has no time.
        let then = if incidents.iter().any(|i| i.opened_at == 0) {
            "their incidents' times are unknown (shown as 1970-01-01 in JSON)"
        } else {
            "read for what they say; no incident's time is theirs"
        };
        let _ = writeln!(
            s,
            "{n} {what} no time (no journal prefix, no klog header) and none came before \
             them: {then}"
        );
    }
    for (name, n) in &summary.adopted {
        let _ = writeln!(
            s,
            "{n} lines from {} were read as the kubelet's by their content (the kubelet's own \
             source files and messages); to read all of that identifier's lines: --identifier {}",
            terminal_text(name, 80),
            shell_word(name)
        );
    }
    if summary.kubelet_lines == 0 {
        s.push_str("no kubelet lines were found");
        if summary.other_klog.is_empty() {
            s.push_str(
                " (the kubelet logs as kubelet.service or the identifiers kubelet, kubenswrapper, \
                 hyperkube, kubelet-wrapper, kubelite; a saved log needs its journalctl prefix or \
                 klog headers)\n",
            );
        } else {
            let names: Vec<String> = summary
                .other_klog
                .iter()
                .map(|(n, c)| format!("{} ({c} klog lines)", terminal_text(n, 80)))
                .collect();
            let _ = writeln!(
                s,
                "; klog lines came from {}: if one of them is the kubelet, include it with --identifier NAME",
                names.join(", ")
            );
        }
    } else if summary.recognized == 0 && summary.unparsed > 0 {
        let _ = writeln!(
            s,
            "{} kubelet lines were not understood; the first: {}",
            summary.unparsed,
            summary.first_unparsed.as_deref().unwrap_or("-")
        );
    }
    s
}

/// A word safe to paste into a shell.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._@:/".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", terminal_text(s, 200).replace('\'', "'\\''"))
    }
}
