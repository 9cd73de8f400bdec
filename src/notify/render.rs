//! The alert email (design section 3.4): subject, text and HTML. Pure.
//!
//! Anything taken from a log line (node names, error texts) is stripped of
//! control characters where it goes into a header and HTML-escaped where it
//! goes into markup: a node name from a log line can never add a header or
//! markup.

use std::fmt::Write as _;

use sentinel_core::signals::Cause;
use sentinel_core::time::{clock, human_duration};
use sentinel_core::tracker::{AlertKind, Incident, Settings, Status, Verdict, cause_explanation};

pub(crate) use sentinel_core::advice::{header_text, next_steps};

use super::words::{KindWords, group, span, when, words};

/// A rendered alert, before it becomes a MIME message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
    /// A route's recipients; empty: `[alert] to`.
    pub to: Vec<String>,
}

/// Longest node or host name a mail shows (a DNS name's bound; a
/// collector's host can claim a 1 MB `_HOSTNAME`): longer ones are cut
/// with an ellipsis.
const NAME_SHOWN: usize = 253;

/// Escapes text for HTML element content and attribute values.
#[must_use]
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Values are single-line: a log line cannot break the layout.
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn verdict_words(v: Verdict, w: &dyn KindWords, s: &Settings) -> String {
    match v {
        Verdict::Persistent => w.persistent(s),
        Verdict::StartupRace => "the harmless start-up race".into(),
        Verdict::Transient => "transient trouble that ended by itself".into(),
        Verdict::Undetermined => "not yet determined".into(),
        Verdict::CrashLoop => format!(
            "a crash loop: more than {} restarts within {}",
            s.restarts,
            human_duration(s.window)
        ),
        Verdict::Failed => "failed: systemd gave up, the kubelet is not running".into(),
        Verdict::Flapping => format!(
            "flapping: sandboxes failed for {} while failing pods still started among them (not paged)",
            human_duration(s.sandbox_after)
        ),
    }
}

/// The nodes of a group for a subject: a few by name, then how many more.
fn group_nodes(incidents: &[&Incident]) -> String {
    const SHOWN: usize = 3;
    let mut names: Vec<String> = Vec::new();
    for i in incidents {
        let n = header_text(&i.node, 60);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    if names.len() > SHOWN {
        let more = names.len() - SHOWN;
        names.truncate(SHOWN);
        format!("{} +{more} more", names.join(", "))
    } else {
        names.join(", ")
    }
}

/// The causes of a group for a subject, ` (cause, …)`; none when no
/// incident of it has one (silent hosts: M6, "(unknown)").
fn group_cause(incidents: &[&Incident]) -> String {
    let mut causes: Vec<&str> = Vec::new();
    for i in incidents.iter().filter(|i| i.cause() != Cause::Unknown) {
        let c = i.cause().as_str();
        if !causes.contains(&c) {
            causes.push(c);
        }
    }
    if causes.is_empty() {
        return String::new();
    }
    format!(" ({})", causes.join(", "))
}

/// How much of a group one mail shows: a mail for a thousand nodes lists a
/// bounded number of them in full and summarises the rest, so its size
/// (and the time to build it) does not grow with the outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Incidents shown with their diagnosis, picture, evidence and steps.
    pub sections: usize,
    /// Rows of the group's table.
    pub rows: usize,
}

/// What a mail shows first: about 200 KB at most, well under common SMTP
/// size limits (Postfix's 10 MB).
pub const FULL: Extent = Extent {
    sections: 10,
    rows: 100,
};

impl Extent {
    /// A smaller mail, for a server that refused the size of this one.
    #[must_use]
    pub fn smaller(self) -> Option<Self> {
        if self.sections > 1 {
            Some(Self {
                sections: 1,
                rows: self.rows.min(50),
            })
        } else if self.sections == 1 || self.rows > 20 {
            Some(Self {
                sections: 0,
                rows: 20,
            })
        } else {
            None
        }
    }
}

