//! The runner turns a load plan into records: an arrival schedule (open loop)
//! composed with a concurrency cap (closed loop), bounded by a request count
//! and/or a duration. Records reach the sink as each request completes.

use crate::client::Client;
use crate::schedule::{Arrival, ArrivalSchedule};
use crate::workload::{WorkItem, Workload};
use goodput_core::RequestRecord;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Send times from the run's start, in order (see [`LoadPlan::send_times`]).
pub type SendTimes = Box<dyn Iterator<Item = Duration> + Send>;

/// How much load, and for how long.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Measured requests to send (warm-up not included).
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
    /// The load climbs linearly to its target over this long: the rate (see
    /// [`crate::schedule::ramped`]), or else the users of a closed loop, who
    /// join one by one. Zero: all at once.
    pub ramp_up: Duration,
    pub seed: u64,
    /// After a stop, how long in-flight requests may take before they are cancelled.
    pub grace: Duration,
}

impl LoadPlan {
    /// Every request the run will send, warm-up included, when that is
    /// known ahead (a timed warm-up's size is not, a trace's length is).
    pub fn total_requests(&self) -> Option<u64> {
        let counted = self.requests.filter(|_| self.warmup_time.is_zero()).map(|n| n + self.warmup);
        match &self.trace {
            Some(t) if self.requests.is_none() || counted.is_some() => {
                Some(counted.map_or(t.len() as u64, |n| n.min(t.len() as u64)))
            }
            _ => counted,
        }
    }

