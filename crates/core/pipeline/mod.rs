//! Entries in, decisions out: the filter, the continuation joiner, the
//! parser, the signal table and the tracker, wired once for every caller
//! (`scan`, and the service's catch-up and live following).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::{Entry, EntryFilter, Item, Malformed, Text};
use crate::parse::join::{HeldWrite, Joined, Joiner, Out};
use crate::parse::parse_line;
use crate::signals::{self, Signal};
use crate::time::Micros;
use crate::tracker::{Decision, Incident, MemberWrite, Observation, Origin, Settings, Tracker};

mod hosts;

use hosts::HostBook;
pub use hosts::{FUTURE_SLACK, GIVE_WAY, HOST_IDLE, KUBELETS_BEGAN};

/// What was read, for the summary and the metrics. Every kubelet entry is
/// counted once as a line, a continuation, or unparsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Entries read from the input (all of them for streams; the matched ones
    /// for journals, where libsystemd applies the match).
    pub entries: u64,
    /// Entries that belong to the kubelet.
    pub kubelet_lines: u64,
    /// Kubelet lines with a klog header or in the JSON format, and systemd's
    /// lines about the unit.
    pub lines: u64,
    /// Entries joined to the line they continue.
    pub continuations: u64,
    /// Lines that are a signal.
    pub recognized: u64,
    /// Kubelet entries that are neither a line nor a continuation.
    pub unparsed: u64,
    /// Records of the input that could not be read as entries.
    pub malformed: u64,
    pub first_at: Option<Micros>,
    pub last_at: Option<Micros>,
    /// Nodes named or resolved by recognised lines, at most
    /// [`NODES_LISTED`]: the state is written with every commit.
    pub nodes: BTreeSet<String>,
    /// Recognised lines about nodes past those listed.
    #[serde(default)]
    pub nodes_unlisted: u64,
    /// Journal entries removed (rotation, vacuum) before they were read.
    #[serde(default)]
    pub entries_lost: u64,
    /// Entries damaged journal files record that the reader could not walk
    /// (libsystemd skipped or stopped at damaged objects).
    #[serde(default)]
    pub entries_missing: u64,
    /// Records read with a loss: cut (longer than a reader keeps) or with
    /// an unreadable time.
    #[serde(default)]
    pub damaged: u64,
    /// Entries of the kubelet's units that are not klog (k3s's and rke2's
    /// own logrus lines, gRPC warnings): not kubelet lines.
    #[serde(default)]
    pub foreign: u64,
    /// Lines from sources outside the filter read as the kubelet's by their
    /// content, by identifier (or unit).
    #[serde(default)]
    pub adopted: BTreeMap<String, u64>,
    /// klog lines from sources outside the filter that are not the
    /// kubelet's, by identifier (at most [`OTHER_SOURCES_KEPT`]).
    #[serde(default)]
    pub other_klog: BTreeMap<String, u64>,
    /// The first kubelet line that was not understood, for a person.
    #[serde(default)]
    pub first_unparsed: Option<String>,
    /// Entries with no time of their own and none before them to take.
    #[serde(default)]
    pub untimed: u64,
    /// Entries that matched only by identifier or container name, from a
    /// writer that is not trusted (`EntryFilter::trusted`): look-alikes
    /// any local user can write. Never read as kubelet lines.
    #[serde(default)]
    pub untrusted: u64,
    /// Their sources (identifier and uid), at most [`OTHER_SOURCES_KEPT`].
    #[serde(default)]
    pub untrusted_sources: BTreeMap<String, u64>,
    /// Entries dated more than [`FUTURE_SLACK`] after the machine's clock:
    /// read at their host's time before them (also counted as damaged).
    #[serde(default)]
    pub future_dated: u64,
    /// Lines of the node's other units kept for context (design 5.4).
    #[serde(default)]
    pub context_lines: u64,
    /// Entries of hosts new past `[fleet] max_hosts`: not read.
    #[serde(default)]
    pub hosts_refused: u64,
    /// The first such host (cut to 200 bytes).
    #[serde(default)]
    pub first_refused_host: Option<String>,
    /// Hosts quiet longest whose records gave way to new hosts past
    /// `[fleet] max_hosts` (see [`hosts::GIVE_WAY`]).
    #[serde(default)]
    pub hosts_given_way: u64,
}

/// Bound on the nodes named in [`Summary::nodes`].
pub const NODES_LISTED: usize = 1000;

/// Bound on the sources named in [`Summary::other_klog`].
pub const OTHER_SOURCES_KEPT: usize = 16;

/// Not the kubelet's words though its source's: a distribution's own lines,
/// `systemctl status` headers, and, on a line with no source at all (a
/// paste), the paste's own markup.
fn foreign(e: &Entry) -> bool {
    crate::parse::join::is_foreign(&e.message)
        || (e.unit.is_none()
            && e.identifier.is_none()
            && e.container.is_none()
            && crate::parse::join::is_paste_markup(&e.message))
}

/// What names where an entry came from, for a person.
fn source_name(e: &Entry) -> String {
    e.identifier
        .as_deref()
        .or(e.container.as_deref())
        .or(e.unit.as_deref())
        .unwrap_or("(no identifier)")
        .to_string()
}

/// Everything the pipeline carries from one entry to the next: committed with
/// the cursor, so a restart continues exactly where the last commit left off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineState {
    pub tracker: Tracker,
    /// Lines held for continuations.
    pub joiner: Joiner,
    pub summary: Summary,
}

