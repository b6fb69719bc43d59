//! The runner turns a load plan into records: an arrival schedule (open loop)
//! composed with a concurrency cap (closed loop), bounded by a request count
//! and/or a duration. Records reach the sink as each request completes.

use crate::client::{Cancellation, Client};
use crate::error::{PlanError, RunError, ScheduleError, WorkloadError};
use crate::schedule::{Arrival, ArrivalSchedule};
use crate::workload::{Sessions, WorkItem, Workload};
use goodput_core::load::dispatch::{self, Dispatcher};
use goodput_core::RequestRecord;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod sender;
mod storm;
mod watchdog;
use sender::Sender;
pub use sender::{read_retry_after, refusal_retry_after, RetryAfter, MAX_RETRY_WAIT};
pub use storm::{
    FAILURES as STORM_FAILURES, FLOOD as STORM_FLOOD, FLOOD_QUIET as STORM_FLOOD_QUIET, QUIET as STORM_QUIET,
};
pub use watchdog::{THRESHOLD as STALL_THRESHOLD, TICK as STALL_TICK};

/// Send times from the run's start, in order (see [`LoadPlan::send_times`]).
pub type SendTimes = dispatch::Arrivals;

/// How much load, and for how long.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Measured requests to send (warm-up not included); with sessions,
    /// measured sessions to hold.
    pub requests: Option<u64>,
    /// Stop sending this long after the warm-up.
    pub duration: Option<Duration>,
    /// Requests sent first and excluded from the window.
    pub warmup: u64,
    /// Or a warm-up by time: requests due before it are excluded from the
    /// window, and the bounds count from its end. Zero: none.
    pub warmup_time: Duration,
    /// Most requests in flight at once.
    pub concurrency: Option<usize>,
    /// Open-loop rate (requests/s) and arrival process.
    pub rate: Option<(f64, Arrival)>,
    /// Or send times replayed from a trace (open loop on the trace's clock);
    /// the trace's end also ends the run.
    pub trace: Option<Arc<Vec<Duration>>>,
    /// The file `trace` was read from, and how much faster it is replayed:
    /// for the result's `config.load` alone.
    pub trace_source: Option<TraceSource>,
    /// The load climbs linearly to its target over this long: the rate (see
    /// [`crate::schedule::ramped`]), or else the users of a closed loop, who
    /// join one by one. Zero: all at once.
    pub ramp_up: Duration,
    /// Multi-turn sessions: the plan then schedules sessions, not requests.
    /// Their first turns go out as a lone request would (a user slot, or
    /// the rate's schedule: sessions per second); each later turn follows
    /// the answer before it after a think time, in the same user slot. The
    /// request and warm-up counts count sessions, and a session still
    /// talking when sending stops (end of `duration`, a stop) is cut there.
    pub sessions: Option<Sessions>,
    pub seed: u64,
    /// After a stop, or once `duration` has ended sending, how long
    /// in-flight requests may take before they are cancelled.
    pub grace: Duration,
    /// This process runs one shard of the plan (`--shard I/N`); `None`:
    /// all of it. See [`Shard`].
    pub shard: Option<Shard>,
    /// A closed loop whose users change over the run (`sweep --stages` by
    /// concurrency): from each `(at, users)` on, `at` from the start, the
    /// cap is `users`: new users join at once, and users leave as their
    /// requests end. In time order; empty: `concurrency` throughout.
    pub user_steps: Vec<(Duration, usize)>,
    /// The requests the load gives up on (`--cancel-rate`), which the
    /// client (or the simulated one) disconnects.
    pub cancel: Option<Cancellation>,
}

/// Where a replayed trace came from (`--trace FILE --trace-speed S`).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSource {
    pub file: String,
    pub speed: f64,
}

/// Shard `index` of `count` processes that run one plan together, each its
/// share of the one schedule, so that their records together are the run's
/// (merged by `goodput merge`). The plan's every other field is the whole
/// run's; the shard takes from it:
/// - an open loop (a rate, or a trace), the arrivals whose index ≡ `index`
///   (mod `count`), at the times the one schedule gives them;
/// - a closed loop, users `index`, `index + count`, …: slot `i` (a request,
///   or a session) is user `i mod c`'s, as if the users took turns;
/// - sessions whole, as slots; the warm-up the same way, slot by slot;
/// - a cap on requests in flight (`concurrency`), its users' share of it.
///
/// Slot numbers stay the run's, so records of the shards never share an
/// `id` (a session's turns, numbered as they are sent, are numbered
/// `k·count + index`).
pub use goodput_core::load::dispatch::Shard;

impl LoadPlan {
    /// The load as the diagnosis reads it: the cap, and what schedule (if
    /// any) set the sends.
    pub fn client_load(&self) -> goodput_core::prometheus::scrape::ClientLoad {
        let rate = self.rate.map(|(r, _)| r);
        goodput_core::prometheus::scrape::ClientLoad::new(self.concurrency, rate, self.trace.is_some())
    }

    /// The requests (or, with sessions, the sessions) counted, warm-up
    /// included, when a count bounds the run (a timed warm-up's size is not
    /// known ahead).
    pub fn counted(&self) -> Option<u64> {
        self.requests.filter(|_| self.warmup_time.is_zero()).map(|n| self.owned_below(n + self.warmup))
    }

    /// The users of a closed loop, by which its slots are shared between
    /// shards; `None` for an open loop (shared by arrival index).
    fn closed_users(&self) -> Option<u64> {
        match (self.rate, &self.trace, self.concurrency) {
            (None, None, Some(c)) => Some(c as u64),
            _ => None,
        }
    }

    /// How many of slots 0…n−1 this process sends: all of them, or its shard's.
    pub fn owned_below(&self, n: u64) -> u64 {
        self.shard.map_or(n, |s| s.owned_below(n, self.closed_users()))
    }

    /// The rules a [`Dispatcher`] applies to this plan's units (requests,
    /// or sessions).
    pub fn dispatch_plan(&self) -> dispatch::Plan {
        dispatch::Plan {
            requests: self.requests,
            duration: self.duration,
            warmup: self.warmup,
            warmup_time: self.warmup_time,
            users: self.concurrency,
            ramp_up: self.ramp_up,
            user_steps: self.user_steps.clone(),
            grace: Some(self.grace),
            shard: self.shard,
        }
    }

    /// Every request the run will send, warm-up included, when that is
    /// known ahead (a timed warm-up's size is not, a trace's length is).
    /// With sessions of N turns it counts N a session: an upper bound, as a
    /// failed turn ends its session and a dataset's conversation may be
    /// shorter (the live view lowers it as they come).
    pub fn total_requests(&self) -> Option<u64> {
        let counted = self.counted();
        if let Some(s) = &self.sessions {
            return s.turns.fixed().and_then(|k| counted.map(|n| n * u64::from(k)));
        }
        match &self.trace {
            Some(t) if self.requests.is_none() || counted.is_some() => {
                let whole = self.owned_below(t.len() as u64);
                Some(counted.map_or(whole, |n| n.min(whole)))
            }
            _ => counted,
        }
    }

