//! Host-silent incidents (design 5.2): a collector's host whose journal
//! stopped while the others' went on. Only a collector's directory is
//! judged ([`SilentWatch::set_fleet`]).
//!
//! The tracker is told, entry by entry, how far each host's journal has
//! got ([`SilentWatch::activity`]: "host H's journal reaches time T"), and
//! decides from those times only, never from a clock:
//! - a host is silent once the newest time of any host is `silent_after`
//!   or more past its own; the incident opens at its last time +
//!   `silent_after` (when the fleet's time passed that), whenever it is
//!   judged, so `scan`, `run --once` and a following `run` give one id;
//! - it is judged where the reader has read everything there is
//!   ([`SilentWatch::judge_silence`]: the end of a one-shot read, each `Tail`
//!   of a following one), so hosts read in parallel at different speeds
//!   do not look silent to each other mid-read;
//! - at a following reader's tail, a host whose journal moved since the
//!   last tail is not judged yet: its files are still arriving (a late
//!   upload, read as it is written), and the tail after its last entry
//!   judges it from that entry, as a one-shot read judges every host at
//!   its end ([`SilentWatch::judge_silence_at_tail`]);
//! - an entry that continues a silent host's journal (less than
//!   `silent_after` after its last) while it is still `silent_after`
//!   behind the fleet is more of a late upload: the incident stays open,
//!   silent since that entry, instead of ending and opening again at the
//!   next judgement;
//! - otherwise it resolves at the host's next entry, read late or not; a host that
//!   comes back before it was judged, after a gap of `silent_after` or
//!   more of its own that the fleet's time passed, still gets its
//!   (resolved) incident, as a following service that judged it in the
//!   gap would have;
//! - the fleet's time is moved on only by hosts that kept writing (an
//!   entry less than `silent_after` after their previous one): nothing
//!   moves, no host is silent (a collector that receives nothing at all is
//!   behind, which `status` says once), and hosts that all jump over the
//!   same gap make none of each other silent; one host alone is never
//!   silent.

use crate::keyed::HostMap;
use crate::signals::SignalKind;
use crate::time::Micros;
use crate::tracker::decision::{AlertKind, Decision};
use crate::tracker::hosts::{Hosts, Origin};
use crate::tracker::kind::{Detail, Incident, Silent};
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

/// What host silence is judged by, beside the hosts' own times.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::tracker) struct SilentWatch {
    /// Hosts whose journal moved since silence was last judged at a tail:
    /// not judged there, their upload may go on.
    moved: HostMap<String, ()>,
    /// The source is a collector's directory (hosts read apart): only
    /// there are hosts judged silent.
    fleet: bool,
    /// The newest time any host's journal reached (derived from the
    /// hosts' records; 0: none yet).
    fleet_newest: Micros,
}
impl SilentWatch {
    /// Whether the source is a collector's directory, whose hosts are
    /// judged silent; a single node's journal (whose host name may change
    /// once, at provisioning) and saved logs never are.
    pub(in crate::tracker) fn set_fleet(&mut self, collector: bool) {
        self.fleet = collector;
    }

    /// The service was switched to another journal: how far the old one's
    /// hosts got is no measure of the new one's.
    pub(in crate::tracker) fn forget_journal_times(&mut self, hosts: &mut Hosts) {
        let had: Vec<String> = hosts
            .iter_mut()
            .filter_map(|(h, o)| o.last_entry_at.take().map(|_| h.clone()))
            .collect();
        for h in had {
            hosts.touch(&h);
        }
        self.fleet_newest = 0;
    }

    /// How far each host's journal has got (its newest entry of any unit,
    /// as far as the reader tells): what its silence is judged by.
    pub(in crate::tracker) fn journal_times(hosts: &Hosts) -> impl Iterator<Item = (&str, Micros)> {
        hosts
            .iter()
            .filter_map(|(h, o)| o.last_entry_at.map(|t| (h.as_str(), t)))
    }

    /// `host`'s journal reaches `at` (an entry of it was read). Ends its
    /// host-silent incident; records one it had in a gap that nobody
    /// judged (see the module's doc).
    pub(in crate::tracker) fn activity(
        &mut self,
        l: &mut Ledger,
        hosts: &mut Hosts,
        host: &str,
        at: Micros,
        out: &mut Vec<Decision>,
    ) {
        self.reaches(l, hosts, host, at, true, out);
    }

