//! The sending side of a run: each request at its time and in a user slot,
//! single requests and multi-turn sessions, each on a task of its own.

use super::{Backend, Control, LoadPlan, SendTimes, Shard};
use crate::workload::{Conversation, Sessions, WorkItem, Workload};
use goodput_core::{RequestRecord, SessionTurn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The sending side of a run: waits for each request's time and user slot,
/// then sends it (or starts its session) on a task of its own.
pub(super) struct Sender<'a, B> {
    pub(super) plan: &'a LoadPlan,
    pub(super) backend: Arc<B>,
    pub(super) workload: Arc<Workload>,
    pub(super) control: &'a Control,
    pub(super) stop: CancellationToken,
    pub(super) origin: Instant,
    pub(super) cap: Option<Arc<Semaphore>>,
    pub(super) end_of_sending: Option<Instant>,
    pub(super) next_id: Arc<AtomicU64>,
}

impl<B: Backend> Sender<'_, B> {
    /// Sends until the plan's count, duration, schedule or a stop ends it.
    pub(super) async fn send_all(&self, mut schedule: Option<SendTimes>, tx: mpsc::UnboundedSender<RequestRecord>) {
        let mut i: u64 = 0;
        // Warm-up requests sent so far: the measured ones are the rest. A
        // request due after the timed warm-up is measured, and so is every
        // later one (due times only grow), so the count is final once one is.
        let mut warm: u64 = 0;
        // A closed loop's shard cannot know which of the other shards'
        // requests fall in a timed warm-up: it sends its users' share of
        // the measured count instead.
        let plan = self.plan;
        let quota = match (plan.shard, plan.closed_users(), plan.requests) {
            (Some(s), Some(c), Some(n)) if !plan.warmup_time.is_zero() => Some(s.owned_below(n, Some(c))),
            _ => None,
        };
        let mut measured: u64 = 0;
        loop {
            let done = match quota {
                Some(q) => measured >= q,
                None => plan.requests.is_some_and(|n| i - warm >= n),
            };
            if done {
                break;
            }
            if !plan.owns(i) {
                // Another shard's slot counts towards the bounds as the one
                // run counts it, and takes its place in the schedule.
                let at = match schedule.as_mut() {
                    Some(s) => {
                        let Some(at) = s.next() else { break };
                        if plan.duration.is_some_and(|d| at >= plan.warmup_time + d) {
                            break;
                        }
                        Some(at)
                    }
                    None => None,
                };
                warm += u64::from(i < plan.warmup || at.is_some_and(|at| at < plan.warmup_time));
                i += 1;
                continue;
            }
            let Some((scheduled, permit)) = self.next_slot(&mut schedule).await else { break };
            // Closed loop: the request was due the moment a user slot freed.
            let scheduled = scheduled.unwrap_or_else(|| self.origin.elapsed());
            let warmup = i < plan.warmup || scheduled < plan.warmup_time;
            warm += u64::from(warmup);
            measured += u64::from(!warmup);
            self.dispatch(i, scheduled, warmup, permit, &tx);
            i += 1;
        }
        drop(tx);
    }

    /// Waits for the next request's due time (open loop) and user slot
    /// (closed loop): its due time, if scheduled, and its slot; `None` when
    /// sending is over.
    async fn next_slot(
        &self,
        schedule: &mut Option<SendTimes>,
    ) -> Option<(Option<Duration>, Option<OwnedSemaphorePermit>)> {
        let (plan, stop) = (self.plan, &self.stop);
        let mut scheduled = None;
        if let Some(s) = schedule.as_mut() {
            // A trace ends; a rate's schedule does not.
            let at = s.next()?;
            if plan.duration.is_some_and(|d| at >= plan.warmup_time + d) {
                return None;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(self.origin + at) => {}
                _ = stop.cancelled() => return None,
            }
            scheduled = Some(at);
        }
        let permit = match &self.cap {
            Some(sem) => tokio::select! {
                p = sem.clone().acquire_owned() => Some(p.expect("the semaphore is never closed")),
                _ = stop.cancelled() => return None,
                _ = self.sleep_until_end() => return None,
            },
            None => None,
        };
        if stop.is_cancelled() || self.end_of_sending.is_some_and(|t| Instant::now() >= t) {
            return None;
        }
        Some((scheduled, permit))
    }

    async fn sleep_until_end(&self) {
        match self.end_of_sending {
            Some(t) => tokio::time::sleep_until(t).await,
            None => std::future::pending().await,
        }
    }

    /// Starts request `i` (or session `i`) on a task of its own, holding
    /// `permit` until it is done.
    fn dispatch(
        &self,
        i: u64,
        scheduled: Duration,
        warmup: bool,
        permit: Option<OwnedSemaphorePermit>,
        tx: &mpsc::UnboundedSender<RequestRecord>,
    ) {
        let (backend, workload, tx, abort) =
            (self.backend.clone(), self.workload.clone(), tx.clone(), self.control.abort.clone());
        let origin = self.origin;
        if let Some(sessions) = &self.plan.sessions {
            let talk = Session {
                id: i,
                first: scheduled,
                warmup,
                sessions: sessions.clone(),
                seed: self.plan.seed,
                origin,
                end_of_sending: self.end_of_sending,
                stop: self.stop.clone(),
                abort,
                sent: self.control.sent.clone(),
                next_id: self.next_id.clone(),
                shard: self.plan.shard,
            };
            tokio::spawn(talk.hold(backend, workload, tx, permit));
            return;
        }
        let id = i;
        self.control.sent.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let item = workload.item(id);
            let mut rec = backend.execute(id, item, scheduled, origin, abort).await;
            rec.warmup = warmup;
            drop(permit);
            let _ = tx.send(rec);
        });
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
    end_of_sending: Option<Instant>,
    stop: CancellationToken,
    abort: CancellationToken,
    sent: Arc<AtomicU64>,
    next_id: Arc<AtomicU64>,
    /// A shard numbers its turns `k·count + index`, apart from the other shards'.
    shard: Option<Shard>,
}

impl Session {
    /// Asks the session's questions in turn, each with the history before it,
    /// each after the answer before it and a think time, holding the user
    /// slot (`permit`) throughout. A failed turn ends the session (its
    /// history would have a hole), and so does the end of sending.
    async fn hold<B: Backend>(
        self,
        backend: Arc<B>,
        workload: Arc<Workload>,
        tx: mpsc::UnboundedSender<RequestRecord>,
        permit: Option<OwnedSemaphorePermit>,
    ) {
        let Ok((turns, think)) = self.sessions.shape(self.seed, self.id, workload.conversation_turns(self.id)) else {
            return; // checked before the run (the same for every session)
        };
        let mut conversation = Conversation::default();
        let mut due = self.first;
        for turn in 0..turns {
            if turn > 0 {
                let at = self.origin + due;
                if self.end_of_sending.is_some_and(|end| at >= end) {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = self.stop.cancelled() => break,
                }
            }
            if self.stop.is_cancelled() {
                break;
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
            let _ = tx.send(rec);
            if !ok {
                break;
            }
            conversation.answered(reply.unwrap_or_default(), tokens);
            due = end + think.get(turn as usize).copied().unwrap_or_default();
        }
        drop(permit);
    }
}
