//! The virtual-time driver: runs the engine against a load (closed loop, open
//! loop, or both) on a simulated clock, and returns the same per-request
//! records a real run over HTTP would, plus the engine's own view.

use super::config::EngineConfig;
use super::error::Error;
use super::kv::Prompt;
use super::scheduler::{Engine, StepOutcome};
use crate::template::ChatTemplate;
use goodput_core::{Channel, ChunkTokenSource, CountSource, Outcome, OutputChunk, RequestRecord, SessionTurn};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

/// A prefix shared by every request that names the same `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedPrefix {
    pub id: u64,
    pub len: u32,
}

/// One request of a virtual load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualRequest {
    pub input_tokens: u32,
    pub output_tokens: u32,
    #[serde(default)]
    pub shared_prefix: Option<SharedPrefix>,
    /// A turn of a multi-turn session. A session's turns are consecutive
    /// requests. Its first turn is sent as a lone request would be; each
    /// later one `think` after the turn before it ends, in the same user
    /// slot, and its prompt (`input_tokens`: the whole conversation so far)
    /// begins with the prompt and output of the turn before it, so what the
    /// prefix cache holds of those serves it.
    #[serde(default)]
    pub turn: Option<VirtualTurn>,
    /// The client gives up this long after sending the request, unless it
    /// has finished by then: the engine aborts it, and its user is free.
    #[serde(default)]
    pub give_up_after: Option<Duration>,
}

/// Where a request sits in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualTurn {
    pub session: u64,
    /// 1 for the first of `turns`.
    pub turn: u32,
    pub turns: u32,
    /// After the previous turn's end; zero for the first turn.
    pub think: Duration,
}

impl VirtualRequest {
    pub fn new(input_tokens: u32, output_tokens: u32) -> VirtualRequest {
        VirtualRequest { input_tokens, output_tokens, shared_prefix: None, turn: None, give_up_after: None }
    }

    /// A session's later turn: it follows the request before it.
    fn follows(&self) -> bool {
        self.turn.is_some_and(|t| t.turn > 1)
    }
}

/// Requests and how they are sent. Requests go in order. With `arrivals`,
/// request i is sent at `arrivals[i]` (open loop); with `concurrency`, no
/// more than that many are in flight, a new one going when one finishes
/// (closed loop); with both, a request goes at its arrival time or when a
/// slot frees, whichever is later; with neither, all go at once (a burst).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VirtualLoad {
    pub requests: Vec<VirtualRequest>,
    /// Absolute send times from the run's start, non-decreasing.
    pub arrivals: Option<Vec<Duration>>,
    pub concurrency: Option<u32>,
    /// A closed loop's users join one by one over this long (user k of c at
    /// k/c of it); zero: all at once.
    pub ramp_up: Duration,
    /// Salt for the unique part of each prompt.
    pub seed: u64,
    /// No session's later turn is sent at or after this: the session is
    /// cut there, as a real run's end of sending cuts it.
    pub stop_sending: Option<Duration>,
    /// What the server adds to each prompt before it counts and prefills it.
    pub prompts: PromptKind,
}

/// How a virtual request's prompt reaches the engine: as given, or as a real
/// server builds it from a request to a raw or a chat route, with the
/// engine's chat template (see [`ChatTemplate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptKind {
    /// Exactly `input_tokens` long: the token prompts of published benchmarks.
    #[default]
    Exact,
    /// A raw prompt (`/v1/completions` and the like): the BOS before it.
    Raw,
    /// A chat: the template around the conversation's messages, turn k of a
    /// session holding k questions and k − 1 answers.
    Chat,
}

impl PromptKind {
    pub fn name(self) -> &'static str {
        match self {
            PromptKind::Exact => "exact",
            PromptKind::Raw => "raw",
            PromptKind::Chat => "chat",
        }
    }

    /// Tokens added to `request`'s prompt under `template`.
    pub fn extra(self, template: ChatTemplate, request: &VirtualRequest) -> u32 {
        match self {
            PromptKind::Exact => 0,
            PromptKind::Raw => template.bos(),
            PromptKind::Chat => {
                let turn = request.turn.map_or(1, |t| t.turn.max(1));
                template.overhead(turn, turn - 1)
            }
        }
    }

    /// The leading tokens every prompt shares under `template`.
    pub fn shared_start(self, template: ChatTemplate) -> u32 {
        match self {
            PromptKind::Exact => 0,
            PromptKind::Raw => template.bos(),
            PromptKind::Chat => template.shared_start(),
        }
    }
}

impl VirtualLoad {
    pub fn closed_loop(requests: Vec<VirtualRequest>, concurrency: u32) -> VirtualLoad {
        VirtualLoad { requests, concurrency: Some(concurrency), ..VirtualLoad::default() }
    }

    pub fn open_loop(requests: Vec<VirtualRequest>, arrivals: Vec<Duration>) -> VirtualLoad {
        VirtualLoad { requests, arrivals: Some(arrivals), ..VirtualLoad::default() }
    }

    /// Every request at time zero: the offline maximum-throughput case.
    pub fn burst(requests: Vec<VirtualRequest>) -> VirtualLoad {
        VirtualLoad { requests, ..VirtualLoad::default() }
    }