    /// `host`'s journal files reach `at` (a collector's reader reads it
    /// from their headers, whatever unit wrote last): ends its host-silent
    /// incident. Coarse (once a read of the host's files), so a jump in it
    /// is no gap of the host's.
    pub(in crate::tracker) fn journal_reaches(
        &mut self,
        l: &mut Ledger,
        hosts: &mut Hosts,
        host: &str,
        at: Micros,
        out: &mut Vec<Decision>,
    ) {
        self.reaches(l, hosts, host, at, false, out);
    }

    fn reaches(
        &mut self,
        l: &mut Ledger,
        hosts: &mut Hosts,
        host: &str,
        at: Micros,
        gaps: bool,
        out: &mut Vec<Decision>,
    ) {
        if host.is_empty() {
            return;
        }
        let previous = if let Some(o) = hosts.get_mut(host) {
            let p = o.last_entry_at;
            if p.is_some_and(|p| p >= at) {
                return;
            }
            o.last_entry_at = Some(at);
            p
        } else {
            let o = Origin {
                last_entry_at: Some(at),
                ..Origin::default()
            };
            hosts.insert(host, o);
            None
        };
        hosts.touch(host);
        self.moved
            .get_or_insert_with(host, || host.to_string(), || ());
        let after = l.settings.silent_after;
        let fleet = self.fleet_newest;
        // Only a host that kept writing moves the fleet's time on: one
        // that jumps over a gap of its own (every host after the collector
        // received nothing, and lost what they wrote meanwhile) makes no
        // other host silent.
        if previous.is_none_or(|p| at.saturating_sub(p) < after) {
            self.fleet_newest = fleet.max(at);
        }
        let key = OpenKey::new(IncidentKind::HostSilent, host);
        if !l.open.contains_key(&key) {
            match previous {
                // A gap of its own, which the fleet's time passed: hosts
                // read in parallel (a collector's catch-up) run ahead of
                // each other, so the fleet's time alone proves nothing.
                Some(p)
                    if gaps
                        && self.fleet
                        && after > 0
                        && at.saturating_sub(p) >= after
                        && fleet.saturating_sub(p) >= after =>
                {
                    Self::open_silent(l, hosts, host, p, out);
                }
                _ => return,
            }
        } else if previous.is_some_and(|p| at.saturating_sub(p) < after)
            && self.fleet_newest.saturating_sub(at) >= after
        {
            // More of a late upload, still behind: silent since this entry.
            if let Some(inc) = l.open.get_mut(&key) {
                if let Detail::HostSilent(s) = &mut inc.detail {
                    s.last_entry_at = at;
                }
                out.push(Decision::UpdateIncident { id: inc.id.clone() });
            }
            return;
        }
        l.resolve(&key, at, Resolution::Wrote, out);
    }

    /// Opens a host-silent incident for every host whose journal's time
    /// is `silent_after` or more behind the newest of any host's; call it
    /// at the end of a one-shot read, where the reader has read everything
    /// there will be.
    pub(in crate::tracker) fn judge_silence(
        &mut self,
        l: &mut Ledger,
        hosts: &Hosts,
        out: &mut Vec<Decision>,
    ) {
        self.moved.clear();
        self.judge(l, hosts, &HostMap::new(), out);
    }

    /// As [`Tracker::judge_silence`], at a following reader's tail: a host
    /// whose journal moved since the last tail is judged at the next one.
    /// Returns whether such a host was held back, one that would be silent
    /// now: the caller looks again soon (a tail with nothing new judges
    /// it), so a host whose last entries came just before the reader went
    /// quiet (the rest of an upload, read again after a restart) is not
    /// left unjudged while nothing else arrives.
    pub(in crate::tracker) fn judge_silence_at_tail(
        &mut self,
        l: &mut Ledger,
        hosts: &Hosts,
        out: &mut Vec<Decision>,
    ) -> bool {
        let moved = std::mem::take(&mut self.moved);
        self.judge(l, hosts, &moved, out)
    }

