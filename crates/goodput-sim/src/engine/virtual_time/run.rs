//! The state of one virtual run between the engine's steps: the client's
//! users and their slots, requests in transit to the engine, sessions'
//! later turns, give-ups, the records and the engine's samples.

use super::*;
use goodput_core::load::dispatch::{Action, Dispatcher};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub(super) const MAX_SAMPLES: usize = 2048;
const FIRST_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// The state of one virtual run, between the steps of [`simulate`].
pub(super) struct VirtualRun<'a> {
    cfg: &'a EngineConfig,
    load: &'a VirtualLoad,
    pub(super) engine: Engine,
    frontend: Duration,
    /// Whether requests' front-end times vary (`frontend_jitter_ms`).
    jitter: bool,
    /// When the front end's serial work for the requests sent so far ends.
    frontend_free: Duration,
    /// The load's rules: what is sent when.
    dispatcher: Dispatcher,
    /// Each unit's first request (a lone request, or a session's first
    /// turn), each request's unit, and the units that are warm-up.
    first_of: Vec<usize>,
    unit_of: Vec<u64>,
    warm: Vec<bool>,
    transit: VecDeque<(Duration, usize)>,
    records: Vec<Option<RequestRecord>>,
    pub(super) now: Duration,
    pub(super) out: StepOutcome,
    samples: Vec<EngineSample>,
    sample_interval: Duration,
    next_sample: Duration,
    /// When the client gives up on requests still going: (time, request,
    /// whether it chose to: else the run's end cancels it).
    give_ups: BinaryHeap<Reverse<(Duration, usize, bool)>>,
    /// The requests the run's end cancelled.
    cut_at_end: Vec<usize>,
}

