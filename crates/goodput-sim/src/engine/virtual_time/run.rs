//! The state of one virtual run between the engine's steps: the client's
//! users and their slots, requests in transit to the engine, sessions'
//! later turns, give-ups, the records and the engine's samples.

use super::disagg::Pools;
use super::*;
use crate::engine::router::Router;
use crate::engine::scheduler::EngineStats;
use crate::engine::serial_start;
use goodput_core::load::dispatch::{Action, Dispatcher};
use goodput_core::FailureKind;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

pub(super) const MAX_SAMPLES: usize = 2048;
/// No replica: a request not (or no longer) in an engine.
const NONE: u32 = u32::MAX;
const FIRST_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// The state of one virtual run, between the steps of [`simulate`].
pub(super) struct VirtualRun<'a> {
    cfg: &'a EngineConfig,
    load: &'a VirtualLoad,
    /// The data-parallel replicas (one without `dp`), each with its step in
    /// progress: its outcome, and when it ends.
    engines: Vec<Engine>,
    outs: Vec<StepOutcome>,
    ends: Vec<Option<Duration>>,
    router: Router,
    /// Prefill/decode disaggregation: the engines are the prefill
    /// instances, then the decode ones, and `router` is unused.
    pd: Option<Pools>,
    /// The replica each request went to (`NONE` before it reached one).
    replica_of: Vec<u32>,
    frontend: Duration,
    /// Whether requests' front-end times vary (`frontend_jitter_ms`).
    jitter: bool,
    /// When the front end's serial work for the requests sent so far ends.
    frontend_free: Duration,
    /// That work, summed.
    frontend_busy: Duration,
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
    samples: Vec<EngineSample>,
    sample_interval: Duration,
    next_sample: Duration,
    /// When the client gives up on requests still going: (time, request,
    /// whether it chose to: else the run's end cancels it).
    give_ups: BinaryHeap<Reverse<(Duration, usize, bool)>>,
    /// The requests the run's end cancelled.
    cut_at_end: Vec<usize>,
    /// The stopping rules, fed each request as it completes, and their decision.
    pub(super) watch: Option<goodput_core::analysis::until::Watch>,
    decided: Option<goodput_core::analysis::until::Stop>,
    /// With `load.ends_only`, each request's tokens since its first chunk
    /// not yet in a chunk: (tokens, the events they came in, the last one's
    /// time); and every token's time ([`SimRun::streamed`]).
    held: Vec<(u32, u32, Duration)>,
    streamed: Vec<(Duration, u64)>,
}

