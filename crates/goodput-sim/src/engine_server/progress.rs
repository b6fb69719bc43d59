//! What handlers and the driver pass each other: commands one way, a
//! per-request progress cell the other.

use crate::engine::{Error, Prompt, Router};
use futures::task::AtomicWaker;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// What handlers ask of the driver.
pub(super) enum Command {
    Add {
        id: u64,
        prompt: Prompt,
        max_tokens: u32,
        /// When the server received the request: TTFT and e2e count from here.
        arrived: Instant,
        progress: Arc<Progress>,
        reply: oneshot::Sender<Result<(), Error>>,
        /// Prefilled on a prefill instance that still holds its KV
        /// (disaggregation): told, when the decode instance admits it to
        /// pull that KV, the leading prompt tokens its own prefix cache
        /// holds (which do not cross); [`Command::Landed`] follows.
        pull: Option<oneshot::Sender<u32>>,
        /// A pooling pass (embeddings, rerank): its prefill is its answer,
        /// counted as vLLM counts one (no generation token, no TTFT, and
        /// finished as `stop`).
        pooling: bool,
    },
    /// A request's KV has landed on its decode instance.
    Landed(u64),
    Abort(u64),
    /// A prefill instance frees the blocks it kept for a finished request
    /// (its KV has crossed to a decode instance, or the client left).
    Release(u64),
    /// Empty the prefix cache; the reply carries how many prefixes were
    /// forgotten.
    ResetPrefixCache(oneshot::Sender<usize>),
}

/// A handler's claim on its engine request. Dropped while live (the client
/// went away, or a fault cut the response short), it aborts the request.
/// Dropped at all, it ends the request's count at its replica's router.
pub(super) struct Ticket {
    pub(super) id: u64,
    pub(super) commands: mpsc::UnboundedSender<Command>,
    pub(super) live: bool,
    pub(super) router: Arc<Mutex<Router>>,
    pub(super) replica: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.live {
            let _ = self.commands.send(Command::Abort(self.id));
        }
        super::metrics::lock(&self.router).done(self.replica);
    }
}

/// One request's output as far as the driver has delivered it. A count and
/// a waker instead of a channel: the driver's delivery is two atomic stores
/// and a wake, and a response that falls behind simply finds several tokens.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) produced: AtomicU32,
    /// Prompt tokens the prefix cache served when the request was admitted.
    pub(super) cached: AtomicU32,
    /// On a prefill instance in SGLang's order: the prompt tokens whose KV
    /// went over the link chunk by chunk while the rest was computed.
    pub(super) sent: AtomicU32,
    /// The driver let go of the request: finished, aborted, or gone.
    pub(super) closed: AtomicBool,
    pub(super) waker: AtomicWaker,
}

pub(super) enum Update {
    /// Tokens produced so far, more than the caller had seen.
    Produced(u32),
    /// No more tokens will come.
    Closed,
}

impl Progress {
    pub(super) fn check(&self, seen: u32) -> Option<Update> {
        // `closed` is read first: the driver stores the last count before it
        // closes, so a closed progress shows its final count.
        let closed = self.closed.load(Ordering::Acquire);
        let produced = self.produced.load(Ordering::Acquire);
        if produced > seen {
            Some(Update::Produced(produced))
        } else if closed {
            Some(Update::Closed)
        } else {
            None
        }
    }

    pub(super) fn poll_changed(&self, seen: u32, cx: &mut Context<'_>) -> Poll<Update> {
        if let Some(u) = self.check(seen) {
            return Poll::Ready(u);
        }
        self.waker.register(cx.waker());
        match self.check(seen) {
            Some(u) => Poll::Ready(u),
            None => Poll::Pending,
        }
    }

    pub(super) async fn changed(&self, seen: u32) -> Update {
        std::future::poll_fn(|cx| self.poll_changed(seen, cx)).await
    }
}

/// The driver's end of a [`Progress`]. Dropping it closes the progress, so
/// no response waits on a request the driver no longer holds, whatever the
/// reason (finish, abort, or the driver itself going away).
pub(super) struct Producer(pub(super) Arc<Progress>);

impl Producer {
    pub(super) fn deliver(&self, produced: u32) {
        self.0.produced.store(produced, Ordering::Release);
        self.0.waker.wake();
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.waker.wake();
    }
}
