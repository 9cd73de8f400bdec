//! An incident's signals over time, in bounded memory: counts per lane
//! (signal kind) in at most [`BUCKETS`] equal buckets from the first
//! signal; when a signal falls past the last bucket, neighbouring buckets
//! are merged (the width doubles). Exact counts, a resolution that follows
//! the incident's length, and never more than `BUCKETS` numbers a lane.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Micros;

pub const BUCKETS: usize = 64;
/// The first width: fine enough for a start-up race (milliseconds apart).
const FIRST_WIDTH: Micros = 50_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub start: Micros,
    /// Micros a bucket; 0 while empty.
    pub width: Micros,
    pub lanes: BTreeMap<String, Vec<u32>>,
}

impl Timeline {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.width == 0
    }

    /// Counts one signal of `lane` at `at` (before the start: in the first
    /// bucket).
    pub fn add(&mut self, at: Micros, lane: &str) {
        if self.width == 0 {
            self.start = at;
            self.width = FIRST_WIDTH;
        }
        let offset = (at - self.start).max(0);
        while offset / self.width >= BUCKETS as Micros {
            self.merge();
        }
        let i = (offset / self.width) as usize;
        let counts = self
            .lanes
            .entry(lane.to_string())
            .or_insert_with(|| vec![0; BUCKETS]);
        counts.resize(BUCKETS, 0);
        counts[i] = counts[i].saturating_add(1);
    }

    fn merge(&mut self) {
        self.width *= 2;
        for counts in self.lanes.values_mut() {
            let merged: Vec<u32> = (0..BUCKETS)
                .map(|i| {
                    let a = counts.get(2 * i).copied().unwrap_or(0);
                    let b = counts.get(2 * i + 1).copied().unwrap_or(0);
                    a.saturating_add(b)
                })
                .collect();
            *counts = merged;
        }
    }

    /// The end of the last bucket with a count.
    #[must_use]
    pub fn end(&self) -> Micros {
        let last = self
            .lanes
            .values()
            .filter_map(|c| c.iter().rposition(|&n| n > 0))
            .max()
            .unwrap_or(0);
        self.start + (last as Micros + 1) * self.width
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND;

    #[test]
    fn counts_stay_exact_as_buckets_merge() {
        let mut t = Timeline::default();
        for k in 0..1000 {
            t.add(k * SECOND, "status-retry");
        }
        t.add(3, "lister-miss");
        let total: u32 = t.lanes["status-retry"].iter().sum();
        assert_eq!(total, 1000);
        assert_eq!(t.lanes["lister-miss"].iter().sum::<u32>(), 1);
        assert!(t.lanes.values().all(|c| c.len() == BUCKETS));
        assert!(t.width * BUCKETS as Micros > 999 * SECOND);
        assert!(t.end() > 999 * SECOND);
    }
}