impl<'a> VirtualRun<'a> {
    pub(super) fn new(cfg: &'a EngineConfig, load: &'a VirtualLoad) -> Result<VirtualRun<'a>, Error> {
        let mut engines = cfg.engine_configs().into_iter().map(Engine::new).collect::<Result<Vec<_>, _>>()?;
        for (i, engine) in engines.iter_mut().enumerate() {
            engine.seed_noise(load.seed.wrapping_add(i as u64));
        }
        let blocks = engines[0].capacity().num_blocks;
        let router =
            Router::new(cfg.router, engines.len(), blocks).polled(cfg.router_poll_s).controlled(cfg.dense_controller());
        // SGLang's controller reads the loads the replicas publish, vLLM's
        // front end their counts.
        if let Some(by) = router.reads_published() {
            engines.iter_mut().for_each(|e| e.publish_loads(by));
        }
        let n = load.requests.len();
        let pd = match (cfg.pd, crate::engine::disagg::KvLink::new(cfg)) {
            (Some(pd), Some(link)) => {
                for e in &mut engines[..pd.prefill as usize] {
                    e.hold_finished();
                }
                let decode_blocks = engines[pd.prefill as usize].capacity().num_blocks;
                Some(Pools::new(
                    link,
                    pd.prefill as usize,
                    pd.decode as usize,
                    (blocks, decode_blocks),
                    n,
                    cfg.decode_first(),
                    cfg.router,
                ))
            }
            _ => None,
        };
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
            outs: vec![StepOutcome::default(); engines.len()],
            ends: vec![None; engines.len()],
            engines,
            router,
            pd,
            replica_of: vec![NONE; n],
            frontend: cfg.calibration.frontend_overhead(),
            jitter: cfg.calibration.frontend_jitter_ms > 0.0,
            frontend_free: Duration::ZERO,
            frontend_busy: Duration::ZERO,
            dispatcher,
            warm: vec![false; first_of.len()],
            first_of,
            unit_of,
            transit: VecDeque::new(),
            records: vec![None; n],
            now: Duration::ZERO,
            samples: Vec::new(),
            sample_interval: FIRST_SAMPLE_INTERVAL,
            next_sample: Duration::ZERO,
            give_ups: BinaryHeap::new(),
            cut_at_end: Vec::new(),
            watch: None,
            decided: None,
            held: if load.ends_only { vec![(0, 0, Duration::ZERO); n] } else { Vec::new() },
            streamed: Vec::new(),
        })
    }

    fn send(&mut self, i: usize, scheduled: Duration, sent: Duration) {
        let mut record = RequestRecord::new(i as u64, scheduled, sent);
        let chunks = if self.load.ends_only { 2 } else { self.load.requests[i].output_tokens as usize };
        record.chunks.reserve_exact(chunks);
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
        let start = serial_start(&mut self.frontend_free, sent, serial);
        self.frontend_busy += serial;
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
            // Done already: answered, or refused (see `refuse`).
            if !matches!(record.outcome, Outcome::Cancelled) || record.http_status.is_some() {
                continue;
            }
            if let Some(&r) = self.replica_of.get(i).filter(|&&r| r != NONE) {
                self.engines[r as usize].abort(i as u64);
                route_done(&mut self.pd, &mut self.router, r as usize);
                self.replica_of[i] = NONE;
            }
            if let Some(p) = self.pd.as_mut().and_then(|pd| pd.give_up(i)) {
                // Its prefill, under way or done and holding its blocks.
                self.engines[p].abort(i as u64);
            }
            self.transit.retain(|&(_, j)| j != i);
            if !chose {
                self.cut_at_end.push(i);
            }
            let request = &self.load.requests[i];
            // What it had received: the tokens held back, as one chunk at the last one's time.
            let mut unkept = 0;
            if let Some(h) = self.held.get_mut(i).map(std::mem::take).filter(|h| h.1 > 0) {
                record.chunks.push(OutputChunk { t: h.2, tokens: h.0, channel: Channel::Content });
                unkept = h.1 as usize - 1;
            }
            record.abandoned = true;
            record.end = at;
            record.session = request.turn.map(|t| SessionTurn { id: t.session, turn: t.turn, turns: t.turns });
            record.counts.intended_prompt = Some(request.input_tokens as u64);
            record.counts.requested_completion = Some(request.output_tokens as u64);
            record.counts.chunks = (record.chunks.len() + unkept) as u64;
            record.output_tokens = record.counts.chunks;
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
            let mut shared: Vec<(u64, u32)> = match load.prefix_blocks.get(i).and_then(Option::as_ref) {
                Some(blocks) => std::iter::once(start).chain(blocks.iter().copied()).collect(),
                None => vec![start, prefix],
            };
            // The unique part is the request's own (its session's first
            // turn's), or that of the prompt it sends again. A session that
            // opens with a prompt sent before (a dataset's conversation, its
            // second time round) shares that opening question, and goes on
            // with answers of its own.
            let prompt_salt = |p: u64| p.wrapping_add(1).wrapping_mul(0xd6e8_feb8_6659_fd93).rotate_left(17);
            let own = (first as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let unique = match (r.prompt, r.turn) {
                (Some(p), Some(_)) => {
                    shared.push((prompt_salt(p), load.requests[first].input_tokens));
                    own
                }
                (Some(p), None) => prompt_salt(p),
                (None, _) => own,
            };
            let prompt = Prompt::synthetic(
                r.input_tokens.saturating_add(load.prompts.extra(cfg.chat_template, r)),
                &shared,
                load.seed ^ unique,
                cfg.block_size,
            );
            if let Some(pd) = self.pd.as_mut() {
                // The whole request must fit the model's context, though the
                // prefill instance makes one token of it: refused up front,
                // as a real server's front end refuses it.
                if let Err(message) = cfg.model.check_context(prompt.len() as u64, r.output_tokens.into()) {
                    self.refuse(i, message);
                    continue;
                }
                let (replica, added) = if pd.decode_first {
                    // SGLang's order: its decode instance reserves for it
                    // first, then its prefill starts (`start_steps`).
                    let (_, d) = pd.route_both(i, &prompt);
                    (d, self.engines[d].add_remote_request(i as u64, prompt, r.output_tokens))
                } else {
                    // Prefill only: the prefill instance's one token is not sent.
                    let p = pd.route_prefill(i, &prompt);
                    (p, self.engines[p].add_request(i as u64, prompt, 1))
                };
                self.replica_of[i] = replica as u32;
                if let Err(e) = added {
                    self.refuse_pooled(i, replica, refused(e)?);
                }
                continue;
            }
            let engines = &self.engines;
            let replica = self.router.route_with(
                &prompt,
                self.now.as_secs_f64(),
                |i| engines[i].load_tokens(),
                |i| engines[i].published_load().unwrap_or_default(),
            );
            self.replica_of[i] = replica as u32;
            if let Err(e) = self.engines[replica].add_request(i as u64, prompt, r.output_tokens) {
                let message = refused(e)?;
                self.router.done(replica);
                self.replica_of[i] = NONE;
                self.refuse(i, message);
            }
        }
        Ok(())
    }

    /// Request `i` was refused by the engine (longer than the model's
    /// context or the KV cache, say): it ends now as a real server answers
    /// it, with a 400 and the engine's message, as the live client records
    /// one; its user is free at once (a session ends with it), and the run
    /// goes on.
    fn refuse(&mut self, i: usize, message: String) {
        let (request, now) = (&self.load.requests[i], self.now);
        let Some(record) = self.records[i].as_mut() else { return };
        record.end = now;
        record.http_status = Some(400);
        record.outcome =
            Outcome::Failed { kind: FailureKind::HttpStatus, message: format!("HTTP 400 Bad Request: {message}") };
        record.session = request.turn.map(|t| SessionTurn { id: t.session, turn: t.turn, turns: t.turns });
        record.counts.intended_prompt = Some(request.input_tokens as u64);
        record.counts.requested_completion = Some(request.output_tokens as u64);
        record.input_tokens = request.input_tokens as u64;
        if let (Some(w), None) = (self.watch.as_mut(), &self.decided) {
            self.decided = w.observe(record);
        }
        self.dispatcher.done(now);
        if self.decided.is_some() && !self.dispatcher.finished() {
            self.stop_sending();
        }
    }

    /// Disaggregated: tells the decode instances whose KV landed by now,
    /// the prefill instances freeing their blocks.
    pub(super) fn land_transfers(&mut self) {
        let Some(pd) = self.pd.as_mut() else { return };
        while let Some((i, holder)) = pd.land(self.now) {
            let Some(p) = holder else { continue };
            self.engines[p].release_held(i as u64);
            if let Some(&d) = self.replica_of.get(i).filter(|&&d| d != NONE) {
                self.engines[d as usize].kv_landed(i as u64);
            }
        }
    }

    /// Starts a step on every replica that is not in one and has work;
    /// disaggregated, the KV pulls a decode instance admitted start now
    /// (whether or not it had a step to run).
    pub(super) fn start_steps(&mut self) -> Result<(), Error> {
        // In SGLang's order a decode instance's reservations start prefills,
        // on instances this pass may have found idle already: once more.
        let mut again = true;
        while std::mem::take(&mut again) {
            for r in 0..self.engines.len() {
                if self.ends[r].is_some() {
                    continue;
                }
                if self.engines[r].step_into(&mut self.outs[r]) {
                    self.ends[r] = Some(self.now + self.outs[r].duration);
                }
                let Some(pd) = self.pd.as_mut() else { continue };
                if !pd.decode_first {
                    for (id, cached) in self.outs[r].pulls.drain(..) {
                        pd.start_transfer(self.now, id as usize, cached);
                    }
                    continue;
                }
                let mut pulls = std::mem::take(&mut self.outs[r].pulls);
                for (id, _) in pulls.drain(..) {
                    again |= self.reserved(id as usize, r)?;
                }
                self.outs[r].pulls = pulls;
            }
        }
        Ok(())
    }

    /// SGLang's order: decode instance `d` reserved blocks for request `i`,
    /// whose prefill starts now on its prefill instance (one token, not
    /// sent). A prompt that instance refuses is answered as a 400, the
    /// blocks given back. Whether a prefill was queued.
    fn reserved(&mut self, i: usize, d: usize) -> Result<bool, Error> {
        let Some((p, prompt)) = self.pd.as_mut().and_then(|pd| pd.reserved(i)) else { return Ok(false) };
        let Err(e) = self.engines[p].add_request(i as u64, prompt, 1) else { return Ok(true) };
        let message = refused(e)?;
        self.engines[d].abort(i as u64);
        self.refuse_pooled(i, d, message);
        Ok(false)
    }

    /// Disaggregated: request `i`, counted on instance `r`, was refused
    /// there (or by the instance it was to go to next): counted out of both
    /// pools and answered as a 400 (see [`VirtualRun::refuse`]).
    fn refuse_pooled(&mut self, i: usize, r: usize, message: String) {
        if let Some(pd) = self.pd.as_mut() {
            pd.done(r);
            pd.give_up(i);
        }
        self.replica_of[i] = NONE;
        self.refuse(i, message);
    }

    /// When the earliest step in progress ends.
    pub(super) fn next_step_end(&self) -> Option<Duration> {
        self.ends.iter().flatten().min().copied()
    }

    /// Whether a replica is between steps (and so could start one on a
    /// request that reaches it before the others' steps end).
    pub(super) fn any_idle(&self) -> bool {
        self.ends.iter().any(Option::is_none)
    }

    /// Ends the steps that end now: their tokens stamped, their requests
    /// finished, a sample taken.
    pub(super) fn finish_steps(&mut self) -> Result<(), Error> {
        // What was due during the steps goes first, at its own time: the
        // front end's serial work (a request's, the tokens' it streams) is
        // taken in time order.
        self.send_due();
        for r in 0..self.engines.len() {
            if self.ends[r] == Some(self.now) {
                self.ends[r] = None;
                let out = std::mem::take(&mut self.outs[r]);
                let mut handed = Ok(());
                if self.pd.as_ref().is_some_and(|pd| r < pd.prefill) {
                    handed = self.prefilled(r, &out);
                } else {
                    self.record_step(&out);
                }
                self.outs[r] = out;
                handed?;
            }
        }
        self.sample();
        Ok(())
    }

    /// A prefill instance's step ended: its prefix hits are the requests',
    /// and each request it finished (its one token, not sent) queues on its
    /// decode instance, which pulls its KV over the prefill instance's link
    /// once it has admitted it.
    fn prefilled(&mut self, p: usize, out: &StepOutcome) -> Result<(), Error> {
        for &(id, c) in &out.prefix_hits {
            if let Some(r) = self.records[id as usize].as_mut() {
                r.counts.usage_cached_prompt = Some(c as u64);
            }
        }
        if let Some(pd) = self.pd.as_mut() {
            for &(id, computed) in &out.chunked {
                pd.send_chunk(self.now, id as usize, p, computed);
            }
        }
        for ev in out.tokens.iter().filter(|ev| ev.finished) {
            let i = ev.id as usize;
            // Given up on during the step: the give-up counted it out.
            if self.records[i].as_ref().is_none_or(|r| r.abandoned) {
                self.engines[p].release_held(ev.id);
                continue;
            }
            route_done(&mut self.pd, &mut self.router, p);
            if let Some(pd) = self.pd.as_mut().filter(|pd| pd.decode_first) {
                // On its decode instance already, which holds blocks for it.
                if pd.prefill_ended(i, p) {
                    pd.start_transfer(self.now, i, 0);
                }
                continue;
            }
            self.replica_of[i] = NONE;
            if let Some((d, prompt)) = self.pd.as_mut().and_then(|pd| pd.prefilled(i, p)) {
                self.replica_of[i] = d as u32;
                if let Err(e) = self.engines[d].add_remote_request(ev.id, prompt, self.load.requests[i].output_tokens) {
                    // The decode instance refused it (its KV cache is too
                    // small for the whole request): answered as a 400.
                    let message = refused(e)?;
                    self.engines[p].release_held(ev.id);
                    self.refuse_pooled(i, d, message);
                }
            }
        }
        Ok(())
    }

    /// Stamps the step's tokens on their records at its end, finishes the
    /// requests it completed, and queues their sessions' next turns.
    fn record_step(&mut self, out: &StepOutcome) {
        let (cfg, load, now) = (self.cfg, self.load, self.now);
        // Prompt tokens the prefix cache served, as usage reports them.
        for &(id, c) in &out.prefix_hits {
            if let Some(r) = self.records[id as usize].as_mut() {
                r.counts.usage_cached_prompt = Some(c as u64);
            }
        }
        let per_token = !cfg.calibration.frontend_output(1).is_zero();
        for ev in &out.tokens {
            let i = ev.id as usize;
            let record = self.records[i].as_mut().expect("a request is recorded when it is sent");
            if record.abandoned {
                continue;
            }
            // The front end streams the step's tokens one after another, after
            // its serial work before them: each reaches its client then.
            let now = if per_token {
                let work = cfg.calibration.frontend_output(ev.tokens as u64);
                self.frontend_busy += work;
                serial_start(&mut self.frontend_free, now, work) + work
            } else {
                now
            };
            let (mut tokens, mut unkept) = (ev.tokens, 0);
            if load.ends_only {
                match self.streamed.last_mut() {
                    Some(last) if last.0 == now => last.1 += u64::from(ev.tokens),
                    _ => self.streamed.push((now, u64::from(ev.tokens))),
                }
                let h = &mut self.held[i];
                if !ev.first && !ev.finished {
                    *h = (h.0 + ev.tokens, h.1 + 1, now);
                    continue;
                }
                // The last chunk holds the tokens since the first.
                let h = std::mem::take(h);
                (tokens, unkept) = (tokens + h.0, h.1);
            }
            record.chunks.push(OutputChunk { t: now, tokens, channel: Channel::Content });
            if ev.first {
                record.first_byte = Some(now);
            }
            if ev.finished {
                if let Some(r) = self.replica_of.get(i).copied().filter(|&r| r != NONE) {
                    route_done(&mut self.pd, &mut self.router, r as usize);
                    self.replica_of[i] = NONE;
                }
                let request = &load.requests[i];
                finish(record, request, load.prompts.extra(cfg.chat_template, request), now);
                record.counts.chunks += u64::from(unkept);
                if let (Some(w), None) = (self.watch.as_mut(), &self.decided) {
                    self.decided = w.observe(record);
                }
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
        if self.decided.is_some() && !self.dispatcher.finished() {
            self.stop_sending();
        }
    }

    /// The rules decided: sending stops now, and what is in flight is
    /// cancelled after the plan's grace, as a live run's stop does.
    fn stop_sending(&mut self) {
        self.dispatcher.stop(self.now);
        let Some(at) = self.dispatcher.cancel_at() else { return };
        for (i, r) in self.records.iter().enumerate() {
            if r.as_ref().is_some_and(|r| !r.outcome.is_success()) {
                self.give_ups.push(Reverse((at, i, false)));
            }
        }
    }

    /// Samples the engine's state when the next sample is due.
    fn sample(&mut self) {
        if self.now < self.next_sample {
            return;
        }
        let e = &self.engines;
        self.samples.push(EngineSample {
            t: self.now,
            // The replicas' mean use, and their requests summed.
            kv_usage: e.iter().map(Engine::kv_usage).sum::<f64>() / e.len() as f64,
            running: e.iter().map(|e| e.num_running() as u32).sum(),
            waiting: e.iter().map(|e| e.num_waiting() as u32).sum(),
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
        let next_landing = self.pd.as_ref().and_then(Pools::next_landing);
        [next_reach, next_give_up, self.dispatcher.next_wake(), next_landing].into_iter().flatten().min()
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
        // Sized once: a flattened iterator gives no lower bound, and growing
        // a vector of records copied it and faulted in twice its pages.
        let mut kept = Vec::with_capacity(records.iter().filter(|r| r.is_some()).count());
        kept.extend(records.into_iter().flatten());
        let records: Vec<RequestRecord> = kept;
        let ran_out = self.dispatcher.ran_out();
        let makespan = records.iter().map(|r| r.end).max().unwrap_or_default();
        let engines = &self.engines;
        let stats = EngineStats::summed(engines.iter().map(Engine::stats));
        let dp = engines.len() as u32;
        // Disaggregated: the prefill instances' one token a request is not
        // output; the transfers' count and time.
        let (prefill, kv_transfers, kv_transfer_s) =
            self.pd.as_ref().map_or((0, 0, 0.0), |pd| (pd.prefill, pd.count, pd.seconds));
        let generation_tokens = engines[prefill..].iter().map(|e| e.stats().generation_tokens).sum();
        SimRun {
            streamed: self.streamed,
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
                kv_capacity_tokens: engines.iter().map(|e| e.capacity().tokens()).sum(),
                kv_rank_tokens: engines
                    .iter()
                    .filter(|e| e.request_kv_tokens() < e.capacity().tokens())
                    .map(Engine::request_kv_tokens)
                    .min(),
                max_num_seqs: engines.iter().map(Engine::max_num_seqs).sum(),
                samples: self.samples,
                // A replica's mean, so that busy ÷ makespan stays a share.
                busy: stats.busy / dp,
                makespan,
                energy_j: engines.iter().map(|e| e.energy_j(makespan)).sum(),
                provisioned_w: engines.iter().map(|e| e.roofline().provisioned_watts()).sum(),
                generation_tokens,
                kv_transfers,
                kv_transfer_s,
                spec_drafts: stats.spec_drafts,
                spec_draft_tokens: stats.spec_draft_tokens,
                spec_accepted_tokens: stats.spec_accepted_tokens,
                spec_accepted_by_position: stats.spec_accepted_by_position,
                frontend_busy: self.frontend_busy,
                replicas: engines.iter().map(|e| super::ReplicaView::of(&e.stats())).collect(),
            },
            ran_out,
            stop: self.decided,
        }
    }
}

/// The engine's message for a request it refused, which a real server
/// answers with a 400; any other error ends the run.
fn refused(e: Error) -> Result<String, Error> {
    match e {
        Error::InvalidRequest { message, .. } => Ok(message),
        other => Err(other),
    }
}

/// A request left instance `r`: its router counts it out.
fn route_done(pd: &mut Option<Pools>, router: &mut Router, r: usize) {
    match pd.as_mut() {
        Some(pd) => pd.done(r),
        None => router.done(r),
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
