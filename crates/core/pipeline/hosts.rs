//! The hosts a reader has read, as the pipeline keeps them: each host's
//! clock (design section 4.1), which of them write now, which clocks are
//! not believed, and `[fleet] max_hosts`. The pipeline asks it before an
//! entry is read (admitted?), while it is dated (believed?), and after
//! (how far its host's clock got).

use crate::keyed::HostMap;
use crate::model::Text;
use crate::time::Micros;
use crate::tracker::Tracker;

/// A host with no entry for this long (of the fleet's time) and no open
/// incident no longer counts toward `[fleet] max_hosts`: a fleet whose
/// nodes come and go under new names keeps reading the new ones.
pub const HOST_IDLE: Micros = 24 * 3600 * crate::time::SECOND;

/// No kubelet wrote before this (Kubernetes' first commit, June 2014): a
/// line dated earlier comes from a host whose clock is wrong.
pub const KUBELETS_BEGAN: Micros = 1_401_580_800_000_000;

/// Past `[fleet] max_hosts` with no host idle for [`HOST_IDLE`], this
/// share of the hosts with no open incident, those quiet longest, give
/// way to new ones at once (one pass over the records for the next
/// `max_hosts / GIVE_WAY` new hosts).
pub const GIVE_WAY: usize = 16;

/// How far ahead of the machine's clock an entry may be dated (time zones,
/// a skewed clock) before its time is not believed.
pub const FUTURE_SLACK: Micros = 24 * 3600 * crate::time::SECOND;

/// How far a host's entries have got, and when the last of them was read.
#[derive(Debug, Clone, Copy)]
struct HostClock {
    /// The latest entry time seen from the host.
    seen_at: Micros,
    /// Wall time when its latest entry was read (the service only).
    arrived_at: Option<Micros>,
    /// The batch that last carried an entry of the host.
    batch: u64,
}

/// The hosts read (see the module's doc). Not in the committed state: a
/// restarted service learns them again from the entries it reads.
#[derive(Debug, Default)]
pub(super) struct HostBook {
    /// Each host's clock.
    clocks: HostMap<Text, HostClock>,
    /// Counts batches, to tell which hosts a batch carried.
    batch: u64,
    /// Entries dated after this are not believed (see [`HostBook::set_now`]).
    horizon: Option<Micros>,
    /// Every host read, with the number of [`HostBook::caught_up`] calls
    /// before its first and before its latest entry (see [`HostBook::live`]).
    read: HostMap<Text, (u64, u64)>,
    catch_ups: u64,
    /// Hosts whose clock cannot be trusted.
    untrusted: HostMap<Text, ()>,
    /// Past `[fleet] max_hosts` by records: the fleet's time when the idle
    /// hosts' records were last forgotten, and the records left (all
    /// active then) — looked at again when either moved, not at every
    /// refused entry.
    active: Option<(Micros, usize)>,
    /// Hosts whose records gave way since [`HostBook::take_given_way`].
    given_way: u64,
}

impl HostBook {
    /// The machine's clock, given by the caller (the core reads none):
    /// an entry dated more than [`FUTURE_SLACK`] after it is not believed.
    pub(super) fn set_now(&mut self, now: Micros) {
        self.horizon = Some(now.saturating_add(FUTURE_SLACK));
    }

    /// Whether the service set a clock (a one-time read of saved logs sets
    /// none, and believes every time it reads).
    pub(super) fn has_clock(&self) -> bool {
        self.horizon.is_some()
    }

    /// Whether an entry dated `at` is believed: not past the machine's
    /// clock by more than [`FUTURE_SLACK`].
    pub(super) fn believed(&self, at: Micros) -> bool {
        self.horizon.is_none_or(|h| at <= h)
    }

    /// A line's own time cannot be trusted: before any kubelet, or not
    /// believed.
    pub(super) fn untrusted_time(&self, at: Micros) -> bool {
        at < KUBELETS_BEGAN || !self.believed(at)
    }