    /// The open loop's send times from the run's start, in order: a trace's
    /// (which end), or the rate's schedule drawn from the seed and ramped up
    /// (which does not); `None` for a closed loop.
    pub fn send_times(&self) -> Result<Option<SendTimes>, String> {
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

    pub fn validate(&self) -> Result<(), String> {
        if self.requests.is_none() && self.duration.is_none() && self.trace.is_none() {
            return Err("the run has no end: give --requests N and/or --duration D".into());
        }
        if self.trace.is_some() && self.rate.is_some() {
            return Err("--trace brings its own send times: drop --rate".into());
        }
        if self.trace.is_some() && !self.ramp_up.is_zero() {
            return Err("--trace brings its own send times: drop --ramp-up".into());
        }
        if self.requests == Some(0) {
            return Err("--requests must be at least 1".into());
        }
        if self.concurrency == Some(0) {
            return Err("--concurrency must be at least 1".into());
        }
        if self.concurrency.is_none() && self.rate.is_none() && self.trace.is_none() {
            return Err("give --concurrency N (closed loop) and/or --rate R (open loop)".into());
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
) -> Result<RunOutput, String> {
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
) -> Result<RunOutput, String> {
    plan.validate()?;
    let mut schedule = plan.send_times()?;
    // A closed loop's users join one by one over the ramp-up; with a rate the
    // rate ramps and the cap stands from the start.
    let ramp_users = plan.rate.is_none() && plan.trace.is_none() && !plan.ramp_up.is_zero();
    let cap = plan.concurrency.map(|c| Arc::new(Semaphore::new(if ramp_users { 0 } else { c })));
    let ramp = match (&cap, plan.concurrency, ramp_users) {
        (Some(sem), Some(c), true) => {
            let (sem, ramp) = (sem.clone(), plan.ramp_up);
            Some(tokio::spawn(async move {
                for k in 0..c {
                    tokio::time::sleep_until(origin + ramp.mul_f64(k as f64 / c as f64)).await;
                    sem.add_permits(1);
                }
            }))
        }
        _ => None,
    };
    // The bounds count from the end of a timed warm-up.
    let end_of_sending = plan.duration.map(|d| origin + plan.warmup_time + d);
    let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
    let stop = control.stop.clone();

    let sender = async {
        let mut i: u64 = 0;
        // Warm-up requests sent so far: the measured ones are the rest. A
        // request due after the timed warm-up is measured, and so is every
        // later one (due times only grow), so the count is final once one is.
        let mut warm: u64 = 0;
        let sleep_until_end = || async {
            match end_of_sending {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        loop {
            if plan.requests.is_some_and(|n| i - warm >= n) {
                break;
            }
            let mut scheduled = None;
            if let Some(s) = schedule.as_mut() {
                // A trace ends; a rate's schedule does not.
                let Some(at) = s.next() else { break };
                if plan.duration.is_some_and(|d| at >= plan.warmup_time + d) {
                    break;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(origin + at) => {}
                    _ = stop.cancelled() => break,
                }
                scheduled = Some(at);
            }
            let permit = match &cap {
                Some(sem) => tokio::select! {
                    p = sem.clone().acquire_owned() => Some(p.expect("the semaphore is never closed")),
                    _ = stop.cancelled() => break,
                    _ = sleep_until_end() => break,
                },
                None => None,
            };
            if stop.is_cancelled() || end_of_sending.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            // Closed loop: the request was due the moment a user slot freed.
            let scheduled = scheduled.unwrap_or_else(|| origin.elapsed());
            let (backend, workload, tx, abort) = (backend.clone(), workload.clone(), tx.clone(), control.abort.clone());
            let warmup = i < plan.warmup || scheduled < plan.warmup_time;
            warm += u64::from(warmup);
            let id = i;
            control.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tokio::spawn(async move {
                let item = workload.item(id);
                let mut rec = backend.execute(id, item, scheduled, origin, abort).await;
                rec.warmup = warmup;
                drop(permit);
                let _ = tx.send(rec);
            });
            i += 1;
        }
        drop(tx);
    };

    let mut records = Vec::new();
    let collector = async {
        while let Some(r) = rx.recv().await {
            sink.record(&r);
            records.push(r);
        }
    };
    let grace = plan.grace;
    let abort = control.abort.clone();
    let stop2 = control.stop.clone();
    // After a stop, in-flight requests get `grace` before they are cancelled.
    let watchdog = async {
        stop2.cancelled().await;
        tokio::time::sleep(grace).await;
        abort.cancel();
        std::future::pending::<()>().await
    };
    tokio::select! {
        _ = async { tokio::join!(sender, collector) } => {}
        _ = watchdog => unreachable!("the watchdog never completes"),
    }
    // A run that ended within its ramp-up leaves no users still to join.
    if let Some(r) = ramp {
        r.abort();
    }
    records.sort_by_key(|r| r.end);
    Ok(RunOutput { records, interrupted: control.stop.is_cancelled(), origin })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::LengthDist;
    use goodput_core::{Channel, Outcome, OutputChunk};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers every request after `ttft`, then `n` one-token chunks `gap` apart.
    struct Fake {
        ttft: Duration,
        gap: Duration,
        n: u64,
        in_flight: AtomicUsize,
        peak: AtomicUsize,
    }

    impl Fake {
        fn new(ttft_ms: u64, gap_ms: u64, n: u64) -> Arc<Self> {
            Arc::new(Fake {
                ttft: Duration::from_millis(ttft_ms),
                gap: Duration::from_millis(gap_ms),
                n,
                in_flight: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            })
        }
    }

    impl Backend for Fake {
        async fn execute(
            &self,
            id: u64,
            _item: WorkItem,
            scheduled: Duration,
            origin: Instant,
            abort: CancellationToken,
        ) -> RequestRecord {
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
            ramp_up: Duration::ZERO,
            seed: 1,
            grace: Duration::from_secs(2),
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
        assert!(p.validate().unwrap_err().contains("drop --rate"));
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

    #[tokio::test]
    async fn a_plan_without_an_end_is_refused() {
        let p = LoadPlan { requests: None, ..plan() };
        let e = run(&p, Fake::new(1, 1, 1), workload(), Control::default(), |_: &RequestRecord| {}).await.unwrap_err();
        assert!(e.contains("--requests"), "{e}");
        let p = LoadPlan { concurrency: None, rate: None, ..plan() };
        assert!(p.validate().unwrap_err().contains("--concurrency"));
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