    /// Opens the incidents of the hosts that are silent and did not move;
    /// returns whether one that moved would have been.
    fn judge(
        &self,
        l: &mut Ledger,
        hosts: &Hosts,
        moved: &HostMap<String, ()>,
        out: &mut Vec<Decision>,
    ) -> bool {
        let after = l.settings.silent_after;
        let newest = self.fleet_newest;
        if after <= 0 || !self.fleet {
            return false;
        }
        let (held, silent): (Vec<_>, Vec<_>) = hosts
            .iter()
            .filter_map(|(h, o)| o.last_entry_at.map(|t| (h, t)))
            .filter(|(h, t)| {
                newest.saturating_sub(*t) >= after
                    && !l
                        .open
                        .contains_key(&OpenKey::new(IncidentKind::HostSilent, h))
            })
            .map(|(h, t)| (h.clone(), t))
            .partition(|(h, _)| moved.contains_key(h));
        for (h, t) in silent {
            Self::open_silent(l, hosts, &h, t, out);
        }
        !held.is_empty()
    }

    /// The newest time any host's journal has reached.
    #[must_use]
    pub(in crate::tracker) fn fleet_newest(&self) -> Option<Micros> {
        (self.fleet_newest > 0).then_some(self.fleet_newest)
    }

    fn open_silent(
        l: &mut Ledger,
        hosts: &Hosts,
        host: &str,
        last: Micros,
        out: &mut Vec<Decision>,
    ) {
        let key = OpenKey::new(IncidentKind::HostSilent, host);
        let at = last.saturating_add(l.settings.silent_after);
        let node = hosts.node_of(host).unwrap_or_else(|| host.to_string());
        let mut inc = Incident::blank(
            key.incident_id(at),
            IncidentKind::HostSilent,
            &node,
            Some(host),
            at,
            // Nothing signalled it; the field is not shown for this kind.
            SignalKind::KubeletStopped,
        );
        inc.detail = Detail::HostSilent(Silent {
            last_entry_at: last,
        });
        // Alerted as soon as it opens: silence has no count to cross.
        inc.over_threshold_at = Some(at);
        inc.last_alert_at = Some(at);
        out.push(Decision::OpenIncident { id: inc.id.clone() });
        out.push(inc.raise(AlertKind::Opened, at));
        l.open.insert(key, inc);
    }

    /// `host`'s record was forgotten.
    pub(in crate::tracker) fn forget(&mut self, host: &str) {
        self.moved.remove(host);
    }