/// The nodes of a group, each once.
fn distinct_nodes(incidents: &[&Incident]) -> usize {
    let mut nodes: Vec<&str> = incidents.iter().map(|i| i.node.as_str()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes.len()
}

/// The endpoint and cause every node incident of a group names, if one.
/// No outage by the rules (an endpoint incident stands for the nodes it
/// covers, and their own alerts are not mailed), so never worded as one.
fn shared_endpoint<'a>(incidents: &[&'a Incident]) -> Option<(&'a str, Cause)> {
    let first = incidents.first()?;
    let e = first.api_endpoint()?;
    let c = first.cause();
    incidents
        .iter()
        .all(|i| !i.kind().of_many_nodes() && i.api_endpoint() == Some(e) && i.cause() == c)
        .then_some((e, c))
}

/// Renders one email for alerts of one kind raised together. `incidents` is
/// never empty.
#[must_use]
pub fn render(incidents: &[&Incident], kind: AlertKind, s: &Settings) -> Rendered {
    render_with(incidents, kind, s, FULL)
}

/// Causes and how many of `incidents` have each, most first.
fn cause_counts(incidents: &[&Incident]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for i in incidents {
        let c = i.cause().as_str();
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    counts
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`render`] showing at most what `d` allows.
#[must_use]
pub fn render_with(incidents: &[&Incident], kind: AlertKind, s: &Settings, d: Extent) -> Rendered {
    render_noted(incidents, kind, s, d, None)
}

/// [`render_with`], opening with `note` (what held the alert back).
#[must_use]
pub(crate) fn render_noted(
    incidents: &[&Incident],
    kind: AlertKind,
    s: &Settings,
    d: Extent,
    note: Option<&str>,
) -> Rendered {
    let shared = shared_endpoint(incidents).filter(|_| incidents.len() > 1);
    let subject = subject_of(incidents, kind, shared);
    let mut text = String::new();
    let mut html =
        String::from("<!DOCTYPE html>\n<html><body style=\"font-family: sans-serif\">\n");
    if let Some(note) = note {
        let note = sentinel_core::tracker::one_line(note, 2000);
        let _ = writeln!(text, "{note}\n");
        html.push_str(&format!("<p><i>{}</i></p>\n", html_escape(&note)));
    }
    if incidents.len() > 1 {
        group_table(&mut text, &mut html, incidents, shared, s, d);
    }
    let sections = d.sections;
    for i in incidents.iter().take(sections.max(1)) {
        endpoint_nodes(&mut text, &mut html, i, d.rows);
    }
    for i in incidents.iter().take(sections) {
        section(&mut text, &mut html, i, s);
    }
    if incidents.len() == 1 && sections == 0 {
        let i = incidents[0];
        let _ = writeln!(
            text,
            "Node {}, incident {} ({}): {} ({}); `kubelet-sentinel show {}` shows it in full.\n",
            header_text(&i.node, 100),
            i.id,
            i.kind(),
            words(i).counters(i),
            i.cause().as_str(),
            i.id
        );
    }
    let id = if incidents.len() == 1 {
        incidents[0].id.as_str()
    } else {
        "<id>"
    };
    let footer = footer(id);
    let _ = writeln!(text, "-- \nkubelet-sentinel: {footer}");
    html.push_str(&format!(
        "<p style=\"color:#666\">kubelet-sentinel: {}</p>\n</body></html>\n",
        html_escape(&footer)
    ));
    Rendered {
        subject: header_text(&subject, 200),
        text,
        html,
        to: Vec::new(),
    }
}

/// What a mail's last line says to do with incident `id`.
pub(crate) fn footer(id: &str) -> String {
    format!(
        "`kubelet-sentinel show {id}` shows the whole timeline; `kubelet-sentinel ack {id}` stops \
         the reminders (where kubelet-sentinel runs)."
    )
}

/// A mail's subject: one incident's own, or a group's (with the endpoint
/// its nodes share, if one).
fn subject_of(incidents: &[&Incident], kind: AlertKind, shared: Option<(&str, Cause)>) -> String {
    if incidents.len() == 1 {
        words(incidents[0]).subject(incidents[0], kind)
    } else if let Some((e, c)) = shared {
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {} against {} ({})",
                group_nodes(incidents),
                header_text(e, 100),
                c.as_str()
            ),
            AlertKind::Opened | AlertKind::Repeat => format!(
                "[kubelet-sentinel] {}: {} against {} ({})",
                group_nodes(incidents),
                group(incidents).map_or("incidents", KindWords::group_words),
                header_text(e, 100),
                c.as_str()
            ),
        }
    } else {
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {}{}",
                group_nodes(incidents),
                group_cause(incidents)
            ),
            _ => format!(
                "[kubelet-sentinel] {}: {}{}",
                group_nodes(incidents),
                group_what(incidents),
                group_cause(incidents)
            ),
        }
    }
}