/// What a batch changed that is kept apart from [`PipelineState`]
/// ([`Pipeline::take_changes`]).
#[derive(Debug, Default)]
pub struct Changes {
    /// Taken out of the history (closed below the threshold, never said).
    pub forgotten: Vec<Incident>,
    /// Resolved, evicted or closed.
    pub resolved: Vec<Incident>,
    /// The hosts' records that changed (`None`: forgotten).
    pub origins: Vec<(String, Option<Origin>)>,
    /// The outages' member records that changed.
    pub members: Vec<MemberWrite>,
    /// The held lines that changed, one record a stream.
    pub held: Vec<HeldWrite>,
    /// The kubelets' starts that changed (design 5.5).
    pub starts: Vec<crate::tracker::Start>,
    /// Of those, the ones whose verdict was reached.
    pub starts_judged: Vec<crate::tracker::Start>,
}

/// [`PipelineState`] by reference, for writing it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PipelineStateRef<'a> {
    pub tracker: &'a Tracker,
    pub joiner: &'a Joiner,
    pub summary: &'a Summary,
}

pub struct Pipeline {
    filter: EntryFilter,
    joiner: Joiner,
    tracker: Tracker,
    summary: Summary,
    out: Vec<Out>,
    /// Malformed records, for the caller to report.
    pub malformed: Vec<Malformed>,
    /// The hosts read: their clocks, which write now, `[fleet] max_hosts`.
    hosts: HostBook,
    no_host: Text,
}

/// Bound on malformed records kept for reporting; the rest are only counted.
const MALFORMED_KEPT: usize = 20;

impl Pipeline {
    #[must_use]
    pub fn new(filter: EntryFilter, settings: Settings) -> Self {
        Self::with_tracker(filter, Tracker::new(settings))
    }

    #[must_use]
    pub fn with_tracker(filter: EntryFilter, tracker: Tracker) -> Self {
        Self {
            filter,
            joiner: Joiner::new(),
            tracker,
            summary: Summary::default(),
            out: Vec::new(),
            malformed: Vec::new(),
            hosts: HostBook::default(),
            no_host: Text::from(""),
        }
    }

    /// Resumes from a committed state (the filter is the current config's).
    #[must_use]
    pub fn from_state(filter: EntryFilter, state: PipelineState) -> Self {
        Self {
            joiner: state.joiner,
            summary: state.summary,
            ..Self::with_tracker(filter, state.tracker)
        }
    }

