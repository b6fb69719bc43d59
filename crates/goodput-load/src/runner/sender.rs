//! The sending side of a run: the [`Dispatcher`] driven on tokio's clock,
//! each request it sends (or session it starts) on a task of its own.

use super::{Backend, Control, LoadPlan, Shard};
use crate::client::sleep_until_some;
use crate::workload::{Conversation, Sessions, WorkItem, Workload};
use goodput_core::load::dispatch::{Action, Dispatcher};
use goodput_core::{RequestRecord, SessionTurn};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The sending side of a run: tells the dispatcher the time and the slots
/// that free, and sends what it says is due.
pub(super) struct Sender<'a, B> {
    pub(super) plan: &'a LoadPlan,
    pub(super) backend: Arc<B>,
    pub(super) workload: Arc<Workload>,
    pub(super) control: &'a Control,
    pub(super) origin: Instant,
    pub(super) next_id: Arc<AtomicU64>,
    /// Requests refused with a `Retry-After` whose user waited as asked
    /// before sending again (see [`retry_wait`]).
    pub(super) retry_waits: Arc<AtomicU64>,
    /// Cancelled once the dispatcher has nothing left to send: a user's
    /// wait then ends (a run of `-n` requests had sat out a whole
    /// `Retry-After` after its last send).
    pub(super) sent_all: CancellationToken,
}

/// What a request's or a session's task tells the sender.
enum Event {
    /// A lone request ended: its record, and its user is free.
    Finished(RequestRecord),
    /// A lone request's user, which waited after its record (sent as
    /// [`Event::Record`]) as the server's `Retry-After` asked, is free.
    Freed,
    /// A session's turn ended.
    Record(RequestRecord),
    /// A session's turn ended and its next is due at `due`: `go` says when.
    TurnEnded { unit: u64, due: Duration, go: oneshot::Sender<()> },
    /// A session ended: its user is free, unless the dispatcher freed it
    /// when it cut the session.
    SessionEnded { free: bool },
}

impl<B: Backend> Sender<'_, B> {
    /// Sends until the plan's count, duration, schedule or a stop ends
    /// sending and the last request has ended, giving each record to `keep`.
    pub(super) async fn drive(&self, mut dispatcher: Dispatcher, mut keep: impl FnMut(RequestRecord)) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        // Requests and sessions going, and sessions waiting for their next turn.
        let mut going = 0usize;
        let mut waiting: HashMap<u64, oneshot::Sender<()>> = HashMap::new();
        let stop = self.control.stop.clone();
        let mut stopped = false;
        loop {
            let now = self.origin.elapsed();
            while let Some(action) = dispatcher.next_action(now) {
                match action {
                    Action::Send { unit, scheduled, warmup, .. } => {
                        going += 1;
                        self.start(unit, scheduled, warmup, &tx);
                    }
                    Action::Turn { unit, .. } => {
                        if let Some(go) = waiting.remove(&unit) {
                            let _ = go.send(());
                        }
                    }
                    // After a stop, or the end of sending when a duration
                    // bounds the run, in-flight requests get the grace.
                    Action::CancelAll { .. } => self.control.abort.cancel(),
                }
            }
            if dispatcher.finished() {
                self.sent_all.cancel();
                if going == 0 {
                    break;
                }
            }
            let wake = dispatcher.next_wake().map(|t| self.origin + t);
            tokio::select! {
                event = rx.recv() => {
                    let now = self.origin.elapsed();
                    match event.expect("the sender holds a sender of its own") {
                        Event::Finished(r) => {
                            keep(r);
                            going -= 1;
                            dispatcher.done(now);
                        }
                        Event::Freed => {
                            going -= 1;
                            dispatcher.done(now);
                        }
                        Event::Record(r) => keep(r),
                        Event::TurnEnded { unit, due, go } => {
                            if dispatcher.turn_ended(unit, now, due) {
                                waiting.insert(unit, go);
                            }
                        }
                        Event::SessionEnded { free } => {
                            going -= 1;
                            if free {
                                dispatcher.done(now);
                            }
                        }
                    }
                }
                _ = stop.cancelled(), if !stopped => {
                    stopped = true;
                    // Sessions waiting for a turn are cut: dropping `go` ends them.
                    for unit in dispatcher.stop(self.origin.elapsed()) {
                        waiting.remove(&unit);
                    }
                }
                _ = sleep_until_some(wake) => {}
            }
        }
    }

    /// Starts request `i` (or session `i`) on a task of its own.
    fn start(&self, i: u64, scheduled: Duration, warmup: bool, tx: &mpsc::UnboundedSender<Event>) {
        let (backend, workload, tx, abort) =
            (self.backend.clone(), self.workload.clone(), tx.clone(), self.control.abort.clone());
        let origin = self.origin;
        let backoff = self.backoff();
        if let Some(sessions) = &self.plan.sessions {
            let talk = Session {
                id: i,
                first: scheduled,
                warmup,
                sessions: sessions.clone(),
                seed: self.plan.seed,
                origin,
                abort,
                sent: self.control.sent.clone(),
                next_id: self.next_id.clone(),
                shard: self.plan.shard,
                backoff,
            };
            tokio::spawn(talk.hold(backend, workload, tx));
            return;
        }
        let id = i;
        self.control.sent.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            // Encoding images takes milliseconds a request: on the blocking
            // pool, so that the runtime's threads keep reading the other
            // streams meanwhile (the wait shows as this request's client
            // queue time, the client's own, as it is).
            let item = if workload.builds_slowly() {
                let w = workload.clone();
                match tokio::task::spawn_blocking(move || w.item(id)).await {
                    Ok(item) => item,
                    Err(_) => workload.item(id),
                }
            } else {
                workload.item(id)
            };
            let mut rec = backend.execute(id, item, scheduled, origin, abort).await;
            rec.warmup = warmup;
            match backoff.as_ref().and_then(|b| b.wait_for(&rec)) {
                Some((b, wait)) => {
                    // The record now; the user after the wait.
                    let _ = tx.send(Event::Record(rec));
                    b.wait(wait).await;
                    let _ = tx.send(Event::Freed);
                }
                None => {
                    let _ = tx.send(Event::Finished(rec));
                }
            }
        });
    }

    /// How a closed loop's user follows a `Retry-After`; `None` for an open
    /// loop, whose sends keep to their schedule whatever the server asks.
    fn backoff(&self) -> Option<Backoff> {
        let closed = self.plan.rate.is_none() && self.plan.trace.is_none();
        closed.then(|| Backoff {
            end: self.plan.sending_time().and_then(|d| self.origin.checked_add(d)),
            sent_all: self.sent_all.clone(),
            stop: self.control.stop.clone(),
            abort: self.control.abort.clone(),
            count: self.retry_waits.clone(),
        })
    }
}

