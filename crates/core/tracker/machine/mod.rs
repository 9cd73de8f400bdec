//! The machines: what each kind's lines do to its open incidents, one
//! file a kind (the kind's data and rules are in `kind/`, below the
//! incident; these change incidents, so they sit above the ledger that
//! keeps them and the hosts' records). Each takes the parts it changes:
//! the kinds whose state is all in their incidents are functions of the
//! ledger and the hosts; host-silent's watch ([`SilentWatch`]) and the
//! endpoint groups ([`Outages`]) are types with fields of their own.

pub(super) mod certificate;
pub(super) mod endpoint;
mod host_silent;
pub(super) mod kernel;
mod kubelet_down;
pub(super) mod node_status;
mod not_ready;
pub(super) mod pod_sandbox;
mod start;

pub(super) use endpoint::{Group, Outages};
pub use endpoint::{Member, MemberWrite};
pub(super) use host_silent::SilentWatch;
pub(super) use kubelet_down::life;
pub(super) use not_ready::{eviction, not_ready};
pub(super) use start::Starts;

use super::decision::{Decision, Observation};
use super::hosts::Hosts;
use super::incident::Anchor;
use super::kind::Incident;
use super::ledger::Ledger;
use super::open::OpenKey;
use crate::signals::SignalKind;
use crate::time::SECOND;

/// Opens a `kind` incident (kubelet-down, not-ready) anchored at the
/// kubelet's start on its host, when that came before it.
fn open_anchored(
    l: &mut Ledger,
    h: &Hosts,
    obs: &Observation<'_>,
    key: OpenKey,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let origin = h.get(obs.host.unwrap_or(""));
    let anchor = origin
        .and_then(|o| o.started_at)
        .filter(|&t| t <= at)
        .map(|t| Anchor {
            kind: SignalKind::KubeletStarted,
            at: t,
        });
    let mut inc = Incident {
        anchor,
        ..Incident::opening(key.incident_id(at), key.kind, &key.subject, obs)
    };
    if let Some(o) = origin {
        o.mark(&mut inc, at, 60 * SECOND);
    }
    out.push(Decision::OpenIncident { id: inc.id.clone() });
    l.open.insert(key, inc);
}
