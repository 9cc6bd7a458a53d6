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

/// What the sender left (`Some(None)`: it went away unsent), and the task waiting for it.
type Slot<T> = Rc<RefCell<(Option<Option<T>>, Option<Waker>)>>;

pub struct Sender<T>(Slot<T>);

pub struct Receiver<T>(Slot<T>);

pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let slot = Rc::new(RefCell::new((None, None)));
    (Sender(slot.clone()), Receiver(slot))
}

impl<T> Sender<T> {
    /// Hands the value over (`Err` with it when the receiver is gone); the waiting task wakes
    /// when the sender drops, here.
    pub fn send(self, value: T) -> Result<(), T> {
        if Rc::strong_count(&self.0) == 1 {
            return Err(value);
        }
        self.0.borrow_mut().0 = Some(Some(value));
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = self.0.borrow_mut();
            slot.0.get_or_insert(None);
            slot.1.take()
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
        match slot.0.take() {
            Some(left) => Poll::Ready(left.ok_or(Canceled)),
            None => {
                slot.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