    /// The open loop's send times from the run's start, in order: a trace's
    /// (which end), or the rate's schedule drawn from the seed and ramped up
    /// (which does not); `None` for a closed loop.
    pub fn send_times(&self) -> Result<Option<SendTimes>, ScheduleError> {
        Ok(match (&self.trace, self.rate) {
            (Some(t), _) => Some(Box::new(t.as_ref().clone().into_iter())),
            (None, Some((rate, arrival))) => {
                let ramp = self.ramp_up;
                let sched = ArrivalSchedule::new(rate, arrival, self.seed)?;
                Some(Box::new(sched.map(move |at| crate::schedule::ramped(at, ramp))))
            }
            (None, None) => None,
        })
    }

    /// How long the run sends, warm-up included, when a duration bounds it.
    pub fn sending_time(&self) -> Option<Duration> {
        self.duration.map(|d| self.warmup_time + d)
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        if self.requests.is_none() && self.duration.is_none() && self.trace.is_none() {
            return Err(PlanError::NoEnd);
        }
        if self.trace.is_some() && self.rate.is_some() {
            return Err(PlanError::TraceAndRate);
        }
        if self.trace.is_some() && self.sessions.is_some() {
            return Err(PlanError::TraceAndTurns);
        }
        if self.trace.is_some() && !self.ramp_up.is_zero() {
            return Err(PlanError::TraceAndRampUp);
        }
        if self.rate.is_some_and(|(r, _)| r.is_infinite()) && !self.warmup_time.is_zero() {
            return Err(PlanError::InstantWarmupTime);
        }
        if self.requests == Some(0) {
            return Err(PlanError::NoRequests);
        }
        if self.concurrency == Some(0) {
            return Err(PlanError::NoConcurrency);
        }
        if self.concurrency.is_none() && self.rate.is_none() && self.trace.is_none() {
            return Err(PlanError::NoLoop);
        }
        if !self.user_steps.is_empty()
            && (self.concurrency.is_none() || self.shard.is_some() || !self.ramp_up.is_zero())
        {
            return Err(PlanError::UserSteps);
        }
        if let Some(s) = self.shard {
            if s.count == 0 || s.index >= s.count {
                return Err(PlanError::ShardIndex { index: s.index, count: s.count });
            }
            if let Some(c) = self.concurrency.filter(|c| (*c as u64) < u64::from(s.count)) {
                return Err(PlanError::ShardWithoutUser { concurrency: c, shards: s.count });
            }
        }
        Ok(())
    }
}

/// Whatever executes one request and records it: the HTTP client, or an
/// in-process stand-in in tests.
pub trait Backend: Send + Sync + 'static {
    fn execute(
        &self,
        id: u64,
        item: WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: CancellationToken,
    ) -> impl Future<Output = RequestRecord> + Send;

    /// [`Backend::execute`], also giving the answer's visible content, which
    /// a session carries into its next turn (none by default).
    fn execute_keeping(
        &self,
        id: u64,
        item: WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: CancellationToken,
    ) -> impl Future<Output = (RequestRecord, Option<String>)> + Send {
        async move { (self.execute(id, item, scheduled, origin, abort).await, None) }
    }
}

impl Backend for Client {
    async fn execute(
        &self,
        id: u64,
        item: WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: CancellationToken,
    ) -> RequestRecord {
        Client::execute(self, id, &item, scheduled, origin, &abort).await
    }

    async fn execute_keeping(
        &self,
        id: u64,
        item: WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: CancellationToken,
    ) -> (RequestRecord, Option<String>) {
        Client::execute_keeping(self, id, &item, scheduled, origin, &abort, true).await
    }
}

/// Receives each record the moment its request completes.
pub trait RecordSink: Send {
    fn record(&mut self, r: &RequestRecord);
}

