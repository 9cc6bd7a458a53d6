//! Time as the engines see it: milliseconds on the driver's monotonic clock (`performance.now()`
//! in the browser, an `Instant` natively). The engines never read a clock; they are told the time.

/// A point in time, in milliseconds on the driver's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Millis(pub f64);

impl Millis {
    /// `ms` milliseconds later.
    pub fn after(self, ms: u64) -> Self {
        Self(self.0 + ms as f64)
    }

    /// Milliseconds from `earlier` to this (never negative).
    pub fn since(self, earlier: Millis) -> f64 {
        (self.0 - earlier.0).max(0.0)
    }
}

/// Equal exactly when [`Ord`] says so (`total_cmp`: one order, even for NaN and -0).
impl PartialEq for Millis {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Millis {}

impl PartialOrd for Millis {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Millis {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
