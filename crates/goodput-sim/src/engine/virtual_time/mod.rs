//! The virtual-time driver: runs the engine against a load (closed loop, open
//! loop, or both) on a simulated clock, and returns the same per-request
//! records a real run over HTTP would, plus the engine's own view.

mod disagg;
mod run;

use super::config::EngineConfig;
use super::error::Error;
use super::kv::Prompt;
use super::scheduler::{Engine, StepOutcome};
use crate::template::ChatTemplate;
pub use goodput_core::load::dispatch::Plan;
use goodput_core::{Channel, ChunkTokenSource, CountSource, Outcome, OutputChunk, RequestRecord, SessionTurn};
use run::VirtualRun;
#[cfg(test)]
use run::MAX_SAMPLES;
use serde::{Deserialize, Serialize};
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
    /// Which prompt it sends, where others send the same one (a dataset's
    /// entry sent again, `--repeat`'s copies): requests naming the same
    /// `prompt` (and lengths) send the same tokens, so the prefix cache
    /// serves what it still holds of it. On a session's turn, the prompt
    /// its conversation opens with: its first turn's question is that
    /// prompt's, the rest the session's own. `None`: a prompt of its own.
    #[serde(default)]
    pub prompt: Option<u64>,
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
        VirtualRequest {
            input_tokens,
            output_tokens,
            shared_prefix: None,
            turn: None,
            give_up_after: None,
            prompt: None,
        }
    }

    /// A session's later turn: it follows the request before it.
    pub(crate) fn follows(&self) -> bool {
        self.turn.is_some_and(|t| t.turn > 1)
    }
}

/// Requests and how they are sent. Requests go in order, by the rules of
/// `plan` (those of a live run: see [`goodput_core::load::dispatch`]), its units
/// being lone requests and sessions. With `arrivals`, request i is due at
/// `arrivals[i]` (open loop); with `plan.users`, no more than that many units
/// are in flight, a new one going when one finishes (closed loop); with both,
/// a unit goes at its arrival time or when a slot frees, whichever is later;
/// with neither, all go at once (a burst).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VirtualLoad {
    pub requests: Vec<VirtualRequest>,
    /// Absolute send times from the run's start, non-decreasing; a session's
    /// later turns take its first's.
    pub arrivals: Option<Vec<Duration>>,
    /// The load's rules: users, their ramp-up and steps, warm-up, the count
    /// and duration that end sending, and the grace after which the run's
    /// end cancels what is still in flight. Its units beyond `requests` are
    /// not sent ([`SimRun::ran_out`] says the plan wanted them).
    pub plan: Plan,
    /// Salt for the unique part of each prompt.
    pub seed: u64,
    /// What the server adds to each prompt before it counts and prefills it.
    pub prompts: PromptKind,
    /// Request i's prompt opens with these blocks, when given (a trace's
    /// prefix blocks, Mooncake's `hash_ids`): empty, or one entry a request.
    pub prefix_blocks: Vec<Option<PrefixBlocks>>,
    /// Keep each record's first and last output chunk only, the tokens
    /// between folded into the last, and give every token's time in
    /// [`SimRun::streamed`] instead: TTFT, TPOT, E2E and every count are as
    /// they would be, chunk gaps and ITL are not. For callers that read
    /// neither (`plan` without an ITL objective), where recording and
    /// reading each token's chunk was a third of the time.
    pub ends_only: bool,
}

/// A prompt made of blocks, each `(id, tokens)` in order: a block ending in
/// segment k is the same in every prompt that opens with the same ids up to
/// k, so the prefix cache serves what requests share. It takes the place of
/// the request's [`SharedPrefix`].
pub type PrefixBlocks = std::sync::Arc<[(u64, u32)]>;

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

    /// Tokens added to a first turn's prompt (a single request's) under
    /// `template`: [`Self::extra`] without a request at hand.
    pub fn first_turn_extra(self, template: ChatTemplate) -> u32 {
        match self {
            PromptKind::Exact => 0,
            PromptKind::Raw => template.bos(),
            PromptKind::Chat => template.overhead(1, 0),
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
        let plan = Plan { users: Some(concurrency as usize), ..Plan::default() };
        VirtualLoad { requests, plan, ..VirtualLoad::default() }
    }

    pub fn open_loop(requests: Vec<VirtualRequest>, arrivals: Vec<Duration>) -> VirtualLoad {
        VirtualLoad { requests, arrivals: Some(arrivals), ..VirtualLoad::default() }
    }

    /// Every request at time zero: the offline maximum-throughput case.
    pub fn burst(requests: Vec<VirtualRequest>) -> VirtualLoad {
        VirtualLoad { requests, ..VirtualLoad::default() }
    }

    fn check(&self) -> Result<(), Error> {
        let plan = &self.plan;
        if plan.users == Some(0) {
            return Err(Error::InvalidLoad("concurrency must be at least 1".into()));
        }
        if !plan.user_steps.is_empty() && (plan.users.is_none() || !plan.ramp_up.is_zero()) {
            return Err(Error::InvalidLoad(
                "users that change over the run need a closed loop without a ramp-up".into(),
            ));
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
    /// The most tokens one request may hold ([`Engine::request_kv_tokens`]),
    /// where that is less than an instance's cache: an expert-parallel
    /// group's rank's share (the smallest of the instances').
    pub kv_rank_tokens: Option<u64>,
    pub max_num_seqs: u32,
    /// KV usage and queue depths over time, at most a few thousand points
    /// evenly spaced in virtual time.
    pub samples: Vec<EngineSample>,
    /// Time the engine spent in steps.
    pub busy: Duration,
    /// From the run's start to the last request's end.
    pub makespan: Duration,
    /// What the engine's GPUs drew from the run's start to its end (the
    /// power model: steps at their power, idle power between them), joules.
    pub energy_j: f64,
    /// TDP × the engine's GPUs, watts.
    pub provisioned_w: f64,
    /// Output tokens the engine generated, warm-up included.
    pub generation_tokens: u64,
    /// Disaggregated: KV transfers from the prefill to the decode pool, and
    /// their time summed (from the prefill's end to the landing, a wait for
    /// the link included); 0 otherwise.
    pub kv_transfers: u64,
    pub kv_transfer_s: f64,
    /// Speculative decoding, summed over the instances (warm-up included):
    /// proposals, draft tokens proposed, draft tokens accepted, and accepted
    /// by their position in the proposal (vLLM's `spec_decode_*` counters);
    /// zero and empty without `spec`.
    pub spec_drafts: u64,
    pub spec_draft_tokens: u64,
    pub spec_accepted_tokens: u64,
    pub spec_accepted_by_position: Vec<u64>,
    /// The front end's serial work (per request, per prompt token, per
    /// streamed token: `Calibration::frontend_serial_*`) summed; zero when
    /// it has none.
    pub frontend_busy: Duration,
    /// What each data-parallel replica did (one entry without `dp`;
    /// disaggregated, the prefill instances', then the decode ones').
    pub replicas: Vec<ReplicaView>,
}

/// One data-parallel replica's share of a virtual run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicaView {
    /// Requests the router sent it that it scheduled.
    pub requests: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub preemptions: u64,
    pub prefix_cache_hit_rate: Option<f64>,
    /// Time it spent in steps.
    pub busy: Duration,
}

impl ReplicaView {
    pub fn of(s: &super::scheduler::EngineStats) -> ReplicaView {
        ReplicaView {
            requests: s.requests_admitted,
            prompt_tokens: s.prompt_tokens,
            generation_tokens: s.generation_tokens,
            preemptions: s.preemptions,
            prefix_cache_hit_rate: s.prefix_cache_hit_rate(),
            busy: s.busy,
        }
    }
}

/// The result of a virtual run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRun {
    /// In request order, stamped on the virtual clock.
    pub records: Vec<RequestRecord>,
    pub engine: EngineView,
    /// The load's plan wanted more units than its requests held (a closed
    /// loop's timed warm-up takes an unknown number of them).
    pub ran_out: bool,
    /// The stopping rules' decision, when they were given and decided.
    pub stop: Option<goodput_core::analysis::until::Stop>,
    /// With [`VirtualLoad::ends_only`]: the output tokens streamed to the
    /// clients at each time, in time order (those at one time summed): what
    /// the records' every chunk would have held. Empty otherwise.
    pub streamed: Vec<(Duration, u64)>,
}

/// Runs `load` against an engine built from `cfg`, in virtual time. A request
/// reaches the scheduler `frontend_overhead` after it is sent; its first
/// response byte is its first token (vLLM writes nothing earlier on a
/// stream); each token is one output chunk at the end of its step.
pub fn simulate(cfg: &EngineConfig, load: &VirtualLoad) -> Result<SimRun, Error> {
    simulate_until(cfg, load, None)
}