/// What a group's subject says it is: its kind's words for several nodes
/// ("kubelets down"); for one node's incidents, how many of which kind
/// ("2 kubelet-down incidents"), never words of a fleet.
fn group_what(incidents: &[&Incident]) -> String {
    let one_node = incidents.iter().all(|i| i.node == incidents[0].node);
    match (one_node, group(incidents)) {
        (false, Some(w)) => w.group_words().to_string(),
        (false, None) => "incidents".to_string(),
        (true, Some(_)) => format!(
            "{} {} incidents",
            incidents.len(),
            incidents[0].kind().as_str()
        ),
        (true, None) => format!("{} incidents", incidents.len()),
    }
}

/// A group mail's lead and its table of nodes, bounded by `d`.
fn group_table(
    text: &mut String,
    html: &mut String,
    incidents: &[&Incident],
    shared: Option<(&str, Cause)>,
    s: &Settings,
    d: Extent,
) {
    let nodes = distinct_nodes(incidents);
    let together = if nodes == 1 {
        format!(
            "{} incidents of node {} raised together (a catch-up after a stop, or within \
             [alert] group_wait)",
            incidents.len(),
            header_text(&incidents[0].node, 100)
        )
    } else {
        format!("{nodes} nodes at once")
    };
    let lead = match shared {
        Some((e, c)) => format!(
            "{together} against one API endpoint, {} ({}), each its own incident: no outage by \
             kubelet-sentinel's rules (fewer than [fleet] min_nodes hosts in trouble at once, \
             hosts whose clocks cannot be placed together, or not yet). Look at that endpoint \
             first: `curl -sk https://{}/healthz` from a node, its load balancer, the API server \
             behind it.",
            header_text(e, 270),
            c.as_str(),
            header_text(e, 270)
        ),
        None if nodes == 1 => format!("{together}."),
        None => format!(
            "{together}: when many nodes fail together, look at what they share first (the API \
             server, a change rolled out to them, their network)."
        ),
    };
    let _ = writeln!(text, "{lead}\n");
    html.push_str(&format!("<p>{}</p>\n", html_escape(&lead)));
    // The count column's name: its kind's, or "count" for one node's
    // incidents of several kinds.
    let count_label = group(incidents).map_or("count", KindWords::count_label);
    html.push_str(&format!("<table border=\"1\" cellpadding=\"4\" cellspacing=\"0\">\n<tr><th>node</th><th>host</th><th>status</th><th>verdict</th><th>cause</th><th>{count_label}</th><th>since</th></tr>\n"));
    let _ = writeln!(
        text,
        "{:<30} {:<10} {:<13} {:<16} {:>7}  since",
        "node", "status", "verdict", "cause", count_label
    );
    for i in incidents.iter().take(d.rows) {
        let v = i.verdict(s);
        let _ = writeln!(
            text,
            "{:<30} {:<10} {:<13} {:<16} {:>7}  {}",
            header_text(&i.node, 60),
            status_word(i),
            v.as_str(),
            i.cause().as_str(),
            words(i).count_cell(),
            when(i.opened_at)
        );
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td align=\"right\">{}</td><td>{}</td></tr>\n",
            html_escape(&header_text(&i.node, NAME_SHOWN)),
            html_escape(&header_text(i.host.as_deref().unwrap_or("-"), NAME_SHOWN)),
            status_word(i),
            v.as_str(),
            i.cause().as_str(),
            words(i).count_cell(),
            when(i.opened_at)
        ));
    }
    html.push_str("</table>\n");
    if incidents.len() > d.rows {
        let more = format!(
            "… and {} more nodes (all {} by cause: {}); `kubelet-sentinel incidents --status open` \
             lists them all.",
            incidents.len() - d.rows,
            incidents.len(),
            cause_counts(incidents)
        );
        let _ = writeln!(text, "{more}");
        html.push_str(&format!("<p>{}</p>\n", html_escape(&more)));
    }
    text.push('\n');
    if incidents.len() > d.sections {
        let note = if d.sections == 0 {
            "`kubelet-sentinel show <id>` shows each incident in full.".to_string()
        } else {
            format!(
                "The first {} in full; `kubelet-sentinel show <id>` shows any other.",
                d.sections
            )
        };
        let _ = writeln!(text, "{note}\n");
        html.push_str(&format!("<p>{}</p>\n", html_escape(&note)));
    }
}