    fn check(&self) -> Result<(), Error> {
        if self.concurrency == Some(0) {
            return Err(Error::InvalidLoad("concurrency must be at least 1".into()));
        }
        for (i, r) in self.requests.iter().enumerate().filter(|(_, r)| r.follows()) {
            let t = r.turn.expect("a later turn is a turn");
            let before = i.checked_sub(1).and_then(|j| self.requests[j].turn);
            if !before.is_some_and(|b| b.session == t.session && b.turn + 1 == t.turn) {
                return Err(Error::InvalidLoad(format!(
                    "request {i} is turn {} of session {}, but the request before it is not turn {} of that session; \
                     give each session's turns one after another",
                    t.turn,
                    t.session,
                    t.turn - 1
                )));
            }
        }
        if let Some(a) = &self.arrivals {
            if a.len() != self.requests.len() {
                return Err(Error::InvalidLoad(format!(
                    "{} arrival times for {} requests; give one per request",
                    a.len(),
                    self.requests.len()
                )));
            }
            if let Some(i) = a.windows(2).position(|w| w[1] < w[0]) {
                return Err(Error::InvalidLoad(format!(
                    "arrival times must not decrease, but request {} arrives before request {i}",
                    i + 1
                )));
            }
        }
        Ok(())
    }
}

/// The engine's state at one instant of a virtual run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineSample {
    pub t: Duration,
    pub kv_usage: f64,
    pub running: u32,
    pub waiting: u32,
}

/// What the engine saw during a virtual run.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineView {
    pub steps: u64,
    /// Sequences (decodes and prefill chunks) per step, averaged over steps.
    pub mean_batch_seqs: f64,
    pub mean_batch_tokens: f64,
    pub max_batch_seqs: u32,
    pub preemptions: u64,
    pub prefix_cache_queries: u64,
    pub prefix_cache_hits: u64,
    pub prefix_cache_hit_rate: Option<f64>,
    pub kv_capacity_tokens: u64,
    pub max_num_seqs: u32,
    /// KV usage and queue depths over time, at most a few thousand points
    /// evenly spaced in virtual time.
    pub samples: Vec<EngineSample>,
    /// Time the engine spent in steps.
    pub busy: Duration,
    /// From the run's start to the last request's end.
    pub makespan: Duration,
}

/// The result of a virtual run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRun {
    /// In request order, stamped on the virtual clock.
    pub records: Vec<RequestRecord>,
    pub engine: EngineView,
}

const MAX_SAMPLES: usize = 2048;
const FIRST_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// Runs `load` against an engine built from `cfg`, in virtual time. A request
/// reaches the scheduler `frontend_overhead` after it is sent; its first
/// response byte is its first token (vLLM writes nothing earlier on a
/// stream); each token is one output chunk at the end of its step.
pub fn simulate(cfg: &EngineConfig, load: &VirtualLoad) -> Result<SimRun, Error> {
    load.check()?;
    let mut run = VirtualRun::new(cfg, load)?;
    loop {
        // The client leaves requests it gave up on by now: the engine drops
        // them, and their users are free (a session ends with its turn).
        run.give_up(true);
        // Send every request whose time has come: its arrival, or the moment
        // a slot freed, whichever is later. Later turns of sessions go on
        // their own, after the turn before them.
        run.send_due_turns();
        run.send_due_requests();
        run.admit_arrived()?;

        if run.engine.step_into(&mut run.out) {
            run.now += run.out.duration;
            // Requests given up on during the step: their tokens of this
            // step came after the client left.
            run.give_up(false);
            run.record_step();
            run.sample();
            continue;
        }

        // Idle: jump to the next request reaching the engine or being sent.
        match run.next_event() {
            Some(t) => run.now = run.now.max(t),
            None => break,
        }
    }
    Ok(run.into_result())
}

/// The state of one virtual run, between the steps of [`simulate`].
struct VirtualRun<'a> {
    cfg: &'a EngineConfig,
    load: &'a VirtualLoad,
    engine: Engine,
    n: usize,
    frontend: Duration,
    capped: bool,
    /// Slots free from the start, then the times later slots freed (finishes
    /// come in time order, so this queue is sorted).
    initial_slots: usize,
    /// When each first slot opens: all at once, or one by one over the ramp-up.
    first_slots: usize,
    users: usize,
    freed: VecDeque<Duration>,
    transit: VecDeque<(Duration, usize)>,
    /// Later turns of sessions, by the time they are due.
    follow: BinaryHeap<Reverse<(Duration, usize)>>,
    records: Vec<Option<RequestRecord>>,
    next: usize,
    now: Duration,
    out: StepOutcome,
    samples: Vec<EngineSample>,
    sample_interval: Duration,
    next_sample: Duration,
    /// When the client gives up on requests still going: (time, request).
    give_ups: BinaryHeap<Reverse<(Duration, usize)>>,
}

