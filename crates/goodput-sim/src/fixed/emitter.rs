//! The emitter: one thread that owns the timing and the socket writes of
//! every streamed response of a fixed-profile server.
//!
//! Why a thread of its own: a benchmark of the client puts a thousand streams
//! in lockstep, so a thousand chunks fall due at the same instant every
//! period. Waking a tokio task per chunk through hyper costs several times the
//! chunk's own `send(2)` and writes the burst in whatever order the workers
//! happen to run, so each stream's lateness changes from one chunk to the
//! next: jitter in the very gaps the client measures. Here the streams wait in
//! one min-heap keyed by (due time, stream sequence number); the thread sleeps
//! to the earliest due time with microsecond precision, then writes every due
//! chunk with one non-blocking `send(2)` each, ties in the order the streams
//! arrived. A stream's place in a burst, and so its lateness, is the same
//! every period: a constant offset the client's inter-token gaps do not see.
//! No chunk is written before its due time, so the server's timings are
//! true lower bounds of what a client measures. (Writing chunks due within
//! the next 20 µs in the same pass, as it once did, put most chunks a few
//! microseconds early, and a client's 42 ms at 41.9998.)
//! When the thread itself is late by more than a period (a busy machine),
//! every stream catches up one chunk a pass, in due order, so each still
//! keeps its place.
//!
//! A client that reads slowly never blocks the thread: what the socket does
//! not take stays in that stream's buffer and is retried shortly after, while
//! the other streams go on.

use super::{FixedServer, Plan};
use crate::faults::Fault;
use crate::openai::Usage;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write as _;
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The condition variable's timed wait ends this long before the due time;
/// the rest is spent yielding, because a timed wake-up can be tens of
/// microseconds late. Short: at 1,000 streams the yielding was 11% of the
/// server's CPU with 100 µs, CPU the client on the same machine needs. Not
/// shorter: with 20 µs the wake-ups were late often enough to put the p90
/// of the client's |ITL − 10 ms| from 0.01 to 0.06–0.10 ms.
const SPIN: Duration = Duration::from_micros(30);
/// First and longest pause before retrying a write a slow client did not take.
const RETRY_MIN: Duration = Duration::from_micros(200);
const RETRY_MAX: Duration = Duration::from_millis(5);
/// Sent bytes are dropped from the front of a stream's buffer past this size
/// (or whenever all is sent), so a slow client costs no copy per write.
const COMPACT: usize = 64 * 1024;

/// How a stream ended, for its connection task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct End {
    /// The response ended cleanly and the connection can serve another request.
    pub keep_alive: bool,
}

/// A streamed response handed to the emitter: the status line, the headers
/// and the preamble are already written.
pub(crate) struct Stream {
    plan: Plan,
    /// A duplicate of the connection's socket (non-blocking).
    sock: TcpStream,
    /// HTTP/1.1 chunked framing; without it (an HTTP/1.0 client) the body
    /// ends when the connection closes.
    chunked: bool,
    done: oneshot::Sender<End>,
    /// The next token chunk, or `None` once the end of the body is buffered.
    next: Option<u64>,
    out: Vec<u8>,
    /// Bytes of `out` already sent.
    sent: usize,
    retry: Duration,
    /// When the last token chunk's write began.
    last_write: Option<Instant>,
    /// When each token chunk's write began, after the request's arrival
    /// (ns), kept only for the server's write log.
    writes: Option<Vec<u64>>,
}

impl Stream {
    /// A stream over `sock` (a duplicate of the connection's socket) that
    /// reports its end on `done`.
    pub fn new(plan: Plan, sock: TcpStream, chunked: bool, done: oneshot::Sender<End>) -> std::io::Result<Self> {
        sock.set_nonblocking(true)?;
        // Grown as the chunks go, not sized ahead by the request's length.
        let writes = plan.request_id.is_some().then(|| Vec::with_capacity(plan.n_chunks.min(4096) as usize));
        Ok(Stream {
            plan,
            sock,
            chunked,
            done,
            next: Some(0),
            out: Vec::new(),
            sent: 0,
            retry: RETRY_MIN,
            last_write: None,
            writes,
        })
    }