impl<'a> VirtualRun<'a> {
    pub(super) fn new(cfg: &'a EngineConfig, load: &'a VirtualLoad) -> Result<VirtualRun<'a>, Error> {
        let mut engine = Engine::new(cfg.clone())?;
        engine.seed_noise(load.seed);
        let n = load.requests.len();
        let (mut first_of, mut unit_of) = (Vec::new(), Vec::with_capacity(n));
        for (i, r) in load.requests.iter().enumerate() {
            if !r.follows() {
                first_of.push(i);
            }
            unit_of.push(first_of.len() as u64 - 1);
        }
        let arrivals = load.arrivals.as_ref().map(|a| {
            let units: Vec<Duration> = first_of.iter().map(|&i| a[i]).collect();
            Box::new(units.into_iter()) as goodput_core::load::dispatch::Arrivals
        });
        let dispatcher = Dispatcher::new(load.plan.clone(), arrivals).with_units(first_of.len() as u64);
        Ok(VirtualRun {
            cfg,
            load,
            engine,
            frontend: cfg.calibration.frontend_overhead(),
            jitter: cfg.calibration.frontend_jitter_ms > 0.0,
            frontend_free: Duration::ZERO,
            dispatcher,
            warm: vec![false; first_of.len()],
            first_of,
            unit_of,
            transit: VecDeque::new(),
            records: vec![None; n],
            now: Duration::ZERO,
            out: StepOutcome::default(),
            samples: Vec::new(),
            sample_interval: FIRST_SAMPLE_INTERVAL,
            next_sample: Duration::ZERO,
            give_ups: BinaryHeap::new(),
            cut_at_end: Vec::new(),
        })
    }

    fn send(&mut self, i: usize, scheduled: Duration, sent: Duration) {
        let mut record = RequestRecord::new(i as u64, scheduled, sent);
        record.chunks.reserve_exact(self.load.requests[i].output_tokens as usize);
        record.warmup = self.warm[self.unit_of[i] as usize];
        self.records[i] = Some(record);
        let chosen = self.load.requests[i].give_up_after.map(|after| (sent + after, true));
        let end = self.dispatcher.cancel_at().map(|t| (t.max(sent), false));
        if let Some((t, chose)) = [chosen, end].into_iter().flatten().min_by_key(|e| e.0) {
            self.give_ups.push(Reverse((t, i, chose)));
        }
        // Keeps `transit` in time order: a later turn may be sent between
        // two requests already on their way.
        let delay =
            if self.jitter { self.cfg.calibration.frontend_delay(i as u64, self.load.seed) } else { self.frontend };
        // The front end's serial share: a request waits for those before it.
        let serial = self.cfg.calibration.frontend_serial(self.load.requests[i].input_tokens as u64);
        let start = sent.max(self.frontend_free);
        self.frontend_free = start + serial;
        let at = start + serial.max(delay);
        let pos = self.transit.partition_point(|&(t, _)| t <= at);
        self.transit.insert(pos, (at, i));
    }

    /// Gives up on the requests due by the run's `now` (`inclusive`) or before it that
    /// have not finished: the engine aborts each (or it never reaches the
    /// engine), its record ends then, cancelled and abandoned (until the end of
    /// the run: those the run's end cancelled are put in `cut_at_end`, and are not
    /// abandoned), with what it had received, and a capped load's user is free
    /// at that moment.
    pub(super) fn give_up(&mut self, inclusive: bool) {
        while let Some(&Reverse((at, i, chose))) = self.give_ups.peek() {
            if at > self.now || (at == self.now && !inclusive) {
                break;
            }
            self.give_ups.pop();
            let Some(record) = self.records[i].as_mut() else { continue };
            if record.outcome.is_success() {
                continue;
            }
            self.engine.abort(i as u64);
            self.transit.retain(|&(_, j)| j != i);
            if !chose {
                self.cut_at_end.push(i);
            }
            let request = &self.load.requests[i];
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
            // Its user is free then (a session ends with its turn).
            self.dispatcher.done(at);
        }
    }

    /// Sends what the dispatcher says is due by now: sessions' later turns
    /// (each after the turn before it), then units whose arrival and slot
    /// have come.
    pub(super) fn send_due(&mut self) {
        while let Some(action) = self.dispatcher.next_action(self.now) {
            match action {
                Action::Send { unit, scheduled, sent, warmup } => {
                    self.warm[unit as usize] = warmup;
                    self.send(self.first_of[unit as usize], scheduled, sent);
                }
                Action::Turn { unit, due } => {
                    // The unit's next request: the turn after the last one sent.
                    let first = self.first_of[unit as usize];
                    let next = (first..self.records.len()).find(|&j| self.records[j].is_none()).unwrap_or(first);
                    self.send(next, due, due);
                }
                // Each request's give-up holds the run's end (see `send`).
                Action::CancelAll { .. } => {}
            }
        }
    }

    /// Adds the requests that reached the engine by now.
    pub(super) fn admit_arrived(&mut self) -> Result<(), Error> {
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
            let start = (TEMPLATE_START, load.prompts.shared_start(cfg.chat_template));
            let shared: Vec<(u64, u32)> = match load.prefix_blocks.get(i).and_then(Option::as_ref) {
                Some(blocks) => std::iter::once(start).chain(blocks.iter().copied()).collect(),
                None => vec![start, prefix],
            };
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
    pub(super) fn record_step(&mut self) {
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
                    // The next turn goes after a think time, unless the end
                    // of sending cuts the session: its user is then free.
                    Some(due) => {
                        self.dispatcher.turn_ended(self.unit_of[i], now, due);
                    }
                    // The session's last turn: its user is free.
                    None => self.dispatcher.done(now),
                }
            }
        }
    }

    /// Samples the engine's state when the next sample is due.
    pub(super) fn sample(&mut self) {
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
    pub(super) fn next_event(&self) -> Option<Duration> {
        let next_reach = self.transit.front().map(|&(t, _)| t);
        let next_give_up = self.give_ups.peek().map(|Reverse((t, _, _))| *t);
        [next_reach, next_give_up, self.dispatcher.next_wake()].into_iter().flatten().min()
    }

    pub(super) fn into_result(self) -> SimRun {
        let mut records = self.records;
        // Cancelled by the run's end, as bench cancels them: not abandoned.
        for &i in &self.cut_at_end {
            if let Some(r) = records[i].as_mut() {
                r.abandoned = false;
            }
        }
        // Later turns never sent (their session was cut, or the run ended
        // first) leave no record.
        let records: Vec<RequestRecord> = records.into_iter().flatten().collect();
        let stats = self.engine.stats();
        let ran_out = self.dispatcher.ran_out();
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
            ran_out,
        }
    }
}

/// The id of the template's shared start among a prompt's shared segments.
const TEMPLATE_START: u64 = 0x7e4d_1a7e_0000_0001;

/// Ends `request`'s record at `now`; its prompt reached the engine `extra`
/// tokens longer than the workload's (the template's, see [`PromptKind`]).
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
