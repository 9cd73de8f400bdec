//! Kernel incidents (design 5.8): what the kernel's lines do. A file
//! system made read-only opens the node's incident at once; a task hung
//! opens it once its blocking (the host's [`HungWatch`]) lasts longer than
//! `[alert] not_ready_after`. Either pages at once. The kernel's first line
//! at boot ends it, and forgets what the host's kernel said before.

use crate::context::{ContextKind, ContextLine};
use crate::signals::{Cause, SignalKind};
use crate::time::{Micros, SECOND};
use crate::tracker::decision::{AlertKind, Decision};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::{HUNG_WATCHED, Hosts, HungWatch};
use crate::tracker::kind::{Incident, NpdCondition};
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

/// A report of a hung task whose blocking began this long after the
/// task's previous report still continues it (reports come a check
/// interval apart, give or take the scheduler).
pub(crate) const HUNG_SLACK: Micros = 60 * SECOND;

/// One kernel line of `host` (its boot, a read-only file system, a hung
/// task), with the cursor of its entry; `unknown`: the node of a host
/// that names none.
pub(in crate::tracker) fn line(
    l: &mut Ledger,
    h: &mut Hosts,
    (host, line, cursor): (&str, &ContextLine, Option<&str>),
    unknown: &str,
    out: &mut Vec<Decision>,
) {
    let node = node_of(l, h, host, unknown);
    let key = OpenKey::new(IncidentKind::Kernel, &node);
    if line.kind == ContextKind::Boot {
        booted(l, h, host, &key, line.at, out);
    } else if line.kind.is_readonly() {
        let c = if line.kind == ContextKind::FsShutdown {
            NpdCondition::XfsShutdown
        } else {
            NpdCondition::ReadonlyFilesystem
        };
        let inc = trouble(l, &key, host, line, cursor, out);
        if let Some(k) = inc.and_then(Incident::kernel_mut) {
            k.readonly(c, line.device.as_deref());
        }
    } else if line.kind == ContextKind::HungTask {
        hung(l, h, (host, &key), line, cursor, out);
    }
}

/// The node of `host`: the one its kubelet registered or named, else
/// `[node] name`, else the host.
fn node_of(l: &Ledger, h: &Hosts, host: &str, unknown: &str) -> String {
    h.node_of(host)
        .or_else(|| l.settings.node_name.clone())
        .unwrap_or_else(|| {
            if host.is_empty() {
                unknown.to_string()
            } else {
                host.to_string()
            }
        })
}

/// The host booted at `at`: its kernel incident ends, and what its kernel
/// and units said before explains nothing after.
fn booted(
    l: &mut Ledger,
    h: &mut Hosts,
    host: &str,
    key: &OpenKey,
    at: Micros,
    out: &mut Vec<Decision>,
) {
    if l.open.get(key).is_some_and(|i| i.opened_at < at) {
        l.resolve(key, at, Resolution::Rebooted, out);
    }
    if let Some(o) = h.get_mut(host) {
        if o.hung.is_empty() && o.context.is_empty() {
            return;
        }
        o.hung.clear();
        o.context.clear();
        h.touch(host);
    }
}

/// A task hung: its blocking so far (the host's record of it), and the
/// node's incident once that passes `not_ready_after`. A shorter one
/// joins an open incident as evidence.
fn hung(
    l: &mut Ledger,
    h: &mut Hosts,
    (host, key): (&str, &OpenKey),
    line: &ContextLine,
    cursor: Option<&str>,
    out: &mut Vec<Decision>,
) {
    let (Some(task), Some(pid), Some(secs)) = (&line.process, line.pid, line.blocked_secs) else {
        return;
    };
    let at = line.at;
    let began = at.saturating_sub(
        i64::try_from(secs)
            .unwrap_or(i64::MAX)
            .saturating_mul(SECOND),
    );
    let w = watch(&mut h.entry(host).hung, (task, pid), began, at);
    h.touch(host);
    let blocked = w.last_at.saturating_sub(w.since);
    let over = blocked > l.settings.not_ready_after;
    if !over && !l.open.contains_key(key) {
        return;
    }
    let inc = if over {
        trouble(l, key, host, line, cursor, out)
    } else {
        note(l, key, line, cursor, out)
    };
    if let (true, Some(k)) = (over, inc.and_then(Incident::kernel_mut)) {
        k.hung(task, pid, u64::try_from(blocked / SECOND).unwrap_or(0));
    }
}

/// The host's record of the hung task `(task, pid)`, reported at `at`
/// as blocked since `began`: the same blocking as its last report (it
/// began before that report, give or take [`HUNG_SLACK`]), or a new one.
/// At most [`HUNG_WATCHED`] tasks; the one reported longest ago gives way.
fn watch(
    hung: &mut Vec<HungWatch>,
    (task, pid): (&str, u32),
    began: Micros,
    at: Micros,
) -> HungWatch {
    if let Some(w) = hung.iter_mut().find(|w| w.pid == pid && w.task == task) {
        if began > w.last_at + HUNG_SLACK {
            // It ran since its last report: a new blocking.
            w.since = began;
        } else {
            w.since = w.since.min(began);
        }
        w.last_at = w.last_at.max(at);
        return w.clone();
    }
    if hung.len() >= HUNG_WATCHED {
        if let Some(i) = (0..hung.len()).min_by_key(|&i| hung[i].last_at) {
            hung.remove(i);
        }
    }
    let w = HungWatch {
        task: task.to_string(),
        pid,
        since: began,
        last_at: at,
    };
    hung.push(w.clone());
    w
}

/// Opens the node's kernel incident (paged at once) or joins it; the line
/// is evidence and a vote for its cause.
fn trouble<'a>(
    l: &'a mut Ledger,
    key: &OpenKey,
    host: &str,
    line: &ContextLine,
    cursor: Option<&str>,
    out: &mut Vec<Decision>,
) -> Option<&'a mut Incident> {
    let at = line.at;
    let (signal, cause) = if line.kind == ContextKind::HungTask {
        (SignalKind::KernelHungTask, Cause::HungTasks)
    } else {
        (SignalKind::KernelReadonly, Cause::ReadonlyFs)
    };
    if !l.open.contains_key(key) {
        l.make_room(host, at, out);
        let host = (!host.is_empty()).then_some(host);
        let mut inc = Incident::blank(
            key.incident_id(at),
            key.kind,
            &key.subject,
            host,
            at,
            signal,
        );
        inc.over_threshold_at = Some(at);
        inc.last_alert_at = Some(at);
        out.push(Decision::OpenIncident { id: inc.id.clone() });
        out.push(inc.raise(AlertKind::Opened, at));
        l.open.insert(key.clone(), inc);
    }
    let inc = l.open.get_mut(key)?;
    *inc.causes.entry(cause).or_default() += 1;
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.last_trouble_at = inc.last_trouble_at.max(at);
    inc.timeline.add(at, signal.as_str());
    inc.add_evidence(Evidence::new(at, cursor, signal, &line.text).with_cause(Some(cause)));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    Some(inc)
}

/// The line joins the node's open kernel incident as evidence.
fn note<'a>(
    l: &'a mut Ledger,
    key: &OpenKey,
    line: &ContextLine,
    cursor: Option<&str>,
    out: &mut Vec<Decision>,
) -> Option<&'a mut Incident> {
    let inc = l.open.get_mut(key)?;
    let signal = SignalKind::KernelHungTask;
    inc.last_signal_at = inc.last_signal_at.max(line.at);
    inc.timeline.add(line.at, signal.as_str());
    inc.add_evidence(Evidence::new(line.at, cursor, signal, &line.text));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    Some(inc)
}
