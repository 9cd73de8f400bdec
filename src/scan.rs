//! `kubelet-sentinel scan`: offline analysis of journals and saved logs.
//! Touches no store; every input goes through one pipeline, so a node's
//! lines spread over several files make one history.

use crate::journal::{self, Malformed, ReadOptions, SourceError};
use sentinel_core::pipeline::{Pipeline, Summary};
use sentinel_core::time::Micros;
use sentinel_core::tracker::{Decision, Incident, STARTS_KEPT, Settings, Start};

/// Where to read from.
#[derive(Debug, Clone)]
pub enum Input {
    /// A path (file or directory), or `-` for standard input.
    Path(String),
    /// The local system journal.
    System,
    /// A journald namespace.
    Namespace(String),
}

#[derive(Debug)]
pub struct ScanResult {
    pub summary: Summary,
    /// Oldest first; resolved and still open.
    pub incidents: Vec<Incident>,
    /// Records that could not be read, with their place (the first few).
    pub malformed: Vec<Malformed>,
    /// Inputs that could not be opened or read to the end.
    pub failed: Vec<SourceError>,
    /// Each host's newest entry (a collector directory: one a host).
    pub hosts: std::collections::BTreeMap<String, sentinel_core::time::Micros>,
    /// The kubelets' starts, by host and start time (the latest
    /// [`STARTS_KEPT`] a host, as the store keeps them).
    pub starts: Vec<Start>,
}

/// The starts of a read, the latest [`STARTS_KEPT`] a host.
#[derive(Default)]
struct Starts(std::collections::BTreeMap<(String, Micros), Start>);

impl Starts {
    fn take(&mut self, pipeline: &mut Pipeline) {
        let mut hosts = std::collections::BTreeSet::new();
        for s in pipeline.tracker_mut().take_starts() {
            hosts.insert(s.host.clone());
            self.0.insert((s.host.clone(), s.started_at), s);
        }
        for h in hosts {
            let keys: Vec<(String, Micros)> = self
                .0
                .range((h.clone(), Micros::MIN)..=(h, Micros::MAX))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys.iter().take(keys.len().saturating_sub(STARTS_KEPT)) {
                self.0.remove(k);
            }
        }
    }
}

/// Reads every input through one pipeline and returns what it found.
#[must_use]
pub fn scan(inputs: &[Input], read: &ReadOptions, settings: Settings) -> ScanResult {
    scan_with_progress(inputs, read, settings, &mut |_| {})
}

/// [`scan`], telling `progress` the entries read so far every 64k entries
/// (the CLI draws a progress line from it on a terminal).
#[must_use]
pub(crate) fn scan_with_progress(
    inputs: &[Input],
    read: &ReadOptions,
    settings: Settings,
    progress: &mut dyn FnMut(u64),
) -> ScanResult {
    let mut pipeline = Pipeline::new(read.filter.clone(), settings);
    pipeline.set_now(read.clock.now);
    // A directory is read host by host, as a collector's (design 5.2).
    pipeline.set_fleet(
        inputs
            .iter()
            .any(|i| matches!(i, Input::Path(p) if std::path::Path::new(p).is_dir())),
    );
    let mut decisions: Vec<Decision> = Vec::new();
    let mut failed = Vec::new();
    let mut starts = Starts::default();
    for input in inputs {
        let items = match input {
            Input::Path(p) => journal::open_input(p, read),
            Input::System => journal::open::read(&journal::Target::System, &read.filter),
            Input::Namespace(n) => {
                journal::open::read(&journal::Target::Namespace(n.clone()), &read.filter)
            }
        };
        let items = match items {
            Ok(items) => items,
            Err(e) => {
                failed.push(e);
                continue;
            }
        };
        for item in items {
            if pipeline.summary().entries % 65_536 == 0 {
                progress(pipeline.summary().entries);
                starts.take(&mut pipeline);
            }
            match item {
                Ok(item) => pipeline.push_item(item, &mut decisions),
                Err(e) => {
                    // Keep what was read before the failure.
                    failed.push(e);
                    break;
                }
            }
            // Scan keeps no decisions: the incidents are read at the end.
            decisions.clear();
        }
        // Lines held for continuations do not continue into the next file.
        pipeline.flush(&mut decisions);
    }
    pipeline.finish(&mut decisions);
    starts.take(&mut pipeline);
    let mut incidents = pipeline.tracker_mut().take_resolved();
    incidents.extend(pipeline.tracker().open_incidents().cloned());
    crate::report::sort(&mut incidents);
    let starts: Vec<Start> = starts.0.into_values().collect();
    let _ = crate::report::starts::place_in_starts(&mut incidents, |host, at| {
        Ok::<_, std::convert::Infallible>(
            starts
                .iter()
                .find(|s| s.host == host && s.started_at == at)
                .cloned(),
        )
    });
    ScanResult {
        summary: pipeline.summary().clone(),
        incidents,
        malformed: std::mem::take(&mut pipeline.malformed),
        failed,
        hosts: pipeline
            .host_times()
            .filter(|(h, _)| !h.is_empty())
            .map(|(h, t)| (h.to_string(), t))
            .collect(),
        starts,
    }
}
