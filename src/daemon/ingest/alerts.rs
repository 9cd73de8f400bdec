//! The alert job of ingest: an alert the tracker raised is admitted
//! (its channels, its age, whether its host is read as it writes) and
//! queued into the outbox with the batch that raised it; incidents nobody
//! was told of are announced once delivery is possible, or once their
//! host's trouble is live.

use sentinel_core::time::{Micros, human_duration};
use sentinel_core::tracker::{AlertKind, Alerted, Decision};

use super::Ingest;
use super::admission::{self, Admit, Raised, Unannounced};

impl Ingest {
    /// Admits one alert the tracker raised, with the facts it carries
    /// (no lookup of its incident, no scan of the open ones), and queues
    /// it on the channels that deliver.
    pub(super) fn queue_alert(
        &mut self,
        id: &str,
        kind: AlertKind,
        raised_at: Micros,
        about: &Alerted,
    ) {
        let node = about.node.clone();
        let host = about.host.clone();
        let words = kind.words();
        let now = (self.now)();
        let max_age = self.config.alert.max_age.0;
        // An endpoint incident has no host of its own: it is live when one
        // of its nodes' hosts is.
        let live = about.hosts.iter().any(|h| self.pipeline.live(h));
        let raised = Raised {
            clock_untrusted: about.hosts.iter().any(|h| self.pipeline.clock_untrusted(h)),
            kind,
            // Announced before it was raised, or by an alert queued since
            // (an opening and its end in one batch).
            announced: about.announced || self.pending.announced.contains(id),
            live,
            at: raised_at,
        };
        let channels = match admission::admit(
            admission::channels(&self.config),
            raised,
            now,
            max_age,
        ) {
            Admit::Queue(channels) => channels,
            Admit::Undeliverable => {
                tracing::info!(
                    incident = %id,
                    node = %node,
                    host = %host,
                    "{words} for node {node} recorded; nothing is delivered ([alert] to and \
                     [alert.alertmanager] urls are empty)"
                );
                return;
            }
            Admit::Unannounced => return,
            Admit::TooOld { withhold } => {
                if withhold {
                    self.admission.withhold(id);
                }
                let next = if withhold {
                    "announced if, once its host's lines are read, its trouble is younger than \
                     that by the host's own clock (a host followed since the start), or if its \
                     trouble goes on once its host is read as it writes"
                } else {
                    "not delivered"
                };
                tracing::info!(
                    incident = %id,
                    node = %node,
                    host = %host,
                    "{words} for node {node}: its trouble was already older than [alert] max_age \
                     ({}) when it was read: recorded; {next}",
                    human_duration(max_age)
                );
                return;
            }
        };
        self.pending.alerts.extend(admission::outbox_entries(
            &channels, kind, id, &node, raised_at, now,
        ));
        self.pipeline.tracker_mut().mark_announced(id);
        self.pending.announced.insert(id.to_string());
        self.changed.insert(id.to_string());
    }

    /// Open incidents over threshold that nobody was told of (alerting was
    /// off, or they crossed while older than `max_age` and are still in
    /// trouble): announced now that delivery is possible.
    pub(super) fn announce(&mut self) -> usize {
        if admission::channels(&self.config).is_empty() {
            return 0;
        }
        let now = (self.now)();
        let unannounced = self.pipeline.tracker().unannounced().map(|i| Unannounced {
            id: i.id.clone(),
            crossed: i.over_threshold_at.unwrap_or(i.opened_at),
            last_trouble_at: i.last_trouble_at,
        });
        let (due, old) =
            admission::split_unannounced(unannounced, now, self.config.alert.max_age.0);
        self.admission.withhold_all(old);
        for (id, crossed) in &due {
            // Queued as raised now: the age that counts is the trouble's.
            self.raise_from_tracker(id, AlertKind::Opened, now.max(*crossed));
        }
        if !due.is_empty() {
            tracing::info!(
                announced = due.len(),
                "{} open incident{} over threshold announced now that alerts can be delivered",
                due.len(),
                if due.len() == 1 { "" } else { "s" }
            );
        }
        due.len()
    }

    /// An incident whose alert `max_age` withheld has a new line from its
    /// host while the host is written: its trouble is live, so it is
    /// announced, whatever the host's clock says.
    pub(super) fn announce_live(&mut self, id: &str) {
        let Some(inc) = self.pipeline.tracker().incident(id) else {
            return;
        };
        let host = inc.host.clone().unwrap_or_default();
        if inc.announced
            || !self.pipeline.live(&host)
            || admission::channels(&self.config).is_empty()
        {
            return;
        }
        self.admission.release(id);
        tracing::info!(
            incident = %id,
            node = %inc.node,
            host = %host,
            "{} for node {} announced: its host's trouble is live (the host's clock says {})",
            AlertKind::Opened.words(),
            inc.node,
            sentinel_core::time::human(inc.last_trouble_at, sentinel_core::time::Zone::Utc)
        );
        self.raise_from_tracker(id, AlertKind::Opened, (self.now)());
    }

    /// Withheld incidents of followed hosts (read after the first
    /// catch-up), once the reader has caught up (the upload that carried
    /// them read to its end): announced if still open and their trouble is
    /// within `max_age` of their hosts' own newest entry, however those
    /// hosts' clocks are set (see [`admission::due_by_host_clock`]). One
    /// that resolved within what was read was released by its end and is
    /// not looked at.
    pub(super) fn announce_followed(&mut self) {
        if !self.caught_up {
            return;
        }
        let max_age = self.config.alert.max_age.0;
        for id in self.admission.take_recheck() {
            let Some(inc) = self.pipeline.tracker().incident(&id) else {
                continue;
            };
            if inc.announced || inc.resolved_at.is_some() || !self.admission.is_withheld(&id) {
                continue;
            }
            let host_now = inc
                .hosts()
                .iter()
                .filter_map(|h| self.pipeline.followed_clock(h))
                .max();
            if !admission::due_by_host_clock(inc.last_trouble_at, host_now, max_age) {
                continue;
            }
            self.admission.release(&id);
            tracing::info!(
                incident = %id,
                node = %inc.node,
                "{} for node {} announced: its host was read as it uploaded, and its trouble \
                 is younger than [alert] max_age by the host's own clock (which says {})",
                AlertKind::Opened.words(),
                inc.node,
                sentinel_core::time::human(inc.last_trouble_at, sentinel_core::time::Zone::Utc)
            );
            self.raise_from_tracker(&id, AlertKind::Opened, (self.now)());
        }
    }

    /// An alert ingest raises itself (a late announcement): the facts from
    /// the tracker's incident.
    fn raise_from_tracker(&mut self, id: &str, kind: AlertKind, at: Micros) {
        let Some(Decision::QueueAlert { about, .. }) = self
            .pipeline
            .tracker()
            .incident(id)
            .map(|i| i.raise(kind, at))
        else {
            return;
        };
        self.queue_alert(id, kind, at, &about);
    }
}
