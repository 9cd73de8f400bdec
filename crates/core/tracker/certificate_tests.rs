//! certificate incidents (design 5.7): the client certificate manager's
//! lines replayed through the pipeline, scan and following alike.

use super::*;
use crate::signals::Cause;
use crate::testing::Replay;
use crate::time::{SECOND, rfc3339};

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z
const DAY: Micros = 24 * 3600 * SECOND;

/// Go's `time.Time` as the certificate manager prints it.
fn go(at: Micros) -> String {
    let s = rfc3339(at); // 2025-07-15T16:24:50.000Z
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    format!("{date} {time} +0000 UTC")
}

/// 1.30+: the structured line with the manager's name as `logger`.
fn deadline(expires: Micros, deadline: Micros) -> String {
    format!(
        r#"I0715 16:24:50.000000    2001 certificate_manager.go:356] "Certificate rotation deadline determined" logger="kubernetes.io/kube-apiserver-client-kubelet" expiration="{}" deadline="{}""#,
        go(expires),
        go(deadline)
    )
}

/// 1.20-1.29: the printf line with the manager's name before it.
fn deadline_printf(expires: Micros, deadline: Micros) -> String {
    format!(
        "I0715 16:24:50.000000    2001 certificate_manager.go:270] kubernetes.io/kube-apiserver-client-kubelet: Certificate expiration is {}, rotation deadline is {}",
        go(expires),
        go(deadline)
    )
}

const REFUSED: &str = r#"E0715 16:24:50.000000    2001 certificate_manager.go:562] "Failed while requesting a signed certificate from the control plane" err="cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden: User \"system:node:w1\" cannot create resource \"certificatesigningrequests\" in API group \"certificates.k8s.io\" at the cluster scope" logger="kubernetes.io/kube-apiserver-client-kubelet.UnhandledError""#;
const SERVING_REFUSED: &str = r#"E0715 16:24:50.000000    2001 certificate_manager.go:562] "Failed while requesting a signed certificate from the control plane" err="cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden" logger="kubernetes.io/kubelet-serving.UnhandledError""#;
const SERVING_REFUSED_PRINTF: &str = "E0715 16:24:50.000000    2001 certificate_manager.go:471] kubernetes.io/kubelet-serving: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden";
const CSR_REFUSED_WAY: &str = r#"E0715 16:24:50.000000    2001 certificate_manager.go:471] kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Post "https://10.0.0.1:6443/apis/certificates.k8s.io/v1/certificatesigningrequests": dial tcp 10.0.0.1:6443: connect: connection refused"#;
const REGISTER_REFUSED: &str = r#"E0715 16:24:50.000000    2001 kubelet_node_status.go:96] "Unable to register node with API server" err="Post \"https://10.0.0.1:6443/api/v1/nodes\": dial tcp 10.0.0.1:6443: connect: connection refused" node="w1""#;
const EXPIRED: &str = "E0715 16:24:50.000000    2001 transport.go:113] The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.";
const ROTATING: &str = r#"I0715 16:24:50.000000    2001 certificate_manager.go:598] "Rotating certificates" logger="kubernetes.io/kube-apiserver-client-kubelet""#;
const ISSUED: &str =
    "I0715 16:24:50.000000    2001 csr.go:261] certificate signing request csr-8tq2x is issued";
const HOUSEKEEPING: &str =
    r#"I0715 16:24:50.000000    2001 kubelet.go:2480] "SyncLoop (housekeeping)""#;

/// The lines (ms after `T0`) as one host's journal, scanned and followed:
/// the two must agree; the scan's.
fn judged(lines: &[(i64, String)], end_ms: i64) -> Replay {
    crate::testing::judged_lines(T0, lines, end_ms)
}

/// `line` every `step` ms from `from` for `count` times.
fn every(line: &str, from: i64, step: i64, count: i64) -> Vec<(i64, String)> {
    (0..count)
        .map(|k| (from + k * step, line.to_string()))
        .collect()
}

fn certificates(r: &Replay) -> Vec<&Incident> {
    r.incidents
        .iter()
        .filter(|i| i.kind() == IncidentKind::Certificate)
        .collect()
}

/// Three days before expiry the API server refuses the kubelet's CSR, and
/// goes on refusing: one certificate incident, rotation-failing,
/// persistent, paged once.
#[test]
fn refused_three_days_before_expiry_pages_once() {
    let mut l = vec![(0, deadline(T0 + 3 * DAY, T0 - 20 * DAY))];
    l.extend(every(REFUSED, 2_000, 32_000, 18));
    let r = judged(&l, 600_000);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::Certificate);
    assert_eq!(i.cause(), Cause::RotationFailing);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    let c = i.cert().unwrap();
    assert_eq!(c.expires_at, Some(T0 + 3 * DAY));
    assert_eq!(c.rotation_deadline, Some(T0 - 20 * DAY));
    assert_eq!(c.rotation_failures, 18);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    assert!(
        i.diagnosis(&r.settings).contains("2d23h50m left"),
        "{}",
        i.diagnosis(&r.settings)
    );
}

