//! Parser and signal-table throughput, per line shape, and the silence
//! glob against a pathological pattern and a 1 MiB host name (criterion).
//! `cargo bench --bench parse`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kubelet_sentinel::parse_line;
use kubelet_sentinel::recognize;

const SHAPES: &[(&str, &str)] = &[
    (
        "structured-chatter",
        r#"I1128 09:00:00.000000    2425 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="kube-system/kube-proxy-x7k2p" event={"ID":"3c9a","Type":"ContainerStarted","Data":"5f1e"}"#,
    ),
    (
        "legacy-chatter",
        r#"I0322 17:40:11.534478    1272 kubelet.go:1853] SyncLoop (DELETE, "api"): "kube-proxy-ip-172-20-47-6.ec2.internal_kube-system(7f0df1b2-4cc9-11e9-bc50-121ba07c8a60)""#,
    ),
    (
        "structured-retry",
        r#"E1128 09:00:05.000000    3117 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"worker-02\": Get \"https://10.0.0.10:6443/api/v1/nodes/worker-02?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#,
    ),
    (
        "legacy-retry",
        r#"E0322 17:40:06.941770    1272 kubelet_node_status.go:390] Error updating node status, will retry: error getting node "ip-172-20-47-6.ec2.internal": nodes "ip-172-20-47-6.ec2.internal" not found"#,
    ),
    (
        "json-format",
        r#"{"ts":1753121331919.7622,"caller":"app/server.go:520","msg":"Kubelet version","v":0,"kubeletVersion":"v1.32.4"}"#,
    ),
    (
        "not-klog",
        "Trace[390565971]: [10.94521331s] [10.94521331s] END",
    ),
];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse+recognize");
    g.throughput(Throughput::Elements(1));
    for (name, line) in SHAPES {
        g.bench_function(*name, |b| {
            b.iter(|| {
                let l = parse_line(std::hint::black_box(line));
                std::hint::black_box(recognize(&l))
            });
        });
    }
    g.finish();
}

/// D18: what a collector host may claim (a 1 MiB name) against a pattern
/// a backtracking matcher takes quadratic time on; the matcher is one pass.
fn globs(c: &mut Criterion) {
    let host = "y".repeat(1 << 20);
    let mut g = c.benchmark_group("glob-1MiB-name");
    g.sample_size(10);
    for (name, pattern) in [
        ("star-250-z", format!("*{}z", "y".repeat(250))),
        ("star-250-z-star", format!("*{}z*", "y".repeat(250))),
        ("star-249-q-z-star", format!("*{}?z*", "y".repeat(249))),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| sentinel_core::model::glob(std::hint::black_box(&pattern), &host));
        });
    }
    g.finish();
}

criterion_group!(benches, bench, globs);
criterion_main!(benches);
