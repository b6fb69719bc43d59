//! The task that owns the engine and keeps its virtual time on the wall
//! clock.

use super::metrics::{lock, Observed};
use super::progress::{Command, Producer};
use crate::clock::sleep_until;
use crate::engine::{Engine, StepOutcome};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A request the driver holds, with the wall times its metrics need.
struct Live {
    producer: Producer,
    arrived: Instant,
    /// When the request reached the scheduler.
    reached: Instant,
    queued: Option<Duration>,
    last_token: Option<Instant>,
    /// Prefilled elsewhere: told when admitted to pull its KV.
    pull: Option<tokio::sync::oneshot::Sender<u32>>,
    pooling: bool,
}

/// How far the driver may fall behind its virtual-to-wall mapping before it
/// forgets the debt. Within it, late steps are caught up (run back to back),
/// so a busy host delays tokens but keeps the simulated timeline, and with it
/// throughput and TPOT; a longer pause (a suspended process) is forgiven
/// rather than replayed as a burst.
const MAX_LAG: Duration = Duration::from_secs(1);

/// The task that owns the engine: steps it, lets each step's duration pass
/// on the wall clock, and delivers the step's tokens.
pub(super) struct Driver {
    engine: Engine,
    commands: mpsc::UnboundedReceiver<Command>,
    observed: Arc<Mutex<Observed>>,
    speed: f64,
    live: HashMap<u64, Live>,
    out: StepOutcome,
    /// A prefill instance of a disaggregated server: its requests' one
    /// token is not the client's, so it observes no request latencies.
    prefill: bool,
    /// In SGLang's order, the prefill instance's link: each chunk's KV is
    /// sent over it as the chunk ends.
    chunks: Option<super::disagg::PrefillLink>,
}

impl Driver {
    pub(super) fn new(
        engine: Engine,
        commands: mpsc::UnboundedReceiver<Command>,
        observed: Arc<Mutex<Observed>>,
        speed: f64,
        prefill: bool,
    ) -> Driver {
        Driver {
            speed,
            engine,
            commands,
            observed,
            live: HashMap::new(),
            out: StepOutcome::default(),
            prefill,
            chunks: None,
        }
    }

    /// Sends each chunk's KV over `link` as the chunk ends (a prefill
    /// instance in SGLang's order).
    pub(super) fn sending_chunks(mut self, link: Option<super::disagg::PrefillLink>) -> Driver {
        self.chunks = link;
        self
    }

    pub(super) async fn run(mut self) {
        // Steps are timed on an absolute mapping from virtual time (elapsed
        // since `anchor`) to the wall clock, so the driver's own work between
        // steps and late wake-ups do not add up to drift.
        let mut clock: Option<(Instant, Duration)> = None;
        loop {
            self.drain();
            if !self.engine.has_work() {
                clock = None;
                if !self.idle().await {
                    return;
                }
                continue;
            }
            let now = Instant::now();
            let (anchor, elapsed) = clock.get_or_insert((now, Duration::ZERO));
            let mut start = *anchor + elapsed.div_f64(self.speed);
            if now > start + MAX_LAG {
                // The debt forgiven is lateness all the same: told once.
                lock(&self.observed).step_lateness.observe(now - start);
                (*anchor, *elapsed, start) = (now, Duration::ZERO, now);
            }
            let stepped = self.engine.step_into(&mut self.out);
            self.start_pulls();
            if !stepped {
                // Work that cannot be scheduled waits for a command to change that.
                clock = None;
                if !self.idle().await {
                    return;
                }
                continue;
            }
            *elapsed += self.out.duration;
            let deadline = *anchor + elapsed.div_f64(self.speed);
            if Instant::now() < deadline {
                sleep_until(deadline).await;
            } else {
                // Catching up: let the streams and handlers run between steps.
                tokio::task::yield_now().await;
            }
            {
                let mut obs = lock(&self.observed);
                obs.step_lateness.observe(Instant::now().saturating_duration_since(deadline));
                // A step that only waited for a pipeline's late output
                // (nothing scheduled) is no iteration of vLLM's.
                if self.out.batch.seqs > 0 {
                    obs.iteration_tokens.observe_value(f64::from(self.out.iteration_tokens));
                }
            }
            // Aborts that came during the step drop its tokens for those requests.
            self.drain();
            self.deliver(start, Instant::now());
        }
    }