/// [`simulate`] with stopping rules (`--until`, `--stop-on-slo`): each
/// request is shown to `watch` as it completes, and once it decides,
/// sending stops as a live run's does, what is in flight cancelled after
/// the plan's grace.
pub fn simulate_until(
    cfg: &EngineConfig,
    load: &VirtualLoad,
    watch: Option<goodput_core::analysis::until::Watch>,
) -> Result<SimRun, Error> {
    load.check()?;
    let mut run = VirtualRun::new(cfg, load)?;
    run.watch = watch;
    loop {
        // The client leaves requests it gave up on by now: the engine drops
        // them, and their users are free (a session ends with its turn).
        run.give_up(true);
        // Send every request whose time has come: its arrival, or the moment
        // a slot freed, whichever is later. Later turns of sessions go on
        // their own, after the turn before them.
        run.send_due();
        run.admit_arrived()?;
        run.land_transfers();
        run.start_steps()?;

        if let Some(end) = run.next_step_end() {
            // With a replica between steps, what happens before the others'
            // steps end happens at its time: a request reaching the idle
            // replica starts a step there. (With one replica, busy, the
            // step's end comes first, as on a real engine: what arrives
            // during a step waits for the next.)
            if run.any_idle() {
                if let Some(t) = run.next_event().filter(|&t| t > run.now && t < end) {
                    run.now = t;
                    continue;
                }
            }
            run.now = end;
            past_horizon(run.now)?;
            // Requests given up on during the step: their tokens of this
            // step came after the client left.
            run.give_up(false);
            run.finish_steps()?;
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

/// A run whose clock passes [`goodput_core::HORIZON`] (100 years) is refused:
/// its times would no longer fit a record's nanoseconds (a calibration of
/// steps of 1e15 µs had wrapped ends before their sends).
fn past_horizon(now: Duration) -> Result<(), Error> {
    if now > goodput_core::HORIZON {
        return Err(Error::InvalidLoad(
            "the run's virtual clock passed 100 years: its steps are longer than any engine's (check the \
             calibration's costs and efficiencies) or its load is past any run's"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::Precision;
    use crate::engine::roofline::Roofline;
    use crate::engine::router::RouterPolicy;
    use goodput_core::FailureKind;
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
            assert!(r.chunks.pairs().all(|(a, b)| a.t < b.t));
            assert_eq!(r.first_byte, Some(r.chunks.at(0).t));
            assert_eq!((r.end, r.stream_end), (r.chunks.at(19).t, Some(r.chunks.at(19).t)));
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
    fn a_request_past_the_context_is_answered_400_and_the_run_goes_on() {
        // One tail draw past the model's context had ended the whole run
        // ("request 2 rejected") and lost every record; a server answers it
        // with a 400 and serves the rest.
        let mut cfg = h100_8b();
        cfg.model.max_context = 4096;
        let mut requests = same(8, 300, 20);
        requests[2] = VirtualRequest::new(4583, 223);
        let check = |cfg: &EngineConfig, load: &VirtualLoad, admitted: u64| {
            let run = simulate(cfg, load).unwrap();
            assert_eq!(run.records.len(), 8);
            let failed: Vec<&RequestRecord> = run.records.iter().filter(|r| !r.outcome.is_success()).collect();
            assert_eq!(failed.len(), 1, "{:?}", failed);
            let r = failed[0];
            assert_eq!((r.id, r.http_status, r.outcome.failure_kind()), (2, Some(400), Some(FailureKind::HttpStatus)));
            let Outcome::Failed { message, .. } = &r.outcome else { unreachable!() };
            assert!(message.starts_with("HTTP 400 Bad Request: 4583 prompt + 223 output tokens exceed"), "{message}");
            assert!(r.chunks.is_empty() && r.end >= r.sent);
            // Its user went on: the others all finished, and the engine never saw it.
            assert!(run.records.iter().filter(|r| r.id != 2).all(|r| r.outcome.is_success()));
            assert_eq!(run.engine.replicas.iter().map(|v| v.requests).sum::<u64>(), admitted);
        };
        check(&cfg, &VirtualLoad::closed_loop(requests.clone(), 2), 7);
        // Disaggregated too, where the prefill instance would have taken it
        // (its one token fits) and the decode instance refused it later.
        let pd = disaggregated(&cfg, "1:1");
        pd.validate().unwrap();
        // Each of the 7 others on both pools.
        check(&pd, &VirtualLoad::closed_loop(requests, 2), 14);
    }

    #[test]
    fn users_sent_together_stay_together_while_a_wave_prefills_in_one_step() {
        // As genai-perf's closed loop against a NIM did for 35 s
        // (docs/simulator.md, "A real closed loop stayed in lockstep"): 5
        // users of 200/50 sent at once go out, take their first tokens and
        // end together, wave after wave.
        let cfg = h100_8b();
        let run = simulate(&cfg, &VirtualLoad::closed_loop(same(200, 200, 50), 5)).unwrap();
        let waves: Vec<&[RequestRecord]> = run.records.chunks(5).collect();
        assert_eq!(waves.len(), 40);
        let first_ttft = waves[0][0].ttft().unwrap();
        for (i, wave) in waves.iter().enumerate() {
            for r in *wave {
                assert_eq!((r.sent, r.end), (wave[0].sent, wave[0].end), "wave {i}");
                assert_eq!(r.ttft().unwrap(), first_ttft, "wave {i}: one joint prefill, as the first");
            }
            if i > 0 {
                assert_eq!(wave[0].sent, waves[i - 1][0].end, "wave {i} goes when the one before ends");
            }
        }
        // The joint prefill of five prompts takes longer than one alone.
        let alone = simulate(&cfg, &VirtualLoad::closed_loop(same(10, 200, 50), 1)).unwrap();
        assert!(first_ttft > alone.records[9].ttft().unwrap());

        // Where a wave's prompts need two steps the engine decodes the
        // early requests while the later ones prefill, so they end a step
        // apart; the real loop's first wave did not (its early two waited).
        let mut small = cfg.clone();
        small.max_num_batched_tokens = 600;
        let run = simulate(&small, &VirtualLoad::closed_loop(same(5, 200, 50), 5)).unwrap();
        let ends: std::collections::BTreeSet<Duration> = run.records.iter().map(|r| r.end).collect();
        assert!(ends.len() > 1, "a wave prefilled in two steps ends split: {ends:?}");
    }

    #[test]
    fn a_ramp_up_opens_the_users_one_by_one() {
        let cfg = h100_8b();
        let mut load = VirtualLoad::closed_loop(same(8, 300, 200), 4);
        load.plan.ramp_up = Duration::from_millis(400);
        let run = simulate(&cfg, &load).unwrap();
        let first: Vec<Duration> = run.records[..4].iter().map(|r| r.sent).collect();
        assert_eq!(first, [0, 100, 200, 300].map(Duration::from_millis));
        // Later requests still go the moment a slot frees.
        let first_end = run.records[..4].iter().map(|r| r.end).min().unwrap();
        assert_eq!(run.records[4].sent, first_end);
    }

    /// What a live bench against `serve --speed S` meets (docs/simulator.md,
    /// "At `--speed` S the client is not sped up"): a closed loop's users
    /// send as answers end, on the engine's steps, so a request reaching the
    /// engine later (here its front end longer by `d`, as S times a live
    /// client's wall-clock turn is) either still makes the step it made, and
    /// its TTFT does not move, or comes after that step began and waits it
    /// out: TTFT moves by a whole step, not by `d`.
    #[test]
    fn a_closed_loop_s_requests_reaching_the_engine_later_wait_whole_steps() {
        let ttft_with = |d_ms: f64| {
            let mut cfg = h100_8b();
            cfg.calibration.frontend_overhead_ms += d_ms;
            let mut load = VirtualLoad::closed_loop(same(160, 256, 64), 8);
            load.plan.ramp_up = Duration::from_millis(600);
            let run = simulate(&cfg, &load).unwrap();
            let ttft = mean_ms(run.records.iter().filter(|r| !r.warmup).filter_map(|r| r.ttft()));
            let mut itl: Vec<f64> =
                run.records.iter().flat_map(|r| r.chunk_gaps()).map(|g| g.as_secs_f64() * 1e3).collect();
            itl.sort_by(f64::total_cmp);
            (ttft, itl[itl.len() / 2])
        };
        let (base, step) = ttft_with(0.0);
        let moved: Vec<f64> = [0.5, 1.0, 2.0, 4.0, 8.0].iter().map(|&d| ttft_with(d).0 - base).collect();
        // Within the time left before the step, next to nothing moves (0.03
        // and 0.05 ms: a few requests' neighbours)...
        assert!(moved[..2].iter().all(|m| m.abs() < 0.1), "{moved:?} (step {step} ms)");
        // ...and past it, a whole step (7.9 to 8.3 ms of 8.3), whatever the
        // delay within a step.
        for m in &moved[2..] {
            assert!((m - step).abs() < 0.1 * step, "{moved:?} (step {step} ms)");
        }
    }

    #[test]
    fn scheduling_a_step_ahead_adds_about_a_step_to_ttft_under_load_and_nothing_alone() {
        let run = |users: u32, ahead: bool| {
            let mut cfg = h100_8b();
            cfg.async_scheduling = ahead;
            let mut load = VirtualLoad::closed_loop(same(40 * users as usize, 512, 128), users);
            load.plan.ramp_up = Duration::from_millis(300);
            let run = simulate(&cfg, &load).unwrap();
            let kept = || run.records.iter().filter(|r| !r.warmup);
            let ttft = mean_ms(kept().filter_map(|r| r.ttft()));
            let mut itl: Vec<f64> = kept().flat_map(|r| r.chunk_gaps()).map(|g| g.as_secs_f64() * 1e3).collect();
            itl.sort_by(f64::total_cmp);
            (ttft, itl[itl.len() / 2], mean_tpot(&run))
        };
        // Alone, every request finds the engine idle: no step to wait for.
        let (alone, _, _) = run(1, false);
        let (alone_ahead, _, _) = run(1, true);
        assert!((alone_ahead - alone).abs() < 1e-6, "{alone_ahead} against {alone} ms");
        // Under load a request reaches a busy engine and sits out the step
        // already chosen: about one decode step more (a step's length varies
        // with what it holds), the decode itself unchanged.
        let (ttft, step, tpot) = run(16, false);
        let (ttft_ahead, _, tpot_ahead) = run(16, true);
        let added = ttft_ahead - ttft;
        assert!(added > 0.5 * step && added < 2.0 * step, "{added} ms added, a step {step} ms");
        assert!((tpot_ahead / tpot - 1.0).abs() < 0.05, "TPOT {tpot_ahead} against {tpot} ms");
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
        capped.plan.users = Some(2);
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
        cfg.gpu_memory_utilization = Some(0.95);
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
        let mut load = VirtualLoad::closed_loop(sessions(2, 3), 2);
        load.plan.duration = Some(stop);
        let cut = simulate(&cfg, &load).unwrap();
        let turns: Vec<u32> = cut.records.iter().map(|r| r.session.unwrap().turn).collect();
        assert_eq!(turns, [1, 2, 1, 2]);
        // Turns out of order are refused.
        let mut bad = sessions(1, 2);
        bad.swap(0, 1);
        let e = simulate(&cfg, &VirtualLoad::burst(bad)).unwrap_err().to_string();
        assert!(e.contains("one after another"), "{e}");
    }

    /// A conversation sent again (a dataset's, its second time round) opens
    /// with the question it opened with before, which the cache serves but
    /// for its last block (a prompt's last token is always computed); its
    /// answers are its own, so its later turns find their own history.
    /// Sessions opening with other prompts share nothing.
    #[test]
    fn a_conversation_sent_again_shares_its_opening_question_alone() {
        // Sessions 0 and 2 open with prompt 7, session 1 with prompt 8: one
        // user, so each runs after the one before.
        let mut requests = sessions(3, 2);
        for r in &mut requests {
            r.prompt = Some(if r.turn.unwrap().session == 1 { 8 } else { 7 });
        }
        let run = simulate(&h100_8b(), &VirtualLoad::closed_loop(requests, 1)).unwrap();
        let cached = |s: u64, t: u32| {
            let r = run.records.iter().find(|r| r.session == Some(SessionTurn { id: s, turn: t, turns: 2 }));
            r.unwrap().counts.usage_cached_prompt
        };
        assert_eq!(cached(0, 1), Some(0));
        assert_eq!(cached(1, 1), Some(0), "another opening question");
        assert_eq!(cached(2, 1), Some(512 - 16), "the question but its last block");
        // Each second turn: its own first turn and answer, as before.
        for s in 0..3 {
            assert_eq!(cached(s, 2), Some((512 + 63) / 16 * 16), "session {s}");
        }
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

    /// Records that keep their first and last chunks only give every
    /// figure but the chunk gaps as the full ones do: the same TTFT, TPOT,
    /// E2E, counts and outcome (a request given up on, and one cut by the
    /// run's end, with what they had received), and `streamed` sums the
    /// tokens the full chunks held at each time.
    #[test]
    fn records_of_their_ends_only_keep_every_figure_but_the_gaps() {
        use goodput_core::analysis::metrics::RequestMetrics;
        let mut requests = same(40, 256, 64);
        requests[3].give_up_after = Some(Duration::from_millis(120));
        requests[5].output_tokens = 1;
        let mut load = VirtualLoad::open_loop(requests, constant_rate(40, 20.0));
        load.plan.duration = Some(Duration::from_millis(1500));
        load.plan.grace = Some(Duration::ZERO);
        let full = simulate(&h100_8b(), &load).unwrap();
        let ends = simulate(&h100_8b(), &VirtualLoad { ends_only: true, ..load }).unwrap();
        assert!(full.streamed.is_empty() && !ends.streamed.is_empty());
        assert_eq!(full.records.len(), ends.records.len());
        let cut = full.records.iter().filter(|r| r.outcome == Outcome::Cancelled).count();
        assert!(cut >= 2 && full.records.iter().any(|r| r.abandoned), "a give-up and the run's cut: {cut}");
        for (f, e) in full.records.iter().zip(&ends.records) {
            assert!(e.chunks.len() <= 2, "{}", e.id);
            assert_eq!(
                (f.ttft(), f.tpot(), f.end, f.output_tokens, f.counts.chunks, &f.outcome, f.abandoned),
                (e.ttft(), e.tpot(), e.end, e.output_tokens, e.counts.chunks, &e.outcome, e.abandoned),
                "request {}",
                f.id
            );
            let sum = |r: &RequestRecord| r.chunks.iter().map(|c| u64::from(c.tokens)).sum::<u64>();
            assert_eq!(sum(f), sum(e), "request {}", f.id);
        }
        let mut by_time = std::collections::BTreeMap::<Duration, u64>::new();
        for c in full.records.iter().flat_map(|r| r.chunks.iter()) {
            *by_time.entry(c.t).or_default() += u64::from(c.tokens);
        }
        assert_eq!(by_time.into_iter().collect::<Vec<_>>(), ends.streamed);
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
    fn the_run_s_end_cancels_what_is_in_flight_and_sends_nothing_after_it() {
        // Requests of 500 tokens (about 4 s each alone) every 100 ms; the run
        // ends at 1 s: those sent by then are cancelled at exactly 1 s, with
        // the tokens they had, and not as abandoned; none is sent at or after it.
        let end = Duration::from_secs(1);
        let ends = |mut load: VirtualLoad| {
            load.plan.duration = Some(end);
            load.plan.grace = Some(Duration::ZERO);
            load
        };
        let load = ends(VirtualLoad::open_loop(same(20, 256, 500), constant_rate(20, 10.0)));
        let run = simulate(&h100_8b(), &load).unwrap();
        assert_eq!(run.records.len(), 10, "sent at 0, 0.1, … 0.9 s");
        for r in &run.records {
            assert!(r.sent < end);
            assert_eq!((&r.outcome, r.abandoned, r.end), (&Outcome::Cancelled, false, end), "{}", r.id);
            assert!(r.chunks.iter().all(|c| c.t <= end));
            assert_eq!(r.output_tokens, r.chunks.len() as u64);
        }
        assert!(run.records[0].output_tokens > 0, "the first had begun to answer");
        // A client's own earlier give-up is still its own.
        let mut requests = same(2, 256, 500);
        requests[0].give_up_after = Some(Duration::from_millis(300));
        let load = ends(VirtualLoad::open_loop(requests, constant_rate(2, 10.0)));
        let run = simulate(&h100_8b(), &load).unwrap();
        assert!(run.records[0].abandoned && run.records[0].end == Duration::from_millis(300));
        assert!(!run.records[1].abandoned && run.records[1].end == end);
    }

    #[test]
    fn users_join_and_leave_at_their_steps_and_the_end_of_sending_ends_a_closed_loop() {
        // 2 users, 4 from 2 s, 1 from 5 s; sending ends at 8 s.
        let secs = Duration::from_secs;
        let mut load = VirtualLoad::closed_loop(same(10_000, 256, 100), 2);
        load.plan.user_steps = vec![(secs(2), 4), (secs(5), 1)];
        load.plan.duration = Some(secs(8));
        let run = simulate(&h100_8b(), &load).unwrap();
        let in_flight_at = |t: Duration| run.records.iter().filter(|r| r.sent <= t && r.end > t).count();
        let longest = run.records.iter().map(|r| r.end - r.sent).max().unwrap();
        assert!(longest < secs(2), "{longest:?}");
        let most = |from: Duration, to: Duration| {
            run.records.iter().map(|r| r.sent).filter(|&t| t >= from && t < to).map(in_flight_at).max().unwrap()
        };
        assert_eq!(most(Duration::ZERO, secs(2)), 2);
        assert_eq!(most(secs(2), secs(5)), 4);
        assert_eq!(most(secs(5) + longest, secs(8)), 1);
        assert!(run.records.iter().all(|r| r.sent < secs(8) && r.outcome.is_success()));
        assert!(run.records.len() < 10_000, "sending ended at 8 s");
        // A user who joins sends at once.
        assert!(run.records.iter().any(|r| r.sent == secs(2)));
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
                    prompt: None,
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

    /// A prompt sent again (a dataset's entry on the run's second pass,
    /// `--repeat`'s copy) is served from the prefix cache but for its
    /// last block; other prompts of the same length are not.
    #[test]
    fn a_prompt_sent_again_is_served_from_the_prefix_cache() {
        // 20 prompts, each sent twice, a pass apart.
        let requests = |again: bool| -> Vec<VirtualRequest> {
            (0..40u64)
                .map(|i| VirtualRequest {
                    prompt: again.then_some(i % 20),
                    ..VirtualRequest::new(2048 + (i % 20) as u32 * 16, 16)
                })
                .collect()
        };
        let run = |requests: Vec<VirtualRequest>| {
            let arrivals = constant_rate(requests.len(), 5.0);
            simulate(&h100_8b(), &VirtualLoad::open_loop(requests, arrivals)).unwrap()
        };
        let (again, unique) = (run(requests(true)), run(requests(false)));
        let ttft = |r: &SimRun, pass: std::ops::Range<usize>| {
            r.records[pass].iter().map(|r| r.ttft().unwrap().as_secs_f64()).sum::<f64>() / 20.0
        };
        // The first pass alike; the second from the cache.
        assert!((ttft(&again, 0..20) / ttft(&unique, 0..20) - 1.0).abs() < 0.02);
        assert!(
            ttft(&again, 20..40) < 0.5 * ttft(&unique, 20..40),
            "{} {}",
            ttft(&again, 20..40),
            ttft(&unique, 20..40)
        );
        assert_eq!(unique.engine.prefix_cache_hits, 0);
        // About half the prompt tokens, those of the second pass less their last blocks.
        let rate = again.engine.prefix_cache_hit_rate.unwrap();
        assert!(rate > 0.45 && rate < 0.5, "{rate}");
    }

    #[test]
    fn step_time_variation_is_seeded_and_keeps_the_mean() {
        let load = |seed: u64| VirtualLoad { seed, ..VirtualLoad::closed_loop(same(64, 256, 64), 16) };
        let plain = simulate(&h100_8b(), &load(1)).unwrap();
        let mut cfg = h100_8b();
        cfg.calibration.step_time_cv = 0.05;
        let a = simulate(&cfg, &load(1)).unwrap();
        // The same seed gives the same run; another seed another one.
        assert_eq!(simulate(&cfg, &load(1)).unwrap(), a);
        assert_ne!(simulate(&cfg, &load(2)).unwrap().records, a.records);
        assert_ne!(a.records, plain.records);
        // Gaps between tokens vary around the roofline's, not above it.
        let (noisy, exact) = (mean_tpot(&a), mean_tpot(&plain));
        assert!((noisy / exact - 1.0).abs() < 0.03, "{noisy} vs {exact}");
        let gaps: Vec<f64> = a.records[20].chunks.pairs().map(|(x, y)| (y.t - x.t).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!(sd / mean > 0.02 && sd / mean < 0.10, "cv {}", sd / mean);
        cfg.calibration.step_time_cv = 0.6;
        assert!(simulate(&cfg, &load(1)).unwrap_err().to_string().contains("step_time_cv"));
    }

    #[test]
    fn front_end_jitter_and_serial_work_spread_requests_sent_together() {
        let frontend = h100_8b().calibration.frontend_overhead();
        // Jitter: each request reaches the engine between the overhead and
        // the overhead plus the jitter after its send, by its number and seed.
        let mut cfg = h100_8b();
        cfg.calibration.frontend_jitter_ms = 40.0;
        for n in 0..200 {
            let d = cfg.calibration.frontend_delay(n, 7);
            assert!(d >= frontend && d < frontend + Duration::from_millis(40), "{d:?}");
            assert_eq!(d, cfg.calibration.frontend_delay(n, 7));
        }
        let spread: std::collections::BTreeSet<Duration> =
            (0..200).map(|n| cfg.calibration.frontend_delay(n, 7)).collect();
        assert!(spread.len() > 150);
        let burst = simulate(&cfg, &VirtualLoad::burst(same(8, 16, 4))).unwrap();
        let firsts: std::collections::BTreeSet<Duration> =
            burst.records.iter().map(|r| r.first_byte.unwrap()).collect();
        assert!(firsts.len() > 1, "a burst no longer prefills as one step");
        // Serial work: a burst reaches the engine one request at a time.
        let mut cfg = h100_8b();
        cfg.calibration.frontend_serial_us = 50_000.0;
        let run = simulate(&cfg, &VirtualLoad::burst(same(3, 16, 2))).unwrap();
        for (i, r) in run.records.iter().enumerate() {
            let reach = Duration::from_millis(50 * (i as u64 + 1));
            assert!(r.first_byte.unwrap() > reach && r.first_byte.unwrap() < reach + Duration::from_millis(40));
        }
        // A lone request's serial work is part of the overhead, not added to it.
        cfg.calibration.frontend_serial_us = 1_000.0;
        let alone = simulate(&cfg, &VirtualLoad::closed_loop(same(1, 16, 2), 1)).unwrap();
        let plain = simulate(&h100_8b(), &VirtualLoad::closed_loop(same(1, 16, 2), 1)).unwrap();
        assert_eq!(alone.records, plain.records);
    }

    #[test]
    fn front_end_work_per_output_token_caps_the_stream_and_spaces_a_steps_tokens() {
        // 200 users of short answers: the engine alone streams far more than
        // 10,000 tokens a second on an H100 (BF16).
        let load = || VirtualLoad::closed_loop(same(2000, 64, 100), 200);
        let free = simulate(&h100_8b(), &load()).unwrap();
        let mut cfg = h100_8b();
        cfg.calibration.frontend_serial_us_per_output_token = 100.0;
        let paced = simulate(&cfg, &load()).unwrap();
        let (fast, capped) = (output_throughput(&free), output_throughput(&paced));
        assert!(fast > 13_000.0, "{fast}");
        // One token every 100 µs at most, and near it: the front end is the
        // bottleneck, busy most of the time (not while the users' next
        // prompts prefill, nor in the last requests' drain).
        assert!(capped <= 10_000.0 && capped > 8_000.0, "{capped}");
        // Each user waits for the other decoding users' tokens before its
        // next: the gap is about the users times the work a token (a long
        // prefill step, slower than the front end, adds a little).
        let tpot = mean_tpot(&paced);
        assert!(tpot > 0.7 * 200.0 * 0.1 && tpot < 1.1 * 200.0 * 0.1, "{tpot}");
        // Tokens of one step reach their clients 100 µs apart, never together.
        let mut times: Vec<Duration> = paced.records.iter().flat_map(|r| r.chunks.iter().map(|c| c.t)).collect();
        times.sort();
        assert!(times.windows(2).all(|w| w[1] - w[0] >= Duration::from_micros(100)));
        // The front end's work is counted: 100 µs each of the 200,000 tokens.
        assert_eq!(paced.engine.frontend_busy, Duration::from_micros(100 * 200_000));
        assert!(free.engine.frontend_busy.is_zero());
        // A lone user: its tokens come 100 µs after the steps that made them.
        let one = VirtualLoad::closed_loop(same(1, 64, 20), 1);
        let (a, b) = (simulate(&h100_8b(), &one).unwrap(), simulate(&cfg, &one).unwrap());
        for (x, y) in a.records[0].chunks.iter().zip(b.records[0].chunks.iter()) {
            assert_eq!(y.t, x.t + Duration::from_micros(100));
        }
        cfg.calibration.frontend_serial_us_per_output_token = -1.0;
        assert!(cfg.calibration.check().unwrap_err().to_string().contains("frontend_serial_us_per_output_token"));
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

    #[test]
    fn two_replicas_double_the_throughput_at_saturation() {
        // 512 users on replicas of at most 64 sequences: every replica is
        // full all the time, so two serve about twice as fast as one.
        let mut cfg = h100_8b();
        cfg.max_num_seqs = Some(64);
        let tput = |dp: u32| {
            let mut c = cfg.clone();
            c.dp = dp;
            let run = simulate(&c, &VirtualLoad::closed_loop(same(2048, 256, 64), 512)).unwrap();
            assert_eq!(run.engine.replicas.len(), dp as usize);
            (output_throughput(&run), run)
        };
        let ((one, _), (two, run)) = (tput(1), tput(2));
        let ratio = two / one;
        assert!((1.7..=2.3).contains(&ratio), "{one} → {two}: {ratio}");
        // Least-loaded (the default) splits the requests about evenly.
        let r: Vec<u64> = run.engine.replicas.iter().map(|r| r.requests).collect();
        assert!(r[0].abs_diff(r[1]) < 64, "{r:?}");
        assert_eq!(r.iter().sum::<u64>(), 2048);
        // Both replicas' GPUs are provisioned and drew power.
        assert_eq!(run.engine.provisioned_w, 2.0 * cfg.gpu.tdp_w);
    }

    /// A well-mixed draw (splitmix64's finaliser): not a Weyl sequence, which
    /// would cycle through the prefixes in LRU's worst order.
    fn draw(i: u64) -> u64 {
        let mut x = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// 1,024 requests of 64 tokens after one of 32 system prompts of 2,048
    /// tokens (128 blocks each), drawn at random, 16 tokens out each.
    fn thirty_two_prompts() -> Vec<VirtualRequest> {
        (0..1024u64)
            .map(|i| VirtualRequest {
                shared_prefix: Some(SharedPrefix { id: 1 + draw(i) % 32, len: 2048 }),
                ..VirtualRequest::new(2048 + 64, 16)
            })
            .collect()
    }

    #[test]
    fn prefix_aware_routing_finds_more_of_the_prefixes_than_round_robin() {
        // 32 system prompts of 2,048 tokens (128 blocks each), requests
        // drawing one at random; four replicas whose caches hold about 12
        // prompts' blocks each, 32 requests a second. Round-robin shows
        // every replica every prompt, and their caches thrash; prefix-aware
        // keeps each prompt on one replica, whose cache holds its share. (A
        // prompt it has not seen goes to the least-loaded replica, the first
        // on a tie, as the current routers send it: at 16 a second the
        // fourth replica is never needed.)
        let requests = thirty_two_prompts();
        let run = |router: RouterPolicy| {
            let mut cfg = h100_8b();
            cfg.dp = 4;
            cfg.router = router;
            cfg.num_gpu_blocks_override = Some(1600);
            let load = VirtualLoad::open_loop(requests.clone(), constant_rate(requests.len(), 32.0));
            simulate(&cfg, &load).unwrap()
        };
        let (rr, pa) = (run(RouterPolicy::RoundRobin), run(RouterPolicy::PrefixAware));
        let (rr_hits, pa_hits) = (rr.engine.prefix_cache_hit_rate.unwrap(), pa.engine.prefix_cache_hit_rate.unwrap());
        assert!(pa_hits > rr_hits + 0.2, "round-robin {rr_hits:.3}, prefix-aware {pa_hits:.3}");
        // Fewer prefill tokens computed: a lower mean TTFT.
        assert!(mean_ttft(&pa) < mean_ttft(&rr), "{} vs {}", mean_ttft(&pa), mean_ttft(&rr));
        // Every replica served some of the load.
        assert!(pa.engine.replicas.iter().all(|r| r.requests > 100), "{:?}", pa.engine.replicas);
    }

    /// Disaggregated, each pool's router picks by `--router` too: the same
    /// prompts over four prefill instances at 64 requests a second,
    /// prefix-aware keeps each prompt on one, whose cache holds its share,
    /// where round-robin shows every instance every prompt, and
    /// least-loaded (the default) sends each to the idlest, the first on a
    /// tie. (At 16 a second the first instance is idle again by each
    /// arrival, and prefix-aware, whose misses go to the least loaded,
    /// sends it every request, as least-loaded does.)
    #[test]
    fn a_prefix_aware_router_finds_more_of_the_prefixes_on_the_prefill_pool() {
        let requests = thirty_two_prompts();
        let run = |router: RouterPolicy| {
            let mut cfg = h100_8b();
            (cfg.router, cfg.num_gpu_blocks_override) = (router, Some(1600));
            let load = VirtualLoad::open_loop(requests.clone(), constant_rate(requests.len(), 64.0));
            run_pools(&cfg, "4:1", &load).0
        };
        let hits = |r: &SimRun| r.engine.prefix_cache_hit_rate.unwrap();
        let (ll, rr, pa) =
            (run(RouterPolicy::LeastLoaded), run(RouterPolicy::RoundRobin), run(RouterPolicy::PrefixAware));
        assert!(
            hits(&pa) > hits(&ll) + 0.2 && hits(&pa) > hits(&rr) + 0.2,
            "{} {} {}",
            hits(&ll),
            hits(&rr),
            hits(&pa)
        );
        assert!(mean_ttft(&pa) < mean_ttft(&ll), "{} vs {}", mean_ttft(&pa), mean_ttft(&ll));
        // Every prefill instance served some of the load, each request once.
        assert!(pa.engine.replicas[..4].iter().all(|r| r.requests > 50), "{:?}", pa.engine.replicas);
        assert_eq!(pa.engine.replicas[..4].iter().map(|r| r.requests).sum::<u64>(), 1024);
    }

    /// Power-of-two on loads polled every 10 s (SGLang's router's default)
    /// piles each interval's requests on the replicas that were light at
    /// the poll: at the same rate the busiest replica's share of the work
    /// in flight is higher, and so are the waits, than on live counts.
    #[test]
    fn power_of_two_on_polled_loads_piles_requests_between_polls() {
        let requests = same(1200, 1024, 256);
        let run = |poll: Option<f64>| {
            let mut cfg = h100_8b();
            cfg.dp = 4;
            cfg.router = RouterPolicy::PowerOfTwo;
            cfg.router_poll_s = poll;
            cfg.validate().unwrap();
            let load = VirtualLoad::open_loop(requests.clone(), constant_rate(requests.len(), 60.0));
            simulate(&cfg, &load).unwrap()
        };
        let (live, polled) = (run(None), run(Some(10.0)));
        let p99 = |r: &SimRun| {
            let mut t: Vec<f64> = r.records.iter().filter_map(|x| x.ttft()).map(|d| d.as_secs_f64()).collect();
            t.sort_by(f64::total_cmp);
            t[t.len() * 99 / 100]
        };
        assert!(p99(&polled) > 1.5 * p99(&live), "polled {:.3} s, live {:.3} s", p99(&polled), p99(&live));
        assert!(mean_ttft(&polled) > mean_ttft(&live));
        // Every request still ends, on some replica.
        assert_eq!(polled.records.iter().filter(|r| r.ttft().is_some()).count(), requests.len());
        // A poll on another router is refused, as is a poll of no time.
        let mut cfg = h100_8b();
        cfg.dp = 2;
        cfg.router_poll_s = Some(10.0);
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("--router power-of-two"), "{err}");
        cfg.router = RouterPolicy::PowerOfTwo;
        cfg.router_poll_s = Some(0.0);
        assert!(cfg.validate().unwrap_err().to_string().contains("(0, 3600]"));
    }

    fn disaggregated(cfg: &EngineConfig, pools: &str) -> EngineConfig {
        let mut c = cfg.clone();
        c.pd = Some(crate::engine::Disaggregation::parse(pools).unwrap());
        c
    }

    /// `cfg` disaggregated into `pools`, checked, and its run of `load`.
    fn run_pools(cfg: &EngineConfig, pools: &str, load: &VirtualLoad) -> (SimRun, EngineConfig) {
        let c = disaggregated(cfg, pools);
        c.validate().unwrap();
        (simulate(&c, load).unwrap(), c)
    }

    /// The median gap between two chunks, s.
    fn median_itl(run: &SimRun) -> f64 {
        let g = itl_gaps(run);
        g[g.len() / 2].as_secs_f64()
    }

    /// Every gap between two chunks of every record, sorted.
    fn itl_gaps(run: &SimRun) -> Vec<Duration> {
        let mut g: Vec<Duration> = run.records.iter().flat_map(|r| r.chunks.pairs().map(|(a, b)| b.t - a.t)).collect();
        g.sort();
        g
    }

    #[test]
    fn disaggregation_takes_the_prefill_stalls_out_of_itl() {
        // Long prompts (6,000 tokens) arriving every 400 ms while earlier
        // requests decode 300 tokens: colocated, every arrival's prefill
        // runs in a step beside the decodes, and their next token waits for
        // it; disaggregated, the decode instance's steps carry decodes only.
        let cfg = h100_8b();
        let load = VirtualLoad::open_loop(same(40, 6000, 300), constant_rate(40, 2.5));
        let colo = simulate(&cfg, &load).unwrap();
        let pd = simulate(&disaggregated(&cfg, "1:1"), &load).unwrap();
        let (c, d) = (itl_gaps(&colo), itl_gaps(&pd));
        let q = |g: &[Duration], p: f64| g[((g.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
        // A 6,000-token prefill step: what the colocated stalls last.
        let prefill = Roofline::new(&cfg).unwrap().step_time(&{
            let mut b = crate::engine::BatchShape::default();
            b.add_prefill(0, 6000);
            b
        });
        let prefill_ms = prefill.as_secs_f64() * 1e3;
        assert!(q(&c, 1.0) >= prefill_ms, "colocated max ITL {} < a prefill step {prefill_ms}", q(&c, 1.0));
        // Disaggregated, the longest gap is a decode step: within 1.5× of
        // the median gap, and far below a prefill step.
        let median = q(&d, 0.5);
        assert!(q(&d, 1.0) <= 1.5 * median, "max {} vs median {median}", q(&d, 1.0));
        assert!(q(&d, 0.99) <= 1.5 * median && q(&d, 1.0) < 0.25 * prefill_ms, "{} {}", q(&d, 0.99), q(&d, 1.0));
        assert!(q(&c, 1.0) > 4.0 * q(&d, 1.0), "colocated {} vs {}", q(&c, 1.0), q(&d, 1.0));
        // Every request done, every token once; the prefill instances' one
        // token a request is not output; one transfer a request.
        assert!(pd.records.iter().all(|r| r.outcome.is_success() && r.chunks.len() == 300));
        assert_eq!(pd.engine.generation_tokens, 40 * 300);
        assert_eq!(pd.engine.kv_transfers, 40);
        assert_eq!(pd.engine.replicas.iter().map(|r| r.requests).collect::<Vec<_>>(), vec![40, 40]);
        // Both pools' GPUs are provisioned.
        assert_eq!(pd.engine.provisioned_w, 2.0 * cfg.gpu.tdp_w);
    }

    #[test]
    fn disaggregated_ttft_at_one_user_is_colocated_ttft_plus_the_transfer_and_a_decode_step() {
        let cfg = h100_8b();
        let load = VirtualLoad::closed_loop(same(3, 2000, 16), 1);
        let colo = simulate(&cfg, &load).unwrap();
        for (pools, gbps) in [("1:1", None), ("1:1", Some(10.0)), ("4:5", None)] {
            let mut c = disaggregated(&cfg, pools);
            c.pd.as_mut().unwrap().link_gbps = gbps;
            let link = crate::engine::KvLink::new(&c).unwrap();
            // 2,000 tokens × 131,072 bytes over the link, and its latency.
            let transfer = link.transfer_time(2000);
            let pd = simulate(&c, &load).unwrap();
            // The decode instance's first step: the last prompt token over
            // the other 1,999, a decode.
            let mut shape = crate::engine::BatchShape::default();
            shape.add_prefill(1999, 1);
            let decode_step = Roofline::new(&c).unwrap().step_time(&shape);
            for (a, b) in pd.records.iter().zip(&colo.records) {
                let (ttft, base) = (a.ttft().unwrap(), b.ttft().unwrap());
                assert!(ttft >= base + transfer, "{pools} {gbps:?}: {ttft:?} < {base:?} + {transfer:?}");
                let extra = ttft - base - transfer;
                assert!(extra.abs_diff(decode_step) < Duration::from_micros(2), "{extra:?} vs {decode_step:?}");
            }
            assert!((pd.engine.kv_transfer_s - 3.0 * transfer.as_secs_f64()).abs() < 1e-6);
        }
        // At 10 Gb/s the transfer is 210 ms: most of TTFT.
        let mut slow = disaggregated(&cfg, "1:1");
        slow.pd.as_mut().unwrap().link_gbps = Some(10.0);
        let t = crate::engine::KvLink::new(&slow).unwrap().transfer_time(2000).as_secs_f64();
        assert!((t - (2000.0 * 131_072.0 * 8.0 / 10e9 + 10e-6)).abs() < 1e-9);
    }

    /// Under SGLang's scheduler the decode instance reserves first and
    /// the first token is the prefill's, sent once the KV has landed with
    /// no forward: at one user, TTFT is the colocated TTFT and the transfer,
    /// with no decode step (vLLM's decode instance adds one).
    #[test]
    fn sglangs_disaggregated_ttft_at_one_user_is_colocated_ttft_plus_the_transfer() {
        let mut cfg = h100_8b();
        cfg.scheduler = crate::engine::SchedulerPolicy::Sglang;
        let load = VirtualLoad::closed_loop(same(3, 2000, 16), 1);
        let colo = simulate(&cfg, &load).unwrap();
        let (pd, c) = run_pools(&cfg, "1:1", &load);
        let transfer = crate::engine::KvLink::new(&c).unwrap().transfer_time(2000);
        for (a, b) in pd.records.iter().zip(&colo.records) {
            let (ttft, base) = (a.ttft().unwrap(), b.ttft().unwrap());
            assert!(ttft.abs_diff(base + transfer) < Duration::from_micros(2), "{ttft:?} vs {base:?} + {transfer:?}");
            assert!(a.outcome.is_success() && a.chunks.len() == 16);
        }
        assert_eq!((pd.engine.kv_transfers, pd.engine.generation_tokens), (3, 3 * 16));
    }

    /// SGLang's prefill instance sends each chunk's KV as the chunk ends
    /// (`send_kv_chunk`), so a long prompt crosses while its later chunks
    /// are computed: on a link that keeps up, TTFT at one user is the
    /// colocated TTFT plus the last chunk's transfer alone, where the whole
    /// prompt's had crossed after the prefill. On a link slower than the
    /// chunks, the pieces queue behind each other, and TTFT lies between.
    /// Under DP attention a step waits for its slowest rank. Dealt in turn
    /// (SGLang's default), an alternating burst of long and short prompts
    /// puts every long one on the first rank, whose attention then sets
    /// every step; `total-tokens` sends each request to the rank holding
    /// the fewest tokens, and the decodes run faster.
    #[test]
    fn sglangs_total_tokens_balance_evens_the_ranks_of_dp_attention() {
        let fp8 = crate::engine::catalog::Precision::Fp8;
        let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", fp8).unwrap();
        (cfg.tp, cfg.ep, cfg.dp) = (1, 2, 2);
        (cfg.scheduler, cfg.mixed_batches) = (crate::engine::SchedulerPolicy::Sglang, false);
        let requests = (0..64).map(|i| VirtualRequest::new(if i % 2 == 0 { 8000 } else { 200 }, 256)).collect();
        let load = VirtualLoad::burst(requests);
        let tpot = |method: &str| {
            let mut c = cfg.clone();
            c.load_balance = method.parse().unwrap();
            c.validate().unwrap();
            let run = simulate(&c, &load).unwrap();
            assert!(run.records.iter().all(|r| r.outcome.is_success()));
            mean_tpot(&run)
        };
        let (in_turn, by_tokens) = (tpot("auto"), tpot("total-tokens"));
        // 20.5 against 30.1 ms when written.
        assert!(by_tokens < 0.9 * in_turn, "mean TPOT {by_tokens:.2} ms by tokens, {in_turn:.2} in turn");
    }

    /// In front of a dense model's replicas (`--dp 2`, no DP attention)
    /// SGLang's controller takes the router's place: the same alternating
    /// burst, dealt in turn, puts every long prompt on the first replica;
    /// by tokens it evens them out, and the last request ends far sooner.
    #[test]
    fn sglangs_controller_picks_a_dense_models_replicas_by_its_method() {
        let mut cfg = h100_8b();
        cfg.dp = 2;
        (cfg.scheduler, cfg.mixed_batches) = (crate::engine::SchedulerPolicy::Sglang, false);
        let requests = (0..64).map(|i| VirtualRequest::new(if i % 2 == 0 { 8000 } else { 200 }, 256)).collect();
        let load = VirtualLoad::burst(requests);
        let run = |method: &str| {
            let mut c = cfg.clone();
            c.load_balance = method.parse().unwrap();
            c.validate().unwrap();
            assert_eq!(c.dense_controller().is_some(), method != "auto", "{method}");
            let run = simulate(&c, &load).unwrap();
            assert!(run.records.iter().all(|r| r.outcome.is_success()));
            run
        };
        let (in_turn, by_tokens) = (run("round-robin"), run("total-tokens"));
        let last = |r: &SimRun| r.records.iter().map(|r| r.end).max().unwrap().as_secs_f64();
        let (a, b) = (last(&in_turn), last(&by_tokens));
        // 7.96 against 13.46 s when written (each replica steps on its own,
        // so the mean TPOT hardly moves: 22.6 against 22.9 ms).
        assert!(b < 0.9 * a, "the last request ends at {b:.2} s by tokens, {a:.2} in turn");
        // The controller is named in the router's place.
        let mut c = cfg.clone();
        c.load_balance = crate::engine::LoadBalance::TotalTokens;
        let doc = goodput_core::doc::config::EngineSettings::from(&c);
        assert_eq!((doc.router, doc.load_balance_method.as_deref()), (None, Some("total-tokens")));
        assert!(c.balances_replicas());
        // One replica has none to pick.
        c.dp = 1;
        assert!(c.validate().unwrap_err().to_string().contains("several replicas (--dp 2"));
    }

    /// vLLM's own balancer (`--internal-lb`) in front of a dense model's
    /// replicas reads their counts every 100 ms and counts what it sends
    /// between: short requests arriving 50 ms apart, each done before the
    /// next, go to the replicas in turn, where a router on live counts sends
    /// each to the first (both idle at each arrival). So they do with two
    /// front ends (vLLM's default here), each starting a tie at its own
    /// replica.
    #[test]
    fn vllms_internal_balancer_reads_the_replicas_counts_every_100_ms() {
        let mut cfg = h100_8b();
        cfg.dp = 2;
        let n = 40;
        let arrivals = (0..n).map(|i| Duration::from_millis(50 * i)).collect();
        let load = VirtualLoad::open_loop(same(n as usize, 100, 2), arrivals);
        let shares = |internal: bool, fronts: Option<u32>| {
            let mut c = cfg.clone();
            c.internal_lb = internal;
            c.api_server_count = fronts;
            c.validate().unwrap();
            let run = simulate(&c, &load).unwrap();
            assert!(run.records.iter().all(|r| r.outcome.is_success()));
            // Each ends before the next arrives.
            assert!(run.records.iter().all(|r| r.end - r.sent < Duration::from_millis(50)));
            run.engine.replicas.iter().map(|r| r.requests).collect::<Vec<_>>()
        };
        assert_eq!(shares(false, None), [n, 0], "live least-loaded: the first of two idle replicas");
        assert_eq!(shares(true, Some(1)), [n / 2, n / 2], "vLLM's: in turn, between reads of counts");
        assert_eq!(shares(true, None), [n / 2, n / 2], "two front ends, each its own replica first");
        // Named in the router's place; refused where it has no replicas to
        // balance, or beside another router.
        let mut c = cfg.clone();
        c.internal_lb = true;
        // vLLM's default: one API server a replica.
        assert_eq!(c.dense_controller(), Some(crate::engine::ReplicaBalancer::Vllm { api_servers: 2 }));
        let doc = goodput_core::doc::config::EngineSettings::from(&c);
        assert!(doc.router.is_none() && doc.internal_lb && doc.api_server_count == Some(2));
        c.api_server_count = Some(1);
        assert_eq!(c.dense_controller(), Some(crate::engine::ReplicaBalancer::Vllm { api_servers: 1 }));
        let mut front_ends_alone = cfg.clone();
        front_ends_alone.api_server_count = Some(1);
        let e = front_ends_alone.validate().unwrap_err().to_string();
        assert!(e.contains("--api-server-count 1") && e.contains("add --internal-lb"), "{e}");
        c.api_server_count = Some(0);
        assert!(c.validate().unwrap_err().to_string().contains("must lie in 1..="));
        c.api_server_count = None;
        for (change, says) in [
            (&(|c: &mut EngineConfig| c.dp = 1) as &dyn Fn(&mut EngineConfig), "there is one"),
            (&|c: &mut EngineConfig| c.router = crate::engine::RouterPolicy::RoundRobin, "--router round-robin"),
            (&|c: &mut EngineConfig| c.scheduler = crate::engine::SchedulerPolicy::Sglang, "--load-balance-method"),
        ] {
            let mut c = c.clone();
            change(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("--internal-lb") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn sglangs_prefill_instance_sends_each_chunks_kv_as_it_ends() {
        let mut cfg = h100_8b();
        cfg.scheduler = crate::engine::SchedulerPolicy::Sglang;
        cfg.max_num_batched_tokens = 2048;
        // 8,000 tokens: chunks of 2,048, 2,048, 2,048 and 1,856.
        let load = VirtualLoad::closed_loop(same(3, 8000, 16), 1);
        let colo = simulate(&cfg, &load).unwrap();
        let step = |cached, new| {
            Roofline::new(&cfg).unwrap().step_time(&{
                let mut b = crate::engine::BatchShape::default();
                b.add_prefill(cached, new);
                b
            })
        };
        let chunk_step = step(0, 2048);
        // From the first chunk's end to the prefill's: the other three steps.
        let after_first = step(2048, 2048) + step(4096, 2048) + step(6144, 1856);
        for gbps in [100.0, 10.0] {
            let mut c = disaggregated(&cfg, "1:1");
            c.pd.as_mut().unwrap().link_gbps = Some(gbps);
            let link = crate::engine::KvLink::new(&c).unwrap();
            let (last, whole) = (link.transfer_time(1856), link.transfer_time(8000));
            let pd = simulate(&c, &load).unwrap();
            for (a, b) in pd.records.iter().zip(&colo.records) {
                let (ttft, base) = (a.ttft().unwrap(), b.ttft().unwrap());
                assert!(a.outcome.is_success() && a.chunks.len() == 16);
                if link.transfer_time(2048) < chunk_step {
                    // 21 ms a chunk against a 2,048-token step of about 60.
                    assert!(ttft.abs_diff(base + last) < Duration::from_micros(2), "{ttft:?} vs {base:?} + {last:?}");
                } else {
                    // 215 ms a chunk: the link is busy from the first
                    // chunk's end on, carrying the four pieces (a latency
                    // each), and what the prefill took after that chunk is
                    // saved.
                    assert!(ttft > base + last + chunk_step && ttft < base + whole, "{gbps}: {ttft:?} {base:?}");
                    let saved = (base + whole + 3 * link.latency).saturating_sub(ttft);
                    assert!(saved.abs_diff(after_first) < Duration::from_micros(2), "{saved:?} vs {after_first:?}");
                }
            }
            // One transfer a request, timed from the prefill's end.
            assert_eq!(pd.engine.kv_transfers, 3);
        }
    }

    /// SGLang's decode instance reserves before the prefill, 512 decoding
    /// tokens a request: on a decode cache of 8,192 tokens, where five
    /// requests of 1,000 + 600 tokens fit whole, it retracts none; vLLM's
    /// admits the prefilled prompts as their blocks allow, eight, and
    /// preempts as their answers grow. Every request finishes either way,
    /// every token once.
    #[test]
    fn sglangs_decode_reservation_keeps_room_that_vllms_admission_does_not() {
        let mut cfg = h100_8b();
        cfg.num_gpu_blocks_override = Some(512);
        let load = VirtualLoad::closed_loop(same(64, 1000, 600), 32);
        let (vllm, _) = run_pools(&cfg, "1:1", &load);
        cfg.scheduler = crate::engine::SchedulerPolicy::Sglang;
        let (sglang, _) = run_pools(&cfg, "1:1", &load);
        for run in [&vllm, &sglang] {
            assert!(run.records.iter().all(|r| r.outcome.is_success() && r.chunks.len() == 600));
            assert_eq!(run.engine.generation_tokens, 64 * 600);
            assert_eq!(run.engine.kv_transfers, 64);
        }
        assert_eq!(sglang.engine.preemptions, 0);
        assert!(vllm.engine.preemptions > 0);
    }

    #[test]
    fn a_pool_of_its_own_tp_decodes_or_prefills_at_that_tp_and_counts_its_gpus() {
        // 24 users of 1,000-token prompts and 200-token answers, on two
        // one-GPU prefill instances and one decode instance.
        let cfg = h100_8b();
        let load = VirtualLoad::closed_loop(same(96, 1000, 200), 24);
        let run = |pools: &str| run_pools(&cfg, pools, &load);
        let (base, _) = run("2:1");
        let (wide_decode, c) = run("2:1xTP4");
        let (all_tp4, _) = run("2xTP4:1xTP4");
        let (wide_prefill, _) = run("2xTP4:1");
        // Every GPU counted: 2 × 1 + 1 × 4.
        assert_eq!(c.gpus(), 6);
        assert_eq!(wide_decode.engine.provisioned_w, 6.0 * cfg.gpu.tdp_w);
        assert!(wide_decode.records.iter().all(|r| r.outcome.is_success() && r.chunks.len() == 200));
        // The decode pool's TP sets the decode step: four GPUs read the
        // weights in parallel, so a decode step of the same batch is little
        // more than half as long (the step's fixed overheads, some 2 ms of
        // its 10, do not split), as fast as when every instance is TP 4 (the
        // decode instance's steps carry decodes only, whoever prefilled).
        let (b, w, a) = (median_itl(&base), median_itl(&wide_decode), median_itl(&all_tp4));
        assert!(w < 0.6 * b, "decode TP4 {w} vs TP1 {b}");
        assert!((w - a).abs() < 0.05 * a, "decode TP4 {w} vs every instance TP4 {a}");
        // The prefill pool's TP sets the prefill: a lower TTFT, and the
        // decode steps as they were.
        assert!(
            mean_ttft(&wide_prefill) < 0.8 * mean_ttft(&base),
            "{} vs {}",
            mean_ttft(&wide_prefill),
            mean_ttft(&base)
        );
        assert!((median_itl(&wide_prefill) - b).abs() < 0.05 * b, "{} vs {b}", median_itl(&wide_prefill));
        // The KV crosses at the smaller TP's share a GPU: one GPU's whole
        // KV from a TP1 prefill instance, half from TP2 into TP4.
        let per_gpu =
            |pools: &str| crate::engine::KvLink::new(&disaggregated(&cfg, pools)).unwrap().kv_bytes_per_token_per_gpu;
        assert_eq!(
            (per_gpu("2:1xTP4"), per_gpu("2xTP2:1xTP4"), per_gpu("2xTP4:1xTP2")),
            (131_072.0, 65_536.0, 65_536.0)
        );
        // The layout gauge names the decode pool's TP where it differs.
        assert!(c.parallel_info_metric().contains("tp=\"1\",pp=\"1\",dp=\"3\",ep=\"1\",ranks=\"1\",decode_tp=\"4\""));
        assert_eq!(disaggregated(&cfg, "2xTP2:1xTP2").parallel_info_metric(), "");
    }

    #[test]
    fn a_pool_of_its_own_ep_runs_groups_of_that_many_ranks_and_counts_their_gpus() {
        // A mixture of experts: one prefill instance, an expert-parallel
        // group of two ranks, and one decode instance of four ranks.
        let cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
        let load = VirtualLoad::closed_loop(same(64, 1000, 100), 32);
        let run = |pools: &str| run_pools(&cfg, pools, &load);
        let (split, c) = run("1xEP2:1xEP4");
        let (all_ep4, _) = run("1xEP4:1xEP4");
        let (all_ep2, _) = run("1xEP2:1xEP2");
        // 1 × 2 + 1 × 4 GPUs, each provisioned; six ranks.
        assert_eq!((c.gpus(), c.all_ranks()), (6, 6));
        assert_eq!(split.engine.provisioned_w, 6.0 * cfg.gpu.tdp_w);
        assert!(split.records.iter().all(|r| r.outcome.is_success() && r.chunks.len() == 100));
        // Each pool's instance is timed as a group of its own ranks: the
        // decode steps are the all-EP4 configuration's, not the EP2 one's.
        let (s, a4, a2) = (median_itl(&split), median_itl(&all_ep4), median_itl(&all_ep2));
        assert!((s - a4).abs() < 0.05 * a4, "decode EP4 {s} vs every instance EP4 {a4}");
        assert!((a4 - a2).abs() > 0.05 * a2, "EP4 {a4} and EP2 {a2} decode alike: the test shows nothing");
        // The decode instance's cache is an EP4 group's.
        let ep4 = crate::engine::kv_capacity(&c.pool(true)).unwrap().tokens();
        let ep2 = crate::engine::kv_capacity(&c.pool(false)).unwrap().tokens();
        assert!(ep4 > ep2, "{ep4} vs {ep2}");
        assert!(c
            .parallel_info_metric()
            .contains("tp=\"1\",pp=\"1\",dp=\"6\",ep=\"2\",ranks=\"2\",decode_ep=\"4\",decode_ranks=\"4\""));
        // A pool's size that cannot hold the experts is refused, naming the pool.
        let e = disaggregated(&cfg, "1:1xEP3").validate().unwrap_err().to_string();
        assert!(e.contains("the decode pool (TP 1, EP 3)") && e.contains("divisor"), "{e}");
        let e = disaggregated(&h100_8b(), "1xEP2:1").validate().unwrap_err().to_string();
        assert!(e.contains("the prefill pool") && e.contains("dense"), "{e}");
    }

    #[test]
    fn every_layout_s_engines_draw_the_power_of_the_gpus_it_counts() {
        // The GPUs a configuration counts (cost, per-GPU figures) and the
        // GPUs its simulated engines provision (energy) are worked out
        // apart: across every layout they must agree.
        let dense = h100_8b();
        let moe = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
        let with = |base: &EngineConfig, tp: u32, dp: u32, ep: u32, pp: u32, pd: Option<&str>| {
            let mut c = base.clone();
            (c.tp, c.dp, c.ep, c.pp) = (tp, dp, ep, pp);
            c.pd = pd.map(|p| crate::engine::Disaggregation::parse(p).unwrap());
            c
        };
        let layouts = [
            with(&dense, 2, 1, 1, 1, None),
            with(&dense, 1, 3, 1, 1, None),
            with(&dense, 2, 1, 1, 2, None),
            with(&dense, 1, 1, 1, 1, Some("2:1")),
            with(&dense, 2, 1, 1, 2, Some("1:2")),
            with(&dense, 1, 1, 1, 1, Some("3xTP1:1xTP4")),
            with(&dense, 2, 1, 1, 2, Some("2:1xTP4")),
            with(&moe, 1, 4, 2, 1, None),
            with(&moe, 2, 2, 4, 1, None),
            with(&moe, 1, 1, 2, 1, Some("1:1")),
            with(&moe, 1, 1, 2, 2, Some("1:1")),
            with(&moe, 1, 1, 1, 1, Some("1xEP2:1xEP4")),
            with(&moe, 1, 1, 1, 1, Some("2xTP2xEP4:1xEP8")),
        ];
        let load = VirtualLoad::closed_loop(same(4, 64, 4), 2);
        for c in &layouts {
            c.validate().unwrap_or_else(|e| panic!("{c:?}: {e}"));
            let run = simulate(c, &load).unwrap();
            let counted = f64::from(c.gpus()) * c.gpu.tdp_w;
            assert!(
                (run.engine.provisioned_w - counted).abs() < 1e-6,
                "tp {} dp {} ep {} pp {} pd {:?}: engines provision {} W, {} GPUs counted ({counted} W)",
                c.tp,
                c.dp,
                c.ep,
                c.pp,
                c.pd.map(|p| p.spec()),
                run.engine.provisioned_w,
                c.gpus()
            );
            assert!(run.records.iter().all(|r| r.outcome.is_success()));
        }
    }

    #[test]
    fn only_the_kv_the_decode_instance_lacks_crosses() {
        // One user, four requests sharing a 2,048-token system prompt, on a
        // 10 Gb/s link: the first request's whole prompt crosses; the
        // decode instance then holds the shared blocks, and the next three
        // send only the rest. With prefix caching off, every prompt crosses
        // whole.
        let requests: Vec<VirtualRequest> = (0..4)
            .map(|_| VirtualRequest {
                shared_prefix: Some(SharedPrefix { id: 7, len: 2048 }),
                ..VirtualRequest::new(2048 + 64, 16)
            })
            .collect();
        let load = VirtualLoad::closed_loop(requests, 1);
        let mut cfg = disaggregated(&h100_8b(), "1:1");
        cfg.pd.as_mut().unwrap().link_gbps = Some(10.0);
        let link = crate::engine::KvLink::new(&cfg).unwrap();
        let cached = simulate(&cfg, &load).unwrap();
        cfg.enable_prefix_caching = false;
        let whole = simulate(&cfg, &load).unwrap();
        let prompt = whole.records[0].counts.usage_prompt.unwrap() as u32;
        let full = link.transfer_time(prompt).as_secs_f64();
        assert!((whole.engine.kv_transfer_s - 4.0 * full).abs() < 1e-6, "{} vs 4 × {full}", whole.engine.kv_transfer_s);
        // The first whole, the others at most their last 100 tokens or so
        // (the unshared 64 and the partial block).
        let rest = cached.engine.kv_transfer_s - full;
        assert!(rest > 0.0 && rest < 3.0 * link.transfer_time(100).as_secs_f64(), "{rest} s for the three after");
        // Less on the link is less TTFT: the later requests' first tokens
        // come far sooner than the first's.
        let ttft = |i: usize| cached.records[i].ttft().unwrap().as_secs_f64();
        assert!((1..4).all(|i| ttft(i) < ttft(0) - 0.8 * full), "{:?}", (0..4).map(ttft).collect::<Vec<_>>());
    }

    #[test]
    fn pools_of_pipeline_parallel_instances_send_each_stage_s_share_of_the_kv() {
        // Two stages an instance: 2 GPUs each, 4 in all; each GPU holds half
        // the layers' KV and sends it beside the other stage's GPU.
        let mut pp = h100_8b();
        pp.pp = 2;
        let c = disaggregated(&pp, "1:1");
        c.validate().unwrap();
        assert_eq!(c.gpus(), 4);
        let link = crate::engine::KvLink::new(&c).unwrap();
        assert_eq!((link.kind, link.kv_bytes_per_token_per_gpu), (crate::engine::disagg::LinkKind::Node, 65_536.0));
        let whole = crate::engine::KvLink::new(&disaggregated(&h100_8b(), "1:1")).unwrap();
        assert!(link.transfer_time(2000) < whole.transfer_time(2000));
        // At one user TTFT is the pipelined engine's, colocated, plus the
        // transfer and one decode step of the same pipeline.
        let load = VirtualLoad::closed_loop(same(3, 2000, 16), 1);
        let colo = simulate(&pp, &load).unwrap();
        let run = simulate(&c, &load).unwrap();
        let mut shape = crate::engine::BatchShape::default();
        shape.add_prefill(1999, 1);
        let decode_step = Roofline::new(&c).unwrap().step_time(&shape);
        let transfer = link.transfer_time(2000);
        for (a, b) in run.records.iter().zip(&colo.records) {
            assert!(a.outcome.is_success() && a.chunks.len() == 16);
            let extra = a.ttft().unwrap() - b.ttft().unwrap() - transfer;
            assert!(extra.abs_diff(decode_step) < Duration::from_micros(2), "{extra:?} vs {decode_step:?}");
        }
        assert_eq!(run.engine.provisioned_w, 4.0 * c.gpu.tdp_w);
    }

    #[test]
    fn pools_of_expert_parallel_instances_are_groups_of_ranks() {
        // EP 2 over TP 1: each instance is a group of two data-parallel
        // ranks sharing the experts, one engine; 1:1 pools, 4 GPUs.
        let mut group = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
        (group.ep, group.dp) = (2, 2);
        let c = disaggregated(&EngineConfig { dp: 1, ..group.clone() }, "1:1");
        c.validate().unwrap();
        assert_eq!((c.attention_ranks(), c.engines(), c.gpus()), (2, 2, 4));
        // At one user TTFT is the colocated group's plus the transfer (one
        // rank's KV, on its TP GPUs) and one decode step of the group.
        let load = VirtualLoad::closed_loop(same(3, 2000, 16), 1);
        let colo = simulate(&group, &load).unwrap();
        let run = simulate(&c, &load).unwrap();
        let link = crate::engine::KvLink::new(&c).unwrap();
        assert_eq!(link.kv_bytes_per_token_per_gpu, c.model.kv_bytes_per_token_per_gpu(c.kv_cache_dtype, 1));
        let mut shape = crate::engine::BatchShape::default();
        shape.add_prefill(1999, 1);
        let decode_step = Roofline::new(&c).unwrap().step_time(&shape);
        for (a, b) in run.records.iter().zip(&colo.records) {
            assert!(a.outcome.is_success() && a.chunks.len() == 16);
            let extra = a.ttft().unwrap() - b.ttft().unwrap() - link.transfer_time(2000);
            assert!(extra.abs_diff(decode_step) < Duration::from_micros(2), "{extra:?} vs {decode_step:?}");
        }
        // Every GPU of both groups is provisioned.
        assert_eq!(run.engine.provisioned_w, 4.0 * c.gpu.tdp_w);
        assert_eq!(colo.engine.provisioned_w, 2.0 * c.gpu.tdp_w);
    }

    #[test]
    fn under_tensorrt_llm_s_scheduler_a_decode_instance_takes_the_kv_it_was_sent() {
        // The decode instance computes the last prompt token over the KV
        // that crossed, not the whole prompt again: its TTFT over colocated
        // serving is the transfer and one decode step, as under vLLM's.
        let mut cfg = h100_8b();
        cfg.scheduler = crate::engine::SchedulerPolicy::Trtllm;
        let load = VirtualLoad::closed_loop(same(3, 2000, 16), 1);
        let colo = simulate(&cfg, &load).unwrap();
        let c = disaggregated(&cfg, "1:1");
        let transfer = crate::engine::KvLink::new(&c).unwrap().transfer_time(2000);
        let mut shape = crate::engine::BatchShape::default();
        shape.add_prefill(1999, 1);
        let decode_step = Roofline::new(&c).unwrap().step_time(&shape);
        let pd = simulate(&c, &load).unwrap();
        for (a, b) in pd.records.iter().zip(&colo.records) {
            let extra = a.ttft().unwrap() - b.ttft().unwrap() - transfer;
            assert!(extra.abs_diff(decode_step) < Duration::from_micros(2), "{extra:?} vs {decode_step:?}");
        }
        // No prompt token was computed twice: the decode instance's prefix
        // lookups are not counted, and it reports no hits.
        assert_eq!(pd.engine.prefix_cache_hits, colo.engine.prefix_cache_hits);
    }

    #[test]
    fn one_prefill_instance_sends_its_transfers_one_after_another() {
        // A burst of four on a slow link: each transfer waits for the one
        // before it, so the requests' first tokens come a transfer apart.
        let mut cfg = disaggregated(&h100_8b(), "1:1");
        cfg.pd.as_mut().unwrap().link_gbps = Some(1.0);
        cfg.calibration.frontend_overhead_ms = 0.0;
        let t = crate::engine::KvLink::new(&cfg).unwrap().transfer_time(1000);
        let run = simulate(&cfg, &VirtualLoad::burst(same(4, 1000, 4))).unwrap();
        let mut firsts: Vec<Duration> = run.records.iter().map(|r| r.first_byte.unwrap()).collect();
        firsts.sort();
        for w in firsts.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap >= t && gap < t + Duration::from_millis(30), "{gap:?} vs a transfer of {t:?}");
        }
        // Their waits for the link count in the transfers' time: 1+2+3+4 transfers.
        assert!((run.engine.kv_transfer_s - 10.0 * t.as_secs_f64()).abs() < 0.05 * t.as_secs_f64());
    }

    #[test]
    fn a_request_given_up_on_during_its_transfer_frees_the_prefill_blocks() {
        let mut cfg = disaggregated(&h100_8b(), "1:1");
        cfg.pd.as_mut().unwrap().link_gbps = Some(1.0);
        let mut requests = same(2, 1000, 4);
        requests[0].give_up_after = Some(Duration::from_millis(300));
        let run = simulate(&cfg, &VirtualLoad::closed_loop(requests, 1)).unwrap();
        assert!(run.records[0].abandoned && run.records[0].chunks.is_empty());
        assert!(run.records[1].outcome.is_success() && run.records[1].chunks.len() == 4);
        assert_eq!(run.engine.generation_tokens, 4);
    }

    #[test]
    fn a_prefilled_request_waits_for_room_on_the_decode_instance_and_that_wait_is_in_its_ttft() {
        // Every instance holds 24 blocks of 16 tokens: one request of 256 +
        // 64 tokens at a time. The second request's prefill waits for the
        // first's KV to leave the prefill instance; on the decode instance it
        // waits for the first to finish.
        let mut cfg = disaggregated(&h100_8b(), "1:1");
        cfg.num_gpu_blocks_override = Some(24);
        let run = simulate(&cfg, &VirtualLoad::burst(same(2, 256, 64))).unwrap();
        let (a, b) = (&run.records[0], &run.records[1]);
        assert!(a.outcome.is_success() && b.outcome.is_success());
        assert!(b.first_byte.unwrap() > a.end, "{:?} vs {:?}", b.first_byte, a.end);
        assert_eq!(run.engine.preemptions, 0);
        // With room for both, the second's first token comes long before
        // the first's end.
        cfg.num_gpu_blocks_override = Some(64);
        let run = simulate(&cfg, &VirtualLoad::burst(same(2, 256, 64))).unwrap();
        assert!(run.records[1].first_byte.unwrap() < run.records[0].end);
    }

    #[test]
    fn the_decode_instance_admits_before_it_pulls_the_kv_and_the_prefill_instance_holds_it_meanwhile() {
        // As vLLM's scheduler and TensorRT-LLM's generation instance order
        // it: the decode instance's blocks first, then the KV pulled into
        // them. Each instance holds one request of 256 + 64 tokens at a
        // time, and the link is slow (5 Gb/s: 256 tokens' KV in about 54 ms,
        // many decode steps). Each request's KV crosses only once the one
        // before has ended on the decode instance (it had crossed during
        // that one's decode, and waited there), so its first token comes a
        // transfer or more after that end.
        // (SGLang's decode instance reserves before the prefill instead:
        // `sglangs_decode_reservation_keeps_room_that_vllms_admission_does_not`.)
        for policy in [crate::engine::SchedulerPolicy::Vllm, crate::engine::SchedulerPolicy::Trtllm] {
            let mut cfg = disaggregated(&h100_8b(), "1:1");
            cfg.num_gpu_blocks_override = Some(24);
            cfg.scheduler = policy;
            cfg.pd.as_mut().unwrap().link_gbps = Some(5.0);
            let transfer = crate::engine::KvLink::new(&cfg).unwrap().transfer_time(256);
            let run = simulate(&cfg, &VirtualLoad::burst(same(3, 256, 64))).unwrap();
            let r = &run.records;
            assert!(r.iter().all(|r| r.outcome.is_success()), "{policy}");
            for (before, after) in [(&r[0], &r[1]), (&r[1], &r[2])] {
                let first = after.first_byte.unwrap();
                assert!(first >= before.end + transfer, "{policy}: {first:?} < {:?} + {transfer:?}", before.end);
            }
            // Each transfer's time is the link's: none waited for another.
            let mean = run.engine.kv_transfer_s / 3.0;
            assert!((mean - transfer.as_secs_f64()).abs() < 0.01 * mean, "{policy}: {mean} vs {transfer:?}");
        }
    }
}
