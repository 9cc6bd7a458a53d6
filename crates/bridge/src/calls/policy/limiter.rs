//! `limit` rules: at most N calls of a tool per page session in a sliding window. Sans-IO: time is
//! a parameter (milliseconds on the caller's clock).
//!
//! The counts are keyed by page session, not by agent or connection, so an agent that reconnects
//! (or a second agent on the same page) shares them. In a cluster, they are kept on the node that
//! holds the page's socket, which every call to the page passes (docs/guardrails.md).

use std::collections::{HashMap, VecDeque};

use crate::limits::{MAX_LIMIT_COUNTS, MAX_LIMIT_WINDOW_SECONDS};

/// A rule's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub calls: u32,
    pub window_ms: u64,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The window is full; the next call fits in this many milliseconds.
    Over { retry_in_ms: u64 },
    /// Too many counts are kept at once.
    Full,
}

#[derive(Default)]
pub struct Limiter {
    /// (session, rule, tool) → the times of its calls in the window, oldest first.
    calls: HashMap<(String, String, String), VecDeque<u64>>,
}

impl Limiter {
    /// Counts a call of `tool` in `session` under `rule` at `now_ms`, or refuses it.
    #[cfg(test)]
    pub fn admit(
        &mut self,
        session: &str,
        rule: &str,
        tool: &str,
        window: Window,
        now_ms: u64,
    ) -> Result<(), Refused> {
        self.check(session, rule, tool, window, now_ms)?;
        self.record(session, rule, tool, now_ms);
        Ok(())
    }

    /// Whether one more call fits (nothing is counted).
    pub fn check(
        &mut self,
        session: &str,
        rule: &str,
        tool: &str,
        window: Window,
        now_ms: u64,
    ) -> Result<(), Refused> {
        let key = (session.to_owned(), rule.to_owned(), tool.to_owned());
        let Some(times) = self.calls.get_mut(&key) else {
            if self.calls.len() >= MAX_LIMIT_COUNTS {
                self.sweep(now_ms, MAX_LIMIT_WINDOW_SECONDS * 1000);
                if self.calls.len() >= MAX_LIMIT_COUNTS {
                    return Err(Refused::Full);
                }
            }
            return Ok(());
        };
        while times
            .front()
            .is_some_and(|&at| now_ms.saturating_sub(at) >= window.window_ms)
        {
            times.pop_front();
        }
        if times.len() >= window.calls as usize {
            let oldest = times.front().copied().unwrap_or(now_ms);
            return Err(Refused::Over {
                retry_in_ms: (oldest + window.window_ms).saturating_sub(now_ms),
            });
        }
        Ok(())
    }

    /// Counts a call [`Self::check`] let through.
    pub fn record(&mut self, session: &str, rule: &str, tool: &str, now_ms: u64) {
        let key = (session.to_owned(), rule.to_owned(), tool.to_owned());
        self.calls.entry(key).or_default().push_back(now_ms);
    }

    /// Drops the counts whose every call is older than `longest_ms`.
    fn sweep(&mut self, now_ms: u64, longest_ms: u64) {
        self.calls.retain(|_, times| {
            times
                .back()
                .is_some_and(|&at| now_ms.saturating_sub(at) < longest_ms)
        });
    }

    #[cfg(test)]
    pub fn keys(&self) -> usize {
        self.calls.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_A_SECOND: Window = Window {
        calls: 2,
        window_ms: 1_000,
    };

    #[test]
    fn a_sliding_window_per_session_and_tool() {
        let mut limiter = Limiter::default();
        let admit = |l: &mut Limiter, session: &str, tool: &str, at: u64| {
            l.admit(session, "r", tool, TWO_A_SECOND, at)
        };
        assert_eq!(admit(&mut limiter, "s1", "search", 0), Ok(()));
        assert_eq!(admit(&mut limiter, "s1", "search", 400), Ok(()));
        assert_eq!(
            admit(&mut limiter, "s1", "search", 900),
            Err(Refused::Over { retry_in_ms: 100 })
        );
        // Another session, another tool: their own counts.
        assert_eq!(admit(&mut limiter, "s2", "search", 900), Ok(()));
        assert_eq!(admit(&mut limiter, "s1", "other", 900), Ok(()));
        // The first call leaves the window at 1 000: one more fits, then not until 1 400.
        assert_eq!(admit(&mut limiter, "s1", "search", 1_000), Ok(()));
        assert_eq!(
            admit(&mut limiter, "s1", "search", 1_399),
            Err(Refused::Over { retry_in_ms: 1 })
        );
        assert_eq!(admit(&mut limiter, "s1", "search", 1_400), Ok(()));
        // A refused call is not counted: waiting out the window is enough.
        assert_eq!(admit(&mut limiter, "s1", "search", 2_400), Ok(()));
    }

    #[test]
    fn the_counts_kept_are_bounded_and_stale_ones_make_room() {
        let mut limiter = Limiter::default();
        for n in 0..MAX_LIMIT_COUNTS {
            limiter
                .admit(&format!("s{n}"), "r", "t", TWO_A_SECOND, 0)
                .unwrap();
        }
        assert_eq!(
            limiter.admit("new", "r", "t", TWO_A_SECOND, 1),
            Err(Refused::Full)
        );
        // A day later every count is stale.
        let later = MAX_LIMIT_WINDOW_SECONDS * 1000 + 1;
        assert_eq!(limiter.admit("new", "r", "t", TWO_A_SECOND, later), Ok(()));
        assert_eq!(limiter.keys(), 1);
    }
}