    /// Publishes the state and waits for a command; false when no handle to
    /// the server is left.
    async fn idle(&mut self) -> bool {
        lock(&self.observed).publish(&self.engine);
        match self.commands.recv().await {
            Some(c) => {
                self.handle(c);
                true
            }
            None => false,
        }
    }

    /// Tells the handlers of the requests admitted to pull their KV this
    /// step: their transfers start now.
    fn start_pulls(&mut self) {
        for &(id, cached) in &self.out.pulls {
            if let Some(tx) = self.live.get_mut(&id).and_then(|l| l.pull.take()) {
                let _ = tx.send(cached);
            }
        }
    }

    fn drain(&mut self) {
        while let Ok(c) = self.commands.try_recv() {
            self.handle(c);
        }
    }

    fn handle(&mut self, c: Command) {
        match c {
            Command::Add { id, prompt, max_tokens, arrived, progress, reply, pull, pooling } => {
                let res = if pull.is_some() {
                    self.engine.add_remote_request(id, prompt, max_tokens)
                } else if pooling {
                    self.engine.add_pooling_request(id, prompt)
                } else {
                    self.engine.add_request(id, prompt, max_tokens)
                };
                if res.is_ok() {
                    let live = Live {
                        producer: Producer(progress),
                        arrived,
                        reached: Instant::now(),
                        queued: None,
                        last_token: None,
                        pull,
                        pooling,
                    };
                    self.live.insert(id, live);
                }
                // A handler gone meanwhile left a ticket whose abort follows.
                let _ = reply.send(res);
            }
            Command::ResetPrefixCache(reply) => {
                let _ = reply.send(self.engine.reset_prefix_cache());
            }
            Command::Landed(id) => {
                self.engine.kv_landed(id);
            }
            Command::Release(id) => {
                self.engine.release_held(id);
            }
            Command::Abort(id) => {
                if self.live.remove(&id).is_some() {
                    self.engine.abort(id);
                    lock(&self.observed).aborted += 1;
                } else {
                    // A prefill instance's request is no longer live once its
                    // one token is delivered, but the engine holds its KV for
                    // the decode instance until the handler's `Held` guard
                    // releases it; a client gone before the handler took that
                    // guard leaves only this abort to free the blocks (they
                    // had stayed held for good).
                    self.engine.release_held(id);
                }
            }
        }
    }

    fn deliver(&mut self, step_start: Instant, now: Instant) {
        let mut obs = lock(&self.observed);
        for id in &self.out.admitted {
            if let Some(l) = self.live.get_mut(id) {
                l.queued = Some(step_start.saturating_duration_since(l.reached));
            }
        }
        for (id, cached) in &self.out.prefix_hits {
            if let Some(l) = self.live.get(id) {
                l.producer.0.cached.store(*cached, Ordering::Release);
            }
        }
        if let Some(link) = &self.chunks {
            for &(id, computed) in &self.out.chunked {
                let Some(l) = self.live.get(&id) else { continue };
                let sent = l.producer.0.sent.load(Ordering::Acquire);
                if computed > sent {
                    link.send(now, computed - sent);
                    l.producer.0.sent.store(computed, Ordering::Release);
                }
            }
        }
        for ev in &self.out.tokens {
            let Some(l) = self.live.get_mut(&ev.id) else {
                continue;
            };
            if self.prefill {
                l.producer.deliver(ev.index + ev.tokens);
                self.live.remove(&ev.id);
                continue;
            }
            // A pooling pass yields no token: vLLM observes no TTFT for it
            // (`update_from_output` records one only when a token was
            // generated) and finishes it as stopped.
            match l.last_token {
                _ if l.pooling => {}
                None => obs.ttft.observe(now - l.arrived),
                Some(t) => obs.itl.observe(now - t),
            }
            l.last_token = Some(now);
            l.producer.deliver(ev.index + ev.tokens);
            if ev.finished {
                if let Some(l) = self.live.remove(&ev.id) {
                    obs.e2e.observe(now - l.arrived);
                    obs.queue.observe(l.queued.unwrap_or_default());
                    if l.pooling {
                        obs.finished_stop += 1;
                    } else {
                        obs.finished_length += 1;
                    }
                }
            }
        }
        obs.publish(&self.engine);
    }
}