    /// The state to commit, borrowed: it serializes as [`PipelineState`]
    /// without copying the tracker and its open incidents on every commit.
    #[must_use]
    pub fn state(&self) -> PipelineStateRef<'_> {
        PipelineStateRef {
            tracker: &self.tracker,
            joiner: &self.joiner,
            summary: &self.summary,
        }
    }

    /// From now on, keeps the held lines' changes for
    /// [`Pipeline::take_changes`] (the service, which stores them).
    pub fn track_held_writes(&mut self) {
        self.joiner.track_writes();
    }

    /// What changed since the last call, besides the open incidents the
    /// decisions named: what the caller stores with the next commit, taken
    /// at once (the incidents resolved and forgotten, the hosts' records,
    /// the outages' members, the held lines).
    pub fn take_changes(&mut self) -> Changes {
        Changes {
            forgotten: self.tracker.take_forgotten(),
            resolved: self.tracker.take_resolved(),
            origins: self.tracker.take_dirty_origins(),
            members: self.tracker.take_member_writes(),
            held: self.joiner.take_writes(),
            starts: self.tracker.take_starts(),
            starts_judged: self.tracker.take_judged_starts(),
        }
    }

    /// Puts back the held lines a store kept, after [`Pipeline::from_state`].
    pub fn restore_held(&mut self, held: Vec<(String, (u64, Joined))>) {
        self.joiner.restore(held);
    }

    #[must_use]
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    pub fn tracker_mut(&mut self) -> &mut Tracker {
        &mut self.tracker
    }

    pub fn summary_mut(&mut self) -> &mut Summary {
        &mut self.summary
    }

    /// Each host's newest entry time (its clock), host by host.
    pub fn host_times(&self) -> impl Iterator<Item = (&str, Micros)> {
        self.hosts.times().map(|(h, at)| (&**h, at))
    }

    #[must_use]
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Takes one item of a source.
    pub fn push_item(&mut self, item: Item, decisions: &mut Vec<Decision>) {
        match item {
            Item::Entry(e) => self.push(e, decisions),
            Item::Malformed(m) => {
                self.summary.malformed += 1;
                if self.malformed.len() < MALFORMED_KEPT {
                    self.malformed.push(m);
                }
            }
            Item::Damaged(m) => {
                self.summary.damaged += 1;
                if self.malformed.len() < MALFORMED_KEPT {
                    self.malformed.push(m);
                }
            }
            Item::Activity { host, at } => self.activity(&host, at, decisions),
        }
    }

    /// `host`'s journal reaches `at` (any unit; a collector's reader tells
    /// it from its files' headers), unless `at` is not believed (see
    /// [`Pipeline::set_now`]).
    ///
    /// The reader tells it once it has read the host's files to their end:
    /// a line of the host held for a continuation whose stream's quiet
    /// that time has passed gets none (the host's journal went on without
    /// one), so it is handed on now rather than kept, and written with the
    /// state at every commit, until the end (a collector's catch-up would
    /// otherwise hold one line per host).
    pub fn activity(&mut self, host: &str, at: Micros, decisions: &mut Vec<Decision>) {
        let host = crate::model::bounded_name(host).unwrap_or(host);
        if self.hosts.believed(at) && self.within(host, Some(at)) {
            self.tracker.journal_reaches(host, at, decisions);
            if self.joiner.earliest_held(host).is_some_and(|e| e <= at) {
                self.join(decisions, |j, out| j.release_quiet(host, at, out));
            }
        }
    }

    /// [`HostBook::within`], with the hosts holding a line for its
    /// continuation kept, and the hosts that gave way counted.
    fn within(&mut self, host: &str, at: Option<Micros>) -> bool {
        let joiner = &self.joiner;
        let held = |h: &str| joiner.earliest_held(h).is_some();
        let admitted = self.hosts.within(&mut self.tracker, host, at, held);
        self.summary.hosts_given_way += self.hosts.take_given_way();
        admitted
    }

    /// Whether entries of `host` are read: a host already read, or one more
    /// within `[fleet] max_hosts`. Counts (and names the first of) those
    /// that are not.
    fn admits(&mut self, host: &str, at: Option<Micros>) -> bool {
        if self.within(host, at) {
            return true;
        }
        self.summary.hosts_refused += 1;
        if self.summary.first_refused_host.is_none() {
            self.summary.first_refused_host = Some(crate::tracker::one_line(host, 200));
        }
        false
    }

    /// The machine's clock, given by the caller (the core reads none): an
    /// entry dated more than [`FUTURE_SLACK`] after it (a year-9999 record,
    /// a garbage timestamp) is counted as damaged and read at the time of
    /// the entry before it, so it cannot move its host's clock to the end
    /// of time and resolve everything open.
    pub fn set_now(&mut self, now: Micros) {
        self.hosts.set_now(now);
    }

    /// The reader has read everything there is (the service, at each
    /// `Tail`): what it reads from now on was written after this.
    pub fn caught_up(&mut self) {
        self.hosts.caught_up();
    }

    /// `host`'s latest entry was read after the reader had been caught up
    /// since the host's first entry: the host is being written now, however
    /// its clock is set. Until then (catch-up after a start, a collector's
    /// host that appeared with a backlog, and a line held from then that
    /// quiet hands on later) what was read from it had already been written.
    #[must_use]
    pub fn live(&self, host: &str) -> bool {
        self.hosts.live(host)
    }

    /// Where `host`'s own clock is, by its newest entry, if its latest
    /// kubelet line was read while following (after the first catch-up):
    /// the "now" its lines that arrive now are judged by (see
    /// `[alert] max_age`). `None` for a host read only in the catch-up of
    /// what was there at the start.
    #[must_use]
    pub fn followed_clock(&self, host: &str) -> Option<Micros> {
        if self.hosts.followed(host) {
            self.hosts.seen_at(host)
        } else {
            None
        }
    }

    /// Whether `host`'s clock cannot be trusted: the service read lines of
    /// it dated more than [`FUTURE_SLACK`] after the machine's clock, or
    /// before [`KUBELETS_BEGAN`]. Its alerts are judged by when they were
    /// read, not by its times (which still place its lines).
    #[must_use]
    pub fn clock_untrusted(&self, host: &str) -> bool {
        self.hosts.clock_untrusted(host)
    }

    fn distrust(&mut self, e: &Entry) {
        let host = e.host.clone().unwrap_or_else(|| self.no_host.clone());
        self.hosts.distrust(host);
    }

    /// Takes one entry: admitted (its host within the bounds), dated
    /// (its time believed, or its host's), then routed (a context line,
    /// an untrusted writer's, a foreign line, systemd's word about the
    /// kubelet, or the kubelet's own line to the joiner).
    pub fn push(&mut self, mut entry: Entry, decisions: &mut Vec<Decision>) {
        self.summary.entries += 1;
        if let Some(cut) = entry.host.as_deref().and_then(crate::model::bounded_name) {
            entry.host = Some(cut.into());
        }
        if let Some(host) = entry.host.as_deref() {
            if !self.admits(host, entry.at) {
                return;
            }
        }
        self.date(&mut entry, decisions);
        self.route(entry, decisions);
    }

    /// Dates an entry: a time before any kubelet or past the machine's
    /// clock marks its host's clock untrusted; one past the clock is not
    /// believed (counted damaged, read at its host's time). An entry
    /// without a time of its own takes the last one seen. Any entry of a
    /// host with a believed time shows how far its journal has got.
    fn date(&mut self, entry: &mut Entry, decisions: &mut Vec<Decision>) {
        let mut future = false;
        if let (Some(at), true) = (entry.at, self.hosts.has_clock()) {
            if at < KUBELETS_BEGAN {
                self.distrust(entry);
            }
            if !self.hosts.believed(at) {
                self.distrust(entry);
                future = true;
                self.future_dated(entry, at);
                entry.at = None;
            }
        }
        // Any entry of a host (whatever its unit) shows how far its journal
        // has got: what its silence is judged by (design 5.2). Only its own
        // believed time, never one taken from another entry.
        if let (Some(host), Some(at)) = (entry.host.as_deref(), entry.at) {
            self.tracker.activity(host, at, decisions);
        }
        // Entries without a time of their own (a text line with no prefix and
        // no header) take the last one seen; one whose time is not believed
        // takes its own host's, so it never moves another host's clock.
        if let Some(at) = entry.at {
            self.see_time(at);
        } else {
            entry.at = if future {
                self.hosts.seen_at(entry.host.as_deref().unwrap_or(""))
            } else {
                self.summary.last_at
            };
            // A status header or catalog line (foreign, never timed) is
            // not an entry whose time is missing.
            self.summary.untimed += u64::from(entry.at.is_none() && !foreign(entry));
        }
    }

    /// An entry dated `at`, more than a day after the machine's clock:
    /// counted damaged and reported.
    fn future_dated(&mut self, entry: &Entry, at: Micros) {
        self.summary.damaged += 1;
        self.summary.future_dated += 1;
        if self.malformed.len() < MALFORMED_KEPT {
            self.malformed.push(Malformed {
                place: format!(
                    "an entry from {}{}",
                    source_name(entry),
                    entry
                        .cursor
                        .as_deref()
                        .map(|c| format!(" (cursor {c})"))
                        .unwrap_or_default()
                ),
                reason: format!(
                    "dated {}, more than a day after this machine's clock: read at the \
                     time of its host's entry before it",
                    crate::time::rfc3339(at)
                ),
            });
        }
    }

    /// Where a dated entry goes: another unit's (context), an untrusted
    /// writer's look-alike, or the kubelet's: a foreign line, systemd's
    /// word about the unit, or a line of the kubelet's own for the joiner.
    fn route(&mut self, entry: Entry, decisions: &mut Vec<Decision>) {
        if !self.filter.matches(&entry) && !self.adopt(&entry) {
            self.context(&entry, decisions);
            return;
        }
        if !self.filter.trusted(&entry) {
            self.untrusted(&entry);
            return;
        }
        let host = entry.host.clone().unwrap_or_else(|| self.no_host.clone());
        if let (Some(pid), false) = (entry.pid, entry.from_systemd) {
            if entry.identifier.as_deref() != Some("systemd") {
                self.tracker.kubelet_pid(&host, pid);
            }
        }
        self.hosts.read(&host);
        let at = entry.at;
        // A line held for continuations whose stream this entry shows has
        // ended is handed on first, in the journal's order.
        self.join(decisions, |j, out| j.release_ended(&entry, out));
        if foreign(&entry) {
            self.summary.foreign += 1;
            self.join(decisions, |j, out| j.interrupt(&entry, out));
        } else if entry.from_systemd || entry.identifier.as_deref() == Some("systemd") {
            self.systemd(&entry, decisions);
        } else {
            self.summary.kubelet_lines += 1;
            self.join(decisions, |j, out| j.push(entry, out));
        }
        if let Some(at) = at {
            self.tick(&host, at, decisions);
        }
    }

    /// systemd's word about the kubelet's unit (design 5.1).
    fn systemd(&mut self, entry: &Entry, decisions: &mut Vec<Decision>) {
        let text = crate::model::text(&entry.message);
        match signals::recognize_systemd(&text) {
            Some(sig) => {
                self.summary.kubelet_lines += 1;
                self.summary.lines += 1;
                self.summary.recognized += 1;
                let at = entry.at.unwrap_or(0);
                self.observe(&sig, at, entry, None, &text, decisions);
            }
            // systemd's other words about the unit ("Deactivated
            // successfully", "Failed to kill control group"): not the
            // kubelet's lines, so not unparsed ones either.
            None => self.summary.foreign += 1,
        }
    }

    /// Has the joiner hand on what `op` releases, and reads it.
    fn join(&mut self, decisions: &mut Vec<Decision>, op: impl FnOnce(&mut Joiner, &mut Vec<Out>)) {
        let mut out = std::mem::take(&mut self.out);
        op(&mut self.joiner, &mut out);
        self.drain(&mut out, decisions);
        self.out = out;
    }

    /// An entry outside the kubelet's filter: a context line (design 5.4)
    /// if its source is a context unit's or the kernel's and it says
    /// something that can explain trouble; it never opens an incident.
    /// Counted in [`Summary::context_lines`].
    fn context(&mut self, entry: &Entry, decisions: &mut Vec<Decision>) {
        let Some(source) = self.filter.context_source(entry) else {
            return;
        };
        let Some(at) = entry.at else {
            return;
        };
        let text = crate::model::text(&entry.message);
        let Some(mut line) = crate::context::classify(&source.unit, source.from_systemd, &text)
        else {
            return;
        };
        line.at = at;
        self.summary.context_lines += 1;
        let host = entry.host.clone().unwrap_or_else(|| self.no_host.clone());
        self.tracker
            .context(&host, line, entry.cursor.as_deref(), decisions);
        self.tick(&host, at, decisions);
    }

    /// An entry outside the filter that is the kubelet's by its content
    /// (a saved log whose identifier is not a known one, a kubelet under
    /// another unit); other klog lines are counted by their source.
    /// Counts a look-alike from an untrusted writer, by source.
    fn untrusted(&mut self, e: &Entry) {
        self.summary.untrusted += 1;
        let name = format!("{} (uid {})", source_name(e), e.uid.unwrap_or(0));
        let kept = self.summary.untrusted_sources.len() < OTHER_SOURCES_KEPT;
        if let Some(n) = self.summary.untrusted_sources.get_mut(&name) {
            *n += 1;
        } else if kept {
            self.summary.untrusted_sources.insert(name, 1);
        }
    }

    fn adopt(&mut self, e: &Entry) -> bool {
        let m = &e.message;
        if !(crate::parse::klog::starts_with_header(m) || m.starts_with(b"{\"")) {
            return false;
        }
        let text = crate::model::text(m);
        let line = parse_line(&text);
        if !line.is_parsed() {
            return false;
        }
        let name = source_name(e);
        if signals::is_kubelet_line(&line) {
            *self.summary.adopted.entry(name).or_default() += 1;
            return true;
        }
        let kept = self.summary.other_klog.len() < OTHER_SOURCES_KEPT;
        if let Some(n) = self.summary.other_klog.get_mut(&name) {
            *n += 1;
        } else if kept {
            self.summary.other_klog.insert(name, 1);
        }
        false
    }

    /// Moves `host`'s clock to `at` (if later), and the tracker's for that
    /// host with it; never past a line of the host still held for
    /// continuations, so when held lines are handed on changes nothing.
    fn tick(&mut self, host: &Text, at: Micros, decisions: &mut Vec<Decision>) {
        let seen = self.hosts.tick(host, at);
        self.advance_host(host, seen, decisions);
    }

    fn advance_host(&mut self, host: &str, to: Micros, decisions: &mut Vec<Decision>) {
        if self.tracker.due_for(host).is_none_or(|d| d > to) {
            return;
        }
        let horizon = self.joiner.earliest_held(host).map_or(to, |h| h.min(to));
        self.tracker.advance_host(host, horizon, decisions);
    }

    /// The service: the hosts of the entries pushed since the last call
    /// were read at wall time `wall`.
    pub fn stamp_arrivals(&mut self, wall: Micros) {
        self.hosts.stamp_arrivals(wall);
    }

    /// A host's clock and when its last entry was read (see
    /// [`HostBook::clock_of`]).
    fn clock_of(&self, host: &str, started: Micros) -> (Micros, Micros) {
        self.hosts.clock_of(&self.tracker, host, started)
    }

    /// Wall time at which the next open incident will have been quiet for
    /// `resolve_after`, or the next held line's stream quiet for
    /// [`STREAM_QUIET`](crate::parse::join::STREAM_QUIET), as far as reading
    /// shows (design section 4.1): measured from when its host's last entry
    /// was read.
    #[must_use]
    pub fn next_quiet_at(&self, started: Micros) -> Option<Micros> {
        let wall_at = |h: &str, due: Micros| {
            let (seen, arrived) = self.clock_of(h, started);
            arrived.saturating_add(due.saturating_sub(seen).max(0))
        };
        let quiet = self
            .tracker
            .due_hosts()
            // A host's held line is handed on first; its quiet is due after.
            .filter(|(h, _)| self.joiner.earliest_held(h).is_none())
            .map(|(h, due)| wall_at(h, due));
        let held = self.joiner.held_hosts().map(|(h, due)| wall_at(h, due));
        quiet.chain(held).min()
    }

    /// The reader confirmed it was caught up at wall time `wall`: each host's
    /// clock moves on by the wall time since its last entry was read, so
    /// quiet hands on the held lines whose stream it ends, as the host's next
    /// entry would in a one-shot read, and resolves what the journal
    /// confirms is quiet.
    pub fn advance_quiet(&mut self, wall: Micros, started: Micros, decisions: &mut Vec<Decision>) {
        let held: Vec<(String, Micros)> = self
            .joiner
            .held_hosts()
            .map(|(h, _)| {
                let (seen, arrived) = self.clock_of(h, started);
                (h.to_string(), seen.saturating_add((wall - arrived).max(0)))
            })
            .collect();
        self.join(decisions, |j, out| {
            for (h, to) in held {
                j.release_quiet(&h, to, out);
            }
        });
        let hosts: Vec<(String, Micros)> = self
            .tracker
            .due_hosts()
            .map(|(h, _)| {
                let (seen, arrived) = self.clock_of(h, started);
                (h.to_string(), seen.saturating_add((wall - arrived).max(0)))
            })
            .collect();
        for (h, to) in hosts {
            self.advance_host(&h, to, decisions);
        }
    }

    /// Hands on lines held for continuations (end of input).
    pub fn flush(&mut self, decisions: &mut Vec<Decision>) {
        self.join(decisions, Joiner::flush);
    }

    /// Moves every host's clock to `now` (tests).
    pub fn advance(&mut self, now: Micros, decisions: &mut Vec<Decision>) {
        self.tracker.advance(now, decisions);
    }

    /// End of input: flush, then let each host's clock reach its last
    /// entry, and judge which hosts went silent.
    pub fn finish(&mut self, decisions: &mut Vec<Decision>) {
        self.flush(decisions);
        let clocks: Vec<(Text, Micros)> =
            self.hosts.times().map(|(h, at)| (h.clone(), at)).collect();
        for (h, at) in clocks {
            self.tracker.advance_host(&h, at, decisions);
        }
        self.tracker.judge_silence(decisions);
    }

    /// The source is a collector's directory: its hosts are judged silent.
    pub fn set_fleet(&mut self, collector: bool) {
        self.tracker.set_fleet(collector);
    }

    /// A following reader's `Tail`, where it has read everything there is
    /// so far: the hosts whose journal is `[fleet] silent_after` behind the
    /// newest, and did not move since the last tail, are silent (design
    /// 5.2; [`Pipeline::finish`] judges every host at a one-shot read's end).
    /// Returns whether a host that moved since the last tail was held
    /// back (see [`Tracker::judge_silence_at_tail`]): look again soon.
    pub fn judge_silence_at_tail(&mut self, decisions: &mut Vec<Decision>) -> bool {
        self.tracker.judge_silence_at_tail(decisions)
    }

    fn note_unparsed(&mut self, m: &[u8]) {
        if self.summary.first_unparsed.is_none() {
            let text = crate::model::text(m);
            self.summary.first_unparsed = Some(crate::tracker::one_line(&text, 200));
        }
    }

    fn see_time(&mut self, at: Micros) {
        let s = &mut self.summary;
        s.first_at = Some(s.first_at.map_or(at, |f| f.min(at)));
        s.last_at = Some(s.last_at.map_or(at, |l| l.max(at)));
    }

    fn drain(&mut self, out: &mut Vec<Out>, decisions: &mut Vec<Decision>) {
        for o in out.drain(..) {
            match o {
                // A distribution's own output (a wrapper script, kubelite's
                // other components) is not the kubelet's; a line of the
                // kubelet's own that starts no record is unparsed.
                Out::Orphan(e) if !crate::model::kubelet_alone(&e) => {
                    self.summary.kubelet_lines -= 1;
                    self.summary.foreign += 1;
                }
                Out::Orphan(e) => {
                    // cobra's `Error: failed to run Kubelet: …` has no klog
                    // header but is the kubelet's fatal word.
                    let text = crate::model::text(&e.message).into_owned();
                    if let Some(sig) = signals::recognize_bare(&text) {
                        self.summary.lines += 1;
                        self.summary.recognized += 1;
                        let at = e.at.unwrap_or(0);
                        self.observe(&sig, at, &e, None, &text, decisions);
                    } else {
                        self.summary.unparsed += 1;
                        self.note_unparsed(&e.message);
                    }
                }
                Out::Line(j) => self.line(&j, decisions),
            }
        }
    }

    fn line(&mut self, j: &Joined, decisions: &mut Vec<Decision>) {
        self.summary.continuations += u64::from(j.continuations);
        let text = crate::model::text(&j.entry.message);
        let line = parse_line(&text);
        if !line.is_parsed() {
            // A `{` line that was not the JSON format.
            self.summary.unparsed += 1 + u64::from(j.continuations);
            self.summary.continuations -= u64::from(j.continuations);
            self.note_unparsed(&j.entry.message);
            return;
        }
        self.summary.lines += 1;
        // A paste whose markdown broke the line (`failed to run **Kubelet:
        // …**`): its words without the markup.
        // Asked of every line: memchr for the rare `*`, not a substring
        // searcher set up each time.
        let b = text.as_bytes();
        let starred = memchr::memchr_iter(b'*', b).any(|k| b.get(k + 1) == Some(&b'*'));
        let unmarked = starred.then(|| text.replace("**", ""));
        let Some(sig) = signals::recognize(&line).or_else(|| {
            unmarked
                .as_deref()
                .and_then(|t| signals::recognize(&parse_line(t)))
        }) else {
            return;
        };
        self.summary.recognized += 1;
        let at = j.entry.at.or(line.ts).unwrap_or(0);
        if line.ts.is_some() && j.entry.at.is_none() {
            self.see_time(at);
        }
        let cursor = j.last_cursor.as_deref();
        self.observe(&sig, at, &j.entry, cursor, &text, decisions);
    }

    fn observe(
        &mut self,
        sig: &Signal,
        at: Micros,
        entry: &Entry,
        cursor: Option<&str>,
        text: &str,
        decisions: &mut Vec<Decision>,
    ) {
        let host = entry.host.as_deref();
        if let Some(node) = self.tracker.node_for(sig, host.unwrap_or("")) {
            if self.summary.nodes.len() < NODES_LISTED || self.summary.nodes.contains(&node) {
                self.summary.nodes.insert(node);
            } else {
                self.summary.nodes_unlisted += 1;
            }
        }
        let obs = Observation {
            signal: sig,
            at,
            host,
            cursor: cursor.or(entry.cursor.as_deref()),
            text,
            // This line's own time, not its host's history: one damaged
            // record does not shut a host out for the rest of a run, and a
            // restarted service judges the line as `scan` does.
            clock_untrusted: self.hosts.untrusted_time(at),
            pid: entry.pid,
            from_systemd: entry.from_systemd || entry.identifier.as_deref() == Some("systemd"),
        };
        self.tracker.observe(&obs, decisions);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND;
    use crate::tracker::Verdict;

    const T0: Micros = 1_795_856_400_000_000; // 2026-11-28T09:00:00Z

    fn kubelet(pid: u32, at: Micros, body: &str) -> Entry {
        let t = chrono::DateTime::from_timestamp_micros(at).unwrap();
        Entry {
            at: Some(at),
            host: Some("worker-01".into()),
            unit: Some("kubelet.service".into()),
            identifier: Some("kubelet".into()),
            pid: Some(pid),
            stream: Some(format!("stream-{pid}").into()),
            message: format!("I{} {pid:>7} x.go:1] {body}", t.format("%m%d %H:%M:%S%.6f"))
                .into_bytes(),
            ..Entry::default()
        }
    }

    fn systemd(at: Micros, msg: &str) -> Entry {
        Entry {
            at: Some(at),
            host: Some("worker-01".into()),
            identifier: Some("systemd".into()),
            pid: Some(1),
            from_systemd: true,
            about_unit: Some("kubelet.service".into()),
            message: msg.as_bytes().to_vec(),
            ..Entry::default()
        }
    }

    /// F1's journal: the start-up race (one retry, then node ready as the
    /// process's last line), a restart 41 s later, then a 2-minute outage.
    /// `systemd_lines`: with systemd's lines about the restart (a journal
    /// read with the unit's match) or without (a saved log of the kubelet's
    /// own lines).
    fn restart_journal(systemd_lines: bool) -> Vec<Entry> {
        let mut j = vec![
            kubelet(100, T0, r#""Kubelet version" kubeletVersion="v1.31.0""#),
            kubelet(
                100,
                T0 + 100_000,
                r#""Successfully registered node" node="worker-01""#,
            ),
            kubelet(
                100,
                T0 + 100_500,
                r#""Error updating node status, will retry" err="error getting node \"worker-01\": node \"worker-01\" not found""#,
            ),
            kubelet(
                100,
                T0 + 505_000,
                r#""Fast updating node status as it just became ready""#,
            ),
        ];
        let restart = T0 + 41 * SECOND;
        if systemd_lines {
            j.push(systemd(
                restart,
                "Stopping kubelet.service - kubelet: The Kubernetes Node Agent...",
            ));
            j.push(systemd(
                restart + 10_000,
                "kubelet.service: Deactivated successfully.",
            ));
            j.push(systemd(
                restart + 10_000,
                "Stopped kubelet.service - kubelet: The Kubernetes Node Agent.",
            ));
            j.push(systemd(
                restart + 20_000,
                "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
            ));
        }
        j.push(kubelet(
            200,
            restart + 300_000,
            r#""Kubelet version" kubeletVersion="v1.31.0""#,
        ));
        for n in 0..40 {
            j.push(kubelet(200, restart + SECOND + n * 3 * SECOND, r#""Error updating node status, will retry" err="error getting node \"worker-01\": Get \"https://10.0.0.1:6443/api/v1/nodes/worker-01?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#));
        }
        j
    }

    fn scanned(journal: Vec<Entry>) -> Vec<crate::tracker::Incident> {
        let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
        let mut d = Vec::new();
        for e in journal {
            p.push(e, &mut d);
        }
        p.finish(&mut d);
        let mut all = p.tracker_mut().take_resolved();
        all.extend(p.tracker().open_incidents().cloned());
        all.sort_by_key(|i| i.opened_at);
        all
    }

    #[test]
    fn a_restarted_kubelets_last_line_is_handed_on_in_order() {
        for systemd_lines in [true, false] {
            let got = scanned(restart_journal(systemd_lines));
            let s = Settings::default();
            let summary: Vec<_> = got
                .iter()
                .map(|i| {
                    (
                        i.verdict(&s),
                        i.cause().as_str(),
                        i.counted_retries(),
                        i.status(),
                    )
                })
                .collect();
            assert_eq!(
                summary,
                [
                    (
                        Verdict::StartupRace,
                        "lister-lag",
                        1,
                        crate::tracker::Status::Resolved
                    ),
                    (
                        Verdict::Persistent,
                        "api-unreachable",
                        40,
                        crate::tracker::Status::Open
                    ),
                ],
                "with systemd's lines: {systemd_lines}"
            );
            assert_eq!(got[0].resolved_at, Some(T0 + 505_000));
            // F2: the outage quotes its first retry, not a marker of the restart.
            let first = got[1].first_evidence().unwrap();
            assert_eq!(first.at, T0 + 42 * SECOND);
            assert!(first.text.contains("connection refused"), "{first:?}");
        }
    }

    #[test]
    fn a_future_dated_entry_takes_its_own_hosts_time_and_is_counted() {
        let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
        p.set_now(T0);
        let mut d = Vec::new();
        let mut other = kubelet(
            1,
            T0 - 5 * SECOND,
            r#""Kubelet version" kubeletVersion="v1.31.0""#,
        );
        other.host = Some("other".into());
        p.push(other, &mut d);
        let far = T0 + 100 * 365 * 24 * 3600 * SECOND;
        p.push(kubelet(2, far, r#""Error updating node status, will retry" err="error getting node \"worker-01\": node \"worker-01\" not found""#), &mut d);
        p.finish(&mut d);
        assert_eq!(p.summary().future_dated, 1);
        assert_eq!(p.summary().untimed, 1);
        assert_eq!(p.malformed.len(), 1);
        // Not the other host's time: worker-01 had none.
        let i = p.tracker().open_incidents().next().unwrap();
        assert_ne!(i.opened_at, T0 - 5 * SECOND);
    }

    /// `[fleet] max_hosts`: hosts past the bound are counted, not read; a
    /// host read before goes on being read, and its trouble still opens.
    #[test]
    fn hosts_past_max_hosts_are_counted_not_read() {
        let settings = Settings {
            max_hosts: 3,
            ..Settings::default()
        };
        let mut p = Pipeline::new(EntryFilter::default(), settings);
        let mut d = Vec::new();
        let retry = |node: &str| {
            format!(
                r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
            )
        };
        for round in 0..4 {
            for n in 0..10 {
                let host = format!("h{n}");
                let mut e = kubelet(1, T0 + round * SECOND + n, &retry(&host));
                e.host = Some(host.as_str().into());
                p.push(e, &mut d);
            }
            p.activity("h9", T0 + round * SECOND, &mut d);
        }
        p.finish(&mut d);
        assert_eq!(p.summary().hosts_refused, 7 * 4);
        assert_eq!(p.summary().first_refused_host.as_deref(), Some("h3"));
        assert_eq!(p.tracker().hosts(), 3);
        let mut nodes: Vec<String> = p
            .tracker()
            .open_incidents()
            .map(|i| i.node.clone())
            .collect();
        nodes.sort();
        assert_eq!(nodes, ["h0", "h1", "h2"]);
        assert!(
            p.tracker()
                .open_incidents()
                .all(|i| i.counted_retries() == 4)
        );
    }

    /// Past `[fleet] max_hosts`, the hosts quiet longest with no open
    /// incident give way to new ones (their records forgotten, in the
    /// store too); a host with an open incident never does, and while
    /// every host has one a new host is refused and counted.
    #[test]
    fn quiet_hosts_give_way_to_new_ones_past_max_hosts() {
        let settings = Settings {
            max_hosts: 3,
            ..Settings::default()
        };
        let mut p = Pipeline::new(EntryFilter::default(), settings);
        let mut d = Vec::new();
        let line = |host: &str, at: Micros, text: &str| {
            let mut e = kubelet(1, at, text);
            e.host = Some(host.into());
            e
        };
        let chatter = r#""SyncLoop (PLEG): event for pod" pod="default/p""#;
        for (n, h) in ["old-0", "old-1", "old-2"].iter().enumerate() {
            p.push(line(h, T0 + n as Micros, chatter), &mut d);
        }
        p.push(line("new-0", T0 + SECOND, chatter), &mut d);
        assert_eq!(p.summary().hosts_refused, 0, "{:?}", p.summary());
        assert_eq!(p.tracker().hosts(), 3);
        assert!(!p.tracker().knows_host("old-0"), "the quietest gave way");
        assert!(p.tracker().knows_host("new-0"));
        assert_eq!(p.host_times().count(), 3);
        let gone: Vec<String> = p
            .tracker_mut()
            .take_dirty_origins()
            .into_iter()
            .filter_map(|(h, o)| o.is_none().then_some(h))
            .collect();
        assert_eq!(gone, ["old-0"]);
        // Every host in trouble: none gives way, the new one is refused.
        let retry = |node: &str| {
            format!(
                r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
            )
        };
        for h in ["old-1", "old-2", "new-0"] {
            p.push(line(h, T0 + 2 * SECOND, &retry(h)), &mut d);
        }
        p.push(line("new-1", T0 + 3 * SECOND, chatter), &mut d);
        assert_eq!(p.summary().hosts_refused, 1);
        assert_eq!(p.summary().first_refused_host.as_deref(), Some("new-1"));
        assert!(p.tracker().knows_host("old-1"));
    }

    /// M1/M4: a 200 KB host name and a 100 KB node name are cut to
    /// [`crate::model::NAME_MAX`] bytes before anything keeps them (the
    /// log, the store, the mails).
    #[test]
    fn huge_names_are_cut_where_they_come_in() {
        let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
        let mut d = Vec::new();
        let host = "h".repeat(200 << 10);
        let node = "é".repeat(50 << 10);
        let retry = format!(
            r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
        );
        for k in 0..3 {
            let mut e = kubelet(1, T0 + k * SECOND, &retry);
            e.host = Some(host.as_str().into());
            p.push(e, &mut d);
        }
        p.activity(&host, T0 + 5 * SECOND, &mut d);
        p.finish(&mut d);
        let i = p.tracker().open_incidents().next().unwrap();
        assert!(i.node.len() <= crate::model::NAME_MAX, "{}", i.node.len());
        assert_eq!(
            i.host.as_deref().map(str::len),
            Some(crate::model::NAME_MAX)
        );
        assert_eq!(p.tracker().hosts(), 1, "one host, cut the same each time");
    }

    /// S20: one upload naming `max_hosts` hosts (a line each) no longer
    /// blinds the collector to the hosts that come after it: once their
    /// trouble ended, a real host's outage 80 s later opens its incident
    /// and pages.
    #[test]
    fn a_flood_of_host_names_keeps_no_real_host_out() {
        let settings = Settings {
            max_hosts: 200,
            ..Settings::default()
        };
        let mut p = Pipeline::new(EntryFilter::default(), settings);
        let mut d = Vec::new();
        let line = |host: &str, at: Micros, text: &str| {
            let mut e = kubelet(1, at, text);
            e.host = Some(host.into());
            e
        };
        let miss = |node: &str| {
            format!(
                r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
            )
        };
        for n in 0..200 {
            let h = format!("fake-{n:03}");
            p.push(line(&h, T0, &miss(&h)), &mut d);
        }
        p.advance(T0 + 80 * SECOND, &mut d);
        assert_eq!(
            p.tracker().open_incidents().count(),
            0,
            "the flood's trouble ended"
        );
        let unreachable = r#""Error updating node status, will retry" err="error getting node \"worker-b\": Get \"https://10.0.0.1:6443/api/v1/nodes/worker-b?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#;
        d.clear();
        for k in 0..30 {
            let at = T0 + 80 * SECOND + k * 10 * SECOND;
            p.push(
                line(
                    "worker-a",
                    at,
                    r#""SyncLoop (PLEG): event for pod" pod="default/p""#,
                ),
                &mut d,
            );
            p.push(line("worker-b", at + 1, unreachable), &mut d);
        }
        p.finish(&mut d);
        assert_eq!(p.summary().hosts_refused, 0, "{:?}", p.summary());
        let b: Vec<&Incident> = p
            .tracker()
            .open_incidents()
            .filter(|i| i.node == "worker-b")
            .collect();
        assert_eq!(b.len(), 1, "{b:#?}");
        assert!(b[0].over_threshold_at.is_some());
        assert!(d.iter().any(|x| matches!(
            x,
            Decision::QueueAlert { id, kind: crate::tracker::AlertKind::Opened, .. } if *id == b[0].id
        )));
    }

    #[test]
    fn a_hosts_journal_going_on_hands_on_its_held_line() {
        let mut p = Pipeline::new(EntryFilter::default(), Settings::default());
        let mut d = Vec::new();
        let retry = r#""Error updating node status, will retry" err="error getting node \"worker-01\": node \"worker-01\" not found""#;
        p.push(kubelet(1, T0, retry), &mut d);
        // Held for a continuation: nothing decided, the line in the state.
        assert!(d.is_empty(), "{d:?}");
        assert!(!p.joiner.is_empty());
        // Another host's journal going on says nothing of this one's.
        p.activity("other", T0 + 10 * SECOND, &mut d);
        assert!(!p.joiner.is_empty());
        // Within the stream's quiet: still held.
        p.activity("worker-01", T0 + 1, &mut d);
        assert!(!p.joiner.is_empty());
        // The host's files reach past its quiet: handed on, as its next
        // entry would.
        p.activity("worker-01", T0 + SECOND, &mut d);
        assert!(p.joiner.is_empty());
        assert!(
            d.iter().any(|x| matches!(x, Decision::OpenIncident { .. })),
            "{d:?}"
        );
    }
}