    /// The hosts' records were put back: the fleet's time is theirs.
    pub(in crate::tracker) fn restore(&mut self, hosts: &Hosts) {
        let newest = hosts.iter().filter_map(|(_, o)| o.last_entry_at).max();
        self.fleet_newest = newest.unwrap_or(0).max(self.fleet_newest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND;
    use crate::tracker::Tracker;
    use crate::tracker::{Settings, Status};

    const MIN: Micros = 60 * SECOND;

    /// `[fleet] silent_incidents = true`, `silent_after` at its default.
    fn on() -> Settings {
        Settings {
            silent_after: crate::defaults::SILENT_AFTER,
            ..Settings::default()
        }
    }
    const T0: Micros = 1_795_856_400_000_000;

    /// Four hosts writing once a minute for an hour; `c` stops at 30 min
    /// (and writes again at `back`, if given). Judged every `judge_every`
    /// minutes (0: at the end only).
    fn run(back: Option<i64>, judge_every: i64) -> (Tracker, Vec<Decision>) {
        let mut t = Tracker::new(on());
        t.set_fleet(true);
        let mut out = Vec::new();
        for m in 0..=60 {
            for h in ["a", "b", "c", "d"] {
                let quiet = h == "c" && m > 30 && back.is_none_or(|b| m < b);
                if !quiet {
                    t.activity(h, T0 + m * MIN, &mut out);
                }
            }
            if judge_every > 0 && m % judge_every == 0 {
                t.judge_silence(&mut out);
            }
        }
        t.judge_silence(&mut out);
        (t, out)
    }

    fn silent(t: &mut Tracker) -> Vec<Incident> {
        let mut all = t.take_resolved();
        all.extend(t.open_incidents().cloned());
        all.retain(|i| i.kind() == IncidentKind::HostSilent);
        all
    }

    #[test]
    fn a_host_that_stops_while_the_others_write_is_one_silent_incident() {
        let (mut t, out) = run(None, 0);
        let got = silent(&mut t);
        assert_eq!(got.len(), 1, "{got:#?}");
        let i = &got[0];
        assert_eq!(i.host.as_deref(), Some("c"));
        assert_eq!(i.node, "c");
        assert_eq!(
            i.detail,
            Detail::HostSilent(Silent {
                last_entry_at: T0 + 30 * MIN
            })
        );
        assert_eq!(i.opened_at, T0 + 40 * MIN);
        assert_eq!(i.status(), Status::Open);
        assert!(out.iter().any(
            |d| matches!(d, Decision::QueueAlert { kind: AlertKind::Opened, id, .. } if *id == i.id)
        ));
        assert!(i.diagnosis(&Settings::default()).contains("Host c"));
        // Judged at every minute instead: the same incident.
        let (mut often, _) = run(None, 1);
        assert_eq!(silent(&mut often), got);
    }

    #[test]
    fn it_resolves_when_the_host_writes_again_judged_or_not() {
        let (mut t, out) = run(Some(55), 1);
        let got = silent(&mut t);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].resolved_at, Some(T0 + 55 * MIN));
        assert_eq!(got[0].resolution, Some(Resolution::Wrote));
        assert!(out.iter().any(|d| matches!(
            d,
            Decision::QueueAlert {
                kind: AlertKind::Resolved,
                ..
            }
        )));
        // Never judged in the gap (a one-shot read of it all): the same.
        let (mut once, _) = run(Some(55), 0);
        assert_eq!(silent(&mut once), got);
        // Back before silent_after: nothing.
        let (mut short, _) = run(Some(39), 1);
        assert!(silent(&mut short).is_empty());
    }

    /// Hosts `a` and `b` write once a minute for two hours; then `c`'s
    /// journal of its first 30 minutes arrives, an entry every 10 s, read
    /// as it is written: a tail after each entry, and after every
    /// `extra`-th one a second tail that finds nothing new of it.
    fn late_upload(extra: Option<usize>, to: i64) -> (Tracker, Vec<Decision>) {
        let mut t = Tracker::new(on());
        t.set_fleet(true);
        let mut out = Vec::new();
        for m in 0..=120 {
            for h in ["a", "b"] {
                t.activity(h, T0 + m * MIN, &mut out);
            }
            t.judge_silence_at_tail(&mut out);
        }
        for (n, s) in (0..=to * 6).enumerate() {
            t.activity("c", T0 + s * 10 * SECOND, &mut out);
            t.judge_silence_at_tail(&mut out);
            if extra.is_some_and(|e| n % e == 0) {
                t.judge_silence_at_tail(&mut out);
            }
        }
        t.judge_silence_at_tail(&mut out);
        (t, out)
    }

