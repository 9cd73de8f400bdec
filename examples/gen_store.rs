//! A store with many resolved incidents, for the benchmark that compares a
//! `/metrics` scrape and a `status` query over 10 and 100 000 incidents.
//!
//! Usage: `gen_store STORE_DIR COUNT`

use kubelet_sentinel::Pipeline;
use kubelet_sentinel::SECOND;
use kubelet_sentinel::Settings;
use kubelet_sentinel::{Batch, StatsDelta, Store};
use kubelet_sentinel::{Entry, EntryFilter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: gen_store STORE_DIR COUNT")?;
    let count: usize = args
        .next()
        .ok_or("usage: gen_store STORE_DIR COUNT")?
        .parse()?;
    let store = Store::open(std::path::Path::new(&path))?;
    let settings = Settings::default();
    // Real incidents: two refused status updates each, replayed through the
    // pipeline, on 500 nodes, a few minutes apart.
    let t0 = 1_700_000_000 * SECOND;
    let mut batch = Vec::new();
    for n in 0..count {
        let node = format!("node-{:03}", n % 500);
        let at = t0 + (n as i64) * 180 * SECOND;
        let mut p = Pipeline::new(EntryFilter::default(), settings.clone());
        let mut d = Vec::new();
        for k in 0..2 {
            let line = format!(
                r#"E0101 00:00:00.000000    4242 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{node}\": dial tcp 10.0.0.1:6443: connect: connection refused""#
            );
            p.push(
                Entry {
                    at: Some(at + k * SECOND),
                    host: Some(node.as_str().into()),
                    unit: Some("kubelet.service".into()),
                    message: line.into_bytes(),
                    ..Entry::default()
                },
                &mut d,
            );
        }
        p.flush(&mut d);
        p.advance(at + 3600 * SECOND, &mut d);
        batch.extend(p.tracker_mut().take_resolved());
        if batch.len() >= 1000 || n + 1 == count {
            let stats = StatsDelta {
                opened: batch.len() as u64,
                resolved: batch.iter().map(|i| i.verdict(&settings)).collect(),
                forgotten: 0,
            };
            store.commit(&Batch {
                incidents: std::mem::take(&mut batch),
                stats,
                ..Batch::default()
            })?;
        }
    }
    println!("{count} incidents in {path}");
    Ok(())
}