/// A closed loop's user whose request the server refused with a
/// `Retry-After` waits that long before its next send, as a client of the
/// server would: resending at once turns a refusal into a flood of failed
/// records (thousands a second), and measures nothing but the refusal.
#[derive(Clone)]
struct Backoff {
    /// The end of sending, which ends any wait (none: a count bounds the run).
    end: Option<Instant>,
    /// Nothing left to send (the last of a count sent): ends any wait too.
    sent_all: CancellationToken,
    /// A stop or the run's cancellation ends a wait too.
    stop: CancellationToken,
    abort: CancellationToken,
    count: Arc<AtomicU64>,
}

impl Backoff {
    /// The wait `rec` asks of its user, if any (see [`retry_wait`]).
    fn wait_for(&self, rec: &RequestRecord) -> Option<(&Backoff, Duration)> {
        retry_wait(rec).map(|w| (self, w))
    }

    /// Waits `wait`, or until the end of sending, the last send, a stop or
    /// the run's cancellation if sooner.
    async fn wait(&self, wait: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let until = now.checked_add(wait).unwrap_or(now + MAX_RETRY_WAIT);
        let until = self.end.map_or(until, |end| until.min(end));
        tokio::select! {
            _ = tokio::time::sleep_until(until) => {}
            _ = self.sent_all.cancelled() => {}
            _ = self.stop.cancelled() => {}
            _ = self.abort.cancelled() => {}
        }
    }
}

/// The longest wait a `Retry-After` gets: a benchmark waits out a refusal,
/// not a quota's hour (and a hostile `Retry-After` of 10^19 s had
/// overflowed the clock and panicked the request's task, leaving the run
/// waiting for it for ever).
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The wait a failed request's `Retry-After` asks for, at most
/// [`MAX_RETRY_WAIT`]: a refusal (429 or 503) whose `Retry-After` reads
/// ([`refusal_retry_after`]).
pub(super) fn retry_wait(rec: &RequestRecord) -> Option<Duration> {
    match refusal_retry_after(rec, std::time::SystemTime::now())? {
        RetryAfter::Wait(w) => Some(w).filter(|w| !w.is_zero()),
        RetryAfter::Unreadable => None,
    }
}