impl<'a> VirtualRun<'a> {
    fn new(cfg: &'a EngineConfig, load: &'a VirtualLoad) -> Result<VirtualRun<'a>, Error> {
        let engine = Engine::new(cfg.clone())?;
        let n = load.requests.len();
        let initial_slots = load.concurrency.map_or(n, |c| (c as usize).min(n));
        Ok(VirtualRun {
            cfg,
            load,
            engine,
            n,
            frontend: cfg.calibration.frontend_overhead(),
            capped: load.concurrency.is_some(),
            initial_slots,
            first_slots: initial_slots,
            users: load.concurrency.map_or(n, |c| c as usize).max(1),
            freed: VecDeque::new(),
            transit: VecDeque::new(),
            follow: BinaryHeap::new(),
            records: vec![None; n],
            next: 0,
            now: Duration::ZERO,
            out: StepOutcome::default(),
            samples: Vec::new(),
            sample_interval: FIRST_SAMPLE_INTERVAL,
            next_sample: Duration::ZERO,
            give_ups: BinaryHeap::new(),
        })
    }

    fn arrival(&self, i: usize) -> Duration {
        self.load.arrivals.as_ref().map_or(Duration::ZERO, |a| a[i])
    }

    /// When the first slot with `left` still closed opens.
    fn opens(&self, left: usize) -> Duration {
        self.load.ramp_up.mul_f64((self.first_slots - left) as f64 / self.users as f64)
    }

    fn send(&mut self, i: usize, scheduled: Duration, sent: Duration) {
        let mut record = RequestRecord::new(i as u64, scheduled, sent);
        record.chunks.reserve_exact(self.load.requests[i].output_tokens as usize);
        self.records[i] = Some(record);
        if let Some(after) = self.load.requests[i].give_up_after {
            self.give_ups.push(Reverse((sent + after, i)));
        }
    }

    /// Keeps `transit` in time order: a later turn may be sent between two
    /// requests already on their way.
    fn reach(&mut self, at: Duration, i: usize) {
        let pos = self.transit.partition_point(|&(t, _)| t <= at);
        self.transit.insert(pos, (at, i));
    }

    fn give_up(&mut self, inclusive: bool) {
        give_up(
            &mut self.give_ups,
            self.now,
            inclusive,
            &mut self.engine,
            &mut self.records,
            &mut self.transit,
            &mut self.freed,
            self.capped,
            self.load,
        );
    }

    /// Sends the later turns of sessions that are due.
    fn send_due_turns(&mut self) {
        while let Some(&Reverse((due, i))) = self.follow.peek() {
            if due > self.now {
                break;
            }
            self.follow.pop();
            self.send(i, due, due);
            self.reach(due + self.frontend, i);
        }
    }

    /// Passes over later turns: they are sent by [`Self::send_due_turns`].
    fn skip_later_turns(&mut self) {
        while self.next < self.n && self.load.requests[self.next].follows() {
            self.next += 1;
        }
    }

    /// Sends the requests (first turns) whose arrival and slot have come.
    fn send_due_requests(&mut self) {
        self.skip_later_turns();
        while self.next < self.n {
            let slot_time = if self.initial_slots > 0 {
                self.opens(self.initial_slots)
            } else if let Some(&t) = self.freed.front() {
                t
            } else {
                break;
            };
            let next = self.next;
            let sent = self.arrival(next).max(slot_time);
            if sent > self.now {
                break;
            }
            if self.initial_slots > 0 {
                self.initial_slots -= 1;
            } else {
                self.freed.pop_front();
            }
            let scheduled = if self.load.arrivals.is_some() { self.arrival(next) } else { sent };
            self.send(next, scheduled, sent);
            self.reach(sent + self.frontend, next);
            self.next += 1;
            self.skip_later_turns();
        }
    }

    /// Adds the requests that reached the engine by now.
    fn admit_arrived(&mut self) -> Result<(), Error> {
        let (cfg, load) = (self.cfg, self.load);
        while let Some(&(reach, i)) = self.transit.front() {
            if reach > self.now {
                break;
            }
            self.transit.pop_front();
            let r = &load.requests[i];
            // A session's turns share the unique part of their prompts: each
            // one's conversation continues the one before.
            let first = i - r.turn.map_or(0, |t| t.turn.saturating_sub(1) as usize);
            // The template's start, then the workload's prefix (none is a
            // segment of no tokens, which shares no block).
            let prefix = r.shared_prefix.map_or((0, 0), |p| (p.id, p.len));
            let shared = [(TEMPLATE_START, load.prompts.shared_start(cfg.chat_template)), prefix];
            let prompt = Prompt::synthetic(
                r.input_tokens.saturating_add(load.prompts.extra(cfg.chat_template, r)),
                &shared,
                load.seed ^ (first as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                cfg.block_size,
            );
            self.engine.add_request(i as u64, prompt, r.output_tokens)?;
        }
        Ok(())
    }

    /// Stamps the step's tokens on their records at its end, finishes the
    /// requests it completed, and queues their sessions' next turns.
    fn record_step(&mut self) {
        let (cfg, load, now) = (self.cfg, self.load, self.now);
        // Prompt tokens the prefix cache served, as usage reports them.
        for &(id, c) in &self.out.prefix_hits {
            if let Some(r) = self.records[id as usize].as_mut() {
                r.counts.usage_cached_prompt = Some(c as u64);
            }
        }
        for ev in &self.out.tokens {
            let i = ev.id as usize;
            let record = self.records[i].as_mut().expect("a request is recorded when it is sent");
            if record.abandoned {
                continue;
            }
            record.chunks.push(OutputChunk { t: now, tokens: 1, channel: Channel::Content });
            if ev.first {
                record.first_byte = Some(now);
            }
            if ev.finished {
                let request = &load.requests[i];
                finish(record, request, load.prompts.extra(cfg.chat_template, request), now);
                let then = load.requests.get(i + 1).filter(|r| r.follows()).and_then(|r| r.turn);
                match then.map(|t| now + t.think) {
                    Some(due) if load.stop_sending.is_none_or(|end| due < end) => {
                        self.follow.push(Reverse((due, i + 1)))
                    }
                    // The session's last turn, or one cut by the end of sending: its user is free.
                    _ => {
                        if self.capped {
                            self.freed.push_back(now);
                        }
                    }
                }
            }
        }
    }

    /// Samples the engine's state when the next sample is due.
    fn sample(&mut self) {
        if self.now < self.next_sample {
            return;
        }
        self.samples.push(EngineSample {
            t: self.now,
            kv_usage: self.engine.kv_usage(),
            running: self.engine.num_running() as u32,
            waiting: self.engine.num_waiting() as u32,
        });
        if self.samples.len() >= MAX_SAMPLES {
            // Halve the resolution so a long run stays a few
            // thousand points.
            let mut keep = false;
            self.samples.retain(|_| {
                keep = !keep;
                keep
            });
            self.sample_interval *= 2;
        }
        self.next_sample = self.now + self.sample_interval;
    }

    /// The next time something happens while the engine is idle: a request
    /// reaching it, being sent, a session's next turn, or a give-up.
    fn next_event(&self) -> Option<Duration> {
        let next_reach = self.transit.front().map(|&(t, _)| t);
        let next_send = (self.next < self.n)
            .then(|| {
                let slot = if self.initial_slots > 0 {
                    Some(self.opens(self.initial_slots))
                } else {
                    self.freed.front().copied()
                };
                slot.map(|s| self.arrival(self.next).max(s))
            })
            .flatten();
        let next_turn = self.follow.peek().map(|Reverse((t, _))| *t);
        let next_give_up = self.give_ups.peek().map(|Reverse((t, _))| *t);
        [next_reach, next_send, next_turn, next_give_up].into_iter().flatten().min()
    }

    fn into_result(self) -> SimRun {
        // Later turns never sent (their session was cut) leave no record.
        let records: Vec<RequestRecord> = self.records.into_iter().flatten().collect();
        let stats = self.engine.stats();
        let makespan = records.iter().map(|r| r.end).max().unwrap_or_default();
        SimRun {
            records,
            engine: EngineView {
                steps: stats.steps,
                mean_batch_seqs: stats.mean_batch_seqs().unwrap_or(0.0),
                mean_batch_tokens: stats.mean_batch_tokens().unwrap_or(0.0),
                max_batch_seqs: stats.max_batch_seqs,
                preemptions: stats.preemptions,
                prefix_cache_queries: stats.prefix_cache_queries,
                prefix_cache_hits: stats.prefix_cache_hits,
                prefix_cache_hit_rate: stats.prefix_cache_hit_rate(),
                kv_capacity_tokens: self.engine.capacity().tokens(),
                max_num_seqs: self.engine.max_num_seqs(),
                samples: self.samples,
                busy: stats.busy,
                makespan,
            },
        }
    }
}