impl<F: FnMut(&RequestRecord) + Send> RecordSink for F {
    fn record(&mut self, r: &RequestRecord) {
        self(r)
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// In completion order.
    pub records: Vec<RequestRecord>,
    /// Stopped early by the `stop` token.
    pub interrupted: bool,
    /// The run's clock origin.
    pub origin: Instant,
    /// The client's own stalls over the run, in order (see
    /// [`STALL_THRESHOLD`]); records in flight over one are flagged
    /// `client_stalled`.
    pub stalls: Vec<goodput_core::ClientStall>,
    /// Why the run stopped sending early on its own, when a failure storm
    /// stopped its closed loop (see [`STORM_FAILURES`], [`STORM_QUIET`],
    /// [`STORM_FLOOD`]);
    /// its records until then are kept.
    pub storm: Option<String>,
    /// Requests of a closed loop refused with a `Retry-After` (429, 503, in
    /// seconds), after which their user waited that long, or until the end
    /// of sending, before its next send.
    pub retry_waits: u64,
}

/// Stop signals for a run: `stop` ends sending and lets in-flight requests
/// finish within the plan's grace; `abort` cancels them at once.
#[derive(Debug, Clone, Default)]
pub struct Control {
    pub stop: CancellationToken,
    pub abort: CancellationToken,
    /// Requests sent so far, for live views (in flight = sent − completed).
    pub sent: Arc<std::sync::atomic::AtomicU64>,
}

/// Runs `plan`, sending each record to `sink` as it completes.
pub async fn run<B: Backend>(
    plan: &LoadPlan,
    backend: Arc<B>,
    workload: Arc<Workload>,
    control: Control,
    sink: impl RecordSink,
) -> Result<RunOutput, RunError> {
    run_at(plan, backend, workload, control, sink, Instant::now()).await
}

/// [`run`] on a clock whose origin the caller chose, so that what else it
/// stamps (server scrapes) shares the run's clock.
pub async fn run_at<B: Backend>(
    plan: &LoadPlan,
    backend: Arc<B>,
    workload: Arc<Workload>,
    control: Control,
    mut sink: impl RecordSink,
    origin: Instant,
) -> Result<RunOutput, RunError> {
    plan.validate()?;
    // The run cancels its own requests after a grace (a child token: the
    // caller's abort still cancels them, and the run's stays the run's).
    // So does a failure storm stop it, which is no interruption.
    let interrupt = control.stop.clone();
    let control = Control { abort: control.abort.child_token(), stop: control.stop.child_token(), ..control };
    let dispatcher = Dispatcher::new(plan.dispatch_plan(), plan.send_times()?);
    if plan.sessions.is_some() {
        check_sessions(plan, &workload)?;
    }
    let sender = Sender {
        plan,
        backend,
        workload,
        control: &control,
        origin,
        // Requests of sessions are numbered as they are sent.
        next_id: Arc::new(AtomicU64::new(0)),
        retry_waits: Arc::new(AtomicU64::new(0)),
        sent_all: CancellationToken::new(),
    };
    let mut records = Vec::new();
    // Only a closed loop resends as fast as its requests fail; an open
    // loop's schedule bounds its failures as it does its successes (and a
    // monitor's probes go on through an outage).
    let closed = plan.rate.is_none() && plan.trace.is_none();
    let mut storm = (storm::Storm::default(), None);
    let watchdog = watchdog::Watchdog::start(origin);
    sender
        .drive(dispatcher, |mut r| {
            watchdog.flag(&mut r);
            sink.record(&r);
            if let Some(why) = storm.0.observe(&r).filter(|_| closed) {
                storm.1.get_or_insert(why);
                control.stop.cancel();
            }
            records.push(r);
        })
        .await;
    let stalls = watchdog.finish();
    records.sort_by_key(|r| r.end);
    let retry_waits = sender.retry_waits.load(std::sync::atomic::Ordering::Relaxed);
    Ok(RunOutput { records, interrupted: interrupt.is_cancelled(), origin, stalls, storm: storm.1, retry_waits })
}

/// Fails before the run rather than in every session: the workload cannot
/// ask questions, or cannot say how many.
pub fn check_sessions(plan: &LoadPlan, workload: &Workload) -> Result<(), WorkloadError> {
    if let Some(s) = &plan.sessions {
        workload.check_sessions()?;
        workload.question(0, 0)?;
        s.shape(plan.seed, 0, workload.conversation_turns(0))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{LengthDist, Turns};
    use goodput_core::{Channel, Outcome, OutputChunk};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers every request after `ttft`, then `n` one-token chunks `gap` apart.
    struct Fake {
        ttft: Duration,
        gap: Duration,
        n: u64,
        in_flight: AtomicUsize,
        peak: AtomicUsize,
        /// Every item asked, by request id.
        seen: std::sync::Mutex<Vec<(u64, WorkItem)>>,
        /// Fail requests whose prompt holds this many turns.
        fail_at_turns: Option<usize>,
        /// Refuses request `id` with this status and `Retry-After`, when it gives one.
        refuse: Option<Refusal>,
    }

    /// Request `id`'s refusal, if it is refused: its status and `Retry-After`.
    type Refusal = fn(u64) -> Option<(u16, Option<&'static str>)>;

    impl Fake {
        fn new(ttft_ms: u64, gap_ms: u64, n: u64) -> Arc<Self> {
            Arc::new(Fake {
                ttft: Duration::from_millis(ttft_ms),
                gap: Duration::from_millis(gap_ms),
                n,
                in_flight: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                seen: Default::default(),
                fail_at_turns: None,
                refuse: None,
            })
        }
    }

    impl Backend for Fake {
        async fn execute(
            &self,
            id: u64,
            item: WorkItem,
            scheduled: Duration,
            origin: Instant,
            abort: CancellationToken,
        ) -> RequestRecord {
            let turns = match &item.prompt {
                crate::protocol::PromptBody::Turns(t) => t.len(),
                _ => 1,
            };
            self.seen.lock().unwrap().push((id, item));
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            let mut rec = RequestRecord::new(id, scheduled, origin.elapsed());
            let body = async {
                tokio::time::sleep(self.ttft).await;
                for i in 0..self.n {
                    if i > 0 {
                        tokio::time::sleep(self.gap).await;
                    }
                    rec.chunks.push(OutputChunk { t: origin.elapsed(), tokens: 1, channel: Channel::Content });
                }
            };
            let done = tokio::select! {
                _ = body => true,
                _ = abort.cancelled() => false,
            };
            rec.end = origin.elapsed();
            rec.output_tokens = rec.chunks.len() as u64;
            rec.outcome = if done { Outcome::Success } else { Outcome::Cancelled };
            if self.fail_at_turns == Some(turns) {
                rec.outcome = Outcome::Failed { kind: goodput_core::FailureKind::HttpStatus, message: "500".into() };
            }
            if let Some((status, retry_after)) = self.refuse.and_then(|f| f(id)) {
                rec.outcome =
                    Outcome::Failed { kind: goodput_core::FailureKind::HttpStatus, message: status.to_string() };
                rec.http_status = Some(status);
                rec.retry_after = retry_after.map(str::to_owned);
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            rec
        }
    }

    fn workload() -> Arc<Workload> {
        Arc::new(Workload::Synthetic {
            input: LengthDist::Fixed(4),
            output: LengthDist::Fixed(4),
            seed: 0,
            tokenizer: None,
            shared_prefix: None,
        })
    }

    /// A control whose stop (a first Ctrl-C) comes after `d`.
    fn stopped_after(d: Duration) -> Control {
        let control = Control::default();
        let stopper = control.stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            stopper.cancel();
        });
        control
    }

    fn plan() -> LoadPlan {
        LoadPlan {
            requests: Some(10),
            duration: None,
            warmup: 0,
            warmup_time: Duration::ZERO,
            concurrency: None,
            rate: None,
            trace: None,
            trace_source: None,
            ramp_up: Duration::ZERO,
            sessions: None,
            seed: 1,
            grace: Duration::from_secs(2),
            shard: None,
            user_steps: Vec::new(),
            cancel: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_sends_on_the_absolute_schedule() {
        let p = LoadPlan { requests: Some(20), rate: Some((10.0, Arrival::Constant)), ..plan() };
        let out = run(&p, Fake::new(500, 10, 4), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut recs = out.records;
        recs.sort_by_key(|r| r.id);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.scheduled, Duration::from_millis(100 * i as u64));
            assert_eq!(r.sent, r.scheduled, "request {i} left late");
        }
        // Poisson: sent on its (irregular) schedule; tokio's timer wheel ticks in
        // whole milliseconds, so a send may trail its schedule by under 1 ms,
        // and that lateness is reported as client queue, never hidden.
        let p = LoadPlan { requests: Some(50), rate: Some((20.0, Arrival::Poisson)), ..plan() };
        let out = run(&p, Fake::new(500, 10, 4), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let want: Vec<Duration> = ArrivalSchedule::new(20.0, Arrival::Poisson, 1).unwrap().take(50).collect();
        let mut got: Vec<Duration> = out.records.iter().map(|r| r.scheduled).collect();
        got.sort();
        assert_eq!(got, want);
        assert!(out.records.iter().all(|r| r.sent >= r.scheduled && r.sent - r.scheduled < Duration::from_millis(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_dispatcher_runs_on_tokio_s_paused_clock() {
        // The dispatcher alone, on tokio's timers with time paused (from the
        // runtime's start, so that the timer wheel's milliseconds are the
        // clock's): two users, five 100 ms requests, 150 ms of sending and
        // 30 ms of grace.
        let origin = Instant::now();
        let plan = dispatch::Plan {
            requests: Some(5),
            duration: Some(Duration::from_millis(150)),
            users: Some(2),
            grace: Some(Duration::from_millis(30)),
            ..dispatch::Plan::default()
        };
        let mut d = Dispatcher::new(plan, None);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let (mut going, mut sent, mut cancelled) = (0, Vec::new(), None);
        loop {
            while let Some(a) = d.next_action(origin.elapsed()) {
                match a {
                    dispatch::Action::Send { unit, sent: at, .. } => {
                        sent.push((unit, at, origin.elapsed()));
                        going += 1;
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            let _ = tx.send(());
                        });
                    }
                    dispatch::Action::CancelAll { at } => cancelled = Some(at),
                    dispatch::Action::Turn { .. } => unreachable!("no sessions"),
                }
            }
            if d.finished() && going == 0 && cancelled.is_some() {
                break;
            }
            let wake = d.next_wake().map(|t| origin + t);
            tokio::select! {
                _ = rx.recv() => {
                    going -= 1;
                    d.done(origin.elapsed());
                }
                _ = async { tokio::time::sleep_until(wake.unwrap()).await }, if wake.is_some() => {}
            }
        }
        let ms = Duration::from_millis;
        assert_eq!(sent, [(0, ms(0), ms(0)), (1, ms(0), ms(0)), (2, ms(100), ms(100)), (3, ms(100), ms(100))]);
        assert_eq!((cancelled, origin.elapsed()), (Some(ms(180)), ms(200)), "cancelled at 150 + 30 ms");
    }

    #[tokio::test(start_paused = true)]
    async fn users_join_and_leave_at_their_steps() {
        // One-second requests; 2 users, 4 from 2 s, 1 from 4 s, for 6 s.
        let steps = vec![(Duration::from_secs(2), 4), (Duration::from_millis(4500), 1)];
        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_secs(6)),
            concurrency: Some(2),
            user_steps: steps,
            ..plan()
        };
        let out = run(&p, Fake::new(1000, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let sent_in = |from: u64, to: u64| {
            let (from, to) = (Duration::from_millis(from), Duration::from_millis(to));
            out.records.iter().filter(|r| r.sent >= from && r.sent < to).count()
        };
        // Waves at 0 and 1 s of two, at 2 and 3 and 4 s of four (the users
        // leave as the wave sent at 4 s ends), then one at 5 s.
        assert_eq!([sent_in(0, 2000), sent_in(2000, 5000), sent_in(5000, 6000)], [4, 12, 1]);
        assert!(out.records.iter().all(|r| r.outcome == Outcome::Success));
        // Users that change need one process's closed loop.
        let open = LoadPlan { rate: Some((1.0, Arrival::Constant)), concurrency: None, ..p.clone() };
        assert!(matches!(open.validate(), Err(PlanError::UserSteps)));
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_caps_in_flight_and_closed_loop_refills() {
        let fake = Fake::new(1000, 0, 1);
        let p = LoadPlan { requests: Some(12), concurrency: Some(3), ..plan() };
        let out = run(&p, fake.clone(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(fake.peak.load(Ordering::SeqCst), 3);
        assert_eq!(out.records.len(), 12);
        // Four waves of three one-second requests.
        assert_eq!(out.records.iter().map(|r| r.end).max().unwrap(), Duration::from_secs(4));
        assert!(out.records.iter().all(|r| r.client_queue_is_zero()));
    }

    #[tokio::test(start_paused = true)]
    async fn rate_and_concurrency_cap_each_other() {
        // 10 requests/s offered, but only one at a time and each takes 1 s: the
        // backlog shows as client queue delay, never hidden in latency.
        let fake = Fake::new(1000, 0, 1);
        let p = LoadPlan { requests: Some(5), concurrency: Some(1), rate: Some((10.0, Arrival::Constant)), ..plan() };
        let out = run(&p, fake.clone(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(fake.peak.load(Ordering::SeqCst), 1);
        let mut recs = out.records;
        recs.sort_by_key(|r| r.id);
        assert_eq!(recs[4].scheduled, Duration::from_millis(400));
        assert_eq!(recs[4].sent, Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trace_is_replayed_on_its_clock_and_its_end_ends_the_run() {
        let times: Vec<Duration> = [0, 50, 50, 400].into_iter().map(Duration::from_millis).collect();
        let p = LoadPlan { requests: None, trace: Some(Arc::new(times.clone())), ..plan() };
        let out = run(&p, Fake::new(10, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut recs = out.records;
        recs.sort_by_key(|r| r.id);
        assert_eq!(recs.iter().map(|r| r.scheduled).collect::<Vec<_>>(), times);
        assert!(recs.iter().all(|r| r.sent == r.scheduled), "sent on time");
        // -n cuts it short; a rate beside it is refused.
        let p = LoadPlan { requests: Some(2), trace: Some(Arc::new(times.clone())), ..plan() };
        let out = run(&p, Fake::new(10, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 2);
        let p = LoadPlan { trace: Some(Arc::new(times.clone())), rate: Some((1.0, Arrival::Poisson)), ..plan() };
        assert!(p.validate().unwrap_err().to_string().contains("drop --rate"));
        // What a live view expects: the whole trace, or the -n that cuts it.
        let p = LoadPlan { requests: None, trace: Some(Arc::new(times.clone())), ..plan() };
        assert_eq!(p.total_requests(), Some(4));
        let p = LoadPlan { requests: Some(2), warmup: 1, trace: Some(Arc::new(times)), ..plan() };
        assert_eq!(p.total_requests(), Some(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_ramp_up_brings_users_in_one_by_one_and_warps_a_rate() {
        // Four users over 400 ms, each request 1 s long.
        let p = LoadPlan { requests: Some(4), concurrency: Some(4), ramp_up: Duration::from_millis(400), ..plan() };
        let out = run(&p, Fake::new(1000, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut sent: Vec<Duration> = out.records.iter().map(|r| r.sent).collect();
        sent.sort();
        assert_eq!(sent, [0, 100, 200, 300].map(Duration::from_millis));
        // Two users over 1 s, each request 100 ms: the first goes again as
        // each of its requests ends, not when the second joins (it once
        // waited for each join, so users sent together there).
        let p = LoadPlan { requests: Some(8), concurrency: Some(2), ramp_up: Duration::from_secs(1), ..plan() };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut sent: Vec<Duration> = out.records.iter().map(|r| r.sent).collect();
        sent.sort();
        assert_eq!(sent, [0, 100, 200, 300, 400, 500, 500, 600].map(Duration::from_millis));
        assert!(out.records.iter().all(|r| r.client_queue_is_zero()), "no send waited for a join");
        // 10/s over a 1 s ramp: the rate's schedule, warped.
        let p = LoadPlan {
            requests: Some(8),
            rate: Some((10.0, Arrival::Constant)),
            ramp_up: Duration::from_secs(1),
            ..plan()
        };
        let out = run(&p, Fake::new(10, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut recs = out.records;
        recs.sort_by_key(|r| r.id);
        for r in &recs {
            let base = Duration::from_millis(100 * r.id);
            assert_eq!(r.scheduled, crate::schedule::ramped(base, Duration::from_secs(1)));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_warmup_comes_first_and_the_bounds_count_after_it() {
        // Closed loop, 100 ms requests: those sent at 0, 0.1 and 0.2 s are warm-up.
        let p = LoadPlan { requests: Some(3), warmup_time: Duration::from_millis(250), concurrency: Some(1), ..plan() };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let warm: Vec<u64> = out.records.iter().filter(|r| r.warmup).map(|r| r.id).collect();
        assert_eq!((out.records.len(), warm), (6, vec![0, 1, 2]));
        // Open loop, 10/s: due at 0 … 0.3 s is warm-up; then 0.5 s of measured sending.
        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_millis(500)),
            warmup_time: Duration::from_millis(350),
            rate: Some((10.0, Arrival::Constant)),
            ..plan()
        };
        let out = run(&p, Fake::new(10, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let mut recs = out.records;
        recs.sort_by_key(|r| r.id);
        let warm: Vec<bool> = recs.iter().map(|r| r.warmup).collect();
        assert_eq!(warm, [true, true, true, true, false, false, false, false, false]);
        assert_eq!(recs.last().unwrap().scheduled, Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn warmup_and_duration_bounds() {
        let p = LoadPlan { requests: Some(5), warmup: 2, concurrency: Some(1), ..plan() };
        let out = run(&p, Fake::new(10, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 7);
        assert_eq!(out.records.iter().filter(|r| r.warmup).map(|r| r.id).collect::<Vec<_>>(), vec![0, 1]);

        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_secs(1)),
            rate: Some((10.0, Arrival::Constant)),
            ..plan()
        };
        let out = run(&p, Fake::new(300, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 10, "sends at 0.0 … 0.9 s");
        assert!(!out.interrupted);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_waits_for_grace_then_cancels_and_keeps_records() {
        let control = stopped_after(Duration::from_secs(1));
        // Requests of 10 s: still running when the 2 s grace ends.
        let p = LoadPlan { requests: Some(100), concurrency: Some(2), ..plan() };
        let mut seen = 0;
        let out = run(&p, Fake::new(10_000, 0, 1), workload(), control, |_: &RequestRecord| seen += 1).await.unwrap();
        assert!(out.interrupted);
        assert_eq!(out.records.len(), 2);
        assert_eq!(seen, 2, "the sink saw every record");
        for r in &out.records {
            assert_eq!(r.outcome, Outcome::Cancelled);
            assert_eq!(r.end, Duration::from_secs(3));
        }

        // Requests of 1.5 s finish inside the grace and count as successes.
        let control = stopped_after(Duration::from_secs(1));
        let p = LoadPlan { requests: Some(100), concurrency: Some(2), ..plan() };
        let out = run(&p, Fake::new(1500, 0, 1), workload(), control, |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 2);
        assert!(out.records.iter().all(|r| r.outcome == Outcome::Success));
    }

    #[tokio::test(start_paused = true)]
    async fn the_end_of_a_duration_gives_in_flight_requests_the_grace_then_cancels_them() {
        // Requests of 10 s in a 3 s run with a 2 s grace: sending stops at
        // 3 s, and the two in flight are cancelled at 5 s, not waited for
        // until 10 s. The run was not interrupted: its duration ended it.
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(3)), concurrency: Some(2), ..plan() };
        let mut seen = 0;
        let out = run(&p, Fake::new(10_000, 0, 1), workload(), Control::default(), |_: &RequestRecord| seen += 1)
            .await
            .unwrap();
        assert!(!out.interrupted);
        assert_eq!((out.records.len(), seen), (2, 2));
        for r in &out.records {
            assert_eq!(r.outcome, Outcome::Cancelled);
            assert_eq!(r.end, Duration::from_secs(5), "3 s of duration and 2 s of grace");
        }

        // Requests of 1.2 s: those sent before 3 s that end within the grace
        // count as successes; sending stopped at 3 s.
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(3)), concurrency: Some(2), ..plan() };
        let out = run(&p, Fake::new(1200, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 6, "three rounds of two, sent at 0, 1.2 and 2.4 s");
        assert!(out.records.iter().all(|r| r.outcome == Outcome::Success && r.sent < Duration::from_secs(3)));
        assert_eq!(out.records.iter().map(|r| r.end).max(), Some(Duration::from_millis(3600)));

        // A timed warm-up comes before the duration, and so before the grace.
        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_secs(3)),
            warmup_time: Duration::from_secs(1),
            concurrency: Some(2),
            ..plan()
        };
        let out =
            run(&p, Fake::new(10_000, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(out.records.iter().all(|r| r.outcome == Outcome::Cancelled && r.end == Duration::from_secs(6)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_during_the_grace_after_the_duration_does_not_lengthen_it() {
        // The duration ends at 3 s and its grace at 5 s; a Ctrl-C at 4 s
        // stops nothing more and cancels no later.
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(3)), concurrency: Some(2), ..plan() };
        let control = stopped_after(Duration::from_secs(4));
        let out = run(&p, Fake::new(10_000, 0, 1), workload(), control, |_: &RequestRecord| {}).await.unwrap();
        assert!(out.records.iter().all(|r| r.outcome == Outcome::Cancelled && r.end == Duration::from_secs(5)));
    }

    /// Each user's send times, in order (a closed loop's user `i` sends
    /// slots `i`, `i + c`, … only while every request takes the same time).
    fn sends(records: &[RequestRecord]) -> Vec<Duration> {
        let mut v: Vec<Duration> = records.iter().map(|r| r.sent).collect();
        v.sort();
        v
    }

    /// `Retry-After` in seconds, past any clock, as an HTTP date (ahead,
    /// past, an hour off), and what is neither. A number past `u64` and a
    /// date had not been waited at all.
    #[test]
    fn a_retry_after_reads_as_seconds_or_a_date_and_is_cut_to_a_minute() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_764_592_722); // Mon, 01 Dec 2025 12:38:42 GMT
        let read = |v: &str| read_retry_after(v, now);
        assert_eq!(read("7"), RetryAfter::Wait(Duration::from_secs(7)));
        assert_eq!(read(" 0 "), RetryAfter::Wait(Duration::ZERO));
        assert_eq!(read("3600"), RetryAfter::Wait(MAX_RETRY_WAIT));
        assert_eq!(read("99999999999999999999"), RetryAfter::Wait(MAX_RETRY_WAIT));
        assert_eq!(read("Mon, 01 Dec 2025 12:39:02 GMT"), RetryAfter::Wait(Duration::from_secs(20)));
        assert_eq!(read("Mon, 01 Dec 2025 12:38:02 GMT"), RetryAfter::Wait(Duration::ZERO));
        assert_eq!(read("Mon, 01 Dec 2025 13:38:42 GMT"), RetryAfter::Wait(MAX_RETRY_WAIT));
        for v in ["-5", "1e308", "NaN", "2.5", "", "Wed", "+3"] {
            assert_eq!(read(v), RetryAfter::Unreadable, "{v:?}");
        }
    }

    /// A refusal's `Retry-After` date is read against its response's
    /// `Date` where it came with one (the server's clock, an hour behind
    /// here), and against this machine's clock where it did not.
    #[test]
    fn a_refusal_s_retry_after_date_is_read_against_its_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_764_592_722); // Mon, 01 Dec 2025 12:38:42 GMT
        let mut rec = RequestRecord::new(1, Duration::ZERO, Duration::ZERO);
        rec.outcome =
            goodput_core::Outcome::Failed { kind: goodput_core::FailureKind::HttpStatus, message: "429".into() };
        rec.http_status = Some(429);
        rec.retry_after = Some("Mon, 01 Dec 2025 11:38:52 GMT".into());
        assert_eq!(refusal_retry_after(&rec, now), Some(RetryAfter::Wait(Duration::ZERO)), "an hour past by ours");
        rec.retry_after_date = Some("Mon, 01 Dec 2025 11:38:42 GMT".into());
        assert_eq!(refusal_retry_after(&rec, now), Some(RetryAfter::Wait(Duration::from_secs(10))));
        // A Date that cannot be read leaves this machine's clock.
        rec.retry_after_date = Some("yesterday".into());
        assert_eq!(refusal_retry_after(&rec, now), Some(RetryAfter::Wait(Duration::ZERO)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_loop_user_waits_as_a_refusal_s_retry_after_asks() {
        // Every request refused after 10 ms with `Retry-After: 1`: one user
        // sends once a second and some, not a hundred times.
        let refuse: Refusal = |_| Some((429, Some("1")));
        let fake = || Arc::new(Fake { refuse: Some(refuse), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let p =
            LoadPlan { requests: None, duration: Some(Duration::from_millis(3500)), concurrency: Some(1), ..plan() };
        let out = run(&p, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let sent = sends(&out.records);
        assert_eq!(sent.len(), 4, "{sent:?}");
        assert!(sent.windows(2).all(|w| w[1] - w[0] >= Duration::from_secs(1)), "{sent:?}");
        assert_eq!(out.retry_waits, 4);
        // The last wait ended with sending, not a second later.
        assert!(out.records.iter().all(|r| r.end < Duration::from_millis(3500)));

        // A count bounds the run: the waits still come between the sends,
        // and the last send's refusal holds no one (nothing is left to
        // send): the run ends with it, not a second later.
        let p = LoadPlan { requests: Some(3), concurrency: Some(1), ..plan() };
        let t = tokio::time::Instant::now();
        let out = run(&p, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(sends(&out.records).windows(2).all(|w| w[1] - w[0] >= Duration::from_secs(1)));
        let last = out.records.iter().map(|r| r.end).max().unwrap();
        assert!(t.elapsed() < last + Duration::from_millis(500), "{:?} after a last end at {last:?}", t.elapsed());

        // A Retry-After past any clock (10^19 s) waits at most a minute: it
        // had overflowed the clock and panicked the task, and the run had
        // waited for it for ever.
        let huge: Refusal = |_| Some((429, Some("10000000000000000000")));
        let fake_huge = Arc::new(Fake { refuse: Some(huge), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(150)), concurrency: Some(1), ..plan() };
        let out = run(&p, fake_huge, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let sent = sends(&out.records);
        assert!(sent.len() == 3 && sent[1] - sent[0] >= Duration::from_secs(60), "{sent:?}");

        // A quota's refusals, each waited out, are no storm however long
        // they last: a hundred users refused with `Retry-After: 1` for 30 s
        // (3,000 refusals, none succeeding) had been stopped as one.
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(30)), concurrency: Some(100), ..plan() };
        let out = run(&p, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(out.storm.is_none() && out.records.len() > 2000, "{:?} {}", out.storm, out.records.len());

        // Without a Retry-After (or in seconds), or from an open loop, no wait.
        let no_wait: Refusal = |id| Some((429, (id % 2 == 0).then_some("Wed")));
        let plain = Arc::new(Fake { refuse: Some(no_wait), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let p = LoadPlan { requests: Some(5), concurrency: Some(1), ..plan() };
        let out = run(&p, plain, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.last().unwrap().end, Duration::from_millis(50));
        assert_eq!(out.retry_waits, 0);
        let p = LoadPlan { requests: Some(5), rate: Some((10.0, Arrival::Constant)), ..plan() };
        let out = run(&p, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(sends(&out.records), [0, 100, 200, 300, 400].map(Duration::from_millis));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_storm_stops_the_run_early_and_sporadic_failures_do_not() {
        // Everything fails in 10 ms: three users would send 18,000 requests in 60 s.
        let all: Refusal = |_| Some((502, None));
        let fake = Arc::new(Fake { refuse: Some(all), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(60)), concurrency: Some(3), ..plan() };
        let out = run(&p, fake, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let why = out.storm.expect("a storm stops the run");
        assert!(why.contains("failure storm") && why.contains("first failure: http_status: 502"), "{why}");
        assert!(!out.interrupted, "a storm is not a Ctrl-C");
        let last = out.records.iter().map(|r| r.sent).max().unwrap();
        assert!(last >= STORM_QUIET && last < STORM_QUIET + Duration::from_secs(1), "stopped at {last:?}");
        assert!(out.records.len() as u64 >= STORM_FAILURES, "its records are kept");

        // One request in ten fails: the run goes its length.
        let some: Refusal = |id| (id % 10 == 0).then_some((502, None));
        let fake = Arc::new(Fake { refuse: Some(some), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let out = run(&p, fake, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(out.storm.is_none());
        assert!(out.records.iter().any(|r| r.sent >= Duration::from_secs(59)));

        // A hundred users failing in 1 ms each: the flood stops them once
        // no request has succeeded for its shorter quiet stretch, well
        // before the longer one has passed (a restart's second or two of
        // instant failures is no storm).
        let fake = Arc::new(Fake { refuse: Some(all), ..Arc::into_inner(Fake::new(1, 0, 1)).unwrap() });
        let flood = LoadPlan { concurrency: Some(100), ..p.clone() };
        let out = run(&flood, fake, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(out.storm.is_some_and(|w| w.contains("failure storm")));
        let last = out.records.iter().map(|r| r.sent).max().unwrap();
        assert!(last >= STORM_FLOOD_QUIET && last < STORM_QUIET, "stopped at {last:?}");
        assert!(out.records.len() as u64 > STORM_FLOOD);

        // An open loop keeps to its schedule, failures and all.
        let fake = Arc::new(Fake { refuse: Some(all), ..Arc::into_inner(Fake::new(10, 0, 1)).unwrap() });
        let p = LoadPlan { requests: None, duration: Some(Duration::from_secs(20)), ..plan() };
        let p = LoadPlan { rate: Some((200.0, Arrival::Constant)), ..p };
        let out = run(&p, fake, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert!(out.storm.is_none() && out.records.len() == 4000, "{}", out.records.len());
    }

    fn talks(turns: u32, think_ms: u64) -> Option<Sessions> {
        Some(Sessions {
            turns: Turns::Drawn(LengthDist::Fixed(turns)),
            think: crate::workload::ThinkTime::Fixed(Duration::from_millis(think_ms)),
        })
    }

    /// The records of each session, in turn order.
    fn by_session(records: &[RequestRecord]) -> std::collections::BTreeMap<u64, Vec<&RequestRecord>> {
        let mut m = std::collections::BTreeMap::<u64, Vec<&RequestRecord>>::new();
        for r in records {
            m.entry(r.session.unwrap().id).or_default().push(r);
        }
        m.values_mut().for_each(|v| v.sort_by_key(|r| r.session.unwrap().turn));
        m
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_ask_in_turn_after_think_time_carrying_the_history() {
        // Two users, three sessions of three 100 ms turns with 1 s of thought between.
        let fake = Fake::new(100, 0, 1);
        let p = LoadPlan { requests: Some(3), concurrency: Some(2), sessions: talks(3, 1000), ..plan() };
        let out = run(&p, fake.clone(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        assert_eq!(out.records.len(), 9);
        assert_eq!(fake.peak.load(Ordering::SeqCst), 2);
        let sessions = by_session(&out.records);
        let ms = Duration::from_millis;
        for (s, first) in [(0, 0), (1, 0), (2, 2300)] {
            let recs = &sessions[&s];
            let sent: Vec<Duration> = recs.iter().map(|r| r.sent).collect();
            // The third session takes the slot the first one left at 2.3 s.
            assert_eq!(sent, [ms(first), ms(first + 1100), ms(first + 2200)], "session {s}");
            assert!(recs.iter().all(|r| r.sent == r.scheduled), "no turn waited on the client");
            assert!(recs.iter().all(|r| r.session.unwrap().turns == 3));
        }
        // Each turn carries the history: 1, 3, then 5 parts; the question
        // tokens meant (4 each) plus the answers' (1 each).
        let seen = fake.seen.lock().unwrap();
        for r in &sessions[&2] {
            let (_, item) = seen.iter().find(|(id, _)| *id == r.id).unwrap();
            let crate::protocol::PromptBody::Turns(parts) = &item.prompt else { panic!("not a conversation") };
            let k = r.session.unwrap().turn as usize;
            assert_eq!(parts.len(), 2 * k - 1);
            assert_eq!(
                item.session.map(|s| (s.id, s.turn)),
                Some((2, k as u32)),
                "the item names its session and turn"
            );
            assert_eq!(item.intended_input_tokens, Some(4 * k as u64 + (k as u64 - 1)));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_loop_starts_sessions_on_its_schedule() {
        let p =
            LoadPlan { requests: Some(3), rate: Some((10.0, Arrival::Constant)), sessions: talks(2, 500), ..plan() };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let sessions = by_session(&out.records);
        let ms = Duration::from_millis;
        for s in 0..3u64 {
            let sent: Vec<Duration> = sessions[&s].iter().map(|r| r.sent).collect();
            assert_eq!(sent, [ms(100 * s), ms(100 * s + 600)]);
        }
        assert_eq!(p.total_requests(), Some(6));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_turn_ends_its_session_and_the_end_of_sending_cuts_one() {
        let fake = Arc::new(Fake { fail_at_turns: Some(3), ..Arc::into_inner(Fake::new(100, 0, 1)).unwrap() });
        let p = LoadPlan { requests: Some(1), concurrency: Some(1), sessions: talks(4, 100), ..plan() };
        let out = run(&p, fake, workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let turns: Vec<(u32, bool)> =
            out.records.iter().map(|r| (r.session.unwrap().turn, r.outcome.is_success())).collect();
        assert_eq!(turns, [(1, true), (2, false)], "the second turn failed: no third");

        // One user, 1.5 s of sending, turns 1 s apart: the first session's
        // third turn would be due at 2.2 s, so it is cut after two.
        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_millis(1500)),
            concurrency: Some(1),
            sessions: talks(3, 1000),
            ..plan()
        };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let sessions = by_session(&out.records);
        assert_eq!(sessions[&0].len(), 2);
        assert!(out.records.iter().all(|r| r.sent < Duration::from_millis(1500)));
        assert!(sessions.len() > 1, "the slot went on to new sessions");
    }

    #[tokio::test(start_paused = true)]
    async fn a_warm_up_takes_whole_sessions() {
        // One user, two warm-up sessions then two measured, by count.
        let p = LoadPlan { requests: Some(2), warmup: 2, concurrency: Some(1), sessions: talks(2, 100), ..plan() };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let warm: Vec<(u64, u32, bool)> = {
            let mut v: Vec<_> =
                out.records.iter().map(|r| (r.session.unwrap().id, r.session.unwrap().turn, r.warmup)).collect();
            v.sort();
            v
        };
        assert_eq!(
            warm,
            [
                (0, 1, true),
                (0, 2, true),
                (1, 1, true),
                (1, 2, true),
                (2, 1, false),
                (2, 2, false),
                (3, 1, false),
                (3, 2, false)
            ]
        );
        // By time: a session that opened in the warm-up is warm-up to its last
        // turn, however late that comes.
        let p = LoadPlan {
            requests: Some(1),
            warmup_time: Duration::from_millis(50),
            concurrency: Some(1),
            sessions: talks(3, 100),
            ..plan()
        };
        let out = run(&p, Fake::new(100, 0, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        let first: Vec<bool> = out.records.iter().filter(|r| r.session.unwrap().id == 0).map(|r| r.warmup).collect();
        assert_eq!(first, [true, true, true]);
        assert!(out.records.iter().filter(|r| r.session.unwrap().id == 1).all(|r| !r.warmup));
        assert_eq!(out.records.len(), 6);
    }

    /// Each shard of `p` run on its own (a fresh backend each), and the whole plan.
    async fn shards_and_whole(p: &LoadPlan, n: u32, fake: impl Fn() -> Arc<Fake>) -> (Vec<RunOutput>, RunOutput) {
        let mut shards = Vec::new();
        for index in 0..n {
            let sp = LoadPlan { shard: Some(Shard { index, count: n }), ..p.clone() };
            shards.push(run(&sp, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap());
        }
        let whole = run(p, fake(), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap();
        (shards, whole)
    }

    /// (id, scheduled, warm-up) of every record, by id.
    fn slots<'a>(recs: impl IntoIterator<Item = &'a RequestRecord>) -> Vec<(u64, Duration, bool)> {
        let mut v: Vec<_> = recs.into_iter().map(|r| (r.id, r.scheduled, r.warmup)).collect();
        v.sort();
        v
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_shards_send_the_one_schedule_between_them() {
        // Poisson at 20/s, two warm-up requests then 25 measured, in 3 shards.
        let p = LoadPlan { requests: Some(25), warmup: 2, rate: Some((20.0, Arrival::Poisson)), seed: 9, ..plan() };
        let (shards, whole) = shards_and_whole(&p, 3, || Fake::new(30, 0, 1)).await;
        for (k, s) in shards.iter().enumerate() {
            assert!(s.records.iter().all(|r| r.id % 3 == k as u64), "shard {k} sends arrivals ≡ {k} (mod 3)");
        }
        assert_eq!([9, 9, 9], [0, 1, 2].map(|k| shards[k].records.len()));
        // Together: the same arrivals at the same times, the same warm-up.
        assert_eq!(slots(shards.iter().flat_map(|s| &s.records)), slots(&whole.records));
        let late = |r: &RequestRecord| r.sent.saturating_sub(r.scheduled);
        assert!(shards.iter().flat_map(|s| &s.records).all(|r| late(r) < Duration::from_millis(1)), "each on time");
        // What a shard's live view expects: its own share.
        let s1 = LoadPlan { shard: Some(Shard { index: 1, count: 3 }), ..p.clone() };
        assert_eq!(s1.total_requests(), Some(9));

        // By time: a timed warm-up and a duration bound split the same way.
        let p = LoadPlan {
            requests: None,
            duration: Some(Duration::from_secs(2)),
            warmup_time: Duration::from_millis(500),
            rate: Some((10.0, Arrival::Gamma { burstiness: 0.5 })),
            ..plan()
        };
        let (shards, whole) = shards_and_whole(&p, 2, || Fake::new(30, 0, 1)).await;
        assert!(whole.records.iter().any(|r| r.warmup) && whole.records.iter().any(|r| !r.warmup));
        assert_eq!(slots(shards.iter().flat_map(|s| &s.records)), slots(&whole.records));

        // A trace too, and an -n that cuts it.
        let times: Vec<Duration> = (0..7).map(|i| Duration::from_millis(40 * i)).collect();
        let p = LoadPlan { requests: Some(5), trace: Some(Arc::new(times)), ..plan() };
        let (shards, whole) = shards_and_whole(&p, 2, || Fake::new(10, 0, 1)).await;
        assert_eq!(whole.records.len(), 5);
        assert_eq!(slots(shards.iter().flat_map(|s| &s.records)), slots(&whole.records));
    }

    #[tokio::test(start_paused = true)]
    async fn closed_loop_shards_hold_their_users_and_share_the_requests() {
        // Four users, 24 requests and 4 warm-up, in 3 shards: users 0 and 3,
        // 1, and 2; each shard's requests are its users' turns.
        let p = LoadPlan { requests: Some(24), warmup: 4, concurrency: Some(4), ..plan() };
        let fakes: Vec<Arc<Fake>> = (0..4).map(|_| Fake::new(100, 0, 1)).collect();
        let k = std::sync::atomic::AtomicUsize::new(0);
        let (shards, whole) = shards_and_whole(&p, 3, || fakes[k.fetch_add(1, Ordering::SeqCst)].clone()).await;
        let peaks: Vec<usize> = fakes.iter().map(|f| f.peak.load(Ordering::SeqCst)).collect();
        assert_eq!(peaks, [2, 1, 1, 4], "each shard holds its users");
        assert_eq!(shards.iter().map(|s| s.records.len()).collect::<Vec<_>>(), [14, 7, 7]);
        for (k, s) in shards.iter().enumerate() {
            assert!(s.records.iter().all(|r| (r.id % 4) % 3 == k as u64), "shard {k}: its users' slots");
        }
        // The same slots and warm-up; the closed loop's times are its own.
        let ids = |recs: Vec<(u64, Duration, bool)>| recs.into_iter().map(|(i, _, w)| (i, w)).collect::<Vec<_>>();
        assert_eq!(ids(slots(shards.iter().flat_map(|s| &s.records))), ids(slots(&whole.records)));

        // A ramp-up (a timed warm-up) with a count: each shard sends its
        // users' share of the measured requests, 24 in all.
        let p = LoadPlan {
            requests: Some(24),
            concurrency: Some(4),
            ramp_up: Duration::from_millis(400),
            warmup_time: Duration::from_millis(400),
            ..plan()
        };
        let (shards, _) = shards_and_whole(&p, 3, || Fake::new(1000, 0, 1)).await;
        let measured: Vec<usize> = shards.iter().map(|s| s.records.iter().filter(|r| !r.warmup).count()).collect();
        assert_eq!(measured, [12, 6, 6]);
        let mut first: Vec<Duration> = shards.iter().flat_map(|s| &s.records).map(|r| r.sent).collect();
        first.sort();
        assert_eq!(first[..4], [0, 100, 200, 300].map(Duration::from_millis), "users join as in the whole run");
    }

    #[tokio::test(start_paused = true)]
    async fn shards_keep_sessions_whole_and_number_their_turns_apart() {
        let p = LoadPlan { requests: Some(6), concurrency: Some(2), sessions: talks(3, 100), ..plan() };
        let (shards, whole) = shards_and_whole(&p, 2, || Fake::new(50, 0, 1)).await;
        assert_eq!(whole.records.len(), 18);
        let mut ids = std::collections::BTreeSet::new();
        for (k, s) in shards.iter().enumerate() {
            let sessions = by_session(&s.records);
            assert_eq!(sessions.keys().copied().collect::<Vec<_>>(), [k as u64, k as u64 + 2, k as u64 + 4]);
            assert!(sessions.values().all(|t| t.len() == 3), "every session whole in its shard");
            assert!(s.records.iter().all(|r| r.id % 2 == k as u64 && ids.insert(r.id)), "turn ids apart");
        }
        assert_eq!(ids.len(), 18);
    }

    #[test]
    fn a_shard_must_be_one_of_its_count_and_have_a_user() {
        let shard = |index, count| Some(Shard { index, count });
        let p = LoadPlan { concurrency: Some(4), shard: shard(3, 3), ..plan() };
        assert_eq!(p.validate(), Err(PlanError::ShardIndex { index: 3, count: 3 }));
        assert!(p.validate().unwrap_err().to_string().contains("0/3 … 2/3"), "{}", p.validate().unwrap_err());
        let p = LoadPlan { concurrency: Some(2), shard: shard(0, 3), ..plan() };
        assert!(p.validate().unwrap_err().to_string().contains("-c 3 or more"));
        assert!(LoadPlan { concurrency: Some(3), shard: shard(2, 3), ..plan() }.validate().is_ok());
        let s = Shard { index: 1, count: 3 };
        assert_eq!((s.share(7), s.share(1), s.owned_below(10, Some(4)), s.owned_below(10, None)), (2, 0, 3, 3));
    }

    #[tokio::test]
    async fn a_plan_without_an_end_is_refused() {
        let p = LoadPlan { requests: None, ..plan() };
        let e = run(&p, Fake::new(1, 1, 1), workload(), Control::default(), |_: &RequestRecord| {})
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("--requests"), "{e}");
        let p = LoadPlan { concurrency: None, rate: None, ..plan() };
        assert!(p.validate().unwrap_err().to_string().contains("--concurrency"));
    }

    trait QueueCheck {
        fn client_queue_is_zero(&self) -> bool;
    }
    impl QueueCheck for RequestRecord {
        fn client_queue_is_zero(&self) -> bool {
            self.sent == self.scheduled
        }
    }
}
