//! `show`'s view of one incident: who and where, its times, its
//! counters, the diagnosis, its signals over time, its context and its
//! evidence with millisecond deltas.

use std::fmt::Write as _;

use sentinel_core::time::{Micros, Zone, human, human_duration};
use sentinel_core::tracker::one_line;

use super::{DetailView, IncidentOut, duration_of, micros, terminal_text};

/// The diagnosis and the timeline of one incident, with millisecond deltas
/// from its opening.
#[must_use]
pub(crate) fn details(o: &IncidentOut, zone: Zone) -> String {
    let mut out = String::new();
    identity_block(&mut out, o);
    times_block(&mut out, o, zone);
    counters_line(&mut out, o);
    let _ = writeln!(out, "  diagnosis: {}", terminal_text(&o.diagnosis, 4000));
    if let Some(s) = &o.start {
        let _ = writeln!(out, "  start: {}", terminal_text(&s.words, 400));
    }
    if !o.next_steps.is_empty() {
        let _ = writeln!(out, "  what to check next:");
        for step in &o.next_steps {
            let _ = writeln!(out, "    - {}", terminal_text(step, 500));
        }
    }
    if let Some(p) = &o.timeline {
        let _ = writeln!(out, "  signals over time:");
        out.push_str(&p.text(zone));
    }
    context_block(&mut out, o, zone);
    evidence_block(&mut out, o, zone);
    out
}

/// Which incident: its node and host, status, verdict, cause, endpoint,
/// the nodes an endpoint incident stands for, or the one that stands for it.
fn identity_block(out: &mut String, o: &IncidentOut) {
    let _ = writeln!(
        out,
        "incident {}  node {}  host {}",
        o.id,
        one_line(&o.node, 120),
        o.host.as_deref().map_or("-".into(), |h| one_line(h, 120))
    );
    let _ = writeln!(
        out,
        "  {}  verdict {}  cause {}{}",
        o.status_cell(),
        o.verdict,
        o.cause,
        o.api_endpoint
            .as_deref()
            .map(|e| format!("  endpoint {}", terminal_text(e, 270)))
            .unwrap_or_default()
    );
    if !o.nodes.is_empty() {
        let shown: Vec<String> = o.nodes.iter().take(50).map(|n| one_line(n, 120)).collect();
        let more = o.nodes.len() - shown.len();
        let _ = writeln!(
            out,
            "  {} nodes: {}{}",
            o.nodes.len(),
            shown.join(", "),
            if more > 0 {
                format!(" +{more} more")
            } else {
                String::new()
            }
        );
    }
    if let Some(c) = &o.covered_by {
        let _ = writeln!(
            out,
            "  part of endpoint incident {c} (its alert stands for this one's)"
        );
    }
}

/// When: opened, for how long, resolved, a silent host's last entry; and
/// who acknowledged or silenced it.
fn times_block(out: &mut String, o: &IncidentOut, zone: Zone) {
    let _ = writeln!(
        out,
        "  opened {}; trouble lasted {} (first to last signal){}",
        human(micros(&o.opened_at), zone),
        human_duration(duration_of(o)),
        o.resolved_at
            .as_deref()
            .map(|r| format!("; resolved {}", human(micros(r), zone)))
            .unwrap_or_default()
    );
    if let DetailView::HostSilent {
        last_entry_at: Some(last),
    } = o.detail()
    {
        let _ = writeln!(
            out,
            "  host silent: its last entry {}",
            human(micros(last), zone)
        );
    }
    if let Some(a) = &o.acknowledged {
        let _ = writeln!(
            out,
            "  acknowledged by {} at {}{}",
            terminal_text(&a.by, 80),
            human(micros(&a.at), zone),
            if a.comment.is_empty() {
                String::new()
            } else {
                format!(": {}", terminal_text(&a.comment, 400))
            }
        );
    }
    if !o.silenced_by.is_empty() {
        let _ = writeln!(out, "  silenced by {}", o.silenced_by.join(", "));
    }
}

/// The evidence kept, with its delta to the opening, and where lines were
/// not kept.
fn evidence_block(out: &mut String, o: &IncidentOut, zone: Zone) {
    let opened = micros(&o.opened_at);
    let _ = writeln!(out, "  evidence:");
    let mut last: Option<Micros> = None;
    for (n, e) in o.evidence.iter().enumerate() {
        let at = micros(&e.at);
        // Evidence keeps the first and the last lines; say where it skips.
        match o.evidence_dropped {
            Some(d) if d.before == n => {
                let _ = writeln!(
                    out,
                    "    … {} line{} not kept …",
                    d.count,
                    if d.count == 1 { "" } else { "s" }
                );
            }
            _ if last.is_some_and(|l| at < l) => {
                let _ = writeln!(out, "    …");
            }
            _ => {}
        }
        last = Some(at);
        let _ = writeln!(
            out,
            "    {:>+9}ms  {}  {:<16}  {}",
            (at - opened) / 1000,
            human(at, zone),
            e.signal,
            one_line(&e.text, 240)
        );
    }
}

