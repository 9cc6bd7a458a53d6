//! A user's tabs (SPEC §13): which of a person's pages an agent's call goes to.
//!
//! A page reports its activity (`clienttools/activity {visible, focused}`: the SDK sends it after
//! each connect and at every `visibilitychange`, window `focus` and `blur`); the runtime keeps one
//! [`TabActivity`] per page session and, for a call that names no session, takes the page that
//! offers the tool and was most recently in front ([`most_recently_in_front`]). Sans-IO: the
//! caller gives the time (unix milliseconds, comparable across the runtime's nodes).
//!
//! "In front" is visible *and* focused: the tab the person is looking at and typing into. The order,
//! first to last:
//! 1. a tab in front now (of two — two windows side by side — the one that came to front last);
//! 2. a visible tab (its window is on screen but not focused), the one in front most recently;
//! 3. any other tab, the one in front most recently;
//! 4. a tab that never reported (an older SDK, or a page not yet through its handshake), the one
//!    connected most recently.

use serde::{Deserialize, Serialize};

/// The page's notification of its activity (page → runtime).
pub const ACTIVITY: &str = "clienttools/activity";

/// Its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityParams {
    pub visible: bool,
    pub focused: bool,
}

/// Unix milliseconds.
pub type UnixMs = u64;

/// What a page session reported of its activity, and when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TabActivity {
    pub visible: bool,
    pub focused: bool,
    /// When the tab was last in front: while it is in front, when it came to front.
    pub in_front_at: Option<UnixMs>,
    /// When its connection was accepted.
    pub connected_at: Option<UnixMs>,
}

impl TabActivity {
    /// A tab connected at `at`, before any report.
    pub fn connected(at: UnixMs) -> Self {
        Self {
            connected_at: Some(at),
            ..Self::default()
        }
    }

    /// The page's report at `now`.
    pub fn report(&mut self, visible: bool, focused: bool, now: UnixMs) {
        let was_in_front = self.in_front();
        self.visible = visible;
        self.focused = focused;
        // Coming to front stamps the time; leaving it stamps when it was last seen there.
        if self.in_front() != was_in_front {
            self.in_front_at = Some(now);
        }
    }

    /// Visible and focused.
    pub fn in_front(&self) -> bool {
        self.visible && self.focused
    }

    /// The order of [`most_recently_in_front`]: greater is chosen first.
    pub fn rank(&self) -> (bool, bool, Option<UnixMs>, Option<UnixMs>) {
        (
            self.in_front(),
            self.visible,
            self.in_front_at,
            self.connected_at,
        )
    }
}

/// The candidate the call goes to: the greatest [`TabActivity::rank`]; of equals, the first.
pub fn most_recently_in_front<T>(
    candidates: impl IntoIterator<Item = (T, TabActivity)>,
) -> Option<T> {
    let mut best: Option<(T, TabActivity)> = None;
    for (candidate, activity) in candidates {
        if best
            .as_ref()
            .is_none_or(|(_, b)| activity.rank() > b.rank())
        {
            best = Some((candidate, activity));
        }
    }
    best.map(|(candidate, _)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(connected_at: UnixMs) -> TabActivity {
        TabActivity::connected(connected_at)
    }

    #[test]
    fn the_tab_in_front_wins_over_a_newer_one_behind() {
        let mut older = tab(1_000);
        older.report(true, true, 1_100);
        let mut newer = tab(2_000);
        newer.report(false, false, 2_100);
        assert_eq!(
            most_recently_in_front([("older", older), ("newer", newer)]),
            Some("older")
        );
    }

    #[test]
    fn switching_tabs_moves_the_choice_with_the_person() {
        let (mut a, mut b) = (tab(1_000), tab(1_000));
        a.report(true, true, 1_100);
        b.report(false, false, 1_100);
        assert_eq!(most_recently_in_front([("a", a), ("b", b)]), Some("a"));
        // The person switches to b: a is hidden, b comes to front.
        a.report(false, false, 5_000);
        b.report(true, true, 5_000);
        assert_eq!(most_recently_in_front([("a", a), ("b", b)]), Some("b"));
        // The person leaves the browser: nobody is in front, b was last.
        b.report(true, false, 9_000);
        a.report(false, false, 9_000);
        assert_eq!(most_recently_in_front([("a", a), ("b", b)]), Some("b"));
        // Both hidden: b was in front more recently than a.
        b.report(false, false, 9_500);
        assert_eq!(most_recently_in_front([("a", a), ("b", b)]), Some("b"));
        assert!(b.in_front_at > a.in_front_at);
    }

    #[test]
    fn a_visible_window_beats_a_hidden_one_that_was_in_front_later() {
        let (mut visible, mut hidden) = (tab(1_000), tab(1_000));
        visible.report(true, true, 1_100);
        visible.report(true, false, 1_200);
        hidden.report(true, true, 1_300);
        hidden.report(false, false, 1_400);
        assert_eq!(
            most_recently_in_front([("hidden", hidden), ("visible", visible)]),
            Some("visible")
        );
    }

    #[test]
    fn of_two_in_front_the_later_comer_wins_and_silent_tabs_go_by_connect_time() {
        let (mut first, mut second) = (tab(1_000), tab(1_000));
        first.report(true, true, 2_000);
        second.report(true, true, 3_000);
        assert_eq!(
            most_recently_in_front([("first", first), ("second", second)]),
            Some("second")
        );
        // Reporting again while in front keeps the time it came to front.
        first.report(true, true, 4_000);
        assert_eq!(first.in_front_at, Some(2_000));
        // Tabs that never reported: the newest connection.
        assert_eq!(
            most_recently_in_front([("old", tab(1)), ("new", tab(2)), ("mid", tab(1))]),
            Some("new")
        );
        // A tab that reported at all (even hidden) ranks above one that never did.
        let mut reported = tab(1);
        reported.report(true, true, 5);
        reported.report(false, false, 6);
        assert_eq!(
            most_recently_in_front([("silent", tab(10)), ("reported", reported)]),
            Some("reported")
        );
        assert_eq!(most_recently_in_front::<&str>([]), None);
    }
}
