//! The rows of the kubelet itself: its client certificate (design 5.7),
//! its start-up and its fatal lines (design 5.1, 5.5).

use super::Form::{
    ClientCert, FatalSeverity, LegacyBetween, LegacyContains, LegacyExact, LegacyPrefix,
    Structured, StructuredWith,
};
use super::{Row, row};
use crate::signals::SignalKind as K;

pub(super) static ROWS: &[Row] = &[
    // The client certificate manager (client-go `util/certificate`, design
    // 5.7). Before 1.20 its lines carry no name (the serving certificate's
    // manager, with `serverTLSBootstrap`, writes the same: read as the
    // client's); 1.20-1.29 put the manager's name before the words; later
    // ones carry it as `logger=`. The serving manager's lines
    // (`kubernetes.io/kubelet-serving`) match no row.
    row(
        K::CertDeadline,
        ClientCert("Certificate rotation deadline determined"),
        "1.30+",
    ),
    row(
        K::CertDeadline,
        LegacyPrefix("kubernetes.io/kube-apiserver-client-kubelet: Certificate expiration is "),
        "1.20-1.29",
    ),
    row(
        K::CertDeadline,
        LegacyPrefix("Certificate expiration is "),
        "1.8-1.19",
    ),
    row(
        K::CertRotating,
        ClientCert("Rotating certificates"),
        "1.30+",
    ),
    row(
        K::CertRotating,
        LegacyExact("kubernetes.io/kube-apiserver-client-kubelet: Rotating certificates"),
        "1.20-1.29",
    ),
    row(
        K::CertRotating,
        LegacyExact("Rotating certificates"),
        "1.8-1.19",
    ),
    // csr.go's, the same for both managers.
    row(
        K::CertRotated,
        LegacyBetween("certificate signing request ", " is issued"),
        "1.8+",
    ),
    row(
        K::CertFailed,
        ClientCert("Failed while requesting a signed certificate from the control plane"),
        "1.33+",
    ),
    row(
        K::CertFailed,
        ClientCert("Certificate request was not signed"),
        "1.33+",
    ),
    row(
        K::CertFailed,
        StructuredWith(
            "Unhandled Error",
            "err",
            "kube-apiserver-client-kubelet: Failed while requesting a signed certificate",
        ),
        "1.31-1.32",
    ),
    row(
        K::CertFailed,
        StructuredWith(
            "Unhandled Error",
            "err",
            "kube-apiserver-client-kubelet: certificate request was not signed",
        ),
        "1.31-1.32",
    ),
    row(
        K::CertFailed,
        LegacyPrefix(
            "kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: ",
        ),
        "1.20-1.30",
    ),
    row(
        K::CertFailed,
        LegacyPrefix(
            "kubernetes.io/kube-apiserver-client-kubelet: certificate request was not signed: ",
        ),
        "1.20-1.30",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("Failed while requesting a signed certificate from the control plane: "),
        "1.19-1.20",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("Failed while requesting a signed certificate from the master: "),
        "1.8-1.19",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("certificate request was not signed: "),
        "1.8-1.20",
    ),
    // transport.go: the client certificate expired while the kubelet ran.
    row(
        K::CertExpired,
        LegacyPrefix("The currently active client certificate has expired"),
        "1.8-1.17",
    ),
    row(
        K::CertExpired,
        LegacyContains("since a valid client cert was found"),
        "1.18-1.20",
    ),
    row(
        K::CertExpired,
        Structured(
            "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
        ),
        "1.21+",
    ),
    row(
        K::CertExpired,
        Structured("No valid client certificate is found and the server is responsive, exiting."),
        "1.21+",
    ),
    // bootstrap.go at start: the kubeconfig's certificate expired.
    row(
        K::CertExpired,
        LegacyPrefix("Part of the existing bootstrap client certificate"),
        "1.10+",
    ),
    // §9 start-up.
    // The kubelet's fatal lines (design 5.1): it exits right after.
    row(K::KubeletFatal, Structured("command failed"), "1.21+"),
    row(
        K::KubeletFatal,
        Structured("Failed to start ContainerManager"),
        "1.21+",
    ),
    row(
        K::KubeletFatal,
        Structured("Failed to load kubelet config file"),
        "1.21+",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to run Kubelet: "),
        "<=1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to load Kubelet config file"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to load kubelet config file"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to validate kubelet flags"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("Failed to start ContainerManager"),
        "<=1.20",
    ),
    row(
        K::KubeletFatal,
        Structured("Failed to listen and serve"),
        "1.21+",
    ),
    row(K::KubeletStarted, Structured("Kubelet version"), "1.21+"),
    row(K::KubeletStarted, LegacyPrefix("Version: v"), "<=1.20"),
    row(K::KubeletStarted, Structured("Started kubelet"), "1.21+"),
    row(K::KubeletStarted, LegacyExact("Started kubelet"), "<=1.20"),
    // Last: any other klog Fatal line of the kubelet's (it exits right
    // after: `F… server.go:153] listen tcp 0.0.0.0:10250: bind: …`).
    row(K::KubeletFatal, FatalSeverity, "all"),
];