    /// A host already read, or one more within `[fleet] max_hosts`; past
    /// it, the idle hosts' records are forgotten first (see [`HOST_IDLE`]),
    /// then those of the hosts quiet longest with no open incident (see
    /// [`GIVE_WAY`]): a new host is refused only while every host has an
    /// open incident (or a line `held` for its continuation), so no flood
    /// of names keeps a real host out, and a host in trouble never gives
    /// way.
    pub(super) fn within(
        &mut self,
        tracker: &mut Tracker,
        host: &str,
        at: Option<Micros>,
        held: impl Fn(&str) -> bool,
    ) -> bool {
        let most = tracker.settings().max_hosts;
        if tracker.knows_host(host)
            || self.read.contains_key(host)
            || tracker.hosts().max(self.read.len()) < most
        {
            return true;
        }
        // The fleet's time, or this entry's when later: a refused host's
        // entries move no clock, yet say how late it is.
        let fleet = tracker
            .fleet_newest()
            .unwrap_or(0)
            .max(at.filter(|&t| self.believed(t)).unwrap_or(0));
        let records = tracker.hosts();
        let active = match self.active {
            Some((at, n)) if n == records && fleet - at < 60 * crate::time::SECOND => n,
            _ => {
                // The idle hosts' records go (they are what grew); then, if
                // that is not room enough, the quietest give way.
                let mut gone = tracker.forget_idle_hosts(fleet.saturating_sub(HOST_IDLE));
                if tracker.hosts() >= most {
                    gone.extend(tracker.forget_quietest_hosts((most / GIVE_WAY).max(1), held));
                }
                self.given_way += gone.len() as u64;
                for h in gone {
                    self.clocks.remove(h.as_str());
                    self.read.remove(h.as_str());
                    self.untrusted.remove(h.as_str());
                }
                let count = tracker.hosts();
                self.active = Some((fleet, count));
                count
            }
        };
        active < most
    }

    /// Hosts whose records gave way (idle or quiet longest) since the last
    /// call.
    pub(super) fn take_given_way(&mut self) -> u64 {
        std::mem::take(&mut self.given_way)
    }

    /// The reader has read everything there is (the service, at each
    /// `Tail`): what it reads from now on was written after this.
    pub(super) fn caught_up(&mut self) {
        self.catch_ups += 1;
    }

    /// An entry of `host` was read now.
    pub(super) fn read(&mut self, host: &Text) {
        match self.read.get_mut(host) {
            Some((_, latest)) => *latest = self.catch_ups,
            None => {
                self.read
                    .insert(host.clone(), (self.catch_ups, self.catch_ups));
            }
        }
    }

    /// `host`'s latest entry was read after the reader had been caught up
    /// since the host's first entry (see [`super::Pipeline::live`]).
    pub(super) fn live(&self, host: &str) -> bool {
        self.read
            .get(host)
            .is_some_and(|&(first, latest)| first < latest)
    }

    /// `host`'s latest line was read while following: after the reader
    /// had first caught up, so written after the service started (however
    /// its clock is set), not read in the catch-up of what was there.
    pub(super) fn followed(&self, host: &str) -> bool {
        self.read.get(host).is_some_and(|&(_, latest)| latest > 0)
    }

    pub(super) fn clock_untrusted(&self, host: &str) -> bool {
        self.untrusted.contains_key(host)
    }

    pub(super) fn distrust(&mut self, host: Text) {
        if !self.untrusted.contains_key(&host) {
            self.untrusted.insert(host, ());
        }
    }

    /// Moves `host`'s clock to `at` (if later); returns where it is.
    pub(super) fn tick(&mut self, host: &Text, at: Micros) -> Micros {
        let batch = self.batch;
        let clock = self.clocks.get_or_insert_with(
            host,
            || host.clone(),
            || HostClock {
                seen_at: at,
                arrived_at: None,
                batch,
            },
        );
        clock.seen_at = clock.seen_at.max(at);
        clock.batch = batch;
        clock.seen_at
    }

    /// How far `host`'s entries have got.
    pub(super) fn seen_at(&self, host: &str) -> Option<Micros> {
        self.clocks.get(host).map(|c| c.seen_at)
    }

    /// Each host's clock, host by host.
    pub(super) fn times(&self) -> impl Iterator<Item = (&Text, Micros)> {
        self.clocks.iter().map(|(h, c)| (h, c.seen_at))
    }

    /// The hosts of the entries read since the last call were read at
    /// wall time `wall`.
    pub(super) fn stamp_arrivals(&mut self, wall: Micros) {
        for c in self.clocks.values_mut() {
            if c.batch == self.batch {
                c.arrived_at = Some(wall);
            }
        }
        self.batch += 1;
    }

    /// A host's clock and when its last entry was read: after a restart,
    /// before its next entry, the last signal of its open incidents and the
    /// service's start.
    pub(super) fn clock_of(
        &self,
        tracker: &Tracker,
        host: &str,
        started: Micros,
    ) -> (Micros, Micros) {
        match self.clocks.get(host) {
            Some(c) => (c.seen_at, c.arrived_at.unwrap_or(started)),
            None => (tracker.latest_signal(host).unwrap_or(started), started),
        }
    }
}
