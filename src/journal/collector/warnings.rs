//! The collector's budget for warnings about its directory's files.

use std::time::{Duration, Instant};

/// Warnings about the directory's files said one by one at most
/// [`WarnBudget::PER_MINUTE`] a minute; past that, counted and said as one
/// line when the minute is over.
pub(super) struct WarnBudget {
    pub(super) since: Instant,
    said: u32,
    pub(super) held: u64,
}

impl WarnBudget {
    pub(super) const PER_MINUTE: u32 = 20;
    pub(super) const WINDOW: Duration = Duration::from_secs(60);

    pub(super) fn new() -> Self {
        Self {
            since: Instant::now(),
            said: 0,
            held: 0,
        }
    }

    /// Whether to say this one; otherwise it is counted.
    pub(super) fn allow(&mut self) -> bool {
        self.roll();
        if self.said < Self::PER_MINUTE {
            self.said += 1;
            true
        } else {
            self.held += 1;
            false
        }
    }

    /// The summary of what was held back, once its minute is over.
    pub(super) fn roll(&mut self) -> Option<String> {
        if self.since.elapsed() < Self::WINDOW {
            return None;
        }
        self.since = Instant::now();
        self.said = 0;
        let held = std::mem::take(&mut self.held);
        (held > 0).then(|| {
            format!(
                "{held} more warnings about this directory's files in the last minute were not \
                 logged one by one (at most {} a minute are)",
                Self::PER_MINUTE
            )
        })
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_past_the_budget_are_counted_and_summarised() {
        let mut b = WarnBudget::new();
        let said = (0..50_000).filter(|_| b.allow()).count();
        assert_eq!(said, WarnBudget::PER_MINUTE as usize);
        assert_eq!(b.roll(), None, "the minute is not over");
        b.since -= WarnBudget::WINDOW;
        let summary = b.roll().unwrap();
        assert!(summary.starts_with("49980 more warnings"), "{summary}");
        assert!(b.allow(), "a new minute");
    }
}
