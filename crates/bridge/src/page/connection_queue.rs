//! The frames waiting to be written to one page connection, bounded in count and in bytes.
//!
//! A page that stops reading (a frozen tab, a slow network) must not make the bridge buffer without
//! end: once the queue is full, sending fails at once and the caller decides (a call fails with an
//! error result naming the limit, a notification is dropped). A close request bypasses the bounds,
//! so the bridge can always end a connection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// What the connection's writer sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outgoing {
    Frame(String),
    /// Send a WebSocket close frame and stop writing.
    Close {
        code: u16,
        reason: String,
    },
}

/// A frame did not fit: the page has not read what was queued before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueFull {
    frames: usize,
    bytes: usize,
    max_frames: usize,
    max_bytes: usize,
}

impl std::fmt::Display for QueueFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the page is not reading: {} frames / {} bytes queued (limit {} frames / {} bytes)",
            self.frames, self.bytes, self.max_frames, self.max_bytes
        )
    }
}

/// A queue of at most `frames` frames and `bytes` bytes (close requests not counted).
pub(crate) fn channel(frames: usize, bytes: usize) -> (OutgoingSender, OutgoingReceiver) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            items: VecDeque::new(),
            frames: 0,
            bytes: 0,
            senders: 1,
            receiver_alive: true,
        }),
        max_frames: frames,
        max_bytes: bytes,
        ready: Notify::new(),
    });
    (
        OutgoingSender {
            shared: shared.clone(),
        },
        OutgoingReceiver { shared },
    )
}

struct Shared {
    queue: Mutex<Queue>,
    max_frames: usize,
    max_bytes: usize,
    /// Wakes the receiver: an item was queued or the last sender went away.
    ready: Notify,
}

struct Queue {
    items: VecDeque<Outgoing>,
    /// Frames and their bytes in `items` (what the bounds apply to).
    frames: usize,
    bytes: usize,
    senders: usize,
    receiver_alive: bool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // Plain counters and a queue: still consistent after a panic elsewhere.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The sending side; every clone feeds the same connection.
pub(crate) struct OutgoingSender {
    shared: Arc<Shared>,
}

impl OutgoingSender {
    /// Queues a frame, or fails at once when it would exceed either bound. A frame for a
    /// connection whose writer is gone is discarded: the connection is ending, and calls still
    /// waiting are sent again on the next one.
    pub(crate) fn try_send(&self, frame: String) -> Result<(), QueueFull> {
        let mut queue = self.shared.lock();
        if !queue.receiver_alive {
            return Ok(());
        }
        if queue.frames + 1 > self.shared.max_frames
            || queue.bytes + frame.len() > self.shared.max_bytes
        {
            return Err(QueueFull {
                frames: queue.frames,
                bytes: queue.bytes,
                max_frames: self.shared.max_frames,
                max_bytes: self.shared.max_bytes,
            });
        }
        queue.frames += 1;
        queue.bytes += frame.len();
        queue.items.push_back(Outgoing::Frame(frame));
        drop(queue);
        self.shared.ready.notify_one();
        Ok(())
    }

    /// Asks the writer to close the connection (after the frames queued before it).
    pub(crate) fn close(&self, code: u16, reason: String) {
        let mut queue = self.shared.lock();
        if queue.receiver_alive {
            queue.items.push_back(Outgoing::Close { code, reason });
        }
        drop(queue);
        self.shared.ready.notify_one();
    }
}

impl Clone for OutgoingSender {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for OutgoingSender {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.senders -= 1;
        let last = queue.senders == 0;
        drop(queue);
        if last {
            self.shared.ready.notify_one();
        }
    }
}

/// The connection's writer side.
pub(crate) struct OutgoingReceiver {
    shared: Arc<Shared>,
}

impl OutgoingReceiver {
    /// The next item, in order; `None` once every sender is gone and the queue is empty.
    pub(crate) async fn recv(&mut self) -> Option<Outgoing> {
        loop {
            {
                let mut queue = self.shared.lock();
                if let Some(item) = queue.pop() {
                    return Some(item);
                }
                if queue.senders == 0 {
                    return None;
                }
            }
            // `notify_one` stores a permit when nobody waits yet: a push between the unlock above
            // and this await is not missed.
            self.shared.ready.notified().await;
        }
    }

    /// The next item if one is queued now (the writer sends what is queued together).
    pub(crate) fn try_recv(&mut self) -> Option<Outgoing> {
        self.shared.lock().pop()
    }
}

impl Queue {
    fn pop(&mut self) -> Option<Outgoing> {
        let item = self.items.pop_front()?;
        if let Outgoing::Frame(frame) = &item {
            self.frames -= 1;
            self.bytes -= frame.len();
        }
        Some(item)
    }
}

impl Drop for OutgoingReceiver {
    fn drop(&mut self) {
        let mut queue = self.shared.lock();
        queue.receiver_alive = false;
        queue.items.clear();
        queue.frames = 0;
        queue.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: usize) -> String {
        "x".repeat(bytes)
    }

    #[tokio::test]
    async fn frames_come_out_in_order_and_release_their_room() {
        let (tx, mut rx) = channel(2, 1_000);
        tx.try_send("a".into()).unwrap();
        tx.try_send("b".into()).unwrap();
        let full = tx.try_send("c".into()).unwrap_err();
        assert_eq!(
            full.to_string(),
            "the page is not reading: 2 frames / 2 bytes queued (limit 2 frames / 1000 bytes)"
        );
        assert_eq!(rx.recv().await, Some(Outgoing::Frame("a".into())));
        tx.try_send("c".into()).unwrap();
        assert_eq!(rx.recv().await, Some(Outgoing::Frame("b".into())));
        assert_eq!(rx.recv().await, Some(Outgoing::Frame("c".into())));
    }

    #[tokio::test]
    async fn the_byte_bound_counts_queued_bytes() {
        let (tx, mut rx) = channel(100, 10);
        tx.try_send(frame(6)).unwrap();
        assert!(tx.try_send(frame(5)).is_err());
        tx.try_send(frame(4)).unwrap();
        rx.recv().await.unwrap();
        tx.try_send(frame(6)).unwrap();
    }

    #[tokio::test]
    async fn a_close_request_gets_through_a_full_queue() {
        let (tx, mut rx) = channel(1, 10);
        tx.try_send(frame(10)).unwrap();
        tx.close(1001, "bye".into());
        assert_eq!(rx.recv().await, Some(Outgoing::Frame(frame(10))));
        assert_eq!(
            rx.recv().await,
            Some(Outgoing::Close {
                code: 1001,
                reason: "bye".into()
            })
        );
    }

    #[tokio::test]
    async fn the_receiver_ends_when_every_sender_is_gone() {
        let (tx, mut rx) = channel(4, 100);
        let other = tx.clone();
        tx.try_send("last".into()).unwrap();
        drop(tx);
        let waiting = tokio::spawn(async move {
            let first = rx.recv().await;
            (first, rx.recv().await)
        });
        tokio::task::yield_now().await;
        drop(other);
        let (first, end) = waiting.await.unwrap();
        assert_eq!(first, Some(Outgoing::Frame("last".into())));
        assert_eq!(end, None);
    }

    #[tokio::test]
    async fn frames_for_a_gone_writer_are_discarded() {
        let (tx, rx) = channel(1, 10);
        drop(rx);
        tx.try_send(frame(5)).unwrap();
        tx.try_send(frame(5)).unwrap();
    }
}
