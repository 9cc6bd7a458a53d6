//! Latency percentiles, by nearest rank over every sample: a run has at most a few hundred
//! thousand calls, so sorting them all is cheaper than explaining a histogram's error.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency {
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl Latency {
    /// Summarizes `samples` (microseconds); all zero when there are none.
    pub fn of(mut samples: Vec<u64>) -> Self {
        samples.sort_unstable();
        Self {
            p50_us: percentile(&samples, 50.0),
            p99_us: percentile(&samples, 99.0),
            max_us: samples.last().copied().unwrap_or(0),
        }
    }
}

/// The smallest sample with at least `p` % of the samples at or below it (nearest rank).
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let samples: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&samples, 50.0), 50);
        assert_eq!(percentile(&samples, 99.0), 99);
        assert_eq!(percentile(&samples, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn summary_sorts_first() {
        let latency = Latency::of(vec![30, 10, 20]);
        assert_eq!(
            latency,
            Latency {
                p50_us: 20,
                p99_us: 30,
                max_us: 30
            }
        );
    }
}
