//! A streamed response, token by token as the driver delivers them.

use super::progress::{Progress, Ticket, Update};
use crate::clock::{sleep_until, Sleep};
use crate::faults::Fault;
use crate::openai::{ChunkWriter, Usage};
use axum::body::Bytes;
use futures::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::Instant;

/// A streamed response: one SSE chunk per token as the driver delivers it,
/// the role preamble with the first (vLLM writes nothing before it), then
/// the finish chunk, usage and `[DONE]`.
pub(super) struct TokenStream {
    pub(super) progress: Arc<Progress>,
    pub(super) writer: ChunkWriter,
    pub(super) ticket: Ticket,
    pub(super) n_out: u32,
    pub(super) emitted: u32,
    /// Tokens known to exist, as of the last look at `progress`.
    pub(super) produced: u32,
    /// The token at which a fault strikes.
    pub(super) half: u32,
    pub(super) fault: Fault,
    pub(super) stall: Option<Sleep>,
    /// A disconnect's turn to write out the chunks before it was given.
    pub(super) flushed: bool,
    pub(super) prompt_tokens: u64,
    /// The client asked for usage (or the protocol always sends it).
    pub(super) usage: bool,
    pub(super) done: bool,
    /// The engine speculates: the tokens one step produced for the request
    /// go out in one chunk, as vLLM streams them. Otherwise one chunk a
    /// token, also when a late stream finds several ready.
    pub(super) burst: bool,
    /// The server, whose front end streams each chunk after its serial work
    /// on the chunks before it (with `frontend_serial_us_per_output_token`),
    /// and the wait for the chunk in hand with the tokens it was taken for
    /// (a burst's, as many as were ready then).
    pub(super) server: Arc<super::EngineServer>,
    pub(super) pacing: Option<(Sleep, u32)>,
}

impl TokenStream {
    /// The prompt's counts, the prefix cache's share included.
    fn prompt_usage(&self, completion: u64) -> Usage {
        Usage {
            prompt: self.prompt_tokens,
            completion,
            cached: Some(self.progress.cached.load(Ordering::Acquire) as u64),
        }
    }
}

impl Stream for TokenStream {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.emitted == this.n_out {
            this.done = true;
            this.ticket.live = false;
            let usage = this.usage.then(|| this.prompt_usage(this.n_out as u64));
            let close = this.writer.close(this.writer.finish_reason(), usage);
            // TGI says its last word with the last token.
            return Poll::Ready((!close.is_empty()).then_some(Ok(close)));
        }
        if this.produced <= this.emitted {
            match this.progress.poll_changed(this.emitted, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Update::Produced(p)) => this.produced = p,
                Poll::Ready(Update::Closed) => {
                    this.done = true;
                    return Poll::Ready(Some(Ok(this.writer.error_event("the engine dropped the request"))));
                }
            }
        }
        if this.emitted == this.half {
            match this.fault {
                Fault::StreamError => {
                    this.done = true;
                    let ev = this.writer.error_event("injected fault: the engine failed mid-stream");
                    return Poll::Ready(Some(Ok(ev)));
                }
                // The chunks before the break reach the client first, as the
                // fixed profile flushes them before it shuts the socket: the
                // connection drops what it holds unwritten when the body
                // fails, so the break waits one turn of its task, in which it
                // writes them out (a late stream's chunks, sent back to back
                // with the break, had been lost: 2 of 5 arrived).
                Fault::Disconnect if !this.flushed => {
                    this.flushed = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Fault::Disconnect => {
                    this.done = true;
                    return Poll::Ready(Some(Err(std::io::Error::other("injected disconnect"))));
                }
                Fault::Stall(d) => {
                    let sleep = this.stall.get_or_insert_with(|| sleep_until(Instant::now() + d));
                    if Pin::new(sleep).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // Tokens made during the stall go out back to back after it.
                    this.fault = Fault::None;
                }
                // Refused by the engine's configuration (the fixed profile plays them).
                Fault::None | Fault::HttpError | Fault::Hostile(_) => {}
            }
        }
        let i = this.emitted as u64;
        // A pending fault strikes at its token: a burst stops short of it.
        let mut upto = if this.burst {
            let cap = if this.emitted < this.half && this.fault != Fault::None { this.half } else { this.n_out };
            this.produced.min(cap).max(this.emitted + 1)
        } else {
            this.emitted + 1
        };
        if this.pacing.is_none() {
            let work = this.server.front_end_output(u64::from(upto - this.emitted));
            this.pacing = work.map(|at| (sleep_until(at), upto));
        }
        if let Some((wait, taken)) = this.pacing.as_mut() {
            if Pin::new(wait).poll(cx).is_pending() {
                return Poll::Pending;
            }
            // The chunk the front end worked on: a burst that grew while it
            // waited sends the rest in its next chunk.
            upto = *taken;
            this.pacing = None;
        }
        this.emitted = upto;
        let chunk = this.writer.tokens(i, upto as u64);
        if i > 0 {
            return Poll::Ready(Some(Ok(chunk)));
        }
        let preamble = this.writer.preamble(this.prompt_usage(0));
        let mut first = Vec::with_capacity(preamble.len() + chunk.len());
        first.extend_from_slice(&preamble);
        first.extend_from_slice(&chunk);
        Poll::Ready(Some(Ok(Bytes::from(first))))
    }
}