/// An endpoint incident's nodes, at most `rows` by name.
fn endpoint_nodes(text: &mut String, html: &mut String, i: &Incident, rows: usize) {
    if let Some(line) = words(i).lost_nodes(i, rows) {
        let _ = writeln!(text, "{line}\n");
        html.push_str(&format!("<p>{}</p>\n", html_escape(&line)));
    }
}

fn status_word(i: &Incident) -> &'static str {
    match i.status() {
        Status::Open => "open",
        Status::Resolved => "resolved",
    }
}

/// Who acknowledged it, and where in its kubelet's start it opened: into
/// the text, and returned for the HTML table.
fn notes(text: &mut String, i: &Incident) -> (Option<String>, Option<String>) {
    let acked = i.ack.as_ref().map(|a| {
        let mut words = format!("by {} at {}", header_text(&a.by, 100), when(a.at));
        if !a.comment.is_empty() {
            words.push_str(&format!(": {}", header_text(&a.comment, 500)));
        }
        words
    });
    if let Some(a) = &acked {
        let _ = writeln!(text, "  acknowledged: {a} (no reminders since)");
    }
    let start = i.start.map(|p| p.words());
    if let Some(w) = &start {
        let _ = writeln!(text, "  start: {w}");
    }
    (acked, start)
}