/// What `rec`'s `Retry-After` asks at `now` ([`read_retry_after`]), where
/// `rec` is a refusal (429 or 503) that carries one: the requests a closed
/// loop's user waits after, and the run warns of when they cannot be read.
pub fn refusal_retry_after(rec: &RequestRecord, now: std::time::SystemTime) -> Option<RetryAfter> {
    if rec.outcome.is_success() || !matches!(rec.http_status, Some(429 | 503)) {
        return None;
    }
    let value = rec.retry_after.as_deref()?;
    // A date is read against the server's clock where the response gave
    // it: the time between its `Date` and the `Retry-After`.
    let server_now = rec.retry_after_date.as_deref().and_then(|d| httpdate::parse_http_date(d.trim()).ok());
    Some(read_retry_after(value, server_now.unwrap_or(now)))
}

/// What a `Retry-After` asks (RFC 9110 §10.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// Wait this long, at most [`MAX_RETRY_WAIT`].
    Wait(Duration),
    /// Neither a number of seconds nor an HTTP date (`-5`, `1e3`, `NaN`):
    /// nothing is waited, and the run says so.
    Unreadable,
}

/// Reads a `Retry-After` at `now`: a number of seconds (digits only; one
/// past any clock, 10^20, is a wait as long as the longest), or an HTTP
/// date, the time from `now` until it (none once past). [`refusal_retry_after`]
/// gives the response's own `Date` as `now` where it has one, so that a
/// server's clock minutes off ours still asks the wait it meant; without
/// one, this machine's clock reads the date. Both are cut to
/// [`MAX_RETRY_WAIT`]. A number past `u64` and a date had not been waited
/// at all, without a word.
pub fn read_retry_after(value: &str, now: std::time::SystemTime) -> RetryAfter {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        let secs = v.parse::<u64>().unwrap_or(u64::MAX);
        return RetryAfter::Wait(Duration::from_secs(secs).min(MAX_RETRY_WAIT));
    }
    match httpdate::parse_http_date(v) {
        Ok(at) => RetryAfter::Wait(at.duration_since(now).unwrap_or_default().min(MAX_RETRY_WAIT)),
        Err(_) => RetryAfter::Unreadable,
    }
}

/// One multi-turn session of a run, and what it needs to hold it.
struct Session {
    id: u64,
    /// When its first turn was due.
    first: Duration,
    warmup: bool,
    sessions: Sessions,
    seed: u64,
    origin: Instant,
    abort: CancellationToken,
    sent: Arc<AtomicU64>,
    next_id: Arc<AtomicU64>,
    /// A shard numbers its turns `k·count + index`, apart from the other shards'.
    shard: Option<Shard>,
    /// A closed loop's: a turn refused with a `Retry-After` holds the user
    /// that long before its next session.
    backoff: Option<Backoff>,
}

impl Session {
    /// Asks the session's questions in turn, each with the history before it,
    /// each when the dispatcher says (after the answer before it and a think
    /// time), its user's slot held throughout. A failed turn ends the session
    /// (its history would have a hole), and so does the end of sending.
    async fn hold<B: Backend>(self, backend: Arc<B>, workload: Arc<Workload>, tx: mpsc::UnboundedSender<Event>) {
        let Ok((turns, think)) = self.sessions.shape(self.seed, self.id, workload.conversation_turns(self.id)) else {
            // Checked before the run (the same for every session).
            let _ = tx.send(Event::SessionEnded { free: true });
            return;
        };
        let mut conversation = Conversation::default();
        let mut due = self.first;
        let mut free = true;
        for turn in 0..turns {
            if turn > 0 {
                let (go, wait) = oneshot::channel();
                let _ = tx.send(Event::TurnEnded { unit: self.id, due, go });
                if wait.await.is_err() {
                    // Cut by the end of sending or a stop, which freed the user.
                    free = false;
                    break;
                }
            }
            let Ok(question) = workload.question(self.id, turn) else { break };
            let this = SessionTurn { id: self.id, turn: turn + 1, turns };
            let item = WorkItem { session: Some(this), ..conversation.ask(question) };
            let k = self.next_id.fetch_add(1, Ordering::Relaxed);
            let id = self.shard.map_or(k, |s| k * u64::from(s.count) + u64::from(s.index));
            self.sent.fetch_add(1, Ordering::Relaxed);
            let (mut rec, reply) = backend.execute_keeping(id, item, due, self.origin, self.abort.clone()).await;
            rec.warmup = self.warmup;
            rec.session = Some(this);
            let (ok, end, tokens) = (rec.outcome.is_success(), rec.end, rec.output_tokens);
            let backoff = self.backoff.as_ref().and_then(|b| b.wait_for(&rec)).map(|(b, w)| (b.clone(), w));
            let _ = tx.send(Event::Record(rec));
            if !ok {
                if let Some((b, wait)) = backoff {
                    b.wait(wait).await;
                }
                break;
            }
            conversation.answered(reply.unwrap_or_default(), tokens);
            due = end + think.get(turn as usize).copied().unwrap_or_default();
        }
        let _ = tx.send(Event::SessionEnded { free });
    }
}