/// The id of the template's shared start among a prompt's shared segments.
const TEMPLATE_START: u64 = 0x7e4d_1a7e_0000_0001;

/// Ends `request`'s record at `now`; its prompt reached the engine `extra`
/// tokens longer than the workload's (the template's, see [`PromptKind`]).
/// Gives up on the requests due by `now` (`inclusive`) or before it that
/// have not finished: the engine aborts each (or it never reaches the
/// engine), its record ends then, cancelled and abandoned, with what it had
/// received, and a capped load's user is free at that moment.
#[allow(clippy::too_many_arguments)]
fn give_up(
    due: &mut BinaryHeap<Reverse<(Duration, usize)>>,
    now: Duration,
    inclusive: bool,
    engine: &mut Engine,
    records: &mut [Option<RequestRecord>],
    transit: &mut VecDeque<(Duration, usize)>,
    freed: &mut VecDeque<Duration>,
    capped: bool,
    load: &VirtualLoad,
) {
    while let Some(&Reverse((at, i))) = due.peek() {
        if at > now || (at == now && !inclusive) {
            break;
        }
        due.pop();
        let Some(record) = records[i].as_mut() else { continue };
        if record.outcome.is_success() {
            continue;
        }
        engine.abort(i as u64);
        transit.retain(|&(_, j)| j != i);
        let request = &load.requests[i];
        record.abandoned = true;
        record.end = at;
        record.session = request.turn.map(|t| SessionTurn { id: t.session, turn: t.turn, turns: t.turns });
        record.counts.intended_prompt = Some(request.input_tokens as u64);
        record.counts.requested_completion = Some(request.output_tokens as u64);
        record.counts.chunks = record.chunks.len() as u64;
        record.output_tokens = record.chunks.len() as u64;
        record.output_tokens_source = CountSource::Chunks;
        record.input_tokens = request.input_tokens as u64;
        record.http_status = Some(200);
        if capped {
            // Slots free in time order; a give-up may come before a finish
            // already queued.
            let pos = freed.partition_point(|&t| t <= at);
            freed.insert(pos, at);
        }
    }
}

