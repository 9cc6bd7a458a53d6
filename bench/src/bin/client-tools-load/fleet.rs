//! N simulated pages, opened at a bounded pace, and what became of each.
//!
//! A burst of 10 000 simultaneous connects overflows the bridge's accept queue and measures the
//! kernel's SYN retries rather than the bridge, so at most `parallel` pages are between "connect"
//! and "handshake done" at any time. Dropping the fleet closes every page.
//!
//! The bridge names each page's session in its answer to `clienttools/connect`: the fleet collects
//! those ids as the pages become ready, and the calls are made to them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

use crate::simulated_page::SimulatedPage;

enum PageEvent {
    /// The page answered `tools/list`; the bridge calls its session this.
    Ready { session: String },
    /// The page's connection ended (or never got going), and why.
    Ended { page: String, reason: String },
}

pub struct Fleet {
    /// Owns the page tasks: dropped, it aborts them and their connections close.
    _pages: JoinSet<()>,
    events: mpsc::UnboundedReceiver<PageEvent>,
    count: usize,
    /// The session ids of the pages ready so far, in the order they became ready.
    sessions: Vec<String>,
}

impl Fleet {
    /// Starts opening `count` pages on the bridge at `ws_url` (with `page_token` in their connect
    /// frame); each has `handshake_timeout` from its connect to its answer to `tools/list`.
    pub fn open(
        ws_url: &str,
        page_token: Option<&str>,
        count: usize,
        parallel: usize,
        handshake_timeout: Duration,
    ) -> Self {
        let tokens = vec![page_token.map(str::to_owned); count];
        Self::open_each(ws_url, tokens, parallel, handshake_timeout)
    }

    /// [`Self::open`] with one token per page (signed tokens: each page its user's).
    pub fn open_with_tokens(
        ws_url: &str,
        tokens: Vec<String>,
        parallel: usize,
        handshake_timeout: Duration,
    ) -> Self {
        let tokens = tokens.into_iter().map(Some).collect();
        Self::open_each(ws_url, tokens, parallel, handshake_timeout)
    }

    fn open_each(
        ws_url: &str,
        tokens: Vec<Option<String>>,
        parallel: usize,
        handshake_timeout: Duration,
    ) -> Self {
        let count = tokens.len();
        let (events_tx, events) = mpsc::unbounded_channel();
        let pacing = Arc::new(Semaphore::new(parallel.max(1)));
        let mut pages = JoinSet::new();
        for (index, page_token) in tokens.into_iter().enumerate() {
            let url = ws_url.to_owned();
            let pacing = pacing.clone();
            let events = events_tx.clone();
            pages.spawn(async move {
                let Ok(permit) = pacing.acquire_owned().await else {
                    return;
                };
                let opened = tokio::time::timeout(handshake_timeout, async {
                    let mut page = SimulatedPage::connect(&url, page_token.as_deref()).await?;
                    page.handshake().await?;
                    Ok::<_, String>(page)
                })
                .await;
                drop(permit);
                let (page, reason) = match opened {
                    Ok(Ok(page)) => {
                        let session = page.session_id().to_owned();
                        let _ = events.send(PageEvent::Ready {
                            session: session.clone(),
                        });
                        (format!("{index} (session {session})"), page.serve().await)
                    }
                    Ok(Err(reason)) => (index.to_string(), reason),
                    Err(_) => (
                        index.to_string(),
                        format!(
                            "no connect answer, initialize and tools/list from the bridge \
                             within {} s",
                            handshake_timeout.as_secs()
                        ),
                    ),
                };
                let _ = events.send(PageEvent::Ended { page, reason });
            });
        }
        Self {
            _pages: pages,
            events,
            count,
            sessions: Vec::with_capacity(count),
        }
    }

    /// Waits until every page has completed its handshake; the first page to fail ends the wait.
    pub async fn all_ready(&mut self) -> Result<(), String> {
        while self.sessions.len() < self.count {
            match self.events.recv().await {
                Some(PageEvent::Ready { session }) => self.sessions.push(session),
                Some(PageEvent::Ended { page, reason }) => {
                    return Err(format!(
                        "page {page} failed after {} of {} pages were ready: {reason}",
                        self.sessions.len(),
                        self.count
                    ))
                }
                None => return Err("every page task ended".into()),
            }
        }
        Ok(())
    }

    /// The session ids the bridge gave the pages ready so far (all of them after
    /// [`Self::all_ready`]).
    pub fn sessions(&self) -> &[String] {
        &self.sessions
    }

    /// Resolves when a page's connection ends: while the bridge lives, that never happens.
    pub async fn failure(&mut self) -> String {
        loop {
            match self.events.recv().await {
                Some(PageEvent::Ready { session }) => self.sessions.push(session),
                Some(PageEvent::Ended { page, reason }) => {
                    return format!("page {page} lost its connection: {reason}")
                }
                None => return "every page task ended".into(),
            }
        }
    }
}