fn section(text: &mut String, html: &mut String, i: &Incident, s: &Settings) {
    let v = i.verdict(s);
    let said = words(i);
    let c = i.cause();
    let host = i.host.as_deref().unwrap_or("-");
    let times = match i.resolved_at {
        Some(resolved) => format!(
            "{} to {}: trouble lasted {}; resolved {}",
            when(i.opened_at),
            when(i.last_signal_at),
            human_duration(span(i)),
            when(resolved)
        ),
        None => format!(
            "since {}: trouble so far {}, last signal {}",
            when(i.opened_at),
            human_duration(span(i)),
            when(i.last_signal_at)
        ),
    };
    let _ = writeln!(
        text,
        "Node {} (host {}), incident {}",
        header_text(&i.node, NAME_SHOWN),
        header_text(host, NAME_SHOWN),
        i.id
    );
    let _ = writeln!(text, "  time:     {times}");
    let _ = writeln!(text, "  status:   {}", status_word(i));
    let _ = writeln!(text, "  verdict:  {}", verdict_words(v, said, s));
    let _ = writeln!(text, "  cause:    {}: {}", c.as_str(), cause_explanation(c));
    if let Some(e) = i.api_endpoint() {
        let _ = writeln!(text, "  endpoint: {}", header_text(e, 270));
    }
    let _ = writeln!(text, "  counters: {}", said.counters(i));
    let (acked, start) = notes(text, i);
    let _ = writeln!(
        text,
        "\n  Diagnosis: {}\n",
        sentinel_core::tracker::one_line(&i.diagnosis(s), 4000)
    );
    html.push_str(&format!(
        "<h3>Node {} <small>(host {}, incident {})</small></h3>\n<table cellpadding=\"2\">\n",
        html_escape(&header_text(&i.node, NAME_SHOWN)),
        html_escape(&header_text(host, NAME_SHOWN)),
        html_escape(&i.id)
    ));
    for (k, val) in [
        ("time", times.clone()),
        ("status", status_word(i).to_string()),
        ("verdict", verdict_words(v, said, s)),
        ("cause", format!("{}: {}", c.as_str(), cause_explanation(c))),
        ("counters", said.counters(i)),
    ]
    .into_iter()
    .chain(i.api_endpoint().map(|e| ("endpoint", e.to_string())))
    .chain(acked.map(|a| ("acknowledged", format!("{a} (no reminders since)"))))
    .chain(start.map(|w| ("start", w)))
    {
        html.push_str(&format!(
            "<tr><th align=\"left\">{k}</th><td>{}</td></tr>\n",
            html_escape(&val)
        ));
    }
    html.push_str("</table>\n");
    html.push_str(&format!(
        "<p><b>Diagnosis:</b> {}</p>\n",
        html_escape(&sentinel_core::tracker::one_line(&i.diagnosis(s), 4000))
    ));
    if let Some(p) = sentinel_core::picture::Picture::of(i) {
        let _ = writeln!(text, "  Signals over time:");
        text.push_str(&p.text(sentinel_core::time::Zone::Utc));
        text.push('\n');
        html.push_str("<p><b>Signals over time</b></p>\n");
        html.push_str(&p.html());
    }
    let mut shown: Vec<(&str, &sentinel_core::tracker::Evidence)> = Vec::new();
    if let Some(first) = i.first_evidence() {
        shown.push(("First", first));
    }
    if let Some(last) = i.last_evidence() {
        if shown
            .first()
            .is_none_or(|(_, first)| !std::ptr::eq(*first, last))
        {
            shown.push(("Last", last));
        }
    }
    for (which, e) in shown {
        let _ = writeln!(
            text,
            "  {which} evidence ({}):\n    {}",
            clock(e.at),
            one(&e.text)
        );
        html.push_str(&format!(
            "<p><b>{which} evidence</b> ({}):</p>\n<pre style=\"white-space:pre-wrap\">{}</pre>\n",
            clock(e.at),
            html_escape(&one(&e.text))
        ));
    }
    context_block(text, html, i);
    let _ = writeln!(text, "\n  What to check next:");
    html.push_str("<p><b>What to check next:</b></p>\n<ul>\n");
    for step in next_steps(i) {
        // A step names the node: bounded like the names themselves.
        let step = sentinel_core::tracker::one_line(&step, 2 * NAME_SHOWN + 200);
        let _ = writeln!(text, "  - {step}");
        html.push_str(&format!("<li><code>{}</code></li>\n", html_escape(&step)));
    }
    html.push_str("</ul>\n");
    text.push('\n');
}

/// The node's other units' lines that explain it (design 5.4), with their
/// time from its start.
fn context_block(text: &mut String, html: &mut String, i: &Incident) {
    if i.context.is_empty() {
        return;
    }
    let _ = writeln!(text, "  Context (the node's other units):");
    html.push_str("<p><b>Context</b> (the node's other units):</p>\n<ul>\n");
    for l in &i.context {
        let d = l.at - i.opened_at;
        let delta = format!(
            "{}{}",
            if d < 0 { "-" } else { "+" },
            human_duration(d.abs())
        );
        let line = format!(
            "{} ({delta}) {}: {}",
            clock(l.at),
            header_text(&l.unit, 80),
            one(&l.text)
        );
        let _ = writeln!(text, "    {line}");
        html.push_str(&format!("<li>{}</li>\n", html_escape(&line)));
    }
    html.push_str("</ul>\n");
}

/// Evidence on one line, bounded.
fn one(t: &str) -> String {
    sentinel_core::tracker::one_line(t, 1000)
}
