//! certificate incidents (design 5.7): the kubelet's client certificate
//! past its rotation deadline with no rotation since, its rotation refused
//! by the API server, or expired. Its own data, its verdict, when it is
//! judged again (at `cert_warn` before expiry, at expiry) and its
//! diagnosis.

use serde::{Deserialize, Serialize};

use crate::signals::Cause;
use crate::time::{Micros, SECOND, Zone, clock, human, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{Resolution, Verdict};

/// A refusing kubelet asks again every 32 s at most, and waits up to 15 min
/// for a CSR to be signed: this long with no refusal, a rotation-failing
/// incident's refusals have stopped (a kubelet below `--v=2` says nothing
/// when a rotation succeeds).
pub(crate) const REFUSALS_QUIET: Micros = 20 * 60 * SECOND;

/// A certificate incident's own data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCert {
    /// When the certificate expires, as its manager (or the bootstrap)
    /// last stated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Micros>,
    /// The rotation deadline its manager last stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation_deadline: Option<Micros>,
    /// Rotation attempts the API server refused while it was open.
    #[serde(default)]
    pub rotation_failures: u64,
    /// `expiring`, `rotation-failing` or `expired`: the worst it has been.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Cause>,
    /// When it is persistent: `cert_warn` before expiry (set with the
    /// expiry, so a judgment falls due then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_at: Option<Micros>,
    /// It was judged persistent (within `cert_warn` of expiry, or expired).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warned: bool,
    /// Its expiry was told (the alert again at expiry).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expiry_told: bool,
}

/// How a certificate's state ranks: expired is the worst.
fn rank(c: Cause) -> u8 {
    if c == Cause::Expired {
        3
    } else if c == Cause::RotationFailing {
        2
    } else {
        1
    }
}

impl ClientCert {
    /// Its state becomes `c` if that is worse.
    pub(crate) fn worsen(&mut self, c: Cause) {
        if self.state.is_none_or(|s| rank(c) > rank(s)) {
            self.state = Some(c);
        }
    }

    /// The certificate expires at `at` (as stated): persistent from
    /// `cert_warn` before.
    pub(crate) fn expires(&mut self, at: Micros, s: &Settings) {
        self.expires_at = Some(at);
        self.warn_at = Some(at.saturating_sub(s.cert_warn));
    }

    /// What the certificate is at `at`, judged once: `Some(first)` when
    /// this judgment makes it persistent now (`first`: the first time; not
    /// first: it expired since it was first judged, the alert again).
    pub(crate) fn judge(&mut self, at: Micros) -> Option<bool> {
        self.state?;
        let expired = self.expires_at.is_some_and(|e| at >= e);
        if expired && !self.expiry_told {
            self.worsen(Cause::Expired);
        }
        let was = self.warned;
        if self.state == Some(Cause::Expired) && !self.expiry_told {
            self.warned = true;
            self.expiry_told = true;
            return Some(!was);
        }
        if !self.warned && self.warn_at.is_some_and(|w| at >= w) {
            self.warned = true;
            return Some(true);
        }
        None
    }

    /// Quiet came at `due`: judged then (true: within `cert_warn`, or
    /// expired) when that is what fell due, not ended.
    pub(crate) fn judged_at_due(&mut self, due: Micros) -> bool {
        let pending = (!self.warned && self.warn_at.is_some_and(|w| due >= w))
            || (!self.expiry_told && self.expires_at.is_some_and(|e| due >= e));
        if pending {
            self.judge(due);
        }
        pending
    }

    /// The next judgment (`cert_warn` before expiry, expiry), and, for
    /// refusals alone, their quiet: an expiring or expired certificate
    /// ends only with a new one.
    pub(crate) fn due<D>(&self, i: &IncidentOf<D>, resolve_after: Micros) -> Option<Micros> {
        let warn = self.warn_at.filter(|_| !self.warned);
        let expiry = self.expires_at.filter(|_| !self.expiry_told);
        let quiet = (self.state == Some(Cause::RotationFailing))
            .then(|| i.last_trouble_at + resolve_after.max(REFUSALS_QUIET));
        [warn, expiry, quiet].into_iter().flatten().min()
    }

    /// Persistent once judged so (within `cert_warn` of expiry, or
    /// expired); transient when a rotation (or quiet) ended it sooner.
    pub(crate) fn verdict<D>(&self, i: &IncidentOf<D>, ended: Verdict) -> Verdict {
        if self.warned || i.over_threshold_at.is_some() {
            Verdict::Persistent
        } else {
            ended
        }
    }

    pub(crate) fn cause(&self) -> Cause {
        self.state.unwrap_or(Cause::Expiring)
    }

    /// One paragraph: which certificate, when it expires (or expired) and
    /// its deadline, the refusals, and how it ended.
    pub(crate) fn diagnosis<D>(&self, i: &IncidentOf<D>, verdict: Verdict, s: &Settings) -> String {
        let c = self;
        let mut parts = vec![format!(
            "The kubelet's client certificate on node {} ({}).",
            i.node,
            if c.cause() == Cause::Expired {
                "expired"
            } else if c.cause() == Cause::RotationFailing {
                "its rotation refused by the API server"
            } else {
                "past its rotation deadline, not rotated"
            }
        )];
        let now = i.resolved_at.unwrap_or(i.last_signal_at);
        match c.expires_at {
            Some(e) if e <= now => parts.push(format!(
                "It expired at {} ({} before {}).",
                human(e, Zone::Utc),
                human_duration(now - e),
                clock(now)
            )),
            Some(e) => parts.push(format!(
                "It expires at {}: {} left at {}.",
                human(e, Zone::Utc),
                human_duration(e - now),
                clock(now)
            )),
            None => parts.push("Its expiry was not stated in the lines read.".into()),
        }
        if let Some(d) = c.rotation_deadline {
            parts.push(format!(
                "Its rotation deadline was {}.",
                human(d, Zone::Utc)
            ));
        }
        if c.rotation_failures > 0 {
            parts.push(format!(
                "The API server refused {} rotation attempt{} (last at {}).",
                c.rotation_failures,
                if c.rotation_failures == 1 { "" } else { "s" },
                clock(i.last_trouble_at)
            ));
        }
        if let Some(e) = i.first_evidence().or_else(|| i.evidence().next()) {
            parts.push(format!(
                "The kubelet said: {}",
                crate::tracker::words::one_line(&e.text, 300)
            ));
        }
        if verdict == Verdict::Persistent {
            parts.push(format!(
                "Persistent: it expires within {} or has expired; without a new certificate \
                 the API server will reject the kubelet and the node will go NotReady.",
                human_duration(s.cert_warn)
            ));
        }
        match i.resolution {
            Some(Resolution::Rotated) => parts.push(format!(
                "Resolved at {}: the kubelet has a new client certificate.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(Resolution::Quiet) => parts.push(format!(
                "Resolved after {} without a refused rotation (last at {}).",
                human_duration(s.resolve_after.max(REFUSALS_QUIET)),
                clock(i.last_trouble_at)
            )),
            Some(
                Resolution::Evicted
                | Resolution::SourceChanged
                | Resolution::Wrote
                | Resolution::NodeReady
                | Resolution::Stopped
                | Resolution::Rebooted,
            ) => parts.push("Closed without confirmation that it ended.".into()),
            None => {}
        }
        parts.join(" ")
    }
}
