//! One value, once, from one place of the page to a task waiting for it: `futures`' oneshot without
//! its atomics and locks (a page is single-threaded, and the package is smaller for it). Dropping
//! the sender unsent ends the wait with `Err(Canceled)`.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The sender went away without sending.
#[derive(Debug)]
pub struct Canceled;

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    sender_gone: bool,
}

pub struct Sender<T>(Rc<RefCell<Slot<T>>>);

pub struct Receiver<T>(Rc<RefCell<Slot<T>>>);

pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Rc::new(RefCell::new(Slot {
        value: None,
        waker: None,
        sender_gone: false,
    }));
    (Sender(slot.clone()), Receiver(slot))
}

impl<T> Sender<T> {
    /// Hands the value over (`Err` with it when the receiver is gone).
    pub fn send(self, value: T) -> Result<(), T> {
        if Rc::strong_count(&self.0) == 1 {
            return Err(value);
        }
        self.0.borrow_mut().value = Some(value);
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = self.0.borrow_mut();
            slot.sender_gone = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, Canceled>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.0.borrow_mut();
        match slot.value.take() {
            Some(value) => Poll::Ready(Ok(value)),
            None if slot.sender_gone => Poll::Ready(Err(Canceled)),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