/// An expired certificate pages at once, whether the kubelet says so while
/// it runs or its bootstrap finds it at start.
#[test]
fn an_expired_certificate_pages() {
    let l = vec![
        (0, deadline_printf(T0 - 60 * SECOND, T0 - 30 * DAY)),
        (10_000, EXPIRED.to_string()),
        (20_000, EXPIRED.to_string()),
    ];
    let r = judged(&l, 300_000);
    let i = r.one();
    assert_eq!(i.cause(), Cause::Expired);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    let boot = format!(
        "I0715 16:24:50.000000    2001 bootstrap.go:88] Part of the existing bootstrap client certificate in /etc/kubernetes/kubelet.conf is expired: {}",
        go(T0 - DAY)
    );
    let r = judged(&[(0, boot)], 60_000);
    let i = r.one();
    assert_eq!(
        (i.kind(), i.cause()),
        (IncidentKind::Certificate, Cause::Expired)
    );
    assert_eq!(i.cert().unwrap().expires_at, Some(T0 - DAY));
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
}

/// 300 days left: nothing. A deadline the kubelet rotates at within
/// seconds: nothing. The same deadline with no rotation after it: an
/// `expiring` incident, not paged (60 days left, more than `cert_warn`).
#[test]
fn a_certificate_far_from_expiry_or_rotated_in_time_pages_nothing() {
    let mut l = vec![(0, deadline(T0 + 300 * DAY, T0 + 200 * DAY))];
    l.extend(every(HOUSEKEEPING, 10_000, 10_000, 60));
    let r = judged(&l, 600_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    let mut l = vec![(0, deadline(T0 + 60 * DAY, T0 + 30_000_000))];
    l.push((30_000, ROTATING.to_string()));
    l.push((31_000, ISSUED.to_string()));
    l.push((32_000, deadline(T0 + 425 * DAY, T0 + 330 * DAY)));
    l.extend(every(HOUSEKEEPING, 40_000, 10_000, 56));
    let r = judged(&l, 600_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    assert!(r.alerts().is_empty());
    // Without the rotation the deadline passes: expiring, not paged.
    let mut l = vec![(0, deadline(T0 + 60 * DAY, T0 + 30_000_000))];
    l.extend(every(HOUSEKEEPING, 40_000, 10_000, 56));
    let r = judged(&l, 600_000);
    let i = r.one();
    assert_eq!(
        (i.kind(), i.cause()),
        (IncidentKind::Certificate, Cause::Expiring)
    );
    assert_eq!(i.verdict(&r.settings), Verdict::Undetermined);
    assert!(r.alerts().is_empty());
    // A new certificate after it ends it: transient.
    l.push((700_000, deadline(T0 + 425 * DAY, T0 + 330 * DAY)));
    let r = judged(&l, 800_000);
    let i = r.one();
    assert_eq!(i.resolution, Some(Resolution::Rotated));
    assert_eq!(i.verdict(&r.settings), Verdict::Transient);
}

/// Within `cert_warn` of expiry with no rotation: paged; and again when it
/// expires, now `expired`.
#[test]
fn a_certificate_not_rotated_pages_and_again_at_expiry() {
    let mut l = vec![(0, deadline(T0 + 600 * SECOND, T0 - DAY))];
    l.extend(every(HOUSEKEEPING, 30_000, 30_000, 30));
    let r = judged(&l, 900_000);
    let i = r.one();
    assert_eq!(i.cause(), Cause::Expired);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened, AlertKind::Repeat]);
}

/// A TLS bootstrap during an API outage: its CSR never reaches the API
/// server. One node-status incident (api-unreachable) with the failed
/// requests as evidence, no certificate incident.
#[test]
fn a_tls_bootstrap_during_an_api_outage_is_one_node_status_incident() {
    let mut l = every(REGISTER_REFUSED, 0, 7_000, 20);
    l.extend(every(CSR_REFUSED_WAY, 1_000, 32_000, 5));
    l.sort_by_key(|(t, _)| *t);
    let r = judged(&l, 300_000);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::NodeStatus);
    assert_eq!(i.cause(), Cause::ApiUnreachable);
    assert!(
        i.evidence()
            .any(|e| e.signal == crate::signals::SignalKind::CertFailed),
        "{i:#?}"
    );
    // Alone (no node-status trouble), they are nothing.
    let r = judged(&every(CSR_REFUSED_WAY, 1_000, 32_000, 5), 300_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
}

/// The serving certificate's manager writes the same words: its refusals
/// open no client-certificate incident.
#[test]
fn the_serving_certificates_lines_open_nothing() {
    let mut l = every(SERVING_REFUSED, 0, 32_000, 10);
    l.extend(every(SERVING_REFUSED_PRINTF, 1_000, 32_000, 10));
    l.sort_by_key(|(t, _)| *t);
    let r = judged(&l, 600_000);
    assert!(certificates(&r).is_empty(), "{:#?}", r.incidents);
}