    #[test]
    fn a_late_upload_read_as_it_arrives_is_one_incident_as_read_at_once() {
        // Read at once: c's journal ends 90 min behind the others'.
        let mut once = Tracker::new(on());
        once.set_fleet(true);
        let mut out = Vec::new();
        for m in 0..=120 {
            for h in ["a", "b"] {
                once.activity(h, T0 + m * MIN, &mut out);
            }
        }
        for s in 0..=180 {
            once.activity("c", T0 + s * 10 * SECOND, &mut out);
        }
        once.judge_silence(&mut out);
        let want = silent(&mut once);
        assert_eq!(want.len(), 1, "{want:#?}");
        assert_eq!(
            want[0].detail,
            Detail::HostSilent(Silent {
                last_entry_at: T0 + 30 * MIN
            })
        );
        // A tail after each entry: judged from its last entry, the same
        // incident.
        let (mut follow, _) = late_upload(None, 30);
        assert_eq!(silent(&mut follow), want);
        // Tails that find nothing new of c judge it mid-upload: still one
        // incident, open, silent since the upload's last entry (181
        // without the rule: one for each tail between its entries).
        let (mut judged, out) = late_upload(Some(1), 30);
        let got = silent(&mut judged);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].status(), Status::Open);
        assert_eq!(got[0].detail, want[0].detail);
        let alerts = out
            .iter()
            .filter(|d| matches!(d, Decision::QueueAlert { .. }))
            .count();
        assert_eq!(alerts, 1, "one page");
        let d = got[0].diagnosis(&on());
        assert!(d.contains("silent for 10m or more"), "{d}");
    }

    #[test]
    fn a_late_upload_that_catches_up_ends_its_incident() {
        let (mut t, _) = late_upload(Some(1), 120);
        let got = silent(&mut t);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].resolution, Some(Resolution::Wrote));
        let d = got[0].diagnosis(&on());
        assert!(d.contains("caught up with the other hosts'"), "{d}");
        // Read as it arrives with no empty tails: judged at its end, where
        // it is not behind: nothing, as read at once.
        let (mut t, _) = late_upload(None, 120);
        assert!(silent(&mut t).is_empty());
    }

    #[test]
    fn one_host_alone_or_a_fleet_that_stops_together_is_never_silent() {
        let mut t = Tracker::new(on());
        t.set_fleet(true);
        let mut out = Vec::new();
        for m in [0, 5, 60, 300] {
            t.activity("only", T0 + m * MIN, &mut out);
            t.judge_silence(&mut out);
        }
        assert!(silent(&mut t).is_empty());
        // Every host stops at once (the collector receives nothing), then
        // all come back: no host moved on while another was quiet.
        let mut t = Tracker::new(on());
        t.set_fleet(true);
        for m in (0..10).chain(100..110) {
            for h in ["a", "b", "c"] {
                t.activity(h, T0 + m * MIN, &mut out);
            }
            t.judge_silence(&mut out);
        }
        let got = silent(&mut t);
        assert!(got.is_empty(), "{got:#?}");
    }

    #[test]
    fn the_incident_and_the_hosts_times_survive_a_restart() {
        let (mut t, _) = run(None, 0);
        let open: Vec<Incident> = t.open_incidents().cloned().collect();
        let origins = t
            .take_dirty_origins()
            .into_iter()
            .filter_map(|(h, o)| Some((h, o?)))
            .collect();
        let mut again = Tracker::new(on());
        again.set_fleet(true);
        again.restore(open, origins);
        let mut out = Vec::new();
        again.activity("c", T0 + 70 * MIN, &mut out);
        let got = silent(&mut again);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].resolved_at, Some(T0 + 70 * MIN));
        // Its jump over its own gap does not move the fleet on.
        assert_eq!(again.fleet_newest(), Some(T0 + 60 * MIN));
    }

    #[test]
    fn a_journal_that_is_no_collector_is_never_judged() {
        let mut t = Tracker::new(on());
        let mut out = Vec::new();
        for m in 0..60 {
            t.activity("renamed", T0 + m * MIN, &mut out);
        }
        t.activity("localhost", T0, &mut out);
        t.judge_silence(&mut out);
        assert!(silent(&mut t).is_empty());
    }

    #[test]
    fn off_unless_asked_for() {
        let mut t = Tracker::new(Settings::default());
        t.set_fleet(true);
        let mut out = Vec::new();
        for m in 0..60 {
            t.activity("a", T0 + m * MIN, &mut out);
        }
        t.activity("b", T0, &mut out);
        t.judge_silence(&mut out);
        assert!(silent(&mut t).is_empty());
    }

    #[test]
    fn a_host_whose_journal_goes_on_without_its_kubelet_is_not_silent() {
        let mut t = Tracker::new(on());
        t.set_fleet(true);
        let mut out = Vec::new();
        for m in 0..60 {
            t.activity("a", T0 + m * MIN, &mut out);
            // b's kubelet stops at 20 min; its files' headers go on.
            if m <= 20 {
                t.activity("b", T0 + m * MIN, &mut out);
            } else if m % 5 == 0 {
                t.journal_reaches("b", T0 + m * MIN, &mut out);
            }
            t.judge_silence(&mut out);
        }
        assert!(silent(&mut t).is_empty());
    }
}