#[cfg(test)]
mod tests {
    use super::super::progress::{Progress, Update};
    use super::*;
    use crate::engine::{EngineConfig, Precision, Prompt};

    /// Sends a prefill instance's driver request `id`, a prompt of
    /// `tokens`, as the prefill pool sends it (one output token), and waits
    /// for that token.
    async fn prefill_one(tx: &mpsc::UnboundedSender<Command>, id: u64, tokens: u32, block_size: u32) -> Arc<Progress> {
        let progress = Arc::new(Progress::default());
        let (reply, answer) = tokio::sync::oneshot::channel();
        let add = Command::Add {
            id,
            prompt: Prompt::from_tokens(&(0..tokens).collect::<Vec<u32>>(), block_size),
            max_tokens: 1,
            arrived: Instant::now(),
            progress: progress.clone(),
            reply,
            pull: None,
            pooling: false,
        };
        tx.send(add).unwrap();
        answer.await.unwrap().unwrap();
        assert!(!matches!(progress.changed(0).await, Update::Closed), "the prefill's token");
        progress
    }

    /// A prefill instance in SGLang's order sends each chunk's KV over its
    /// link as the chunk ends: a 256-token prompt in chunks of 64 has sent
    /// 192 tokens' when its prefill ends, and the link carried them (its
    /// next free time moved on by at least their three transfers); only
    /// the last chunk's is left to cross. Counts, not times: what each
    /// step took on this machine's clock does not change them.
    #[tokio::test]
    async fn sglangs_prefill_instance_sends_each_chunk_over_its_link() {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        cfg.scheduler = crate::engine::SchedulerPolicy::Sglang;
        cfg.pd = Some(crate::engine::Disaggregation::parse("1:1").unwrap());
        cfg.max_num_batched_tokens = 64;
        let link = crate::engine::KvLink::new(&cfg).unwrap();
        let block_size = cfg.block_size;
        let mut engine = Engine::new(cfg.engine_configs().swap_remove(0)).unwrap();
        engine.hold_finished();
        let observed = Arc::new(Mutex::new(Observed::new(&engine, false)));
        let (tx, rx) = mpsc::unbounded_channel();
        let started = Instant::now();
        let free = Arc::new(Mutex::new(started));
        let chunks = super::super::disagg::PrefillLink::new(link, free.clone(), 100.0);
        let task = tokio::spawn(Driver::new(engine, rx, observed, 100.0, true).sending_chunks(Some(chunks)).run());
        let progress = prefill_one(&tx, 3, 256, block_size).await;
        assert_eq!(progress.sent.load(Ordering::Acquire), 192);
        let carried = *lock(&free) - started;
        assert!(carried >= 3 * link.transfer_time(64).div_f64(100.0), "{carried:?}");
        drop(tx);
        task.await.unwrap();
    }

    /// A prefill instance's request leaves the driver's live set when its
    /// one token is delivered, while the engine keeps its KV for the decode
    /// instance. A client gone before its handler took the hold sends only
    /// an abort: that abort must free the blocks (it had been dropped, and
    /// the blocks stayed held for good).
    #[tokio::test]
    async fn an_abort_after_a_prefill_instance_delivered_frees_the_held_kv() {
        let cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        let block_size = cfg.block_size;
        let mut engine = Engine::new(cfg).unwrap();
        engine.hold_finished();
        let observed = Arc::new(Mutex::new(Observed::new(&engine, false)));
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(Driver::new(engine, rx, observed.clone(), 100.0, true).run());
        // What the driver publishes, once it holds (it publishes when idle):
        // waited for, not timed.
        let published = |want: fn(f64) -> bool| {
            let observed = observed.clone();
            async move {
                let deadline = Instant::now() + Duration::from_secs(20);
                while !want(lock(&observed).engine.kv_usage) {
                    assert!(Instant::now() < deadline, "the driver never published it");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };
        prefill_one(&tx, 7, 512, block_size).await;
        // The instance holds the prompt's KV; the abort frees it.
        published(|usage| usage > 0.0).await;
        tx.send(Command::Abort(7)).unwrap();
        published(|usage| usage == 0.0).await;
        // Its hold released again (the handler's guard, had it been taken)
        // is nothing more to free.
        tx.send(Command::Release(7)).unwrap();
        drop(tx);
        task.await.unwrap();
        assert_eq!(lock(&observed).engine.kv_usage, 0.0);
    }
}
