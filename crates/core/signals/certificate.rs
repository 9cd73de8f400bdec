//! The kubelet's client certificate in its own words (design 5.7): when it
//! expires and when it will rotate, read from the certificate manager's
//! lines, and whether a failed rotation was refused by the API server or
//! never reached it.

use super::{Cause, SignalKind, api_endpoint};
use crate::time::{Micros, parse_go_time};

/// What a certificate manager's line states: the certificate's expiry
/// (`expiration`, or the bootstrap's `is expired: T`) and its rotation
/// deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CertTimes {
    pub expires_at: Option<Micros>,
    pub deadline: Option<Micros>,
}

/// The times a certificate line states, in every wording: structured
/// `expiration="…" deadline="…"` (1.30+), printf `Certificate expiration
/// is …, rotation deadline is …` (with or without the manager's name
/// before it), and the bootstrap's `… is expired: …`.
#[must_use]
pub fn cert_times(text: &str) -> CertTimes {
    let after = |needle: &str| text.find(needle).map(|i| &text[i + needle.len()..]);
    let quoted = |needle: &str| {
        after(needle)
            .and_then(|r| r.split('"').next())
            .and_then(parse_go_time)
    };
    let expires_at = quoted("expiration=\"")
        .or_else(|| {
            after("Certificate expiration is ")
                .map(|r| r.split(", rotation deadline").next().unwrap_or(r))
                .and_then(parse_go_time)
        })
        .or_else(|| after(" is expired: ").and_then(parse_go_time));
    let deadline =
        quoted("deadline=\"").or_else(|| after("rotation deadline is ").and_then(parse_go_time));
    CertTimes {
        expires_at,
        deadline,
    }
}

/// What a failed rotation's text says of the way to the API server: the
/// request never got an answer (`api-unreachable`, `api-timeout`), or
/// `None`: the API server answered and refused it (forbidden,
/// unauthorized, denied, not signed). The certificate manager's own words
/// (`signed certificate`) say nothing of it, so the node-status classes'
/// `certificate` → `auth` rule is not used here.
fn on_the_way(text: &str) -> Option<Cause> {
    on_the_way_of(text, text)
}

/// [`on_the_way`] of a line whose message (`Certificate request was not
/// signed`) and error (`context deadline exceeded`) are apart.
fn on_the_way_of(message: &str, text: &str) -> Option<Cause> {
    let l = text.to_ascii_lowercase();
    let not_signed =
        message.to_ascii_lowercase().contains("not signed") || l.contains("not signed");
    let has = |needles: &[&str]| needles.iter().any(|n| l.contains(n));
    if has(&[
        "connection refused",
        "no route to host",
        "network is unreachable",
        "connection reset",
        "dial tcp",
        "client connection lost",
        "use of closed network connection",
        "broken pipe",
        "no such host",
    ]) || text.contains("EOF")
    {
        Some(Cause::ApiUnreachable)
    } else if has(&[
        "client.timeout exceeded",
        "net/http: request canceled",
        "tls handshake timeout",
        "i/o timeout",
        "timeout awaiting",
    ]) || (l.contains("context deadline exceeded") && !not_signed)
    {
        // A request that was not signed within the wait (15 min) got its
        // answer: nobody approved the CSR. That is a refusal.
        Some(Cause::ApiTimeout)
    } else {
        None
    }
}

/// Whether a failed rotation's text is the API server's refusal (see
/// [`on_the_way`]).
#[must_use]
pub fn refused(text: &str) -> bool {
    on_the_way(text).is_none()
}

/// A certificate signal's cause and endpoint: a failure refused by the API
/// server is `rotation-failing`, one on the way the way's class (it joins
/// the node's node-status trouble, never opens a certificate incident); an
/// expired certificate `expired`; the markers none.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "only the certificate's signals come here; the markers take one path"
)]
pub(super) fn cause(
    kind: SignalKind,
    message: &str,
    text: &str,
) -> (Option<Cause>, Option<String>) {
    match kind {
        SignalKind::CertFailed => (
            Some(on_the_way_of(message, text).unwrap_or(Cause::RotationFailing)),
            api_endpoint(text),
        ),
        SignalKind::CertExpired => (Some(Cause::Expired), None),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339;

    fn t(s: &str) -> Option<Micros> {
        parse_rfc3339(s)
    }

    #[test]
    fn times_in_every_wording() {
        for (text, exp, dl) in [
            (
                r#""Certificate rotation deadline determined" logger="kubernetes.io/kube-apiserver-client-kubelet" expiration="2027-01-01 00:00:00 +0000 UTC" deadline="2026-10-20 12:00:00.123 +0000 UTC""#,
                t("2027-01-01T00:00:00Z"),
                t("2026-10-20T12:00:00.123Z"),
            ),
            (
                "kubernetes.io/kube-apiserver-client-kubelet: Certificate expiration is 2025-06-30 02:55:19 +0000 UTC, rotation deadline is 2025-06-25 17:17:56.868848081 +0000 UTC",
                t("2025-06-30T02:55:19Z"),
                t("2025-06-25T17:17:56.868848Z"),
            ),
            (
                "Certificate expiration is 2019-03-01 10:00:00 +0100 CET, rotation deadline is 2019-01-01 10:00:00 +0100 CET",
                t("2019-03-01T09:00:00Z"),
                t("2019-01-01T09:00:00Z"),
            ),
            (
                "Part of the existing bootstrap client certificate in /etc/kubernetes/kubelet.conf is expired: 2026-01-01 00:00:00 +0000 UTC",
                t("2026-01-01T00:00:00Z"),
                None,
            ),
            (
                "Part of the existing bootstrap client certificate is expired: 2018-07-06 12:32:00 +0000 UTC",
                t("2018-07-06T12:32:00Z"),
                None,
            ),
            ("Rotating certificates", None, None),
        ] {
            assert_eq!(
                cert_times(text),
                CertTimes {
                    expires_at: exp,
                    deadline: dl
                },
                "{text}"
            );
        }
    }

    #[test]
    fn refused_or_on_the_way() {
        for (text, want) in [
            (
                r#"Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden: User "system:node:w1" cannot create resource"#,
                true,
            ),
            (
                "certificate request was not signed: timed out waiting for the condition",
                true,
            ),
            (
                "Certificate request was not signed: context deadline exceeded",
                true,
            ),
            (
                "cannot create certificate signing request: Unauthorized",
                true,
            ),
            (
                r#"Failed while requesting a signed certificate from the master: cannot create certificate signing request: Post https://10.0.0.1:6443/apis/certificates.k8s.io/v1beta1/certificatesigningrequests: dial tcp 10.0.0.1:6443: connect: connection refused"#,
                false,
            ),
            (
                r#"cannot create certificate signing request: Post "https://api:6443/apis/certificates.k8s.io/v1/certificatesigningrequests": net/http: TLS handshake timeout"#,
                false,
            ),
        ] {
            assert_eq!(refused(text), want, "{text}");
        }
    }
}