    /// When the stream next has something to do.
    fn first_event(&self) -> Instant {
        if self.plan.n_chunks == 0 {
            self.plan.t0
        } else {
            self.plan.due(0)
        }
    }

    /// Appends `payload` to the output, framed as one HTTP chunk.
    fn frame(&mut self, payload: &[u8]) {
        frame(&mut self.out, payload, self.chunked);
    }

    /// Ends the body: the last chunk of the chunked framing.
    fn terminate(&mut self) {
        if self.chunked {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
        self.next = None;
    }

    /// Buffers the next token chunk if it is due by `now` (and the close
    /// after the last), writes what the socket takes, and says when to come
    /// back.
    fn step(&mut self, scratch: &mut String, server: &FixedServer, trace: &Trace) -> Step {
        if self.done.is_closed() {
            // The connection task is gone (the server shut down): nobody waits.
            return Step::Finished(End { keep_alive: false });
        }
        let now = Instant::now();
        // One token chunk a pass, the next if it is due: a stream behind by
        // several (the thread was late) has its next one after every other
        // stream's chunk due before it, so it keeps its place in each burst.
        let mut framed = None;
        if let Some(i) = self.next.filter(|&i| i < self.plan.n_chunks) {
            let due = self.plan.due(i);
            let fault = (i == self.plan.fault_at()).then_some(self.plan.fault);
            match fault {
                _ if due > now => {}
                Some(Fault::StreamError) => {
                    let ev = self.plan.writer.error_event("injected fault: the engine failed mid-stream");
                    self.frame(&ev);
                    self.terminate();
                }
                Some(Fault::Disconnect) => {
                    let _ = self.flush();
                    let _ = self.sock.shutdown(Shutdown::Both);
                    return Step::Finished(End { keep_alive: false });
                }
                _ => {
                    let p = &self.plan;
                    let late = now.saturating_duration_since(due);
                    server.lateness.record(late);
                    trace.chunk(p.n, i, now, due);
                    let k = p.tokens_per_chunk;
                    scratch.clear();
                    p.writer.tokens_into(i * k, ((i + 1) * k).min(p.n_out), scratch);
                    self.frame(scratch.as_bytes());
                    self.next = Some(i + 1);
                    framed = Some(i);
                }
            }
        }
        // The close follows the last token chunk in the same pass.
        if self.next.is_some_and(|i| i >= self.plan.n_chunks) {
            let p = &self.plan;
            let close = p.writer.close(p.writer.finish_reason(), p.usage.map(|(prompt, n)| Usage::new(prompt, n)));
            self.frame(&close);
            self.terminate();
        }
        // A chunk's time is when its write began: its bytes cannot reach the
        // client before it, whereas the write's return can come later than
        // they do (the thread preempted between the call and the clock).
        let began = framed.map(|i| (i, Instant::now()));
        let flushed = self.flush();
        if let Some((i, t)) = began {
            self.gap_error(i, t, server);
        }
        match flushed {
            Err(_) => Step::Finished(End { keep_alive: false }),
            Ok(true) => {
                self.retry = RETRY_MIN;
                match self.next {
                    None => Step::Finished(End { keep_alive: self.chunked }),
                    Some(i) if i < self.plan.n_chunks => Step::At(self.plan.due(i)),
                    // The close chunk follows the last token chunk at once.
                    Some(_) => Step::At(now),
                }
            }
            Ok(false) => {
                trace.deferred();
                let retry = now + self.retry;
                self.retry = (self.retry * 2).min(RETRY_MAX);
                Step::At(match self.next {
                    Some(i) if i < self.plan.n_chunks => retry.min(self.plan.due(i)),
                    _ => retry,
                })
            }
        }
    }

    /// Records the gap error of token chunk `i`, whose write began at `t`,
    /// against the previous write (chunk 0 has no gap before it).
    fn gap_error(&mut self, i: u64, t: Instant, server: &FixedServer) {
        if let Some(w) = &mut self.writes {
            w.push(t.saturating_duration_since(self.plan.t0).as_nanos() as u64);
        }
        if i > 0 {
            let actual = self.last_write.map_or(Duration::ZERO, |prev| t.saturating_duration_since(prev));
            let exact = self.plan.due(i) - self.plan.due(i - 1);
            server.gap_error.record(actual.abs_diff(exact));
        }
        self.last_write = Some(t);
    }

    /// Writes the unsent output without blocking; `Ok(true)` when all of it
    /// went, an error when the client is gone.
    fn flush(&mut self) -> std::io::Result<bool> {
        while self.sent < self.out.len() {
            // std's TcpStream sends with MSG_NOSIGNAL: a closed peer is an
            // error here, not a SIGPIPE.
            match (&self.sock).write(&self.out[self.sent..]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
            return Ok(true);
        }
        if self.sent >= COMPACT {
            self.out.drain(..self.sent);
            self.sent = 0;
        }
        Ok(false)
    }

    /// Closes the emitter's copy of the socket, then tells the connection
    /// task; the write times go to the server's log.
    fn finish(self, end: End, server: &FixedServer) {
        let Stream { sock, done, plan, writes, .. } = self;
        drop(sock);
        let _ = done.send(end);
        if let (Some(log), Some(writes_ns)) = (&server.write_log, writes) {
            log.send(super::StreamWrites { request_id: plan.request_id, n: plan.n, writes_ns });
        }
    }
}

/// Appends `payload` to `out` as one chunk of HTTP/1.1 chunked framing
/// (`{len:x}\r\n…\r\n`), or bare without it.
pub(crate) fn frame(out: &mut Vec<u8>, payload: &[u8], chunked: bool) {
    // An empty chunk would end a chunked body (a protocol with nothing to
    // say at some point, e.g. TGI, whose last token event is its close).
    if payload.is_empty() {
        return;
    }
    if chunked {
        let _ = write!(out, "{:x}\r\n", payload.len());
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(payload);
    }
}

/// What a stream does next.
enum Step {
    At(Instant),
    Finished(End),
}

/// The handle connection tasks submit streams through; the thread stops when
/// the last handle is dropped.
pub(crate) struct Emitter {
    shared: Arc<Shared>,
}

struct Shared {
    inbox: Mutex<Inbox>,
    cv: Condvar,
    trace: Trace,
}

#[derive(Default)]
struct Inbox {
    new: Vec<Stream>,
    closed: bool,
    /// The time the thread's timed wait ends, while it waits; a new stream
    /// due earlier wakes it.
    waiting_until: Option<Instant>,
    /// The thread waits with no deadline (no stream at all).
    idle: bool,
}

impl Emitter {
    /// Starts the thread for `server`'s streams.
    pub fn start(server: Arc<FixedServer>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared { inbox: Mutex::default(), cv: Condvar::new(), trace: Trace::default() });
        let s = shared.clone();
        std::thread::Builder::new().name("goodput-sim-emitter".into()).spawn(move || run(&s, &server))?;
        Ok(Emitter { shared })
    }

    /// Hands `stream` to the thread.
    pub fn submit(&self, stream: Stream) {
        let first = stream.first_event();
        let mut inbox = lock(&self.shared.inbox);
        inbox.new.push(stream);
        let wake = inbox.idle || inbox.waiting_until.is_some_and(|t| first < t);
        drop(inbox);
        if wake {
            self.shared.cv.notify_one();
        }
    }

    /// What the thread recorded, for tests.
    #[cfg(test)]
    pub fn trace(&self) -> &Trace {
        &self.shared.trace
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        lock(&self.shared.inbox).closed = true;
        self.shared.cv.notify_one();
    }
}

fn lock(m: &Mutex<Inbox>) -> MutexGuard<'_, Inbox> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The thread: sleep to the earliest due time, write everything due, repeat.
fn run(shared: &Shared, server: &FixedServer) {
    precise_timers();
    let mut heap: BinaryHeap<Reverse<(Instant, u64, usize)>> = BinaryHeap::new();
    let mut slots: Vec<Option<Stream>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut seq = 0u64;
    let mut scratch = String::with_capacity(4096);
    loop {
        {
            let mut inbox = lock(&shared.inbox);
            loop {
                if inbox.closed {
                    return;
                }
                for s in inbox.new.drain(..) {
                    let at = s.first_event();
                    let slot = match free.pop() {
                        Some(i) => {
                            slots[i] = Some(s);
                            i
                        }
                        None => {
                            slots.push(Some(s));
                            slots.len() - 1
                        }
                    };
                    // Arrival order breaks ties in due time.
                    heap.push(Reverse((at, seq, slot)));
                    seq += 1;
                }
                let now = Instant::now();
                match heap.peek() {
                    None => {
                        inbox.idle = true;
                        inbox = shared.cv.wait(inbox).unwrap_or_else(|e| e.into_inner());
                        inbox.idle = false;
                    }
                    Some(Reverse((at, _, _))) if *at > now + SPIN => {
                        inbox.waiting_until = Some(*at);
                        let d = *at - now - SPIN;
                        inbox = shared.cv.wait_timeout(inbox, d).unwrap_or_else(|e| e.into_inner()).0;
                        inbox.waiting_until = None;
                    }
                    Some(_) => break,
                }
            }
        }
        if let Some(Reverse((at, _, _))) = heap.peek() {
            while Instant::now() < *at {
                std::thread::yield_now();
            }
        }
        // Everything due, in (due time, sequence) order.
        while let Some(&Reverse((at, n, slot))) = heap.peek() {
            if at > Instant::now() {
                break;
            }
            heap.pop();
            let Some(stream) = slots[slot].as_mut() else { continue };
            match stream.step(&mut scratch, server, &shared.trace) {
                Step::At(t) => heap.push(Reverse((t, n, slot))),
                Step::Finished(end) => {
                    if let Some(s) = slots[slot].take() {
                        s.finish(end, server);
                    }
                    free.push(slot);
                }
            }
        }
    }
}

/// Asks Linux for timed waits without the default 50 µs of timer slack.
fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and only affects the
    // calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Test hooks: the order and lateness of every token chunk written, and how
/// often a socket did not take a whole write. Compiled out of normal builds.
#[derive(Default)]
pub(crate) struct Trace {
    #[cfg(test)]
    chunks: std::sync::Mutex<Vec<(u64, u64, Duration)>>,
    #[cfg(test)]
    deferred: std::sync::atomic::AtomicU64,
    #[cfg(test)]
    early: std::sync::atomic::AtomicU64,
}

impl Trace {
    #[inline]
    fn chunk(&self, _request: u64, _index: u64, _now: Instant, _due: Instant) {
        #[cfg(test)]
        {
            if _now < _due {
                self.early.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            self.chunks.lock().unwrap().push((_request, _index, _now.saturating_duration_since(_due)));
        }
    }

    #[inline]
    fn deferred(&self) {
        #[cfg(test)]
        self.deferred.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// `(request number, chunk index, lateness)` of every token chunk, in
    /// the order they were written.
    #[cfg(test)]
    pub fn chunks(&self) -> Vec<(u64, u64, Duration)> {
        self.chunks.lock().unwrap().clone()
    }

    /// The request numbers in the order their chunk `index` was written.
    #[cfg(test)]
    pub fn burst(&self, index: u64) -> Vec<u64> {
        self.chunks.lock().unwrap().iter().filter(|c| c.1 == index).map(|c| c.0).collect()
    }

    /// Token chunks framed before their due time (a server that may send
    /// early leaves a client's measure no true lower bound).
    #[cfg(test)]
    pub fn early_writes(&self) -> u64 {
        self.early.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes a socket did not take whole.
    #[cfg(test)]
    pub fn deferred_writes(&self) -> u64 {
        self.deferred.load(std::sync::atomic::Ordering::Relaxed)
    }
}