/// The node's other units' lines that explain it, with their delta to
/// its start (design 5.4).
fn context_block(out: &mut String, o: &IncidentOut, zone: Zone) {
    if o.context.is_empty() {
        return;
    }
    let opened = micros(&o.opened_at);
    let _ = writeln!(out, "  context (the node's other units):");
    for c in &o.context {
        let at = micros(&c.at);
        let _ = writeln!(
            out,
            "    {:>+9}ms  {}  {:<16}  {}",
            (at - opened) / 1000,
            human(at, zone),
            one_line(&c.unit, 40),
            one_line(&c.text, 240)
        );
    }
}

/// What was counted, in the kind's own words: a kubelet-down incident's
/// restarts, not a node-status incident's zero retries.
fn counters_line(out: &mut String, o: &IncidentOut) {
    match o.detail() {
        DetailView::NodeStatus { counters: c } => {
            // The retries, and the other counts the kubelet gave (a zero
            // beside a line that says otherwise reads as a contradiction:
            // the race's retry is a status retry, no lister-miss line).
            let mut line = format!("  retries {}", c.retries);
            for (n, what) in [
                (c.exhausted, "exhausted"),
                (c.lister_misses, "lister misses"),
                (c.register_failures, "register failures"),
                (c.lease_failures, "lease failures"),
                (c.watch_failures, "watch failures"),
            ] {
                if n > 0 {
                    let _ = write!(line, "  {what} {n}");
                }
            }
            let _ = writeln!(out, "{line}");
        }
        DetailView::KubeletDown {
            restarts,
            last_exit,
        } => {
            let _ = writeln!(
                out,
                "  restarts {restarts}{}",
                last_exit
                    .map(|e| format!("  last exit: {}", terminal_text(e, 120)))
                    .unwrap_or_default()
            );
        }
        DetailView::NotReady {
            not_ready_signals,
            evicted_pods,
            image_gc,
        } => {
            let _ = writeln!(
                out,
                "  not-ready lines {not_ready_signals}  not ready for {}",
                human_duration(duration_of(o))
            );
            if !evicted_pods.is_empty() {
                let _ = writeln!(
                    out,
                    "  evicted {}",
                    terminal_text(&evicted_pods.join(", "), 400)
                );
            }
            if let Some(g) = image_gc {
                let bytes = |b: Option<u64>| b.map_or_else(|| "?".to_string(), |b| b.to_string());
                let _ = writeln!(
                    out,
                    "  image gc {} at {}  wanted {} bytes  freed or eligible {} bytes",
                    g.outcome,
                    terminal_text(&g.at, 40),
                    bytes(g.wanted_bytes),
                    bytes(g.freed_bytes)
                );
            }
        }
        DetailView::Certificate {
            expires_at,
            rotation_deadline,
            rotation_failures,
        } => {
            let _ = writeln!(
                out,
                "  expires {}  rotation deadline {}  refused rotations {rotation_failures}",
                expires_at.map_or("not stated", |e| e),
                rotation_deadline.map_or("not stated", |d| d),
            );
        }
        DetailView::PodSandbox {
            pods_failed,
            sandbox_failures,
            sandbox_successes,
        } => {
            let _ = writeln!(
                out,
                "  pods failed {pods_failed}  sandbox failures {sandbox_failures}  pod starts {sandbox_successes}  failing for {}",
                human_duration(duration_of(o))
            );
        }
        DetailView::Kernel {
            npd_condition,
            readonly_devices,
            hung_tasks,
        } => {
            let mut line = String::from(" ");
            if !readonly_devices.is_empty() {
                let _ = write!(
                    line,
                    " read-only {}",
                    terminal_text(&readonly_devices.join(", "), 200)
                );
            }
            for t in hung_tasks {
                let _ = write!(
                    line,
                    "  hung {}:{} for {}",
                    terminal_text(&t.task, 40),
                    t.pid,
                    human_duration(
                        i64::try_from(t.blocked_secs)
                            .unwrap_or(i64::MAX)
                            .saturating_mul(1_000_000)
                    )
                );
            }
            if let Some(c) = npd_condition {
                let _ = write!(line, "  node-problem-detector {c}");
            }
            let _ = writeln!(out, "{line}");
        }
        // Their own lines say theirs: the nodes, the host's last entry.
        DetailView::HostSilent { .. } | DetailView::Endpoint { .. } => {}
    }
}
