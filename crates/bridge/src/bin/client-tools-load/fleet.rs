//! N simulated pages, opened at a bounded pace, and what became of each.
//!
//! A burst of 10 000 simultaneous connects overflows the bridge's accept queue and measures the
//! kernel's SYN retries rather than the bridge, so at most `parallel` pages are between "connect"
//! and "handshake done" at any time. Dropping the fleet closes every page.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::simulated_page::SimulatedPage;

enum PageEvent {
    /// The page answered `tools/list`.
    Ready,
    /// The page's connection ended (or never got going), and why.
    Ended { session: String, reason: String },
}

pub struct Fleet {
    /// Owns the page tasks: dropped, it aborts them and their connections close.
    _pages: JoinSet<()>,
    events: mpsc::UnboundedReceiver<PageEvent>,
    count: usize,
    ready: usize,
}

impl Fleet {
    /// Starts opening `count` pages as sessions `load-0`… of the bridge at `ws_url`; each has
    /// `handshake_timeout` from its connect to its answer to `tools/list`.
    pub fn open(ws_url: &str, count: usize, parallel: usize, handshake_timeout: Duration) -> Self {
        let (events_tx, events) = mpsc::unbounded_channel();
        let pacing = Arc::new(Semaphore::new(parallel.max(1)));
        let mut pages = JoinSet::new();
        for index in 0..count {
            let session = session_id(index);
            let url = format!("{ws_url}?session={session}");
            let pacing = pacing.clone();
            let events = events_tx.clone();
            pages.spawn(async move {
                let Ok(permit) = pacing.acquire_owned().await else {
                    return;
                };
                let opened = tokio::time::timeout(handshake_timeout, async {
                    let mut page = SimulatedPage::connect(&url).await?;
                    page.handshake().await?;
                    Ok::<_, String>(page)
                })
                .await;
                drop(permit);
                let reason = match opened {
                    Ok(Ok(page)) => {
                        let _ = events.send(PageEvent::Ready);
                        page.serve().await
                    }
                    Ok(Err(reason)) => reason,
                    Err(_) => format!(
                        "no initialize + tools/list from the bridge within {} s",
                        handshake_timeout.as_secs()
                    ),
                };
                let _ = events.send(PageEvent::Ended { session, reason });
            });
        }
        Self {
            _pages: pages,
            events,
            count,
            ready: 0,
        }
    }

    /// Waits until every page has completed its handshake; the first page to fail ends the wait.
    pub async fn all_ready(&mut self) -> Result<(), String> {
        while self.ready < self.count {
            match self.events.recv().await {
                Some(PageEvent::Ready) => self.ready += 1,
                Some(PageEvent::Ended { session, reason }) => {
                    return Err(format!(
                        "page {session} failed after {} of {} pages were ready: {reason}",
                        self.ready, self.count
                    ))
                }
                None => return Err("every page task ended".into()),
            }
        }
        Ok(())
    }

    /// Resolves when a page's connection ends: while the bridge lives, that never happens.
    pub async fn failure(&mut self) -> String {
        loop {
            match self.events.recv().await {
                Some(PageEvent::Ready) => self.ready += 1,
                Some(PageEvent::Ended { session, reason }) => {
                    return format!("page {session} lost its connection: {reason}")
                }
                None => return "every page task ended".into(),
            }
        }
    }
}

/// The session id of page `index`.
pub fn session_id(index: usize) -> String {
    format!("load-{index}")
}