fn finish(record: &mut RequestRecord, request: &VirtualRequest, extra: u32, now: Duration) {
    let out = request.output_tokens as u64;
    record.session = request.turn.map(|t| SessionTurn { id: t.session, turn: t.turn, turns: t.turns });
    record.counts.usage_cached_prompt.get_or_insert(0);
    record.end = now;
    record.stream_end = Some(now);
    record.input_tokens = request.input_tokens as u64 + extra as u64;
    record.input_tokens_source = CountSource::Usage;
    record.output_tokens = out;
    record.output_tokens_source = CountSource::Usage;
    record.chunk_tokens_source = ChunkTokenSource::ContinuousUsage;
    record.counts.usage_prompt = Some(record.input_tokens);
    record.counts.usage_completion = Some(out);
    record.counts.intended_prompt = Some(request.input_tokens as u64);
    record.counts.requested_completion = Some(out);
    record.counts.chunks = record.chunks.len() as u64;
    record.http_status = Some(200);
    record.finish_reason = Some("length".to_string());
    record.outcome = Outcome::Success;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::Precision;
    use goodput_core::RequestMetrics;

    fn h100_8b() -> EngineConfig {
        EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap()
    }

    fn same(n: usize, input: u32, output: u32) -> Vec<VirtualRequest> {
        vec![VirtualRequest::new(input, output); n]
    }

    fn mean_ms(values: impl Iterator<Item = Duration>) -> f64 {
        let v: Vec<f64> = values.map(|d| d.as_secs_f64() * 1e3).collect();
        assert!(!v.is_empty());
        v.iter().sum::<f64>() / v.len() as f64
    }

    fn mean_tpot(run: &SimRun) -> f64 {
        mean_ms(run.records.iter().filter_map(|r| r.tpot()))
    }

    fn mean_ttft(run: &SimRun) -> f64 {
        mean_ms(run.records.iter().filter_map(|r| r.ttft()))
    }

    fn output_throughput(run: &SimRun) -> f64 {
        let tokens: u64 = run.records.iter().map(|r| r.output_tokens).sum();
        tokens as f64 / run.engine.makespan.as_secs_f64()
    }

    /// Arrivals evenly spaced at `rate` requests per second.
    fn constant_rate(n: usize, rate: f64) -> Vec<Duration> {
        (0..n).map(|i| Duration::from_secs_f64(i as f64 / rate)).collect()
    }

    #[test]
    fn records_are_complete_and_stamped_on_the_virtual_clock() {
        let cfg = h100_8b();
        let run = simulate(&cfg, &VirtualLoad::closed_loop(same(12, 300, 20), 4)).unwrap();
        assert_eq!(run.records.len(), 12);
        let frontend = cfg.calibration.frontend_overhead();
        for (i, r) in run.records.iter().enumerate() {
            assert_eq!(r.id, i as u64);
            assert!(r.outcome.is_success());
            assert_eq!((r.input_tokens, r.output_tokens), (300, 20));
            assert_eq!(r.output_tokens_source, CountSource::Usage);
            assert_eq!(r.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
            assert_eq!(r.chunks.len(), 20);
            assert!(r.chunks.iter().all(|c| c.tokens == 1));
            assert!(r.chunks.windows(2).all(|w| w[0].t < w[1].t));
            assert_eq!(r.first_byte, Some(r.chunks[0].t));
            assert_eq!((r.end, r.stream_end), (r.chunks[19].t, Some(r.chunks[19].t)));
            assert!(r.ttft().unwrap() > frontend);
            // Closed loop: sent when the slot freed, and that is the plan.
            assert_eq!(r.scheduled, r.sent);
        }
        // Never more than four in flight.
        for r in &run.records {
            let overlapping = run.records.iter().filter(|o| o.sent <= r.sent && o.end > r.sent).count();
            assert!(overlapping <= 4);
        }
        // The fifth request goes the moment the first one ends.
        let first_end = run.records[..4].iter().map(|r| r.end).min().unwrap();
        assert_eq!(run.records[4].sent, first_end);
        assert!(run.engine.steps > 0 && !run.engine.samples.is_empty());
        assert_eq!(simulate(&cfg, &VirtualLoad::closed_loop(same(12, 300, 20), 4)).unwrap(), run);
    }

    #[test]
    fn a_ramp_up_opens_the_users_one_by_one() {
        let cfg = h100_8b();
        let load =
            VirtualLoad { ramp_up: Duration::from_millis(400), ..VirtualLoad::closed_loop(same(8, 300, 200), 4) };
        let run = simulate(&cfg, &load).unwrap();
        let first: Vec<Duration> = run.records[..4].iter().map(|r| r.sent).collect();
        assert_eq!(first, [0, 100, 200, 300].map(Duration::from_millis));
        // Later requests still go the moment a slot frees.
        let first_end = run.records[..4].iter().map(|r| r.end).min().unwrap();
        assert_eq!(run.records[4].sent, first_end);
    }

    #[test]
    fn open_loop_sends_on_schedule_and_a_cap_delays_sends() {
        let cfg = h100_8b();
        let arrivals = constant_rate(20, 1000.0);
        let open = simulate(&cfg, &VirtualLoad::open_loop(same(20, 100, 50), arrivals.clone()));
        for (r, &a) in open.unwrap().records.iter().zip(&arrivals) {
            assert_eq!((r.scheduled, r.sent), (a, a));
        }
        let mut capped = VirtualLoad::open_loop(same(20, 100, 50), arrivals.clone());
        capped.concurrency = Some(2);
        let run = simulate(&cfg, &capped).unwrap();
        assert_eq!(run.records[0].sent, Duration::ZERO);
        assert_eq!(run.records[2].scheduled, arrivals[2]);
        assert!(run.records[2].sent >= run.records[0].end.min(run.records[1].end));
        assert!(run.records[2].sent > arrivals[2]);
    }

    #[test]
    fn bad_loads_are_errors() {
        let cfg = h100_8b();
        let mut load = VirtualLoad::open_loop(same(2, 10, 10), vec![Duration::ZERO]);
        assert!(simulate(&cfg, &load).unwrap_err().to_string().contains("one per request"));
        load.arrivals = Some(vec![Duration::from_secs(1), Duration::ZERO]);
        assert!(simulate(&cfg, &load).unwrap_err().to_string().contains("decrease"));
        let load = VirtualLoad::closed_loop(same(2, 10, 10), 0);
        assert!(simulate(&cfg, &load).is_err());
        let empty = simulate(&cfg, &VirtualLoad::burst(Vec::new())).unwrap();
        assert!(empty.records.is_empty());
        assert_eq!(empty.engine.makespan, Duration::ZERO);
    }

    #[test]
    fn tpot_grows_with_batch_size() {
        let cfg = h100_8b();
        let tpot: Vec<f64> = [1u32, 16, 128]
            .iter()
            .map(|&c| {
                let load = VirtualLoad::closed_loop(same(2 * c as usize, 512, 64), c);
                mean_tpot(&simulate(&cfg, &load).unwrap())
            })
            .collect();
        assert!(tpot[0] < tpot[1] && tpot[1] < tpot[2], "{tpot:?}");
        // A lone decode on an H100 is memory bound: a few milliseconds.
        assert!(tpot[0] > 4.0 && tpot[0] < 10.0, "{tpot:?}");
    }

    #[test]
    fn tpot_grows_with_context() {
        let cfg = h100_8b();
        let tpot = |input: u32| {
            let load = VirtualLoad::closed_loop(same(16, input, 32), 16);
            mean_tpot(&simulate(&cfg, &load).unwrap())
        };
        let (short, long) = (tpot(256), tpot(16_384));
        assert!(long > 1.5 * short, "short {short} long {long}");
    }

    #[test]
    fn throughput_rises_with_concurrency_then_plateaus() {
        let mut cfg = h100_8b();
        cfg.max_num_seqs = Some(256);
        let tput: Vec<f64> = [1u32, 8, 64, 256, 512, 1024]
            .iter()
            .map(|&c| {
                let load = VirtualLoad::closed_loop(same(2 * c as usize, 128, 64), c);
                output_throughput(&simulate(&cfg, &load).unwrap())
            })
            .collect();
        assert!(tput[1] > 4.0 * tput[0], "{tput:?}");
        assert!(tput[2] > 2.0 * tput[1], "{tput:?}");
        assert!(tput[3] > tput[2], "{tput:?}");
        // Past the sequence cap more users only queue.
        assert!((tput[5] / tput[4] - 1.0).abs() < 0.05, "{tput:?}");
        assert!((tput[4] / tput[3] - 1.0).abs() < 0.15, "{tput:?}");
    }

    #[test]
    fn ttft_explodes_past_saturation() {
        let cfg = h100_8b();
        let burst = simulate(&cfg, &VirtualLoad::burst(same(400, 1024, 128))).unwrap();
        let capacity = 400.0 / burst.engine.makespan.as_secs_f64();
        let at = |share: f64| {
            let load = VirtualLoad::open_loop(same(300, 1024, 128), constant_rate(300, capacity * share));
            simulate(&cfg, &load).unwrap()
        };
        let (calm, flooded) = (at(0.5), at(2.0));
        let (calm_ttft, flooded_ttft) = (mean_ttft(&calm), mean_ttft(&flooded));
        assert!(calm_ttft < 200.0, "{calm_ttft}");
        assert!(flooded_ttft > 10.0 * calm_ttft, "{calm_ttft} vs {flooded_ttft}");
        // And it keeps growing: the queue has no steady state.
        let ttft = |r: &RequestRecord| r.ttft().unwrap();
        let early = mean_ms(flooded.records[..30].iter().map(ttft));
        let late = mean_ms(flooded.records[270..].iter().map(ttft));
        assert!(late > 5.0 * early, "{early} vs {late}");
    }

    #[test]
    fn llama_70b_fp8_on_one_h100_fits_only_a_small_cache_and_preempts() {
        let mut cfg = EngineConfig::from_names("llama-3.1-70b", "h100", Precision::Fp8).unwrap();
        // 67.7 GiB of weights (16-bit embeddings and LM head) plus 5.65 GiB
        // reserved do not fit in 0.9 × 80 GiB.
        let err = Engine::new(cfg.clone()).err().unwrap().to_string();
        assert!(err.contains("--gpu-memory-utilization 0.95") && err.contains("--tp 2"), "{err}");
        cfg.gpu_memory_utilization = 0.95;
        let engine = Engine::new(cfg.clone()).unwrap();
        let tokens = engine.capacity().tokens();
        assert!(tokens > 4_000 && tokens < 16_000, "{tokens}");
        let load = VirtualLoad::closed_loop(same(6, 2048, 1024), 3);
        let run = simulate(&cfg, &load).unwrap();
        assert!(run.engine.preemptions > 0);
        assert!(run.records.iter().all(|r| r.outcome.is_success() && r.chunks.len() == 1024));
        // Short contexts fit side by side without preemption.
        let short = simulate(&cfg, &VirtualLoad::closed_loop(same(6, 256, 64), 3)).unwrap();
        assert_eq!(short.engine.preemptions, 0);
    }

    /// `sessions` sessions of `turns` turns: questions of 512 tokens, answers
    /// of 64, each turn's prompt the conversation so far, 1 s of thought.
    fn sessions(sessions: u64, turns: u32) -> Vec<VirtualRequest> {
        let mut out = Vec::new();
        for session in 0..sessions {
            for t in 1..=turns {
                let think = if t == 1 { Duration::ZERO } else { Duration::from_secs(1) };
                let mut r = VirtualRequest::new(512 * t + 64 * (t - 1), 64);
                r.turn = Some(VirtualTurn { session, turn: t, turns, think });
                out.push(r);
            }
        }
        out
    }

    #[test]
    fn a_session_s_turns_follow_each_other_and_the_cache_serves_the_history() {
        let cfg = h100_8b();
        let run = simulate(&cfg, &VirtualLoad::closed_loop(sessions(6, 3), 2)).unwrap();
        assert_eq!(run.records.len(), 18);
        let by = |s: u64, t: u32| {
            run.records.iter().find(|r| r.session == Some(SessionTurn { id: s, turn: t, turns: 3 })).unwrap()
        };
        for s in 0..6 {
            for t in 2..=3 {
                // Sent a second after the turn before it ended.
                assert_eq!(by(s, t).sent, by(s, t - 1).end + Duration::from_secs(1), "session {s} turn {t}");
            }
            // What the turn before left in the cache serves the next: the full
            // blocks of its prompt and of its answer, as vLLM V1 caches every
            // full block (but the answer's last token, whose KV is never computed).
            assert_eq!(by(s, 1).counts.usage_cached_prompt, Some(0));
            assert_eq!(by(s, 2).counts.usage_cached_prompt, Some((512 + 63) / 16 * 16));
            assert_eq!(by(s, 3).counts.usage_cached_prompt, Some((1088 + 63) / 16 * 16));
        }
        // A cached history prefills less than the whole conversation.
        let mut nocache = cfg.clone();
        nocache.enable_prefix_caching = false;
        let uncached = simulate(&nocache, &VirtualLoad::closed_loop(sessions(6, 3), 2)).unwrap();
        let third = |run: &SimRun| {
            let ttft = run.records.iter().filter(|r| r.session.unwrap().turn == 3).filter_map(|r| r.ttft());
            ttft.sum::<Duration>() / 6
        };
        assert!(third(&run) < third(&uncached).mul_f64(0.8), "{:?} {:?}", third(&run), third(&uncached));
        assert!(uncached.records.iter().all(|r| r.counts.usage_cached_prompt == Some(0)));
        // Two users: the third session starts when the first one's last turn ends.
        assert_eq!(by(2, 1).sent, by(0, 3).end.min(by(1, 3).end));
        // The end of sending cuts sessions whose next turn falls after it.
        let stop = by(0, 2).sent + Duration::from_millis(1);
        let load = VirtualLoad { stop_sending: Some(stop), ..VirtualLoad::closed_loop(sessions(2, 3), 2) };
        let cut = simulate(&cfg, &load).unwrap();
        let turns: Vec<u32> = cut.records.iter().map(|r| r.session.unwrap().turn).collect();
        assert_eq!(turns, [1, 2, 1, 2]);
        // Turns out of order are refused.
        let mut bad = sessions(1, 2);
        bad.swap(0, 1);
        let e = simulate(&cfg, &VirtualLoad::burst(bad)).unwrap_err().to_string();
        assert!(e.contains("one after another"), "{e}");
    }

    #[test]
    fn chat_prompts_carry_the_template_as_a_real_server_counts_it() {
        // Llama 3.1's template: 35 tokens around one question, 10 more per
        // earlier question and answer; its first 30 tokens open every chat.
        let cfg = h100_8b();
        assert_eq!(cfg.chat_template, ChatTemplate::Llama3);
        let load = VirtualLoad { prompts: PromptKind::Chat, ..VirtualLoad::closed_loop(sessions(4, 3), 2) };
        let run = simulate(&cfg, &load).unwrap();
        let by = |s: u64, t: u32| {
            run.records.iter().find(|r| r.session == Some(SessionTurn { id: s, turn: t, turns: 3 })).unwrap()
        };
        for s in 0..4 {
            let got: Vec<(u64, Option<u64>)> =
                (1..=3).map(|t| (by(s, t).input_tokens, by(s, t).counts.intended_prompt)).collect();
            assert_eq!(got, [(512 + 35, Some(512)), (1088 + 45, Some(1088)), (1664 + 55, Some(1664))], "session {s}");
            assert!((1..=3).all(|t| by(s, t).counts.usage_prompt == Some(by(s, t).input_tokens)));
            // Each turn finds the turn before it (its prompt and answer), as
            // without a template; a later session's first turn finds the
            // template's first block.
            assert_eq!(by(s, 2).counts.usage_cached_prompt, Some((547 + 63) / 16 * 16));
            assert_eq!(by(s, 3).counts.usage_cached_prompt, Some((1133 + 63) / 16 * 16));
        }
        assert_eq!(by(2, 1).counts.usage_cached_prompt, Some(16));
        assert_eq!(by(3, 1).counts.usage_cached_prompt, Some(16));
        // A raw prompt gets the BOS alone; the exact kind nothing.
        for (kind, extra) in [(PromptKind::Raw, 1), (PromptKind::Exact, 0)] {
            let load = VirtualLoad { prompts: kind, ..VirtualLoad::closed_loop(same(3, 300, 5), 1) };
            let run = simulate(&cfg, &load).unwrap();
            assert!(run.records.iter().all(|r| r.input_tokens == 300 + extra), "{kind:?}");
        }
    }

    #[test]
    fn a_request_given_up_on_ends_then_and_frees_its_user_and_its_blocks() {
        // One user, three requests of 500 tokens (about 4 s each); the client
        // gives up on the first 200 ms after sending it.
        let mut requests = same(3, 256, 500);
        requests[0].give_up_after = Some(Duration::from_millis(200));
        let run = simulate(&h100_8b(), &VirtualLoad::closed_loop(requests, 1)).unwrap();
        let (gone, next) = (&run.records[0], &run.records[1]);
        assert!(gone.abandoned && gone.outcome == Outcome::Cancelled);
        assert_eq!(gone.end, Duration::from_millis(200));
        assert!(!gone.chunks.is_empty() && gone.chunks.iter().all(|c| c.t < gone.end), "tokens before it left only");
        assert_eq!(gone.output_tokens, gone.chunks.len() as u64);
        // The user sends the next request the moment it gave up, and the
        // engine, with the first one dropped, serves it alone.
        assert_eq!(next.sent, gone.end);
        assert!(next.outcome.is_success() && !next.abandoned && next.output_tokens == 500);
        let alone = simulate(&h100_8b(), &VirtualLoad::closed_loop(same(1, 256, 500), 1)).unwrap();
        let e2e = |r: &RequestRecord| r.end - r.sent;
        assert!(e2e(next).abs_diff(e2e(&alone.records[0])) < Duration::from_millis(20), "{:?}", e2e(next));
        // A give-up after the response ended changes nothing.
        let mut late = same(2, 256, 16);
        late[0].give_up_after = Some(Duration::from_secs(60));
        let run = simulate(&h100_8b(), &VirtualLoad::closed_loop(late, 1)).unwrap();
        assert!(run.records.iter().all(|r| r.outcome.is_success() && !r.abandoned));
    }

    #[test]
    fn shared_prefixes_cut_ttft_only_with_prefix_caching() {
        let shared = |n: usize| {
            (0..n)
                .map(|_| VirtualRequest {
                    input_tokens: 2048 + 64,
                    output_tokens: 16,
                    shared_prefix: Some(SharedPrefix { id: 1, len: 2048 }),
                    turn: None,
                    give_up_after: None,
                })
                .collect::<Vec<_>>()
        };
        let run = |requests: Vec<VirtualRequest>, caching: bool| {
            let mut cfg = h100_8b();
            cfg.enable_prefix_caching = caching;
            let arrivals = constant_rate(requests.len(), 5.0);
            simulate(&cfg, &VirtualLoad::open_loop(requests, arrivals)).unwrap()
        };
        let on = run(shared(40), true);
        let off = run(shared(40), false);
        let unique = run(same(40, 2048 + 64, 16), true);
        assert!(mean_ttft(&on) < 0.6 * mean_ttft(&off), "{} vs {}", mean_ttft(&on), mean_ttft(&off));
        assert!((mean_ttft(&off) / mean_ttft(&unique) - 1.0).abs() < 0.05);
        assert!(on.engine.prefix_cache_hit_rate.unwrap() > 0.9);
        assert_eq!(off.engine.prefix_cache_hits, 0);
        assert_eq!(unique.engine.prefix_cache_hits, 0);
    }

    #[test]
    fn kv_samples_stay_bounded_and_ordered() {
        let mut cfg = h100_8b();
        cfg.calibration.frontend_overhead_ms = 0.0;
        let run = simulate(&cfg, &VirtualLoad::closed_loop(same(64, 64, 400), 64)).unwrap();
        let s = &run.engine.samples;
        assert!(s.len() > 10 && s.len() < MAX_SAMPLES);
        assert!(s.windows(2).all(|w| w[0].t < w[1].t));
        assert!(s.iter().all(|x| (0.0..=1.0).contains(&x.kv_usage)));
        assert!(s.iter().any(|x| x.running == 64));
        // With no front-end delay every step is full: 64 decodes.
        assert!(run.engine.mean_batch_seqs > 60.0);
    }
}
