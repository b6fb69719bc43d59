//! The engine: a vLLM-V1-like continuous-batching scheduler over the paged
//! KV cache, timed by the roofline. It has no clock of its own: a driver
//! calls `step`, lets the returned duration pass (really or virtually), then
//! delivers the step's tokens.

use super::config::EngineConfig;
use super::error::Error;
use super::kv::{BlockPool, Prompt};
use super::roofline::{kv_capacity, BatchShape, KvCapacity, Roofline, StepPower};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// In an admission loop over the waiting requests (`$k` the index of the
/// one in `$slot`): stops the queue of its rank and goes on to the next
/// request, or ends the loop once no rank's queue is open (with one rank,
/// at once).
macro_rules! stop_rank {
    ($engine:expr, $slot:expr, $k:ident) => {{
        if !$engine.block_rank($slot) {
            break;
        }
        $k += 1;
        continue;
    }};
}

mod balance;
mod sglang;
mod trtllm;
pub use balance::{Controller, Load, LoadBalance, Published, ReplicaBalancer};
pub use sglang::{
    sglang_default_chunk, sglang_default_cuda_graph_max_bs, sglang_default_max_running,
    SGLANG_DP_ATTENTION_CONSERVATIVENESS, SGLANG_MAX_PREFILL_TOKENS,
};
pub use trtllm::{SchedulerPolicy, TRTLLM_MAX_BATCH_SIZE};

/// Salts the draft acceptances' generator apart from the step times'.
const SPEC_NOISE_SALT: u64 = 0x5bd1_e995_9e37_79b9;

/// How often vLLM's data-parallel coordinator publishes the ranks' counts to
/// the front end's balancer (`DPLBAsyncMPClient`: "stats updates from the
/// coordinator (which happen every 100ms)"); between them the front end
/// counts each request it sends waiting where it went.
const VLLM_DP_STATS_INTERVAL: Duration = Duration::from_millis(100);

/// The tokens a scheduled decode keeps for certain: `target` less the drafts
/// that fit in its `new` tokens (all but the one it decodes).
fn r_kept(target: u32, new: u32, drafts: u32) -> u32 {
    target - drafts.min(new.saturating_sub(1))
}

/// One output token, emitted at the end of the step that computed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEvent {
    pub id: u64,
    /// Position in the request's output of the first token, from 0. A
    /// request recomputed after preemption continues where it stopped: no
    /// index repeats.
    pub index: u32,
    /// Tokens the step emitted for the request from `index` on: 1, or with
    /// speculative decoding the accepted drafts and the bonus token.
    pub tokens: u32,
    /// The request's first output token (its TTFT).
    pub first: bool,
    /// The request's last token: it has left the engine.
    pub finished: bool,
}

/// What one step scheduled, in counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchSummary {
    pub seqs: u32,
    pub decodes: u32,
    pub prefills: u32,
    pub tokens: u32,
    pub prefill_tokens: u32,
}

/// One step of the engine. A real-time driver sleeps `duration`, then
/// delivers `tokens`; a request aborted meanwhile has its tokens dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOutcome {
    pub duration: Duration,
    pub tokens: Vec<TokenEvent>,
    /// Requests scheduled for the first time this step (their queue time
    /// ends when the step starts). Re-admissions after preemption are not
    /// listed.
    pub admitted: Vec<u64>,
    /// Of those, the ones whose prompt began in the prefix cache, with the
    /// prompt tokens it served (what vLLM reports as `cached_tokens`).
    pub prefix_hits: Vec<(u64, u32)>,
    /// Requests preempted this step, in the order they were.
    pub preempted: Vec<u64>,
    /// Requests prefilled elsewhere (disaggregation) admitted this step to
    /// pull their KV into blocks now theirs, with the leading prompt tokens
    /// this instance's prefix cache holds (which do not cross): the pull
    /// starts as the step does, and [`Engine::kv_landed`] says it ended.
    /// Filled even when no step runs (a pull admitted by an idle engine).
    pub pulls: Vec<(u64, u32)>,
    /// On a prefill instance of SGLang's disaggregation
    /// ([`EngineConfig::decode_first`]): each request whose prompt this step
    /// computed a chunk of but not the last, with its prompt tokens computed
    /// so far. SGLang sends a chunk's KV as the chunk ends
    /// (`send_kv_chunk`), so the prompt crosses while the rest is computed.
    /// Empty on every other engine, and with pipeline stages (whose chunks
    /// end on the last stage later).
    pub chunked: Vec<(u64, u32)>,
    pub batch: BatchSummary,
    /// The step's tokens as vLLM counts them for `vllm:iteration_tokens_total`:
    /// the whole prompt of each request whose first token came this step,
    /// and every token generated (a prompt's earlier chunks count nothing).
    pub iteration_tokens: u32,
    /// What the replica's GPUs drew over the step (the power model).
    pub power: StepPower,
}

impl StepOutcome {
    fn clear(&mut self) {
        self.duration = Duration::ZERO;
        self.power = StepPower::default();
        self.tokens.clear();
        self.admitted.clear();
        self.prefix_hits.clear();
        self.preempted.clear();
        self.pulls.clear();
        self.chunked.clear();
        self.batch = BatchSummary::default();
        self.iteration_tokens = 0;
    }
}

/// The engine's counters and gauges, named after vLLM's metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStats {
    pub running: u32,
    pub waiting: u32,
    /// Share of KV blocks held by requests (`vllm:kv_cache_usage_perc`).
    pub kv_usage: f64,
    pub kv_blocks_total: u32,
    pub kv_blocks_free: u32,
    /// Prompt tokens looked up in the prefix cache, and those found.
    pub prefix_cache_queries: u64,
    pub prefix_cache_hits: u64,
    /// Cached blocks evicted to make room.
    pub prefix_cache_evictions: u64,
    pub preemptions: u64,
    /// Prompt tokens of requests that produced their first token.
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub requests_finished: u64,
    pub requests_aborted: u64,
    /// Requests scheduled for the first time.
    pub requests_admitted: u64,
    pub steps: u64,
    /// Σ over steps of the sequences in the batch (decodes and prefills).
    pub batch_seqs_total: u64,
    pub batch_tokens_total: u64,
    pub max_batch_seqs: u32,
    /// Σ of step durations.
    pub busy: Duration,
    /// Σ of step durations × the power each drew (the replica's GPUs
    /// together): the energy of the busy time, joules. Idle time's energy
    /// is the idle power over it (see [`Engine::energy_j`]).
    pub busy_energy_j: f64,
    /// Speculative decoding (vLLM's `spec_decode_*` counters): proposals,
    /// draft tokens proposed, draft tokens accepted, and accepted by their
    /// position in the proposal.
    pub spec_drafts: u64,
    pub spec_draft_tokens: u64,
    pub spec_accepted_tokens: u64,
    pub spec_accepted_by_position: Vec<u64>,
}

impl EngineStats {
    pub fn mean_batch_seqs(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.batch_seqs_total as f64 / self.steps as f64)
    }

    pub fn mean_batch_tokens(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.batch_tokens_total as f64 / self.steps as f64)
    }

    pub fn prefix_cache_hit_rate(&self) -> Option<f64> {
        (self.prefix_cache_queries > 0).then(|| self.prefix_cache_hits as f64 / self.prefix_cache_queries as f64)
    }

    /// Several replicas' stats as one engine's: counts and times summed,
    /// the largest batch the largest, KV use the mean.
    pub fn summed(all: impl Iterator<Item = EngineStats>) -> EngineStats {
        let mut n = 0;
        let mut t = EngineStats::default();
        for s in all {
            n += 1;
            t.running += s.running;
            t.waiting += s.waiting;
            t.kv_usage += s.kv_usage;
            t.kv_blocks_total += s.kv_blocks_total;
            t.kv_blocks_free += s.kv_blocks_free;
            t.prefix_cache_queries += s.prefix_cache_queries;
            t.prefix_cache_hits += s.prefix_cache_hits;
            t.prefix_cache_evictions += s.prefix_cache_evictions;
            t.preemptions += s.preemptions;
            t.prompt_tokens += s.prompt_tokens;
            t.generation_tokens += s.generation_tokens;
            t.requests_finished += s.requests_finished;
            t.requests_aborted += s.requests_aborted;
            t.requests_admitted += s.requests_admitted;
            t.steps += s.steps;
            t.batch_seqs_total += s.batch_seqs_total;
            t.batch_tokens_total += s.batch_tokens_total;
            t.max_batch_seqs = t.max_batch_seqs.max(s.max_batch_seqs);
            t.spec_drafts += s.spec_drafts;
            t.spec_draft_tokens += s.spec_draft_tokens;
            t.spec_accepted_tokens += s.spec_accepted_tokens;
            if t.spec_accepted_by_position.len() < s.spec_accepted_by_position.len() {
                t.spec_accepted_by_position.resize(s.spec_accepted_by_position.len(), 0);
            }
            for (a, b) in t.spec_accepted_by_position.iter_mut().zip(&s.spec_accepted_by_position) {
                *a += b;
            }
            t.busy += s.busy;
            t.busy_energy_j += s.busy_energy_j;
        }
        if n > 0 {
            t.kv_usage /= n as f64;
        }
        t
    }
}

struct Request {
    id: u64,
    prompt_len: u32,
    max_tokens: u32,
    /// The prompt: its blocks' hashes, and how its output goes on.
    prompt: Prompt,
    /// Hashes of the blocks past the prompt's, as the output fills them.
    output_hashes: Vec<u64>,
    num_output: u32,
    /// Tokens whose KV is in the cache.
    num_computed: u32,
    /// Leading blocks (prompt, then output) registered in the prefix cache.
    num_registered: u32,
    blocks: Vec<u32>,
    admitted_once: bool,
    live: bool,
    /// When it last joined the running requests ([`Engine::join_running`]):
    /// their order, which a pipeline's late output returns to.
    joined: u64,
    /// Where its KV is, prefilled elsewhere (disaggregation). A preemption
    /// after it started frees that KV: the instance recomputes it all.
    pull: Pull,
    /// Prefilled elsewhere (disaggregation): under SGLang's scheduler, a
    /// retraction moves its KV to the host rather than dropping it.
    remote: bool,
    /// A pooling pass (embeddings, rerank; [`Engine::add_pooling_request`]):
    /// its prefill yields the answer and no token.
    pooling: bool,
    /// Its attention rank (see [`Engine::rank_load`]).
    rank: u32,
}

/// A request prefilled on another instance (disaggregation), as vLLM's
/// scheduler and TensorRT-LLM's generation instance take it: queued first,
/// admitted when a sequence slot and blocks for its prompt are free, its KV
/// then pulled into those blocks, and computed once it has landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pull {
    /// Not prefilled elsewhere, or its KV is here and it has started.
    None,
    /// Queued for blocks; its KV still on its prefill instance.
    Awaiting,
    /// Holding its blocks, its KV crossing (vLLM's
    /// `WAITING_FOR_REMOTE_KVS`): neither running nor scheduled.
    Pulling,
    /// Its KV landed: queued again, to compute its last prompt token.
    Landed,
}

/// Which running requests a pass of vLLM's schedule takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// All of them, prefilling and decoding: a mixed batch.
    Both,
    /// Those still prefilling.
    Prefill,
    /// Those decoding.
    Decode,
}

impl Request {
    /// Prompt plus output so far: what a recompute after preemption redoes.
    fn num_tokens(&self) -> u32 {
        self.prompt_len + self.num_output
    }

    /// Past its prefill, with only its last token to compute: a decode.
    fn decoding(&self) -> bool {
        self.num_output > 0 && self.num_computed + 1 == self.num_tokens()
    }
}

/// The simulated engine. Pure and synchronous; see the module doc for how a
/// driver uses it.
pub struct Engine {
    cfg: EngineConfig,
    roofline: Roofline,
    capacity: KvCapacity,
    max_num_seqs: u32,
    /// The KV blocks: one pool, or, where an expert-parallel group has
    /// several attention ranks (each scheduling its own requests), one pool
    /// a rank, each its share of the group's blocks: a rank fills only its
    /// own cache, and frees room in it only from its own requests
    /// ([`Engine::pool_of`]).
    pools: Vec<BlockPool>,
    slots: Vec<Request>,
    free_slots: Vec<u32>,
    index: HashMap<u64, u32>,
    /// In the order they joined (each's `joined`): the newest last, where
    /// a preemption takes its victim.
    running: Vec<u32>,
    /// The next `joined` to give.
    joins: u64,
    waiting: VecDeque<u32>,
    /// This step's (slot, new tokens), kept to reuse its allocation.
    scheduled: Vec<(u32, u32)>,
    hits: Vec<u32>,
    stats: EngineStats,
    /// The step-time variation's generator state (see `Calibration::step_time_cv`).
    noise: u64,
    /// The draft acceptances' generator state, apart from `noise` so that
    /// speculation leaves the step-time stream as it was.
    spec_noise: u64,
    /// A prefill instance of a disaggregated engine: a finished request
    /// keeps its blocks (in `held`) until [`Engine::release_held`], while its
    /// KV crosses to a decode instance.
    hold_finished: bool,
    held: HashMap<u64, (usize, Vec<u32>)>,
    /// Requests holding blocks while their KV is pulled in (see [`Pull`]).
    pulling: Vec<u32>,
    /// A pipeline's outputs still on their way through the stages after
    /// their step ended (see [`Late`]), oldest first.
    late: Vec<Late>,
    /// This step's such chunks: (slot, how long after its end), kept to
    /// reuse its allocation.
    late_now: Vec<(u32, Duration)>,
    /// SGLang's estimate of the running requests' remaining tokens
    /// (`scheduler/sglang.rs`; unused by the other schedulers), a pool's
    /// each (its rank's scheduler's).
    sglang_ratios: Vec<sglang::NewTokenRatio>,
    /// SGLang's step: each pool's room, prompt tokens left and prompts,
    /// and its decode pass's (decoded, retracted); kept to reuse their
    /// allocations.
    sglang_rem: Vec<f64>,
    sglang_input: Vec<u32>,
    sglang_prompts: Vec<u32>,
    sglang_decoded: Vec<(bool, bool)>,
    /// A decode instance's requests SGLang's scheduler retracted, oldest
    /// first: their KV on the host (no blocks), to be loaded back, not
    /// computed again (its `retracted_queue`).
    offloaded: Vec<u32>,
    /// Where an expert-parallel group has several attention ranks
    /// (`attention_ranks`), the requests each holds: a request goes to the
    /// rank vLLM's data-parallel balancer scores lowest (`rank_seen`,
    /// [`Engine::take_rank`]), under TensorRT-LLM's to the one holding the
    /// fewest, or under SGLang's scheduler to the ranks in turn
    /// (`next_rank`), as its DP attention's round-robin does. Each rank
    /// keeps its own blocks and prefix cache (`pools`), so a request finds
    /// only the blocks its own rank cached.
    rank_load: Vec<u32>,
    next_rank: u32,
    /// Each rank's requests' prompt tokens (TensorRT-LLM's attention data
    /// parallelism balances these, [`Engine::rank_new_requests`]).
    rank_tokens: Vec<u64>,
    /// Under TensorRT-LLM's scheduler with several ranks, the requests not
    /// yet fetched, oldest first: given their ranks together at a step
    /// (as its executor fetches them for an iteration,
    /// [`Engine::rank_new_requests`]) and queued in `waiting` then; their
    /// `rank` is [`UNRANKED`] until then.
    unranked: Vec<u32>,
    /// Under `async_scheduling`, the requests added since the last step was
    /// scheduled, oldest first: the step that runs next was chosen before
    /// they came, so they wait for the one after it ([`Engine::step_into`]).
    /// Under SGLang's `scheduler_recv_interval`, also those not yet taken
    /// from the front end.
    ahead: Vec<u32>,
    /// SGLang's `SchedulerRecvSkipper`: the weight of the steps since new
    /// requests were last taken (a decode step 1, a step that computes a
    /// prompt the interval); they are taken at a step when it has reached
    /// `scheduler_recv_interval` (or the engine has nothing else to step).
    recv_counter: u32,
    /// TensorRT-LLM's `batch_wait_iters_count`: the steps in a row whose
    /// prompts were held back (`batch_wait_timeout_iters`).
    batch_wait_iters: u32,
    /// This step's batch on each attention rank (where there are several):
    /// the ranks step together, and the slowest sets the step's time.
    rank_shapes: Vec<BatchShape>,
    /// Each rank's waiting and running requests as vLLM's balancer sees
    /// them: as its coordinator last published them
    /// ([`VLLM_DP_STATS_INTERVAL`]), and a request it sent to a rank since
    /// counted waiting there ([`Engine::take_rank`]).
    rank_seen: Vec<(u32, u32)>,
    /// The engine's step time since the counts were last published.
    rank_seen_age: Duration,
    /// With several ranks: each rank's token budget left this step, its
    /// sequences, and whether its queue stopped (each rank schedules its
    /// own requests, first come first served).
    rank_budget: Vec<u32>,
    rank_seats: Vec<u32>,
    rank_blocked: Vec<bool>,
    /// vLLM's ranks whose pass over their running requests stopped this
    /// step (a request could not get a block even by preempting).
    rank_halt: Vec<bool>,
    /// TensorRT-LLM's blocks free in each pool less what its requests are
    /// owed, kept to reuse its allocation.
    pool_room: Vec<u64>,
    /// SGLang's data-parallel controller where it counts the ranks' loads
    /// (`--load-balance-method total-requests` or `total-tokens`).
    balancer: Option<balance::Balancer>,
    /// A replica of a dense model behind SGLang's data-parallel controller
    /// publishes its load ([`Engine::publish_loads`]).
    publisher: Option<balance::Publisher>,
}

/// A pipeline's prompt chunk whose trip through every stage outlasts its
/// step (`parallel.rs`): its output comes at the end of the first step that
/// ends `left` or more after its own did, and until then its request
/// (`slot`) sits out of `running`, as vLLM schedules no request into a batch
/// while one of its batches is in flight; a request whose last output it
/// is keeps its blocks and its seat until then too.
#[derive(Debug, Clone, Copy)]
struct Late {
    left: Duration,
    slot: u32,
    event: Option<TokenEvent>,
    /// What the GPUs drew over its step, and one stage time of it, for a
    /// step that only waits for it.
    watts: f64,
    stage: Duration,
}

/// The rank of a request not yet given one ([`Engine::unranked`]).
const UNRANKED: u32 = u32::MAX;

/// Request `id`'s bootstrap room under SGLang's disaggregation: the router
/// (`sglang_router`'s PD mode, its `mini_lb`) draws each request a random
/// room of 63 bits, and a prefill instance's data-parallel controller sends
/// the request to rank `room % dp` (its `--load-balance-method auto` is
/// `follow_bootstrap_room` on a prefill instance; a decode instance's is
/// `round_robin`), so the prefill ranks' loads are a random draw's, not
/// dealt in turn. Here a hash of the id stands for the draw: the same from
/// run to run.
pub(crate) fn bootstrap_room(id: u64) -> u64 {
    super::kv::mix(id ^ 0xb007_5742_0000_0000) >> 1
}

impl Engine {
    pub fn new(cfg: EngineConfig) -> Result<Engine, Error> {
        // SGLang's DP attention gives each rank its share of the group's
        // limits.
        let cfg = cfg.rank_config();
        let capacity = kv_capacity(&cfg)?;
        let roofline = Roofline::new(&cfg)?;
        // An expert-parallel group's ranks each bring their own limits.
        let max_num_seqs = cfg.resolved_max_num_seqs().saturating_mul(cfg.attention_ranks());
        // Each rank's own counts, where a group has several ranks.
        let ranked = if cfg.attention_ranks() > 1 { cfg.attention_ranks() as usize } else { 0 };
        let mut engine = Engine {
            pools: vec![BlockPool::new(capacity.num_blocks, cfg.block_size).counting(&cfg.kv_model())],
            roofline,
            capacity,
            max_num_seqs,
            slots: Vec::new(),
            free_slots: Vec::new(),
            index: HashMap::new(),
            running: Vec::new(),
            waiting: VecDeque::new(),
            scheduled: Vec::new(),
            hits: Vec::new(),
            stats: EngineStats::default(),
            noise: 0,
            spec_noise: SPEC_NOISE_SALT,
            hold_finished: false,
            held: HashMap::new(),
            pulling: Vec::new(),
            late: Vec::new(),
            late_now: Vec::new(),
            joins: 0,
            sglang_ratios: vec![sglang::NewTokenRatio::new(cfg.schedule_conservativeness)],
            sglang_rem: Vec::new(),
            sglang_input: Vec::new(),
            sglang_prompts: Vec::new(),
            sglang_decoded: Vec::new(),
            offloaded: Vec::new(),
            rank_load: vec![0; cfg.attention_ranks().max(1) as usize],
            next_rank: 0,
            rank_tokens: vec![0; cfg.attention_ranks().max(1) as usize],
            unranked: Vec::new(),
            ahead: Vec::new(),
            recv_counter: cfg.scheduler_recv_interval,
            batch_wait_iters: 0,
            rank_shapes: vec![BatchShape::of_model(&cfg.model); ranked],
            rank_seen: vec![(0, 0); ranked],
            rank_seen_age: Duration::ZERO,
            rank_budget: Vec::new(),
            rank_seats: vec![0; ranked],
            rank_blocked: Vec::new(),
            rank_halt: Vec::new(),
            pool_room: Vec::new(),
            balancer: (cfg.scheduler == SchedulerPolicy::Sglang && ranked > 1)
                .then(|| balance::Balancer::new(cfg.load_balance, ranked))
                .flatten(),
            publisher: None,
            cfg,
        };
        // Each rank schedules its own requests.
        engine.own_ranks();
        Ok(engine)
    }

    /// Gives each attention rank (where there are several) its own queue,
    /// budget and pool of blocks (its share of the group's), as each rank's
    /// scheduler keeps them.
    fn own_ranks(&mut self) {
        let ranks = self.cfg.attention_ranks();
        if ranks <= 1 {
            return;
        }
        let n = ranks as usize;
        (self.rank_budget, self.rank_blocked, self.rank_halt) = (vec![0; n], vec![false; n], vec![false; n]);
        self.pools = (0..n)
            .map(|_| {
                BlockPool::new(self.capacity.num_blocks / ranks, self.cfg.block_size).counting(&self.cfg.kv_model())
            })
            .collect();
        self.sglang_ratios = vec![sglang::NewTokenRatio::new(self.cfg.schedule_conservativeness); n];
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Seeds the step-time variation: the same seed and the same requests
    /// give the same steps.
    pub fn seed_noise(&mut self, seed: u64) {
        self.noise = seed;
        self.spec_noise = seed ^ SPEC_NOISE_SALT;
    }

    pub fn capacity(&self) -> &KvCapacity {
        &self.capacity
    }

    /// The attention rank a new request goes to ([`Engine::rank_load`]),
    /// counted there until it leaves. vLLM's balancer
    /// (`DPLBAsyncMPClient.get_core_engine_for_request`) scores each rank
    /// four times its waiting requests plus its running ones, takes the
    /// lowest (the first on a tie), and counts the request waiting there
    /// until the ranks' next counts come in. TensorRT-LLM's attention data
    /// parallelism gives the requests their ranks at the next step
    /// ([`Engine::rank_new_requests`]), and SGLang's by its
    /// `--load-balance-method` (`balance.rs`): by default the ranks in turn,
    /// and on a disaggregated prefill instance the rank its bootstrap room
    /// names ([`bootstrap_room`]).
    fn take_rank(&mut self, id: u64, prompt: u32) -> u32 {
        let ranks = self.rank_load.len() as u32;
        let rank = match self.cfg.scheduler {
            SchedulerPolicy::Sglang => {
                match self.cfg.load_balance.resolved(self.cfg.pd.is_some() && self.hold_finished) {
                    LoadBalance::FollowBootstrapRoom => (bootstrap_room(id) % u64::from(ranks)) as u32,
                    // The balancer is there for these two wherever there
                    // are ranks to choose.
                    LoadBalance::TotalRequests | LoadBalance::TotalTokens => {
                        self.balancer.as_mut().map_or(0, |b| b.dispatch(prompt))
                    }
                    _ => {
                        let r = self.next_rank % ranks;
                        self.next_rank = (r + 1) % ranks;
                        r
                    }
                }
            }
            // One rank: several are given theirs at the step
            // (rank_new_requests).
            SchedulerPolicy::Trtllm => 0,
            SchedulerPolicy::Vllm => {
                let score = |&(waiting, running): &(u32, u32)| 4 * u64::from(waiting) + u64::from(running);
                let r = (0..self.rank_seen.len()).min_by_key(|&r| score(&self.rank_seen[r])).unwrap_or(0);
                if let Some(seen) = self.rank_seen.get_mut(r) {
                    seen.0 += 1;
                }
                r as u32
            }
        };
        self.join_rank(prompt, rank);
        rank
    }

    /// A request of `prompt` tokens joins `rank`.
    fn join_rank(&mut self, prompt: u32, rank: u32) {
        self.rank_load[rank as usize] += 1;
        self.rank_tokens[rank as usize] += u64::from(prompt);
    }

    /// Gives the queued requests their ranks, as TensorRT-LLM's executor
    /// fetches requests for an iteration and its attention data
    /// parallelism routes them (`DefaultADPRouter`): the oldest, as many as
    /// the ranks have room for below their cap of active requests (a
    /// rank's `max_num_seqs`), longest prompt first, each to the rank whose
    /// active requests hold the fewest prompt tokens (then the fewest
    /// requests, then the first), among the ranks holding fewer than the
    /// expected number: the larger of an even share of all (⌈(active +
    /// new) / ranks⌉) and the most any rank holds, at most the cap. Those
    /// left wait, unranked, for a rank's room.
    fn rank_new_requests(&mut self) {
        if self.unranked.is_empty() {
            return;
        }
        let (ranks, cap) = (self.rank_load.len() as u32, self.cfg.resolved_max_num_seqs().max(1));
        let room: u32 = self.rank_load.iter().map(|&l| cap.saturating_sub(l)).sum();
        let take = (room as usize).min(self.unranked.len());
        if take == 0 {
            return;
        }
        let mut new: Vec<u32> = self.unranked.drain(..take).collect();
        new.sort_by_key(|&s| std::cmp::Reverse(self.slots[s as usize].prompt_len));
        let active: u32 = self.rank_load.iter().sum();
        let most = self.rank_load.iter().copied().max().unwrap_or(0);
        let expected = (active + new.len() as u32).div_ceil(ranks).max(most).min(cap);
        for &slot in &new {
            let key = |r: u32| (self.rank_tokens[r as usize], self.rank_load[r as usize], r);
            let open = (0..ranks).filter(|&r| self.rank_load[r as usize] < expected).min_by_key(|&r| key(r));
            // Always one: the ranks' room below `expected` holds them all.
            let rank = open.unwrap_or_else(|| (0..ranks).min_by_key(|&r| key(r)).unwrap_or(0));
            let prompt = self.slots[slot as usize].prompt_len;
            self.join_rank(prompt, rank);
            self.slots[slot as usize].rank = rank;
            self.waiting.push_back(slot);
        }
    }

    /// Each rank's running requests, those whose output crosses a
    /// pipeline's stages included, into `rank_seats`.
    fn count_seats(&mut self) {
        self.rank_seats.fill(0);
        for slot in self.running.iter().copied().chain(self.late.iter().map(|l| l.slot)) {
            self.rank_seats[self.slots[slot as usize].rank as usize] += 1;
        }
    }

    /// The ranks' counts as the balancer sees them after a step: each
    /// rank's running requests, and the rest of its requests waiting.
    fn count_ranks(&mut self) {
        if self.rank_seen.is_empty() {
            return;
        }
        self.count_seats();
        for ((seen, &load), &running) in self.rank_seen.iter_mut().zip(&self.rank_load).zip(&self.rank_seats) {
            *seen = (load.saturating_sub(running), running);
        }
    }

    /// With several ranks, each rank's budget, seats and queue for a new
    /// step: a rank schedules
    /// within its own `max_num_batched_tokens` (a micro-batch's, times the
    /// stages) and `max_num_seqs`.
    pub(super) fn open_ranks(&mut self) {
        if self.rank_budget.is_empty() {
            return;
        }
        self.count_seats();
        let budget = self.cfg.max_num_batched_tokens.saturating_mul(self.cfg.pp.max(1));
        self.rank_budget.fill(budget);
        // A rank whose requests all run has none queued: its queue is done,
        // so a pass over the waiting requests stops once the others' are.
        for ((blocked, &load), &seats) in self.rank_blocked.iter_mut().zip(&self.rank_load).zip(&self.rank_seats) {
            *blocked = load <= seats;
        }
        self.rank_halt.fill(false);
    }

    /// Whether the rank of the running request in `slot` stopped its pass
    /// this step ([`Engine::halt_rank`]; never with one rank).
    fn rank_halted(&self, slot: u32) -> bool {
        if self.rank_halt.is_empty() {
            return false;
        }
        self.rank_halt[self.slots[slot as usize].rank as usize]
    }

    /// Stops the pass over the running requests of the rank of `slot`; false
    /// with one rank (the whole pass stops).
    fn halt_rank(&mut self, slot: u32) -> bool {
        let r = self.slots[slot as usize].rank as usize;
        match self.rank_halt.get_mut(r) {
            Some(h) => {
                *h = true;
                true
            }
            None => false,
        }
    }

    /// The tokens the rank of the request in `slot` may still schedule this
    /// step (no limit of its own with one rank).
    pub(super) fn rank_left(&self, slot: u32) -> u32 {
        // One rank: nothing to look up (this runs for every request a step).
        if self.rank_budget.is_empty() {
            return u32::MAX;
        }
        self.rank_budget[self.slots[slot as usize].rank as usize]
    }

    /// Whether the rank of the waiting request in `slot` may admit it: its
    /// queue not stopped, budget left, a seat free. One rank: always.
    pub(super) fn rank_admits(&self, slot: u32) -> bool {
        if self.rank_budget.is_empty() {
            return true;
        }
        let r = self.slots[slot as usize].rank as usize;
        !self.rank_blocked[r] && self.rank_budget[r] > 0 && self.rank_seats[r] < self.cfg.resolved_max_num_seqs()
    }

    /// Counts `new` tokens scheduled on the rank of `slot` (and a seat
    /// taken where `admitted`).
    pub(super) fn rank_took(&mut self, slot: u32, new: u32, admitted: bool) {
        if self.rank_budget.is_empty() {
            return;
        }
        let r = self.slots[slot as usize].rank as usize;
        self.rank_budget[r] = self.rank_budget[r].saturating_sub(new);
        self.rank_seats[r] += u32::from(admitted);
    }

    /// Stops the queue of the rank of the waiting request in `slot` for
    /// this step (it could not be admitted, and a rank admits first come
    /// first served); false once no rank's queue is open (with one rank, at
    /// once).
    pub(super) fn block_rank(&mut self, slot: u32) -> bool {
        let r = self.slots[slot as usize].rank as usize;
        match self.rank_blocked.get_mut(r) {
            Some(b) => {
                *b = true;
                self.rank_blocked.iter().any(|b| !b)
            }
            None => false,
        }
    }

    /// The pool (in `pools`) of the request in `slot`: its rank's, where
    /// each rank keeps its own.
    pub(super) fn pool_of(&self, slot: u32) -> usize {
        if self.pools.len() == 1 {
            return 0;
        }
        self.slots[slot as usize].rank as usize
    }

    /// Blocks needed to hold `tokens` tokens (every pool counts alike).
    pub(super) fn blocks_for(&self, tokens: u32) -> u32 {
        self.pools[0].blocks_for(tokens)
    }

    /// The blocks of every pool together: (total, free).
    fn blocks(&self) -> (u32, u32) {
        self.pools.iter().fold((0, 0), |(t, f), p| (t + p.num_blocks(), f + p.num_free()))
    }

    /// The newest running request on the rank of `slot`, taken out of
    /// `running`: where a rank keeps its own blocks, a preemption frees
    /// room only from its own requests (with one pool, the newest of all).
    fn pop_newest_of(&mut self, slot: u32) -> Option<u32> {
        if self.pools.len() == 1 {
            return self.running.pop();
        }
        let rank = self.slots[slot as usize].rank;
        let at = self.running.iter().rposition(|&s| self.slots[s as usize].rank == rank)?;
        Some(self.running.remove(at))
    }

    /// Request `slot` left its rank.
    fn leave_rank(&mut self, slot: u32) {
        let r = &self.slots[slot as usize];
        let (rank, prompt) = (r.rank as usize, u64::from(r.prompt_len));
        let n = &mut self.rank_load[rank];
        *n = n.saturating_sub(1);
        let t = &mut self.rank_tokens[rank];
        *t = t.saturating_sub(prompt);
    }

    /// The most tokens one request may hold: the cache of the attention rank
    /// it runs on. An expert-parallel group's data-parallel ranks each keep
    /// their own cache (whole blocks), which [`Engine::capacity`] adds up
    /// (the engine schedules them together), and a request lives on one of
    /// them.
    pub fn request_kv_tokens(&self) -> u64 {
        let ranks = self.cfg.attention_ranks().max(1);
        u64::from(self.capacity.num_blocks / ranks) * u64::from(self.cfg.block_size)
    }

    pub fn roofline(&self) -> &Roofline {
        &self.roofline
    }

    pub fn max_num_seqs(&self) -> u32 {
        self.max_num_seqs
    }

    /// Makes this engine a prefill instance of a disaggregated engine: each
    /// finished request keeps its KV blocks until [`Engine::release_held`].
    pub fn hold_finished(&mut self) {
        self.hold_finished = true;
    }

    /// Frees the blocks a finished request kept (its KV has left); false
    /// when none are held for it.
    pub fn release_held(&mut self, id: u64) -> bool {
        match self.held.remove(&id) {
            Some((pool, mut blocks)) => {
                self.pools[pool].release(&mut blocks);
                true
            }
            None => false,
        }
    }

    /// The most leading blocks of a `num_tokens`-token prompt the prefix
    /// cache may serve: the last token is always computed (its logits are
    /// needed), so a block that holds it is not.
    fn reusable_blocks(&self, num_tokens: u32) -> usize {
        (num_tokens.saturating_sub(1) / self.cfg.block_size) as usize
    }

    /// Queues a request whose prompt a prefill instance computed and still
    /// holds (disaggregation), in the order vLLM's scheduler and
    /// TensorRT-LLM's generation instance take it: admitted first come first
    /// served when a sequence slot and the blocks for its prompt are free
    /// (the step's [`StepOutcome::pulls`] name it), its KV is pulled into
    /// them while it waits, neither running nor counted in the batch; once
    /// [`Engine::kv_landed`], its first step computes the last prompt token
    /// over the rest, a decode, and yields its first token.
    pub fn add_remote_request(&mut self, id: u64, prompt: Prompt, max_tokens: u32) -> Result<(), Error> {
        self.add_request(id, prompt, max_tokens)?;
        let r = &mut self.slots[self.index[&id] as usize];
        r.pull = Pull::Awaiting;
        r.remote = true;
        Ok(())
    }

    /// Request `id`'s KV has landed in the blocks it was admitted to: it
    /// queues to be computed, ahead of requests not yet admitted (vLLM puts
    /// the requests it skipped while they pulled back at the waiting
    /// queue's front). False when it was not pulling.
    pub fn kv_landed(&mut self, id: u64) -> bool {
        let Some(&slot) = self.index.get(&id) else { return false };
        let Some(pos) = self.pulling.iter().position(|&s| s == slot) else { return false };
        self.pulling.remove(pos);
        self.slots[slot as usize].pull = Pull::Landed;
        self.waiting.insert(self.landed_ahead(), slot);
        true
    }

    /// Queues a pooling pass (an embedding, a rerank pair): one prefill, whose
    /// end the step reports as the request's one and last [`TokenEvent`], as
    /// for a generation of one token. Its output is a pooled vector, not a
    /// token, so, as vLLM's counters, neither the generation tokens nor the
    /// step's tokens count it; its prompt is counted as any other.
    pub fn add_pooling_request(&mut self, id: u64, prompt: Prompt) -> Result<(), Error> {
        self.add(id, prompt, 1, true)
    }

    /// Queues a request; it is first scheduled by the next `step`. The output
    /// is exactly `max_tokens` tokens (the simulator ignores end of sequence).
    pub fn add_request(&mut self, id: u64, prompt: Prompt, max_tokens: u32) -> Result<(), Error> {
        self.add(id, prompt, max_tokens, false)
    }

    /// [`Engine::add_request`], or a pooling pass's ([`Engine::add_pooling_request`]),
    /// whose input alone must fit the context: it writes no output.
    fn add(&mut self, id: u64, prompt: Prompt, max_tokens: u32, pooling: bool) -> Result<(), Error> {
        let reject = |message: String| Err(Error::InvalidRequest { id, message });
        if self.index.contains_key(&id) {
            return Err(Error::DuplicateRequest(id));
        }
        if prompt.is_empty() {
            return reject("the prompt is empty; send at least one token".into());
        }
        if max_tokens == 0 {
            return reject("max_tokens is 0; ask for at least one token".into());
        }
        if prompt.block_size() != self.cfg.block_size {
            return reject(format!(
                "the prompt was hashed in blocks of {} tokens but the engine uses {}; build it \
                 with the engine's block size",
                prompt.block_size(),
                self.cfg.block_size
            ));
        }
        let total = prompt.len() as u64 + max_tokens as u64;
        let output = if pooling { 0 } else { max_tokens.into() };
        if let Err(message) = self.cfg.model.check_context(prompt.len() as u64, output) {
            return reject(message);
        }
        let (holds, ranks, ep) = (self.request_kv_tokens(), self.cfg.attention_ranks(), self.cfg.ep);
        if total > holds {
            let (p, whole) = (prompt.len(), self.capacity.tokens());
            return reject(if ranks > 1 {
                format!(
                    "{p} prompt + {max_tokens} output tokens need more KV cache than one attention rank holds: \
                     {holds} tokens, the expert-parallel group's {whole} over its {ranks} data-parallel ranks, \
                     each of which keeps its own cache and runs a request whole; shorten the request, or give \
                     each rank more memory (--tp {ep} --ep {ep}: one rank over the group's GPUs; a lower \
                     precision, --kv-cache-dtype fp8, --gpu-memory-utilization)"
                )
            } else {
                format!(
                    "{p} prompt + {max_tokens} output tokens need more KV cache than the engine's {whole} tokens; \
                     shorten the request, or give the engine more memory (--tp, a lower precision, \
                     --kv-cache-dtype fp8, --gpu-memory-utilization)"
                )
            });
        }
        if !self.cfg.enable_chunked_prefill && prompt.len() > self.cfg.max_num_batched_tokens {
            return reject(format!(
                "the {}-token prompt exceeds the {}-token step budget and chunked prefill is \
                 off; enable chunked prefill or raise --max-num-batched-tokens",
                prompt.len(),
                self.cfg.max_num_batched_tokens
            ));
        }
        let request = Request {
            id,
            prompt_len: prompt.len(),
            max_tokens,
            prompt,
            output_hashes: Vec::new(),
            num_output: 0,
            num_computed: 0,
            num_registered: 0,
            blocks: Vec::new(),
            admitted_once: false,
            live: true,
            joined: 0,
            pull: Pull::None,
            remote: false,
            pooling,
            rank: 0,
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                let old = std::mem::replace(&mut self.slots[s as usize], request);
                // Keep the block list's allocation for the next request.
                self.slots[s as usize].blocks = old.blocks;
                s
            }
            None => {
                self.slots.push(request);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(id, slot);
        if self.cfg.scheduler == SchedulerPolicy::Trtllm && self.rank_load.len() > 1 {
            // Queued for TensorRT-LLM's executor to fetch at a step.
            self.slots[slot as usize].rank = UNRANKED;
        } else {
            let prompt = self.slots[slot as usize].prompt_len;
            self.slots[slot as usize].rank = self.take_rank(id, prompt);
        }
        if self.cfg.async_scheduling || self.cfg.scheduler_recv_interval > 1 {
            self.ahead.push(slot);
        } else {
            self.queue(slot);
        }
        Ok(())
    }

    /// Queues the request in `slot` to be scheduled: for TensorRT-LLM's
    /// executor to fetch where it has no rank yet, else waiting.
    fn queue(&mut self, slot: u32) {
        if self.slots[slot as usize].rank == UNRANKED {
            self.unranked.push(slot);
        } else {
            self.waiting.push_back(slot);
        }
    }

    /// Whether this step takes the requests the front end holds: always but
    /// under SGLang's `scheduler_recv_interval`, where only once the steps
    /// since the last time weigh the interval (its `SchedulerRecvSkipper`:
    /// a decode step 1, any other `SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DEFAULT`,
    /// 1000, past any interval), or when the engine is otherwise idle (its
    /// idle loop turns fast until it does).
    fn receives(&mut self, busy: bool) -> bool {
        let interval = self.cfg.scheduler_recv_interval;
        if interval <= 1 {
            return true;
        }
        if busy && self.recv_counter < interval {
            return false;
        }
        // Taken, and counted again from nothing (whether or not any came).
        self.recv_counter = 0;
        true
    }

    /// Queues the requests held out of the step scheduled before they came
    /// (`ahead`), oldest first.
    fn release_ahead(&mut self) {
        let mut held = std::mem::take(&mut self.ahead);
        for slot in held.drain(..) {
            self.queue(slot);
        }
        // Keep the allocation.
        self.ahead = held;
    }

    /// Empties the prefix cache (vLLM's `reset_prefix_cache`): no later
    /// request finds a prefix cached before it. Returns how many cached
    /// prefixes (blocks) were forgotten.
    pub fn reset_prefix_cache(&mut self) -> usize {
        self.pools.iter_mut().map(BlockPool::reset_prefix_cache).sum()
    }

    /// Drops a request (a client disconnect), freeing its blocks: a finished
    /// one's too, where a prefill instance held them for a transfer that
    /// will not come now. False when the engine holds nothing of it (already
    /// finished and freed, or never added).
    pub fn abort(&mut self, id: u64) -> bool {
        let Some(slot) = self.index.remove(&id) else {
            return self.release_held(id);
        };
        if let Some(pos) = self.ahead.iter().position(|&s| s == slot) {
            self.ahead.remove(pos);
        } else if let Some(pos) = self.unranked.iter().position(|&s| s == slot) {
            self.unranked.remove(pos);
        } else if let Some(pos) = self.running.iter().position(|&s| s == slot) {
            self.running.remove(pos);
        } else if let Some(pos) = self.late.iter().position(|l| l.slot == slot) {
            self.late.remove(pos);
        } else if let Some(pos) = self.waiting.iter().position(|&s| s == slot) {
            self.waiting.remove(pos);
        } else if let Some(pos) = self.pulling.iter().position(|&s| s == slot) {
            self.pulling.remove(pos);
        } else if let Some(pos) = self.offloaded.iter().position(|&s| s == slot) {
            self.offloaded.remove(pos);
        }
        // One not yet given a rank holds nothing there.
        if self.slots[slot as usize].rank != UNRANKED {
            let pool = self.pool_of(slot);
            self.pools[pool].release(&mut self.slots[slot as usize].blocks);
            self.leave_rank(slot);
        }
        self.slots[slot as usize].live = false;
        self.free_slots.push(slot);
        self.stats.requests_aborted += 1;
        true
    }

    /// Whether a step would do anything.
    pub fn has_work(&self) -> bool {
        !self.ahead.is_empty() || self.has_scheduled_work()
    }

    /// Whether a step would do anything for the requests already queued
    /// when it is scheduled (those `ahead` left out).
    fn has_scheduled_work(&self) -> bool {
        !self.running.is_empty()
            || !self.waiting.is_empty()
            || !self.late.is_empty()
            || !self.offloaded.is_empty()
            || !self.unranked.is_empty()
    }

    /// Running requests, those whose output is still crossing a pipeline's
    /// stages included.
    pub fn num_running(&self) -> usize {
        self.running.len() + self.late.len()
    }

    /// Waiting requests, those pulling their KV in (vLLM counts them
    /// waiting), those whose KV SGLang moved to the host and those
    /// TensorRT-LLM's executor has not yet fetched included.
    pub fn num_waiting(&self) -> usize {
        self.waiting.len() + self.pulling.len() + self.offloaded.len() + self.unranked.len() + self.ahead.len()
    }

    pub fn kv_usage(&self) -> f64 {
        let (total, free) = self.blocks();
        super::kv::usage(total, free)
    }

    /// The load SGLang's scheduler reports to its router (`/get_load`'s
    /// `num_tokens`, `Scheduler.get_load`): the KV cache's tokens its
    /// requests hold (prompts and outputs so far, a block shared by several
    /// counted once; cached blocks that no request holds are not counted)
    /// plus the prompt tokens of the requests waiting. Whole blocks here,
    /// where SGLang's pages are a token by default.
    pub fn load_tokens(&self) -> u64 {
        let held = self.pools.iter().map(BlockPool::held_tokens).sum::<u64>();
        let queued = self.waiting.iter().chain(&self.unranked).chain(&self.ahead);
        held + queued.map(|&s| u64::from(self.slots[s as usize].prompt_len)).sum::<u64>()
    }

    /// Running requests, oldest admission first (those whose output is
    /// crossing a pipeline's stages last).
    pub fn running_ids(&self) -> impl Iterator<Item = u64> + '_ {
        let late = self.late.iter().map(|l| l.slot);
        self.running.iter().copied().chain(late).map(|s| self.slots[s as usize].id)
    }

    /// Waiting requests, next to be admitted first.
    pub fn waiting_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.waiting.iter().chain(&self.unranked).chain(&self.ahead).map(|&s| self.slots[s as usize].id)
    }

    pub fn stats(&self) -> EngineStats {
        let (total, free) = self.blocks();
        EngineStats {
            running: self.num_running() as u32,
            waiting: self.num_waiting() as u32,
            kv_usage: super::kv::usage(total, free),
            kv_blocks_total: total,
            kv_blocks_free: free,
            prefix_cache_evictions: self.pools.iter().map(|p| p.evictions).sum(),
            ..self.stats.clone()
        }
    }

    /// Schedules and runs one step; `None` when there is nothing to do.
    pub fn step(&mut self) -> Option<StepOutcome> {
        let mut out = StepOutcome::default();
        self.step_into(&mut out).then_some(out)
    }

    /// [`step`](Self::step) into a caller's buffer, so a loop allocates
    /// nothing per step. False (and `out` cleared) when idle.
    pub fn step_into(&mut self, out: &mut StepOutcome) -> bool {
        out.clear();
        if !self.has_work() {
            return false;
        }
        // Working a step ahead, this step was chosen while the last one
        // ran: what came since waits for the next, unless the engine was
        // idle (nothing else to step), when it goes at once. SGLang's
        // scheduler with a receive interval takes new requests only at some
        // steps (`receive`): until then they wait whole.
        let busy = self.has_scheduled_work();
        let receive = self.receives(busy);
        let held = !self.ahead.is_empty() && busy && (self.cfg.async_scheduling || !receive);
        if !held {
            self.release_ahead();
        }
        self.rank_new_requests();
        let mut stepped = self.run_step(out);
        if held {
            if receive || !stepped {
                self.release_ahead();
            }
            if !stepped {
                // Nothing queued before them could run: an idle engine. What
                // that pass admitted stands (a pull admitted to a decode
                // instance is reported even when no step runs: dropped, its
                // transfer never started and the request waited for good).
                self.rank_new_requests();
                stepped = self.run_step(out);
            }
        }
        // SGLang's skipper weighs the step just run: a decode 1, one that
        // computed a prompt enough to take new requests at the next.
        if self.cfg.scheduler_recv_interval > 1 && stepped {
            let weight = if out.batch.prefills > 0 { self.cfg.scheduler_recv_interval } else { 1 };
            self.recv_counter = self.recv_counter.saturating_add(weight);
        }
        // The ranks' counts as vLLM's coordinator publishes them: at the end
        // of the first step 100 ms of steps after the last, and when the
        // engine runs out of work (the engine's clock is its steps: an idle
        // gap, in which the coordinator would publish too, is taken as long
        // enough).
        self.rank_seen_age += out.duration;
        if self.rank_seen_age >= VLLM_DP_STATS_INTERVAL || !self.has_work() {
            self.count_ranks();
            self.rank_seen_age = Duration::ZERO;
        }
        // A replica behind SGLang's controller publishes its load, as
        // each rank of its DP attention does (`balance.rs`).
        if let Some(mut p) = self.publisher.take() {
            // A dense replica is one rank: its whole load is that rank's.
            let vllm = p.counts();
            p.after_step(!self.has_work(), out.batch.prefills > 0, || {
                if vllm {
                    self.replica_counts()
                } else {
                    self.rank_snapshot(0)
                }
            });
            self.publisher = Some(p);
        }
        // SGLang's ranks publish their loads (`balance.rs`).
        if let Some(mut b) = self.balancer.take() {
            let prefilled = |r: usize| self.sglang_prompts.get(r).is_some_and(|&n| n > 0);
            b.after_step(out.duration, !self.has_work(), prefilled, |r| self.rank_snapshot(r));
            self.balancer = Some(b);
        }
        stepped
    }

    /// Has this engine, a replica of a dense model behind SGLang's
    /// data-parallel controller, publish its load after its steps: after a
    /// step that prefilled, on its 15th step without, and when it runs out
    /// of work ([`Engine::published_load`]); behind vLLM's balancer, its
    /// waiting and running requests after every step.
    pub fn publish_loads(&mut self, by: ReplicaBalancer) {
        self.publisher = Some(match by {
            ReplicaBalancer::Vllm { .. } => balance::Publisher::every_step(),
            ReplicaBalancer::Sglang(_) => balance::Publisher::default(),
        });
    }

    /// This replica's requests as vLLM's scheduler counts them for its
    /// balancer: all it holds, and how many of them run (`len(running)`;
    /// the rest wait).
    fn replica_counts(&self) -> Load {
        let running = (self.running.len() + self.late.len()) as u64;
        let requests = u64::from(self.rank_load.first().copied().unwrap_or(0));
        Load { requests, tokens: 0, running: running.min(requests) }
    }

    /// The load this replica last published, and how many it has
    /// published; `None` where it does not publish.
    pub fn published_load(&self) -> Option<Published> {
        self.publisher.map(|p| p.published())
    }

    /// Rank `r`'s load as SGLang's scheduler publishes it: its requests,
    /// running and waiting, and the tokens they hold (the KV its pool holds
    /// for them, and the whole sequence of each waiting request that holds
    /// none: `num_total_tokens`).
    fn rank_snapshot(&self, r: usize) -> Load {
        let held = self.pools[r].held_tokens();
        let queued = self
            .waiting
            .iter()
            .map(|&s| &self.slots[s as usize])
            .filter(|q| q.rank as usize == r && q.blocks.is_empty())
            .map(|q| u64::from(q.prompt_len) + u64::from(q.num_output))
            .sum::<u64>();
        // SGLang's methods read no running count.
        Load { requests: u64::from(self.rank_load[r]), tokens: held + queued, running: 0 }
    }

    /// [`step_into`](Self::step_into)'s step, the engine having work.
    fn run_step(&mut self, out: &mut StepOutcome) -> bool {
        self.schedule(out);
        if self.scheduled.is_empty() && !out.tokens.is_empty() {
            // SGLang's decode instance handed on the first tokens its
            // prefill instances made: a pass with no forward, of no time
            // (`ForwardMode.PREBUILT`).
            return true;
        }
        if self.scheduled.is_empty() {
            // A lone running request that preempted itself can leave a step
            // empty, and add_request guarantees a lone request fits, so
            // scheduling again (now admission is allowed) succeeds, unless
            // requests whose outputs are crossing a pipeline's stages hold
            // the blocks.
            self.schedule(out);
        }
        if self.scheduled.is_empty() {
            // Only outputs crossing a pipeline's stages are left: a step that
            // waits for the first of them, one stage time at most (a request
            // that arrives meanwhile enters the first stage at the next
            // slot, as in a real pipeline, not after the whole wait), its
            // GPUs drawing what one stage of the step that left it drew (the
            // others idle).
            let Some(first) = self.late.iter().min_by_key(|l| l.left).copied() else { return false };
            let idle = self.roofline.idle_watts();
            out.duration = first.left.min(first.stage.max(Duration::from_micros(1)));
            let watts = idle + (first.watts - idle).max(0.0) / f64::from(self.cfg.pp.max(1));
            out.power = StepPower { watts, ..StepPower::default() };
            self.deliver_late(out.duration, out);
            self.stats.busy += out.duration;
            self.stats.busy_energy_j += out.duration.as_secs_f64() * out.power.watts;
            return true;
        }

        let mut shape = BatchShape::of_model(&self.cfg.model);
        let mut batch = BatchSummary::default();
        let mut most_drafts = 0;
        self.rank_shapes.fill(shape);
        for &(slot, new) in &self.scheduled {
            let r = &self.slots[slot as usize];
            let decode = new == 1 && r.decoding();
            // Verifying drafts: the last token and the drafts in one pass over
            // the context, as a short prefill is.
            let add = |s: &mut BatchShape| {
                if decode {
                    s.add_decode(r.num_computed);
                } else {
                    s.add_prefill(r.num_computed, new);
                }
            };
            add(&mut shape);
            // The sequence's own rank's batch too, where there are several.
            if !self.rank_shapes.is_empty() {
                add(&mut self.rank_shapes[r.rank as usize]);
            }
            if decode {
                batch.decodes += 1;
            } else if r.decoding() {
                batch.decodes += 1;
                most_drafts = most_drafts.max(new - 1);
            } else {
                batch.prefills += 1;
                batch.prefill_tokens += new;
            }
            batch.tokens += new;
        }
        batch.seqs = self.scheduled.len() as u32;
        let ranks = (!self.rank_shapes.is_empty()).then_some(&self.rank_shapes[..]);
        (out.duration, out.power) = self.roofline.step_time_and_power_ranked(&shape, ranks);
        self.late_now.clear();
        if self.cfg.pp > 1 && shape.prefills > 0 {
            self.chunks_late(&shape, &mut out.duration);
        }
        let mut factor = 1.0;
        let cv = self.cfg.calibration.step_time_cv;
        if cv > 0.0 {
            factor = self.step_factor(cv);
        }
        if let Some(sd) = self.cfg.spec.filter(|_| most_drafts > 0) {
            // The drafter runs once per draft position, for the whole batch.
            factor *= 1.0 + sd.draft_cost * most_drafts as f64;
        }
        if factor != 1.0 {
            out.duration = out.duration.mul_f64(factor);
            for (_, l) in &mut self.late_now {
                *l = l.mul_f64(factor);
            }
        }
        out.batch = batch;
        let stage = out.duration.div_f64(f64::from(self.cfg.pp.max(1)));
        // What earlier steps left crossing the stages, due by this step's end.
        self.deliver_late(out.duration, out);

        let mut any_finished = false;
        let acceptance = self.cfg.spec.map_or(0.0, |s| s.acceptance);
        for i in 0..self.scheduled.len() {
            let (slot, new) = self.scheduled[i];
            let r = &mut self.slots[slot as usize];
            let drafts = if r.decoding() { new - 1 } else { 0 };
            let mut accepted = 0;
            if drafts > 0 {
                // Drafts are accepted in order until the first rejection.
                while accepted < drafts {
                    self.spec_noise = self.spec_noise.wrapping_add(1);
                    let u = super::calibration::unit_draw(super::calibration::splitmix64(self.spec_noise));
                    if u >= acceptance {
                        break;
                    }
                    accepted += 1;
                }
                let st = &mut self.stats;
                st.spec_drafts += 1;
                st.spec_draft_tokens += drafts as u64;
                st.spec_accepted_tokens += accepted as u64;
                if st.spec_accepted_by_position.len() < drafts as usize {
                    st.spec_accepted_by_position.resize(drafts as usize, 0);
                }
                for n in &mut st.spec_accepted_by_position[..accepted as usize] {
                    *n += 1;
                }
            }
            // A verified decode keeps the last token and the accepted
            // drafts; the rejected drafts' positions are computed again.
            r.num_computed += if drafts > 0 { 1 + accepted } else { new };
            let late = self.late_now.iter().find(|&&(s, _)| s == slot).map(|&(_, l)| l);
            if r.num_computed < r.num_tokens() {
                // A prefill chunk that is not the last: no output, but the
                // next chunk waits for this one's trip.
                if let Some(left) = late {
                    self.late.push(Late { left, slot, event: None, watts: out.power.watts, stage });
                } else if self.hold_finished && self.cfg.decode_first() && self.cfg.pp <= 1 {
                    out.chunked.push((r.id, r.num_computed));
                }
                continue;
            }
            let index = r.num_output;
            let emitted = 1 + accepted;
            r.num_output += emitted;
            let finished = r.num_output >= r.max_tokens;
            if index == 0 {
                self.stats.prompt_tokens += r.prompt_len as u64;
                out.iteration_tokens = out.iteration_tokens.saturating_add(r.prompt_len);
            }
            if !r.pooling {
                self.stats.generation_tokens += emitted as u64;
                out.iteration_tokens = out.iteration_tokens.saturating_add(emitted);
            }
            let event = TokenEvent { id: r.id, index, tokens: emitted, first: index == 0, finished };
            if let Some(left) = late {
                // Its output, and its end when it is the last, come when the
                // trip ends: its blocks and its seat are held until then.
                self.late.push(Late { left, slot, event: Some(event), watts: out.power.watts, stage });
                continue;
            }
            out.tokens.push(event);
            if finished {
                self.finish(slot);
                any_finished = true;
            }
        }
        if any_finished {
            let slots = &self.slots;
            self.running.retain(|&s| slots[s as usize].live);
        }
        if !self.late_now.is_empty() {
            let late = &self.late_now;
            self.running.retain(|s| late.iter().all(|(l, _)| l != s));
        }

        self.stats.steps += 1;
        self.stats.batch_seqs_total += batch.seqs as u64;
        self.stats.batch_tokens_total += batch.tokens as u64;
        self.stats.max_batch_seqs = self.stats.max_batch_seqs.max(batch.seqs);
        self.stats.busy += out.duration;
        self.stats.busy_energy_j += out.duration.as_secs_f64() * out.power.watts;
        true
    }

    /// Counts a step of `elapsed` against the outputs crossing a pipeline's
    /// stages: those due by its end go out with its tokens (first: they
    /// were due before them), their requests back to `running` in the
    /// place they joined it (vLLM's running list keeps a request whose batch
    /// is in flight; until session 47 it came back as the newest).
    fn deliver_late(&mut self, elapsed: Duration, out: &mut StepOutcome) {
        if self.late.is_empty() {
            return;
        }
        let (mut k, mut ahead) = (0, 0);
        while k < self.late.len() {
            let l = &mut self.late[k];
            l.left = l.left.saturating_sub(elapsed);
            if !l.left.is_zero() {
                k += 1;
                continue;
            }
            let l = self.late.remove(k);
            if let Some(ev) = l.event {
                out.tokens.insert(ahead, ev);
                ahead += 1;
                if ev.finished {
                    self.finish(l.slot);
                    continue;
                }
            }
            // It never left vLLM's running list: back in its place, not as
            // the newest (a preemption would have taken it first).
            let joined = self.slots[l.slot as usize].joined;
            let slots = &self.slots;
            let at = self.running.partition_point(|&s| slots[s as usize].joined < joined);
            self.running.insert(at, l.slot);
        }
    }

    /// Puts the request in `slot` last among the running ones, the newest.
    fn join_running(&mut self, slot: u32) {
        self.slots[slot as usize].joined = self.joins;
        self.joins += 1;
        self.running.push(slot);
    }

    /// The chunks of this step (scheduled, of `shape`) whose trip through a
    /// pipeline's stages outlasts the step `step` (before its noise), in
    /// `late_now` with how long after the step's end. A trip that ends
    /// within one stage time of the step's end (the step over the stages)
    /// lengthens the step instead: a request held out for the next step
    /// would lose a whole step for a few microseconds. Prefill chunks only:
    /// a verify of drafts, or a request whose KV landed computing its last
    /// prompt token, is a decode here.
    fn chunks_late(&mut self, shape: &BatchShape, step: &mut Duration) {
        let stage = step.div_f64(f64::from(self.cfg.pp.max(1)));
        let mut extend = Duration::ZERO;
        for &(slot, new) in &self.scheduled {
            if new <= 1 || self.slots[slot as usize].decoding() {
                continue;
            }
            let rank = self.rank_shapes.get(self.slots[slot as usize].rank as usize);
            let late = self.roofline.chunk_late(shape, rank, new, *step);
            if late.is_zero() {
                continue;
            }
            if late <= stage {
                extend = extend.max(late);
            } else {
                self.late_now.push((slot, late));
            }
        }
        *step += extend;
        for (_, l) in &mut self.late_now {
            *l = l.saturating_sub(extend);
        }
    }

    /// Ends the request in `slot`, whose last output is out: its blocks
    /// freed (or held for a decode instance's pull), its slot given back.
    fn finish(&mut self, slot: u32) {
        let pool = self.pool_of(slot);
        let r = &mut self.slots[slot as usize];
        if self.hold_finished {
            self.held.insert(r.id, (pool, std::mem::take(&mut r.blocks)));
        } else {
            self.pools[pool].release(&mut r.blocks);
        }
        r.live = false;
        self.index.remove(&r.id);
        self.leave_rank(slot);
        self.free_slots.push(slot);
        self.stats.requests_finished += 1;
    }

    /// A step time's factor, mean 1 and standard deviation `cv`: the sum of
    /// four uniform draws (near a normal, bounded at ±3.5 deviations), so a
    /// factor is never below 1 − 3.5 · 0.5 > 0.
    fn step_factor(&mut self, cv: f64) -> f64 {
        let mut sum = 0.0;
        for _ in 0..4 {
            self.noise = self.noise.wrapping_add(1);
            sum += super::calibration::unit_draw(super::calibration::splitmix64(self.noise));
        }
        1.0 + cv * (sum - 2.0) * 3f64.sqrt()
    }

    /// The energy the replica's GPUs drew over `elapsed` of which the
    /// engine stepped for its busy time: the steps' energy, and idle power
    /// for the rest. Joules.
    pub fn energy_j(&self, elapsed: Duration) -> f64 {
        let idle = elapsed.saturating_sub(self.stats.busy).as_secs_f64();
        self.stats.busy_energy_j + idle * self.roofline.idle_watts()
    }

    /// vLLM V1's schedule: running requests first, in admission order, each
    /// taking what is left of its prefill (within the budget) or one decode
    /// token; a request that cannot get a block preempts the newest running
    /// one (possibly itself). Then, unless this step preempted, waiting
    /// requests are admitted first come, first served while the budget, the
    /// sequence cap and the free blocks allow.
    ///
    /// Without mixed batches (`mixed_batches` false) the running requests'
    /// prefill chunks and the admissions go first, and the decodes run only
    /// in a step that prefills nothing.
    fn schedule(&mut self, out: &mut StepOutcome) {
        match self.cfg.scheduler {
            SchedulerPolicy::Trtllm => return self.schedule_trtllm(out),
            SchedulerPolicy::Sglang => return self.schedule_sglang(out),
            SchedulerPolicy::Vllm => {}
        }
        self.scheduled.clear();
        let mut budget = self.cfg.step_token_budget();
        self.open_ranks();
        let mixed = self.cfg.mixed_batches;
        let running = if mixed { Phase::Both } else { Phase::Prefill };
        // A preemption stops admission: with several ranks, on the rank
        // that preempted (its queue blocked), the others' going on.
        if self.schedule_running(running, &mut budget, out) && self.rank_budget.is_empty() {
            return;
        }

        // The waiting requests first come first served; with several ranks,
        // each rank's own in their order: one that cannot be admitted stops
        // its rank's queue, not the others'.
        let mut i = 0;
        while budget > 0 && (self.num_running() as u32) < self.max_num_seqs {
            let Some(&slot) = self.waiting.get(i) else {
                break;
            };
            let taken = if self.rank_admits(slot) { self.admit_waiting(slot, budget, out) } else { None };
            let Some(new) = taken else { stop_rank!(self, slot, i) };
            self.waiting.remove(i);
            // One pulling its KV in is not running yet: it takes no seat.
            let seat = self.slots[slot as usize].pull != Pull::Pulling;
            self.rank_took(slot, new, seat);
            budget -= new;
        }
        if !mixed && !self.prefills() {
            self.schedule_running(Phase::Decode, &mut budget, out);
        }
    }

    /// Admits the waiting request in `slot` under vLLM's scheduler, within
    /// `budget` and its rank's: the tokens it computes this step, or `None`
    /// (holding nothing) where it cannot be admitted. A request prefilled
    /// elsewhere is admitted to pull its KV (no tokens), or, its KV landed,
    /// computes its last prompt token.
    fn admit_waiting(&mut self, slot: u32, budget: u32, out: &mut StepOutcome) -> Option<u32> {
        match self.slots[slot as usize].pull {
            Pull::Awaiting => return self.admit_pull(slot, out).then_some(0),
            Pull::Landed => return self.start_landed(slot, out).then_some(1),
            Pull::None | Pull::Pulling => {}
        }
        let left = budget.min(self.rank_left(slot));
        let num_tokens = self.slots[slot as usize].num_tokens();
        let cached = self.look_up(slot);
        let whole = num_tokens - cached;
        // Without chunked prefill only a recompute longer than a whole step
        // is chunked; the alternative is never running it again. A chunk
        // runs on its request's rank, within that rank's budget.
        if !self.cfg.enable_chunked_prefill && whole <= self.cfg.max_num_batched_tokens && whole > left {
            return None;
        }
        let new = whole.min(left).min(self.cfg.max_num_batched_tokens);
        let pool = self.pool_of(slot);
        if !self.pools[pool].admit(&mut self.slots[slot as usize].blocks, &self.hits, cached + new) {
            return None;
        }
        self.start(slot, cached, new, out);
        Some(new)
    }

    /// Whether the step scheduled so far computes some prompt (a new
    /// request's, a chunk of a started one's, or a preempted one's again).
    pub(super) fn prefills(&self) -> bool {
        self.scheduled.iter().any(|&(s, _)| !self.slots[s as usize].decoding())
    }

    /// vLLM's pass over the running requests, in admission order: each
    /// takes what is left of its prefill within `budget`, or its decode
    /// token (and drafts), as `phase` allows; a request that cannot get a
    /// block preempts the newest running one (possibly itself). True when it
    /// preempted, and the step then admits nobody. With several ranks each
    /// keeping its own blocks, a request preempts its own rank's newest, a
    /// rank that preempted admits nobody this step (its queue is blocked)
    /// and its pass over its running requests stops where one could not be
    /// scheduled, as each rank's scheduler does, while the other ranks go
    /// on.
    fn schedule_running(&mut self, phase: Phase, budget: &mut u32, out: &mut StepOutcome) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let slot = self.running[i];
            let r = &self.slots[slot as usize];
            let wanted = match phase {
                Phase::Both => true,
                Phase::Prefill => !r.decoding(),
                Phase::Decode => r.decoding(),
            };
            if !wanted {
                i += 1;
                continue;
            }
            // With several ranks, each schedules its own within its budget;
            // one that preempted has stopped.
            let left = self.rank_left(slot);
            if left == 0 || self.rank_halted(slot) {
                i += 1;
                continue;
            }
            // A decoding sequence carries its drafts, as many as its output
            // has room for and the budget allows.
            let drafts = if r.decoding() { self.drafts(r) } else { 0 };
            let new =
                (r.num_tokens() - r.num_computed + drafts).min(*budget).min(left).min(self.cfg.max_num_batched_tokens);
            let target = r.num_computed + new;
            let mut scheduled = true;
            let pool = self.pool_of(slot);
            while !self.pools[pool].grow(&mut self.slots[slot as usize].blocks, target) {
                let Some(victim) = self.pop_newest_of(slot) else {
                    scheduled = false;
                    break;
                };
                self.preempt(victim, out);
                preempted = true;
                // Its rank admits nobody this step.
                self.block_rank(slot);
                if victim == slot {
                    scheduled = false;
                    break;
                }
            }
            if !scheduled {
                // One rank: the pass ends. Several: this rank's does.
                if !self.halt_rank(slot) {
                    break;
                }
                // `slot` itself was taken out where it preempted itself.
                if self.running.get(i) == Some(&slot) {
                    i += 1;
                }
                continue;
            }
            // Drafts not yet accepted fill no block of the prefix cache.
            let kept = r_kept(target, new, drafts);
            self.register_full_blocks(slot, kept);
            self.scheduled.push((slot, new));
            self.rank_took(slot, new, false);
            *budget -= new;
            i += 1;
        }
        preempted
    }

    /// The tokens of the waiting request in `slot` that need no computing:
    /// its prompt's leading blocks found in the prefix cache (left in
    /// `hits`; prefilled elsewhere, what its KV pull leaves out).
    pub(super) fn look_up(&mut self, slot: u32) -> u32 {
        let r = &self.slots[slot as usize];
        let (num_tokens, bs) = (r.num_tokens(), self.cfg.block_size);
        if self.cfg.enable_prefix_caching {
            let max_hit = self.reusable_blocks(num_tokens);
            let pool = &self.pools[self.pool_of(slot)];
            pool.find_prefix(r.prompt.block_hashes(), max_hit, &mut self.hits);
        } else {
            self.hits.clear();
        }
        self.hits.len() as u32 * bs
    }

    /// Starts the request in `slot`, just admitted with its blocks: `cached`
    /// of its tokens found in the prefix cache and `new` computed this step.
    /// Counts its prefix lookup and its first admission, and schedules it.
    pub(super) fn start(&mut self, slot: u32, cached: u32, new: u32, out: &mut StepOutcome) {
        let r = &mut self.slots[slot as usize];
        let num_tokens = r.num_tokens();
        r.num_computed = cached;
        r.num_registered = self.hits.len() as u32;
        if self.cfg.enable_prefix_caching {
            self.stats.prefix_cache_queries += num_tokens as u64;
            self.stats.prefix_cache_hits += cached as u64;
        }
        if !r.admitted_once {
            r.admitted_once = true;
            self.stats.requests_admitted += 1;
            out.admitted.push(r.id);
            if cached > 0 {
                out.prefix_hits.push((r.id, cached));
            }
        }
        self.register_full_blocks(slot, cached + new);
        self.join_running(slot);
        self.scheduled.push((slot, new));
    }

    /// Admits the request in `slot`, prefilled elsewhere, to pull its KV:
    /// blocks for its whole prompt (its leading blocks this instance caches
    /// shared, not pulled; vLLM allocates for all but the last token and
    /// that one's block when it is computed, at most a block later: taken
    /// now, no request that landed waits for a block); false, holding
    /// nothing, when they are not free. Its blocks enter the prefix cache
    /// when the KV lands (vLLM delays their caching until the load ends).
    pub(super) fn admit_pull(&mut self, slot: u32, out: &mut StepOutcome) -> bool {
        self.look_up(slot);
        let (tokens, pool) = (self.slots[slot as usize].num_tokens(), self.pool_of(slot));
        if !self.pools[pool].admit(&mut self.slots[slot as usize].blocks, &self.hits, tokens) {
            return false;
        }
        let r = &mut self.slots[slot as usize];
        r.pull = Pull::Pulling;
        r.num_registered = self.hits.len() as u32;
        out.pulls.push((r.id, self.hits.len() as u32 * self.cfg.block_size));
        self.pulling.push(slot);
        true
    }

    /// Starts the request in `slot`, whose KV landed in the blocks it holds:
    /// its last prompt token is computed this step, a decode; false when its
    /// block cannot be had (it was taken at admission: never).
    pub(super) fn start_landed(&mut self, slot: u32, out: &mut StepOutcome) -> bool {
        let (n, pool) = (self.slots[slot as usize].num_tokens(), self.pool_of(slot));
        if !self.pools[pool].grow(&mut self.slots[slot as usize].blocks, n) {
            return false;
        }
        let r = &mut self.slots[slot as usize];
        r.pull = Pull::None;
        r.num_computed = n - 1;
        if !r.admitted_once {
            r.admitted_once = true;
            self.stats.requests_admitted += 1;
            out.admitted.push(r.id);
        }
        self.register_full_blocks(slot, n);
        self.join_running(slot);
        self.scheduled.push((slot, 1));
        true
    }

    /// Frees a request's blocks and puts it at the front of the waiting
    /// queue (behind the requests whose KV landed), to be recomputed
    /// (prompt and output so far) when readmitted.
    fn preempt(&mut self, slot: u32, out: &mut StepOutcome) {
        self.take_back(slot, out);
        // Behind the requests whose KV landed, which hold their blocks: a
        // recompute too large for the blocks they leave, put ahead of them,
        // stopped admission for good, nothing running to free any.
        self.waiting.insert(self.landed_ahead(), slot);
    }

    /// Frees a request's blocks, to be recomputed (prompt and output so
    /// far) when it is let in again, and counts it: a preemption (vLLM's)
    /// or a retraction (SGLang's), which then queue it each its own way.
    fn take_back(&mut self, slot: u32, out: &mut StepOutcome) {
        self.release_counted(slot, out);
        self.slots[slot as usize].num_computed = 0;
    }

    /// Frees a request's blocks and counts it preempted; what it had
    /// computed stays counted (its KV kept elsewhere, as SGLang's decode
    /// instance moves it to the host) unless [`Engine::take_back`] drops it.
    fn release_counted(&mut self, slot: u32, out: &mut StepOutcome) {
        let pool = self.pool_of(slot);
        let r = &mut self.slots[slot as usize];
        self.pools[pool].release(&mut r.blocks);
        r.num_registered = 0;
        out.preempted.push(r.id);
        self.stats.preemptions += 1;
    }

    /// The drafts a decoding request carries a step: as many as speculation
    /// proposes and its output has room for.
    fn drafts(&self, r: &Request) -> u32 {
        match self.cfg.spec {
            Some(sd) => sd.tokens.min(r.max_tokens - r.num_output - 1),
            None => 0,
        }
    }

    /// The requests at the front of the waiting queue whose KV landed: each
    /// holds its blocks, so it goes before any other.
    fn landed_ahead(&self) -> usize {
        self.waiting.iter().take_while(|&&s| self.slots[s as usize].pull == Pull::Landed).count()
    }

    /// Registers the prompt blocks that will be full once `target` tokens are
    /// computed. Done at allocation, as vLLM does: a request admitted later
    /// in the same step may share them, since each layer writes its KV
    /// before it reads attention.
    fn register_full_blocks(&mut self, slot: u32, target: u32) {
        if !self.cfg.enable_prefix_caching {
            return;
        }
        let at = self.pool_of(slot);
        let r = &mut self.slots[slot as usize];
        let mut full = target / self.cfg.block_size;
        // Every full block registered already (most steps of a decode, which
        // fill a block once in `block_size` tokens): nothing to hash.
        if full <= r.num_registered {
            return;
        }
        let prompt = r.prompt.block_hashes();
        let base = prompt.len() as u32;
        // Blocks the output filled, hashed as vLLM V1 hashes every full block.
        while base + (r.output_hashes.len() as u32) < full {
            let j = base + r.output_hashes.len() as u32;
            let parent = r.output_hashes.last().or(prompt.last()).copied();
            match r.prompt.continued_hash(j, parent) {
                Some(h) => r.output_hashes.push(h),
                None => break,
            }
        }
        full = full.min(base + r.output_hashes.len() as u32);
        let pool = &mut self.pools[at];
        for j in r.num_registered..full {
            let h = if j < base { prompt[j as usize] } else { r.output_hashes[(j - base) as usize] };
            pool.register(r.blocks[j as usize], h);
        }
        r.num_registered = r.num_registered.max(full);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::Precision;

    /// Llama-3.1-8B on an H100 with a hand-sized cache.
    fn config(blocks: Option<u32>, block_size: u32) -> EngineConfig {
        let mut c = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        c.num_gpu_blocks_override = blocks;
        c.block_size = block_size;
        c
    }

    pub(super) fn prompt(len: u32, seed: u64, cfg: &EngineConfig) -> Prompt {
        Prompt::synthetic(len, &[], seed, cfg.block_size)
    }

    /// [`config`] under `policy`, without prefix caching (the other
    /// schedulers' tests).
    pub(super) fn policy_config(blocks: Option<u32>, block_size: u32, policy: SchedulerPolicy) -> EngineConfig {
        let mut c = config(blocks, block_size);
        c.scheduler = policy;
        c.enable_prefix_caching = false;
        c
    }

    fn speculating(tokens: u32, acceptance: f64) -> EngineConfig {
        let mut c = config(None, 16);
        c.spec = Some(crate::engine::SpecDecoding { tokens, acceptance, draft_cost: 0.05 });
        c
    }

    #[test]
    fn speculative_decoding_emits_the_accepted_drafts_and_a_bonus_token_a_step() {
        // Every draft accepted: 1 token from the prefill, then 4 a step
        // (3 drafts and the bonus), the last step capped by max_tokens.
        let cfg = speculating(3, 1.0);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, &cfg), 16).unwrap();
        let steps = drain(&mut e);
        let emitted: Vec<u32> = steps.iter().flat_map(|s| s.tokens.iter().map(|t| t.tokens)).collect();
        assert_eq!(emitted, [1, 4, 4, 4, 3]);
        let indices: Vec<u32> = steps.iter().flat_map(|s| s.tokens.iter().map(|t| t.index)).collect();
        assert_eq!(indices, [0, 1, 5, 9, 13], "no index repeats or is skipped");
        assert!(steps.last().unwrap().tokens[0].finished);
        let st = e.stats();
        assert_eq!((st.generation_tokens, st.spec_drafts, st.spec_draft_tokens), (16, 4, 11));
        assert_eq!((st.spec_accepted_tokens, st.spec_accepted_by_position.clone()), (11, vec![4, 4, 3]));

        // Nothing accepted: one token a step, as without speculation, but
        // each step verifies (and pays for) three drafts.
        let cfg = speculating(3, 0.0);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, &cfg), 16).unwrap();
        let spec_steps = drain(&mut e);
        assert_eq!(spec_steps.len(), 16);
        assert_eq!(e.stats().spec_accepted_tokens, 0);
        let plain_cfg = config(None, 16);
        let mut plain = Engine::new(plain_cfg.clone()).unwrap();
        plain.add_request(1, prompt(64, 1, &plain_cfg), 16).unwrap();
        let plain_steps = drain(&mut plain);
        let total = |s: &[StepOutcome]| s.iter().map(|o| o.duration).sum::<Duration>();
        assert!(total(&spec_steps) > total(&plain_steps), "rejected drafts cost time and save none");
    }

    /// Under `cfg`, request 1 (an answer of `answer` tokens) alone, then
    /// `decodes` of its decode steps, then request 2: whether request 1's
    /// first token came at once, and the step, counted from request 2's
    /// arrival, that gave request 2 its first (request 1 decoding in each).
    fn first_token_after(cfg: &EngineConfig, answer: u32, decodes: u32) -> (bool, u32) {
        let policy = cfg.scheduler;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, cfg), answer).unwrap();
        let first = e.step().unwrap().tokens.iter().any(|t| t.id == 1 && t.first);
        for _ in 0..decodes {
            e.step().unwrap();
        }
        e.add_request(2, prompt(64, 2, cfg), 4).unwrap();
        assert_eq!(e.num_waiting(), 1, "{policy}: counted waiting while held");
        let mut n = 0;
        loop {
            n += 1;
            let out = e.step().unwrap();
            assert!(out.tokens.iter().any(|t| t.id == 1), "{policy}: request 1 decodes every step");
            if out.tokens.iter().any(|t| t.id == 2 && t.first) {
                return (first, n);
            }
        }
    }

    /// TensorRT-LLM's batch waiting: a prompt that comes while another
    /// request decodes is held out of up to `batch_wait_timeout_iters`
    /// steps in a row, the decodes running alone, unless the step's tokens
    /// reach `batch_wait_max_tokens_ratio` of the budget; one that finds
    /// nothing decoding goes at once; the ratio without the timeout holds
    /// nothing (TensorRT-LLM's count is at its limit, 0, from the start).
    /// Refused under the other schedulers.
    #[test]
    fn tensorrt_llm_s_batch_waiting_holds_a_prompt_beside_decodes() {
        let with = |iters: u32, ratio: f64| {
            let mut cfg = policy_config(None, 16, SchedulerPolicy::Trtllm);
            cfg.max_num_batched_tokens = 8192;
            (cfg.batch_wait_timeout_iters, cfg.batch_wait_max_tokens_ratio) = (iters, ratio);
            first_token_after(&cfg, 32, 2)
        };
        assert_eq!(with(0, 0.0), (true, 1));
        assert_eq!(with(3, 0.9), (true, 4), "held three steps, let go at the fourth");
        assert_eq!(with(3, 0.001), (true, 1), "65 tokens are past 0.1 % of 8,192");
        assert_eq!(with(0, 0.9), (true, 1));
        let mut cfg = policy_config(None, 16, SchedulerPolicy::Vllm);
        cfg.batch_wait_timeout_iters = 3;
        let err = Engine::new(cfg).err().expect("refused").to_string();
        assert!(err.contains("are TensorRT-LLM's") && err.contains("--scheduler trtllm"), "{err}");
    }

    /// Scheduling a step ahead: a request added while the engine has work
    /// (it reached the engine during a step, whose successor was chosen
    /// before it came) sits out the next step and is prefilled in the one
    /// after; an idle engine takes it at once. Under each scheduler.
    #[test]
    fn a_step_ahead_a_request_reaching_a_busy_engine_joins_the_step_after_next() {
        for policy in [SchedulerPolicy::Vllm, SchedulerPolicy::Trtllm, SchedulerPolicy::Sglang] {
            // The step in which request 2's first token comes, counted from
            // its arrival after two decode steps of request 1, and request
            // 1's, which found the engine idle.
            let first_tokens = |ahead: bool| {
                let mut cfg = policy_config(None, 16, policy);
                cfg.async_scheduling = ahead;
                first_token_after(&cfg, 32, 2)
            };
            assert_eq!(first_tokens(false), (true, 1), "{policy}");
            assert_eq!(first_tokens(true), (true, 2), "{policy}: one step more, the idle engine none");
        }
        // A request aborted while held leaves nothing behind.
        let mut cfg = config(None, 16);
        cfg.async_scheduling = true;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, &cfg), 8).unwrap();
        e.step().unwrap();
        e.add_request(2, prompt(64, 2, &cfg), 8).unwrap();
        assert!(e.abort(2));
        assert_eq!((e.num_waiting(), e.waiting_ids().count()), (0, 0));
        drain(&mut e);
        assert_eq!(e.stats().requests_finished, 1);
    }

    /// A step ahead on a decode instance: a pull admitted by a pass that
    /// computed nothing, before the requests held out of it are let in, is
    /// reported with theirs (it had been cleared with the empty pass, so its
    /// transfer never started and the request waited for good).
    #[test]
    fn a_pull_admitted_before_the_held_requests_are_let_in_is_reported() {
        let mut cfg = config(None, 16);
        cfg.async_scheduling = true;
        let mut e = Engine::new(cfg.clone()).unwrap();
        // A local request of two tokens keeps the engine busy for two steps.
        e.add_request(1, prompt(64, 1, &cfg), 2).unwrap();
        e.step().unwrap();
        // A remote request comes while it runs: held, then let in as it ends.
        e.add_remote_request(2, prompt(64, 2, &cfg), 8).unwrap();
        let out = e.step().unwrap();
        assert!(out.tokens.iter().any(|t| t.id == 1 && t.finished) && out.pulls.is_empty());
        // Another comes: the pass that admits the first's pull computes
        // nothing, and the second is let in after it.
        e.add_remote_request(3, prompt(64, 3, &cfg), 8).unwrap();
        let mut out = StepOutcome::default();
        e.step_into(&mut out);
        let pulled: Vec<u64> = out.pulls.iter().map(|p| p.0).collect();
        assert_eq!(pulled, [2, 3], "both transfers start");
        for id in [2, 3] {
            assert!(e.kv_landed(id));
        }
        drain(&mut e);
        assert_eq!(e.stats().requests_finished, 3);
    }

    /// SGLang's `--scheduler-recv-interval 4`: new requests are taken once
    /// four decode steps have run since the last time (a prompt's step
    /// counts four), so a request that comes after two of them waits for
    /// the fourth; an idle engine takes one at once; with the overlap
    /// schedule too, it joins the step after that.
    #[test]
    fn sglang_takes_new_requests_every_recv_interval_decode_steps() {
        // The step, counted from its arrival after `decodes` decode steps
        // of request 1, in which request 2's first token comes; and whether
        // request 1, on an idle engine, had its first at once.
        let first_tokens = |interval: u32, ahead: bool, decodes: u32| {
            let mut cfg = policy_config(None, 16, SchedulerPolicy::Sglang);
            (cfg.scheduler_recv_interval, cfg.async_scheduling) = (interval, ahead);
            first_token_after(&cfg, 64, decodes)
        };
        // Every step: at once; a step ahead, the one after.
        assert_eq!(first_tokens(1, false, 2), (true, 1));
        assert_eq!(first_tokens(1, true, 2), (true, 2));
        // The prompt's step counted 4: taken at the first decode step after
        // it (decodes 1, counted 1), then the fourth decode step after that.
        // Arriving after 2 decodes (counted 1 + 1): taken at step 4 of 4.
        assert_eq!(first_tokens(4, false, 2), (true, 3));
        assert_eq!(first_tokens(4, true, 2), (true, 4), "and a step ahead, one more");
        // Arriving just after a take (1 decode: the counter at 1): three
        // more steps.
        assert_eq!(first_tokens(4, false, 1), (true, 4));
        // Refused under another scheduler, and out of range.
        let mut vllm = config(None, 16);
        vllm.scheduler_recv_interval = 4;
        assert!(Engine::new(vllm.clone()).is_err() || vllm.validate().is_err());
        let mut zero = policy_config(None, 16, SchedulerPolicy::Sglang);
        zero.scheduler_recv_interval = 0;
        assert!(zero.validate().is_err());
    }

    /// SGLang's load: prompt tokens while they wait, then the blocks the
    /// running requests hold; a finished request's cached blocks are not
    /// counted.
    #[test]
    fn load_tokens_counts_waiting_prompts_and_held_blocks() {
        let mut cfg = config(None, 16);
        cfg.max_num_seqs = Some(2);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for (id, len) in [(1, 100), (2, 50), (3, 300)] {
            e.add_request(id, prompt(len, id, &cfg), 8).unwrap();
        }
        assert_eq!(e.load_tokens(), 450);
        e.step().unwrap();
        // Two run (7 and 4 blocks for 100 and 50 tokens); 300 wait.
        assert_eq!((e.num_running(), e.num_waiting()), (2, 1));
        assert_eq!(e.load_tokens(), (7 + 4) * 16 + 300);
        drain(&mut e);
        assert!(e.stats().requests_finished == 3 && e.kv_usage() == 0.0);
        assert_eq!(e.load_tokens(), 0);
    }

    #[test]
    fn draft_acceptance_falls_with_the_position_as_the_model_says() {
        // 200 requests of 64 tokens at acceptance 0.6: position i accepted in
        // about 0.6^(i+1) of the proposals.
        let cfg = speculating(3, 0.6);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.seed_noise(7);
        for id in 0..200 {
            e.add_request(id, prompt(32, id, &cfg), 64).unwrap();
        }
        drain(&mut e);
        let st = e.stats();
        assert_eq!(st.generation_tokens, 200 * 64);
        let drafts = st.spec_drafts as f64;
        for (i, &n) in st.spec_accepted_by_position.iter().enumerate() {
            let want = 0.6f64.powi(i as i32 + 1);
            let got = n as f64 / drafts;
            assert!((got - want).abs() < 0.03, "position {i}: {got:.3} of proposals, want {want:.3}");
        }
        let per_step = 1.0 + st.spec_accepted_tokens as f64 / drafts;
        let model = (1.0 - 0.6f64.powi(4)) / (1.0 - 0.6);
        assert!((per_step - model).abs() < 0.05, "{per_step:.3} tokens a step, the model says {model:.3}");
    }

    /// Without mixed batches a step that computes a prompt decodes nothing:
    /// a stream's gap across another request's prefill is that prefill step
    /// and its own decode step, where a mixed batch gives it one step, a
    /// little longer than the prefill alone. Under every scheduler.
    #[test]
    fn without_mixed_batches_a_prefill_step_decodes_nothing() {
        for policy in SchedulerPolicy::ALL {
            let mut prefill_step = Vec::new();
            for mixed in [true, false] {
                let mut cfg = config(None, 16);
                (cfg.scheduler, cfg.mixed_batches) = (policy, mixed);
                let mut e = Engine::new(cfg.clone()).unwrap();
                e.add_request(1, prompt(64, 1, &cfg), 8).unwrap();
                let mut out = StepOutcome::default();
                assert!(e.step_into(&mut out) && e.step_into(&mut out), "{policy}: A prefilled, then decoded");
                assert_eq!(out.tokens.iter().map(|t| (t.id, t.index)).collect::<Vec<_>>(), [(1, 1)]);
                e.add_request(2, prompt(4000, 2, &cfg), 8).unwrap();
                assert!(e.step_into(&mut out));
                let mut made: Vec<(u64, u32)> = out.tokens.iter().map(|t| (t.id, t.index)).collect();
                made.sort();
                let want: &[(u64, u32)] = if mixed { &[(1, 2), (2, 0)] } else { &[(2, 0)] };
                assert_eq!(made, want, "{policy}, mixed {mixed}: the step that prefilled B");
                prefill_step.push(out.duration);
                assert!(e.step_into(&mut out));
                let mut made: Vec<(u64, u32)> = out.tokens.iter().map(|t| (t.id, t.index)).collect();
                made.sort();
                let want: &[(u64, u32)] = if mixed { &[(1, 3), (2, 1)] } else { &[(1, 2), (2, 1)] };
                assert_eq!(made, want, "{policy}, mixed {mixed}: the next step decodes both");
                let steps = drain(&mut e);
                assert!(steps.iter().flat_map(|s| &s.tokens).filter(|t| t.finished).count() == 2, "{policy}");
            }
            assert!(
                prefill_step[1] < prefill_step[0],
                "{policy}: the prefill alone ({:?}) is shorter than with a decode beside it ({:?})",
                prefill_step[1],
                prefill_step[0]
            );
        }
    }

    /// A disaggregated instance prefills or decodes, never both: the two are
    /// refused together.
    #[test]
    fn unmixed_batches_are_refused_with_disaggregation() {
        let mut cfg = config(None, 16);
        cfg.pd = Some(crate::engine::Disaggregation::parse("1:1").unwrap());
        cfg.mixed_batches = false;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("--no-mixed-batches") && e.contains("--pd 1:1") && e.contains("drop one"), "{e}");
    }

    /// Steps until idle, returning every outcome (TensorRT-LLM's tests too).
    pub(super) fn drain(engine: &mut Engine) -> Vec<StepOutcome> {
        let mut steps = Vec::new();
        while let Some(out) = engine.step() {
            steps.push(out);
            assert!(steps.len() < 100_000, "engine does not finish");
        }
        steps
    }

    /// A pipeline's chunk among decodes: the decodes get their tokens at the
    /// step's end, a stage time of the chunk's and the decodes' others
    /// later; the chunk's request gets its first token no sooner than its
    /// trip through every stage, sits out of the steps until then, and
    /// comes back to decode.
    #[test]
    fn a_pipeline_s_chunk_outputs_after_its_trip_and_sits_out_until_then() {
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 0..4 {
            e.add_request(id, prompt(16, id, &cfg), 64).unwrap();
        }
        // The four decode from here on.
        let mut out = StepOutcome::default();
        assert!(e.step_into(&mut out) && out.tokens.len() == 4);
        e.add_request(9, prompt(4096, 9, &cfg), 8).unwrap();
        let mut alone = BatchShape::default();
        alone.add_prefill(0, 4096);
        let trip = e.roofline().step_time(&alone);
        let (mut t, mut steps) = (Duration::ZERO, Vec::new());
        while e.step_into(&mut out) {
            t += out.duration;
            let ids: Vec<u64> = out.tokens.iter().map(|ev| ev.id).collect();
            steps.push((t, out.duration, out.batch.seqs, ids, e.num_running()));
            if out.tokens.iter().any(|ev| ev.id == 9 && ev.first) {
                break;
            }
        }
        let (first, _, _, _, _) = *steps.last().unwrap();
        assert!(first >= trip, "first token at {first:?}, the chunk's trip {trip:?}");
        // The step that prefilled it was far shorter than its trip, and gave
        // the decodes their tokens.
        let (_, d0, seqs0, ids0, running0) = &steps[0];
        assert!(*d0 < trip / 2, "the chunk's step {d0:?} against its trip {trip:?}");
        assert_eq!((*seqs0, ids0.len(), *running0), (5, 4, 5), "{steps:?}");
        // Until its token, it was in no step, though counted running.
        for (_, _, seqs, ids, running) in &steps[1..steps.len() - 1] {
            assert_eq!((*seqs, *running), (4, 5), "{steps:?}");
            assert!(!ids.contains(&9));
        }
        assert!(steps.len() > 2, "the decodes stepped while it crossed: {steps:?}");
        // Back in the steps, it decodes to its end.
        let rest = drain(&mut e);
        let tokens: u32 = rest.iter().flat_map(|s| &s.tokens).filter(|ev| ev.id == 9).map(|ev| ev.tokens).sum();
        assert_eq!(tokens, 7);
        assert!(!e.has_work());
    }

    #[test]
    fn a_pipeline_s_late_request_returns_to_its_place_among_the_running() {
        // vLLM keeps a request whose batch is crossing the stages in its
        // running list, in the order the requests joined it: the newest
        // last, where a preemption takes its victim. It had come back as the
        // newest.
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 0..4 {
            e.add_request(id, prompt(16, id, &cfg), 64).unwrap();
        }
        let mut out = StepOutcome::default();
        assert!(e.step_into(&mut out));
        e.add_request(9, prompt(4096, 9, &cfg), 8).unwrap();
        assert!(e.step_into(&mut out) && !out.tokens.iter().any(|ev| ev.id == 9));
        e.add_request(10, prompt(16, 10, &cfg), 64).unwrap();
        let ids = |e: &Engine| e.running.iter().map(|&s| e.slots[s as usize].id).collect::<Vec<u64>>();
        let mut crossing = Vec::new();
        while !out.tokens.iter().any(|ev| ev.id == 9) {
            crossing.push(ids(&e));
            assert!(e.step_into(&mut out), "stopped before 9's first token");
        }
        assert!(crossing.iter().any(|r| r.contains(&10) && !r.contains(&9)), "10 joined while 9 crossed: {crossing:?}");
        assert_eq!(ids(&e), [0, 1, 2, 3, 9, 10]);
    }

    fn pp4() -> EngineConfig {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        cfg.pp = 4;
        cfg
    }

    /// Steps until every id in `ids` has its first token: the time of each.
    fn first_tokens(e: &mut Engine, ids: &[u64]) -> HashMap<u64, Duration> {
        let (mut out, mut t, mut first) = (StepOutcome::default(), Duration::ZERO, HashMap::new());
        while ids.iter().any(|id| !first.contains_key(id)) {
            assert!(e.step_into(&mut out), "stopped before {ids:?} had their first tokens: {first:?}");
            t += out.duration;
            for ev in out.tokens.iter().filter(|ev| ev.first) {
                first.insert(ev.id, t);
            }
        }
        first
    }

    /// Two long prompts in one pipeline step: each waits for its own trip
    /// (the second-largest had been spread over the micro-batches again,
    /// and got its first token at half its trip: 58.8 ms against 115.6).
    #[test]
    fn every_chunk_of_a_pipeline_step_waits_for_its_own_trip() {
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 0..2 {
            e.add_request(id, prompt(16, id, &cfg), 64).unwrap();
        }
        let mut out = StepOutcome::default();
        e.step_into(&mut out);
        e.add_request(10, prompt(4096, 10, &cfg), 8).unwrap();
        e.add_request(11, prompt(4096, 11, &cfg), 8).unwrap();
        let mut alone = BatchShape::default();
        alone.add_prefill(0, 4096);
        let trip = e.roofline().step_time(&alone);
        let first = first_tokens(&mut e, &[10, 11]);
        for id in [10, 11] {
            assert!(first[&id] >= trip.mul_f64(1.0 - 1e-9), "{id}: {:?} against its trip {trip:?}", first[&id]);
        }
    }

    /// A trip that ends within a stage time of its step's end lengthens the
    /// step: a short prompt among decodes and a landed request's last
    /// prompt token get their tokens in their own step (each had sat out
    /// the next step for microseconds).
    #[test]
    fn a_pipeline_chunk_a_little_late_lengthens_its_step_instead() {
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 0..7 {
            e.add_request(id, prompt(2000, id, &cfg), 64).unwrap();
        }
        let mut out = StepOutcome::default();
        for _ in 0..4 {
            e.step_into(&mut out);
        }
        let decode_step = out.duration;
        e.add_request(9, prompt(16, 9, &cfg), 8).unwrap();
        assert!(e.step_into(&mut out));
        assert!(out.tokens.iter().any(|ev| ev.id == 9 && ev.first), "{:?}", out.tokens);
        assert!(e.late.is_empty() && out.duration < decode_step * 2, "{:?}", out.duration);
        // A request prefilled elsewhere computes its last prompt token here.
        e.add_remote_request(20, prompt(2000, 20, &cfg), 8).unwrap();
        e.step_into(&mut out);
        assert!(e.kv_landed(20));
        assert!(e.step_into(&mut out));
        assert!(out.tokens.iter().any(|ev| ev.id == 20 && ev.first), "{:?}", out.tokens);
        assert!(e.late.is_empty());
    }

    /// A request whose last output is crossing the stages keeps its blocks
    /// and its seat until it is out (it had given both up in the step that
    /// computed it, and a request added then ran first).
    #[test]
    fn a_late_last_output_holds_its_blocks_until_it_is_out() {
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(0, prompt(16, 0, &cfg), 64).unwrap();
        let mut out = StepOutcome::default();
        e.step_into(&mut out);
        e.add_request(1, prompt(8000, 1, &cfg), 1).unwrap();
        let free = e.pools[0].num_free();
        assert!(e.step_into(&mut out));
        assert!(!out.tokens.iter().any(|ev| ev.id == 1));
        assert_eq!(e.late.len(), 1, "its output crosses the stages");
        assert_eq!(e.num_running(), 2);
        assert!(e.pools[0].num_free() + 400 < free, "its blocks held: {} of {free} free", e.pools[0].num_free());
        let (finished, held) = (e.stats().requests_finished, e.pools[0].num_free());
        while e.late.len() == 1 {
            assert!(e.step_into(&mut out));
        }
        assert!(out.tokens.iter().any(|ev| ev.id == 1 && ev.finished), "{:?}", out.tokens);
        assert_eq!(e.stats().requests_finished, finished + 1);
        assert!(e.pools[0].num_free() > held + 400, "freed once out");
        assert_eq!(e.num_running(), 1);
        // Aborted while it crosses, it is counted aborted and never output.
        e.add_request(2, prompt(8000, 2, &cfg), 1).unwrap();
        e.step_into(&mut out);
        assert_eq!(e.late.len(), 1);
        assert!(e.abort(2));
        assert!(e.late.is_empty() && e.stats().requests_aborted == 1);
        let rest = drain(&mut e);
        assert!(rest.iter().flat_map(|s| &s.tokens).all(|ev| ev.id != 2));
    }

    /// A step that only waits for a pipeline's late output lasts a stage
    /// time at most: a request that arrives meanwhile starts at the next
    /// one, not after the whole wait (it had waited the chunk's whole trip
    /// less its step, 182 ms of an 8,192-token prompt's).
    #[test]
    fn a_request_arriving_while_a_pipeline_waits_starts_within_a_stage_time() {
        let cfg = pp4();
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(0, prompt(16, 0, &cfg), 1).unwrap();
        e.add_request(1, prompt(8192, 1, &cfg), 4).unwrap();
        let mut out = StepOutcome::default();
        assert!(e.step_into(&mut out));
        let (step, left) = (out.duration, e.late[0].left);
        assert!(e.late.len() == 1 && left > step, "a long wait: {left:?} after a step of {step:?}");
        assert!(e.step_into(&mut out) && out.batch.seqs == 0, "a wait step");
        assert!(
            out.duration <= step / 4 + Duration::from_nanos(1),
            "{:?} against a stage of {:?}",
            out.duration,
            step / 4
        );
        e.add_request(2, prompt(16, 2, &cfg), 2).unwrap();
        assert!(e.step_into(&mut out));
        assert_eq!(out.batch.seqs, 1, "the newcomer runs while the chunk crosses");
        assert!(out.tokens.iter().any(|ev| ev.id == 2 && ev.first));
        assert_eq!(e.late.len(), 1, "still crossing");
        // The chunk's request gets all its tokens.
        let rest = drain(&mut e);
        assert!(rest.iter().flat_map(|s| &s.tokens).filter(|ev| ev.id == 1).count() == 4);
    }

    /// A running request preempted for want of blocks queues behind the
    /// requests whose KV landed, which hold theirs: put ahead of them, a
    /// recompute larger than the blocks they leave stopped admission with
    /// nothing running to free any (found by a review's fuzz; no pipeline
    /// needed).
    #[test]
    fn a_preempted_request_queues_behind_the_landed_ones_that_hold_blocks() {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
        cfg.num_gpu_blocks_override = Some(60);
        cfg.block_size = 16;
        cfg.enable_prefix_caching = false;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(0, prompt(512, 0, &cfg), 200).unwrap();
        let mut out = StepOutcome::default();
        e.step_into(&mut out);
        e.add_remote_request(1, prompt(400, 1, &cfg), 8).unwrap();
        e.step_into(&mut out);
        assert_eq!(e.pulling.len(), 1, "admitted to pull, holding its blocks");
        // Land it in the step where the running request needs a block no one has.
        let mut landed = false;
        for _ in 0..200 {
            let a = &e.slots[e.index[&0] as usize];
            if !landed && e.pools[0].num_free() == 0 && a.num_computed as usize == a.blocks.len() * 16 {
                landed = e.kv_landed(1);
            }
            if !e.step_into(&mut out) {
                break;
            }
            if out.preempted.contains(&0) {
                assert!(landed, "preempted before its neighbour landed");
            }
        }
        assert!(landed && e.stats().preemptions > 0, "the scenario: {:?}", e.stats());
        drain(&mut e);
        assert!(!e.has_work(), "stuck: {} running, {} waiting", e.num_running(), e.num_waiting());
    }

    #[test]
    fn a_request_prefilled_elsewhere_pulls_its_kv_once_admitted_and_runs_once_it_landed() {
        for policy in [SchedulerPolicy::Vllm, SchedulerPolicy::Trtllm] {
            // 3 blocks of 4 tokens. A (8 prompt + 4 output tokens) runs and
            // grows to 3 blocks; B, prefilled elsewhere (8 prompt tokens),
            // needs 2 for its KV (TensorRT-LLM: 3 for its whole run) and
            // waits for A to end before it may pull.
            let mut cfg = config(Some(3), 4);
            cfg.scheduler = policy;
            cfg.enable_prefix_caching = false;
            let mut e = Engine::new(cfg.clone()).unwrap();
            e.add_request(1, prompt(8, 1, &cfg), 4).unwrap();
            e.add_remote_request(2, prompt(8, 2, &cfg), 4).unwrap();
            let mut out = StepOutcome::default();
            let mut a_ended = false;
            while !a_ended {
                assert!(e.step_into(&mut out), "{policy}");
                assert!(out.pulls.is_empty(), "{policy}: B pulled while A held the blocks");
                assert!(out.tokens.iter().all(|t| t.id == 1), "{policy}");
                a_ended = out.tokens.iter().any(|t| t.finished);
            }
            // A's end frees its blocks: B is admitted to pull (no step: it
            // computes nothing yet), waiting, holding its blocks.
            assert!(!e.step_into(&mut out), "{policy}");
            assert_eq!(out.pulls, vec![(2, 0)], "{policy}");
            assert_eq!((e.num_running(), e.num_waiting()), (0, 1), "{policy}");
            // The stats /metrics shows count it waiting too (they had said
            // nothing waiting while requests pulled their KV in).
            assert_eq!((e.stats().running, e.stats().waiting), (0, 1), "{policy}");
            assert!(!e.has_work() && e.kv_usage() > 0.0, "{policy}");
            // Landed: its first step computes its last prompt token alone.
            assert!(e.kv_landed(2) && !e.kv_landed(2), "{policy}");
            assert!(e.step_into(&mut out), "{policy}");
            assert_eq!(out.batch.tokens, 1, "{policy}");
            assert_eq!(out.admitted, vec![2], "{policy}");
            assert!(out.tokens.len() == 1 && out.tokens[0].first, "{policy}");
            let rest = drain(&mut e);
            assert_eq!(indices(&rest, 2), vec![1, 2, 3], "{policy}");
            assert_eq!(e.kv_usage(), 0.0, "{policy}");
        }
    }

    fn indices(steps: &[StepOutcome], id: u64) -> Vec<u32> {
        steps.iter().flat_map(|s| s.tokens.iter()).filter(|t| t.id == id).map(|t| t.index).collect()
    }

    #[test]
    fn newest_running_request_is_preempted_to_the_front_and_recomputed() {
        // 6 blocks of 4 tokens, two sequences at most, no prefix caching so a
        // recompute is a full recompute. A and B (8-token prompts, 12 output
        // tokens) run together; C waits for a sequence slot. Both grow into a
        // third block; at 12 tokens each, A needs a fourth and none is free.
        let mut cfg = config(Some(6), 4);
        cfg.max_num_seqs = Some(2);
        cfg.enable_prefix_caching = false;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(8, 1, &cfg), 12).unwrap();
        e.add_request(2, prompt(8, 2, &cfg), 12).unwrap();
        e.add_request(3, prompt(4, 3, &cfg), 2).unwrap();

        let mut steps = Vec::new();
        for _ in 0..5 {
            steps.push(e.step().unwrap());
        }
        assert!(steps.iter().all(|s| s.preempted.is_empty()));
        assert_eq!(e.stats().kv_blocks_free, 0);

        let s6 = e.step().unwrap();
        // B, admitted after A, goes; A continues.
        assert_eq!(s6.preempted, vec![2]);
        assert_eq!(s6.tokens.iter().map(|t| t.id).collect::<Vec<_>>(), vec![1]);
        // No admission in a step that preempted, though C would have fit
        // (a free sequence slot and two free blocks).
        assert!(s6.admitted.is_empty());
        assert_eq!(e.stats().kv_blocks_free, 2);
        // B is at the front of the queue, ahead of C which came later.
        assert_eq!(e.waiting_ids().collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(e.running_ids().collect::<Vec<_>>(), vec![1]);
        steps.push(s6);

        let rest = drain(&mut e);
        // B waits at the head of the line (C behind it) until A is done.
        let a_done = rest.iter().position(|s| s.tokens.iter().any(|t| t.id == 1 && t.finished));
        let b_back = rest.iter().position(|s| s.tokens.iter().any(|t| t.id == 2));
        let (a_done, b_back) = (a_done.unwrap(), b_back.unwrap());
        assert_eq!(b_back, a_done + 1);
        let resumed = &rest[b_back];
        // The recompute is B's prompt plus its five tokens, beside C's prompt.
        assert_eq!(resumed.batch.prefill_tokens, 8 + 5 + 4);
        assert_eq!(resumed.admitted, vec![3]);
        steps.extend(rest);
        // Every token exactly once, in order, through the preemption.
        assert_eq!(indices(&steps, 2), (0..12).collect::<Vec<_>>());
        assert_eq!(indices(&steps, 1), (0..12).collect::<Vec<_>>());
        let stats = e.stats();
        assert_eq!(stats.preemptions, 1);
        assert_eq!((stats.requests_finished, stats.kv_blocks_free), (3, 6));
        assert_eq!(stats.generation_tokens, 26);
    }

    #[test]
    fn a_cached_prefix_skips_its_prefill() {
        let cfg = config(None, 16);
        let tokens: Vec<u32> = (0..2048).collect();
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, Prompt::from_tokens(&tokens, 16), 2).unwrap();
        let first = drain(&mut e);
        assert_eq!(first[0].batch.prefill_tokens, 2048);

        e.add_request(2, Prompt::from_tokens(&tokens, 16), 2).unwrap();
        let second = drain(&mut e);
        // 127 of 128 blocks are reused; the last is recomputed because the
        // last prompt token's logits are needed.
        assert_eq!(second[0].batch.prefill_tokens, 16);
        assert!(second[0].tokens[0].first);
        // The first token comes after a decode-sized step, not a prefill.
        assert!(second[0].duration * 3 < first[0].duration);
        let s = e.stats();
        assert_eq!((s.prefix_cache_queries, s.prefix_cache_hits), (4096, 2032));
    }

    #[test]
    fn prefix_caching_off_gives_no_hits() {
        let mut cfg = config(None, 16);
        cfg.enable_prefix_caching = false;
        let tokens: Vec<u32> = (0..64).collect();
        let mut e = Engine::new(cfg).unwrap();
        for id in 1..=2 {
            e.add_request(id, Prompt::from_tokens(&tokens, 16), 2).unwrap();
            assert_eq!(drain(&mut e)[0].batch.prefill_tokens, 64);
        }
        let s = e.stats();
        assert_eq!((s.prefix_cache_queries, s.prefix_cache_hits), (0, 0));
        assert_eq!(s.prefix_cache_hit_rate(), None);
    }

    #[test]
    fn a_long_prompt_is_chunked_across_steps_by_the_budget() {
        let mut cfg = config(None, 16);
        cfg.max_num_batched_tokens = 64;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(200, 1, &cfg), 3).unwrap();
        let steps = drain(&mut e);
        let chunks: Vec<u32> = steps.iter().map(|s| s.batch.prefill_tokens).collect();
        assert_eq!(chunks, vec![64, 64, 64, 8, 0, 0]);
        // The first token comes with the final chunk, not before.
        assert!(steps[..3].iter().all(|s| s.tokens.is_empty()));
        assert!(steps[3].tokens[0].first);
        assert!(steps[5].tokens[0].finished);
    }

    #[test]
    fn chunked_prefill_off_runs_whole_prompts_only() {
        let mut cfg = config(None, 16);
        cfg.max_num_batched_tokens = 64;
        cfg.enable_chunked_prefill = false;
        let mut e = Engine::new(cfg.clone()).unwrap();
        let err = e.add_request(9, prompt(65, 9, &cfg), 1).unwrap_err();
        assert!(err.to_string().contains("chunked prefill"), "{err}");
        e.add_request(1, prompt(40, 1, &cfg), 3).unwrap();
        e.add_request(2, prompt(40, 2, &cfg), 3).unwrap();
        let s1 = e.step().unwrap();
        // 24 tokens of budget are left, but the second prompt is not split.
        assert_eq!((s1.batch.tokens, s1.batch.seqs), (40, 1));
        let s2 = e.step().unwrap();
        assert_eq!((s2.batch.tokens, s2.batch.decodes, s2.batch.prefills), (41, 1, 1));

        cfg.enable_chunked_prefill = true;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(40, 1, &cfg), 3).unwrap();
        e.add_request(2, prompt(40, 2, &cfg), 3).unwrap();
        assert_eq!(e.step().unwrap().batch.prefill_tokens, 64);
    }

    #[test]
    fn max_num_seqs_caps_the_batch() {
        let mut cfg = config(None, 16);
        cfg.max_num_seqs = Some(2);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 0..5 {
            e.add_request(id, prompt(32, id, &cfg), 4).unwrap();
        }
        let s1 = e.step().unwrap();
        assert_eq!(s1.batch.seqs, 2);
        assert_eq!(s1.admitted, vec![0, 1]);
        assert_eq!((e.num_running(), e.num_waiting()), (2, 3));
        drain(&mut e);
        let s = e.stats();
        assert_eq!((s.max_batch_seqs, s.requests_finished), (2, 5));
    }

    #[test]
    fn running_requests_go_before_waiting_ones_in_the_budget() {
        let mut cfg = config(None, 16);
        cfg.max_num_batched_tokens = 100;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(90, 1, &cfg), 5).unwrap();
        e.step().unwrap();
        e.add_request(2, prompt(500, 2, &cfg), 5).unwrap();
        let s = e.step().unwrap();
        // One decode for the running request, the other 99 to the newcomer.
        assert_eq!((s.batch.decodes, s.batch.prefill_tokens), (1, 99));
    }

    /// A prefill instance holds a finished request's KV for its transfer;
    /// a client gone before the transfer started frees it on abort (it had
    /// leaked: the blocks stayed held with no one left to release them).
    #[test]
    fn abort_frees_the_kv_a_prefill_instance_held_for_a_transfer() {
        let cfg = config(None, 16);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.hold_finished();
        e.add_request(1, prompt(200, 1, &cfg), 1).unwrap();
        let s = e.step().unwrap();
        assert!(s.tokens[0].finished);
        assert!(e.kv_usage() > 0.0, "held for the transfer");
        assert!(e.abort(1));
        assert_eq!(e.kv_usage(), 0.0);
        assert!(!e.abort(1) && !e.release_held(1), "nothing is left to free");
        assert_eq!(e.stats().requests_aborted, 0, "it finished its prefill: not counted aborted");
    }

    #[test]
    fn abort_frees_blocks_wherever_the_request_is() {
        let mut cfg = config(None, 16);
        cfg.max_num_seqs = Some(1);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(100, 1, &cfg), 50).unwrap();
        e.add_request(2, prompt(100, 2, &cfg), 50).unwrap();
        e.step().unwrap();
        assert!(e.kv_usage() > 0.0);
        assert!(e.abort(2));
        assert!(e.abort(1));
        assert!(!e.abort(1));
        assert!(!e.has_work());
        assert_eq!(e.kv_usage(), 0.0);
        assert!(e.step().is_none());
        assert_eq!(e.stats().requests_aborted, 2);
        // Ids are free again once a request is gone.
        e.add_request(1, prompt(10, 1, &cfg), 1).unwrap();
        let s = e.step().unwrap();
        assert!(s.tokens[0].first && s.tokens[0].finished);
    }

    #[test]
    fn requests_that_can_never_run_are_rejected() {
        let cfg = config(Some(4), 16);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(10, 1, &cfg), 1).unwrap();
        assert_eq!(e.add_request(1, prompt(10, 1, &cfg), 1), Err(Error::DuplicateRequest(1)));
        let cases = [
            (prompt(0, 2, &cfg), 1, "empty"),
            (prompt(10, 2, &cfg), 0, "max_tokens"),
            (Prompt::synthetic(10, &[], 2, 8), 1, "blocks of 8"),
            (prompt(60, 2, &cfg), 5, "KV cache"),
            (prompt(131_000, 2, &cfg), 100_000, "context"),
        ];
        for (p, max, needle) in cases {
            let err = e.add_request(2, p, max).unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn step_into_reuses_the_callers_buffer() {
        let cfg = config(None, 16);
        let mut e = Engine::new(cfg.clone()).unwrap();
        let mut out = StepOutcome::default();
        assert!(!e.step_into(&mut out));
        e.add_request(7, prompt(20, 7, &cfg), 2).unwrap();
        assert!(e.step_into(&mut out));
        assert_eq!(out.admitted, vec![7]);
        assert!(e.step_into(&mut out));
        assert!(out.admitted.is_empty() && out.tokens[0].finished);
        assert!(out.duration > Duration::ZERO);
    }

    #[test]
    fn engine_can_move_into_an_async_task_and_config_round_trips() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Engine>();
        send_sync::<StepOutcome>();
        let cfg = config(None, 16);
        let text = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<EngineConfig>(&text).unwrap(), cfg);
    }

    #[test]
    fn a_big_gpu_runs_a_small_load() {
        let cfg = EngineConfig::from_names("llama-3.1-8b", "mi300x", Precision::Fp8).unwrap();
        let mut e = Engine::new(cfg.clone()).unwrap();
        assert!(e.capacity().num_blocks > 50_000);
        e.add_request(1, prompt(64, 1, &cfg), 1).unwrap();
        e.step().unwrap();
        let s = e.stats();
        assert_eq!(s.kv_blocks_free, s.kv_blocks_total);
    }

    /// An expert-parallel group's data-parallel ranks each keep their own
    /// KV cache and run a request whole on one of them: a request longer
    /// than one rank's cache is refused, though the group's caches added up
    /// would hold it (it had run, over the pooled blocks), and the refusal
    /// names the rank's share and the layout that pools it.
    #[test]
    fn a_request_must_fit_one_attention_ranks_cache() {
        let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
        cfg.ep = 2;
        cfg.dp = 2;
        cfg.num_gpu_blocks_override = Some(400);
        let mut e = Engine::new(cfg.engine_configs().remove(0)).unwrap();
        let (whole, rank) = (e.capacity().tokens(), e.request_kv_tokens());
        assert_eq!((whole, rank), (400 * 16, 200 * 16));
        e.add_request(0, prompt(rank as u32 - 10, 0, &cfg), 10).unwrap();
        let err = e.add_request(1, prompt(rank as u32 - 9, 1, &cfg), 10).unwrap_err().to_string();
        for part in ["one attention rank holds: 3200 tokens", "group's 6400 over its 2", "--tp 2 --ep 2"] {
            assert!(err.contains(part), "{part}: {err}");
        }
        // One rank (TP as wide as EP) holds a request as long as its cache.
        cfg.tp = 2;
        let mut one = Engine::new(cfg.engine_configs().remove(0)).unwrap();
        assert_eq!(one.request_kv_tokens(), one.capacity().tokens());
        one.add_request(1, prompt(one.capacity().tokens() as u32 - 10, 1, &cfg), 10).unwrap();
    }

    #[test]
    fn each_rank_schedules_its_own_requests_within_its_own_limits() {
        // Two attention ranks of Qwen3-30B-A3B, each with a budget of 2,048
        // tokens and `cap` sequences.
        let group = |cap: u32, policy: SchedulerPolicy| {
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.max_num_batched_tokens, cfg.max_num_seqs) = (1, 2, 2, 2048, Some(cap));
            cfg.scheduler = policy;
            let cfg = cfg.engine_configs().remove(0);
            Engine::new(cfg).unwrap()
        };
        let add = |e: &mut Engine, id: u64, len: u32, answer: u32| {
            let p = prompt(len, id, e.config());
            e.add_request(id, p, answer).unwrap();
        };
        // vLLM's balancer alternates over empty ranks (a request counted
        // waiting where it was sent, four times a running one): 0, 1, 0, 1.
        // The first rank's 3,000 prompt tokens exceed its budget: the second
        // of its prompts is cut to the 548 left, where the group's budgets
        // added up had taken it whole.
        let mut e = group(256, SchedulerPolicy::Vllm);
        for (id, len) in [(1, 1500), (2, 100), (3, 1500), (4, 100)] {
            add(&mut e, id, len, 8);
        }
        let ranks = |e: &Engine| (1..=4).map(|id| e.slots[e.index[&id] as usize].rank).collect::<Vec<u32>>();
        assert_eq!(ranks(&e), [0, 1, 0, 1]);
        let first = e.step().unwrap();
        assert_eq!(first.batch.prefill_tokens, 1500 + 548 + 100 + 100);
        assert_eq!((e.rank_shapes[0].prefill_tokens, e.rank_shapes[0].largest_prefill), (1500 + 548, 1500));
        // TensorRT-LLM's router gives the four their ranks together at the
        // step, longest first, each to the rank with the fewest prompt
        // tokens among those under an even share (two): 1 and 3 apart, then
        // 2 with 1 (a tie on tokens and requests: the first), 4 with 3. Each
        // rank's 1,600 tokens fit its budget, and both prefill whole.
        let mut e = group(256, SchedulerPolicy::Trtllm);
        for (id, len) in [(1, 1500), (2, 100), (3, 1500), (4, 100)] {
            add(&mut e, id, len, 8);
        }
        let first = e.step().unwrap();
        assert_eq!(ranks(&e), [0, 0, 1, 1]);
        assert_eq!(first.batch.prefill_tokens, 2 * (1500 + 100));
        assert_eq!((e.rank_shapes[0].prefill_tokens, e.rank_shapes[0].largest_prefill), (1600, 1500));

        // One sequence a rank: the first rank's long request holds its seat,
        // and when the second rank's short one ends, vLLM admits the next on
        // the second rank, not the older one queued on the first (the group's
        // cap of two, pooled, had let that one in). TensorRT-LLM's executor
        // fetches a request only when a rank has room below its cap: 3 and 4
        // wait unranked, and 3, the older, goes to the second rank when 2
        // ends.
        for (policy, order) in [(SchedulerPolicy::Vllm, [1, 2, 4, 3]), (SchedulerPolicy::Trtllm, [1, 2, 3, 4])] {
            let mut e = group(1, policy);
            for (id, answer) in [(1, 64), (2, 2), (3, 8), (4, 8)] {
                add(&mut e, id, 32, answer);
            }
            let mut admitted = Vec::new();
            while let Some(out) = e.step() {
                assert!(e.rank_seats.iter().all(|&n| n <= 1), "{policy:?}: {:?}", e.rank_seats);
                admitted.extend(out.admitted);
            }
            assert_eq!(admitted, order, "{policy:?}");
        }
    }

    /// vLLM's balancer reads the ranks' counts as its coordinator publishes
    /// them, every 100 ms, with the requests it sent since counted waiting
    /// where they went: a rank whose request has just ended still looks as
    /// busy as before to a request sent within the 100 ms, and idle once
    /// the counts come again (taken after every step, the first request
    /// after the end had gone to the idle rank at once).
    #[test]
    fn vllms_balancer_reads_counts_published_every_100_ms() {
        let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
        (cfg.tp, cfg.ep, cfg.dp) = (1, 2, 2);
        let mut e = Engine::new(cfg.engine_configs().remove(0)).unwrap();
        let rank = |e: &Engine, id: u64| e.slots[e.index[&id] as usize].rank;
        let add = |e: &mut Engine, id: u64, answer: u32| {
            let p = prompt(64, id, e.config());
            e.add_request(id, p, answer).unwrap();
        };
        // 1 to the first rank (a tie), 2 to the second (the first counted
        // waiting); 2 ends after two steps, 1 runs on.
        add(&mut e, 1, 2000);
        add(&mut e, 2, 2);
        assert_eq!((rank(&e, 1), rank(&e, 2)), (0, 1));
        let mut elapsed = Duration::ZERO;
        while e.index.contains_key(&2) {
            elapsed += e.step().unwrap().duration;
        }
        assert!(elapsed < VLLM_DP_STATS_INTERVAL, "2 ended within the 100 ms: {elapsed:?}");
        // The counts seen are still those sent: one waiting on each rank, a
        // tie, and 3 goes to the first rank beside 1.
        add(&mut e, 3, 2000);
        assert_eq!(rank(&e, 3), 0);
        // Once 100 ms of steps have passed, the counts come: the first rank
        // runs two, the second none, and 4 goes to the second.
        while elapsed < VLLM_DP_STATS_INTERVAL {
            elapsed += e.step().unwrap().duration;
        }
        add(&mut e, 4, 2000);
        assert_eq!(rank(&e, 4), 1);
    }

    /// TensorRT-LLM's attention data parallelism routes the requests that
    /// came since the last step together at the step: longest prompt
    /// first, each to the rank with the fewest prompt tokens among the
    /// ranks under an even share of requests. (It had given each request,
    /// as it came, to the rank with the fewest requests.)
    #[test]
    fn tensorrt_llms_ranks_are_balanced_by_prompt_tokens_at_the_step() {
        let group = |ranks: u32| {
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler) = (1, ranks, ranks, SchedulerPolicy::Trtllm);
            Engine::new(cfg.engine_configs().remove(0)).unwrap()
        };
        let rank = |e: &Engine, id: u64| e.slots[e.index[&id] as usize].rank;
        let add = |e: &mut Engine, id: u64, len: u32| {
            let p = prompt(len, id, e.config());
            e.add_request(id, p, 64).unwrap();
        };
        // Four ranks, eight prompts: 900, 800, 700 and 600 take a rank each,
        // then 400 joins the 600, 300 the 700, 200 the 800, 100 the 900.
        let mut e = group(4);
        for (id, len) in [(1, 100), (2, 900), (3, 200), (4, 800), (5, 300), (6, 700), (7, 400), (8, 600)] {
            add(&mut e, id, len);
        }
        assert_eq!(rank(&e, 1), UNRANKED, "given at the step");
        e.step().unwrap();
        let ranks: Vec<u32> = (1..=8).map(|id| rank(&e, id)).collect();
        assert_eq!(ranks, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(e.rank_tokens, [1000; 4]);
        // Two ranks: a long prompt and three short ones. The short ones go
        // to the rank of fewer tokens until it holds its even share (two),
        // and the third short one joins the long one.
        let mut e = group(2);
        for (id, len) in [(1, 2000), (2, 10), (3, 10), (4, 10)] {
            add(&mut e, id, len);
        }
        e.step().unwrap();
        assert_eq!((1..=4).map(|id| rank(&e, id)).collect::<Vec<_>>(), [0, 1, 1, 0]);
        // A later arrival sees the requests the ranks hold: the rank of
        // fewer prompt tokens.
        add(&mut e, 5, 10);
        e.step().unwrap();
        assert_eq!(rank(&e, 5), 1);
        // One aborted before its step leaves nothing behind (nor does one
        // waiting for room, below).
        add(&mut e, 6, 10);
        assert!(e.abort(6));
        e.step().unwrap();
        assert_eq!((e.rank_load.iter().sum::<u32>(), e.rank_tokens.iter().sum::<u64>()), (5, 2040));
        while e.step().is_some() {}
        assert_eq!((&e.rank_load[..], &e.rank_tokens[..], e.stats().requests_finished), (&[0, 0][..], &[0, 0][..], 5));

        // A rank's cap of active requests (its max_num_seqs, 2 here): the
        // executor fetches only what the ranks have room for, the oldest
        // first; the rest wait unranked, counted waiting, and go to the
        // first rank with room.
        let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
        (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler, cfg.max_num_seqs) = (1, 2, 2, SchedulerPolicy::Trtllm, Some(2));
        let mut e = Engine::new(cfg.engine_configs().remove(0)).unwrap();
        for (id, len, answer) in [(1, 100, 200), (2, 100, 4), (3, 100, 200), (4, 100, 200), (5, 900, 8), (6, 50, 8)] {
            let p = prompt(len, id, e.config());
            e.add_request(id, p, answer).unwrap();
        }
        e.step().unwrap();
        assert_eq!(e.rank_load, [2, 2]);
        assert_eq!((e.unranked.len(), e.stats().waiting), (2, 2), "5 and 6 not yet fetched");
        assert_eq!((rank(&e, 5), rank(&e, 6)), (UNRANKED, UNRANKED));
        assert!(e.abort(6));
        // 2 ends after four tokens: 5, the oldest waiting, takes its rank.
        let mut steps = 0;
        while rank(&e, 5) == UNRANKED {
            e.step().unwrap();
            steps += 1;
            assert!(steps < 20);
        }
        assert_eq!(rank(&e, 5), 1);
        while e.step().is_some() {}
        assert_eq!((e.stats().requests_finished, e.rank_load.iter().sum::<u32>()), (5, 0));
    }

    /// Each attention rank of an expert-parallel group keeps its own blocks
    /// under vLLM's and TensorRT-LLM's schedulers: a rank fills only its
    /// share of the group's cache, a vLLM rank out of blocks preempts its
    /// own newest request (the pooled cache had let one rank spill into
    /// another's share, and preempted the group's newest, another rank's),
    /// and TensorRT-LLM admits a request only where its own rank has the
    /// room for the whole of it.
    #[test]
    fn each_rank_fills_and_frees_only_its_own_cache() {
        // Two ranks, 64 blocks of 16 tokens in all: 32 a rank.
        let group = |policy: SchedulerPolicy| {
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.num_gpu_blocks_override, cfg.block_size) = (1, 2, 2, Some(64), 16);
            cfg.scheduler = policy;
            let e = Engine::new(cfg.engine_configs().remove(0)).unwrap();
            assert_eq!(e.pools.iter().map(BlockPool::num_blocks).collect::<Vec<_>>(), [32, 32]);
            assert_eq!(e.request_kv_tokens(), 32 * 16);
            e
        };
        // The first rank's two requests reach 29 and 20 blocks (16 + 448
        // and 16 + 304 tokens), more than its 32 together; the second
        // rank's two, 4 blocks each (16 + 48), fit in its own. Added at
        // once, the balancers alternate: 1 and 3 on the first rank, 2 and 4
        // on the second, 4 the group's newest (TensorRT-LLM's router, which
        // balances prompt tokens, finds them all equal).
        let requests = [(1, 16, 448), (2, 16, 48), (3, 16, 304), (4, 16, 48)];
        let mut e = group(SchedulerPolicy::Vllm);
        for (id, len, answer) in requests {
            let p = prompt(len, id, e.config());
            e.add_request(id, p, answer).unwrap();
        }
        let (mut preempted, mut finished) = (Vec::new(), 0);
        while let Some(out) = e.step() {
            // Each rank's requests hold their blocks in its own pool.
            for (rank, pool) in e.pools.iter().enumerate() {
                let held: usize = e
                    .running
                    .iter()
                    .map(|&s| &e.slots[s as usize])
                    .filter(|r| r.rank as usize == rank)
                    .map(|r| r.blocks.len())
                    .sum();
                assert_eq!(held as u32, 32 - pool.num_free(), "rank {rank}");
            }
            preempted.extend(out.preempted);
            finished += out.tokens.iter().filter(|t| t.finished).count();
        }
        // The first rank preempted, and only its own newest, 3; the second
        // rank's requests, 4 the newest of all, ran through.
        assert!(!preempted.is_empty() && preempted.iter().all(|&id| id == 3), "{preempted:?}");
        assert_eq!(finished, 4);

        // TensorRT-LLM reserves each request's whole run: the first rank
        // has room for one of its two, and the second rank's both are
        // admitted beside it (pooled, the 57 blocks of all four fit the 64
        // and had let 3 in).
        let mut e = group(SchedulerPolicy::Trtllm);
        for (id, len, answer) in requests {
            let p = prompt(len, id, e.config());
            e.add_request(id, p, answer).unwrap();
        }
        let first = e.step().unwrap();
        assert_eq!(first.admitted, [1, 2, 4]);
        let mut admitted = first.admitted;
        while let Some(out) = e.step() {
            assert!(out.preempted.is_empty(), "guaranteed no evict");
            admitted.extend(out.admitted);
        }
        assert_eq!(admitted, [1, 2, 4, 3], "3 once 1 has ended");
    }

    /// Each attention rank of an expert-parallel group keeps its own prefix
    /// cache: a prefix one rank cached is found by a later request on that
    /// rank, not by one on another (the pooled cache had served every rank's
    /// requests from any rank's blocks). Under vLLM's scheduler a request
    /// goes to the rank its data-parallel balancer scores lowest (four times
    /// its waiting requests plus its running ones), under SGLang's to the
    /// ranks in turn.
    #[test]
    fn a_rank_finds_only_the_prefixes_it_cached() {
        // Requests `(prefix, answer)` added one after another, each step run
        // until the request before it has ended when `one_at_a_time`, else
        // until one has: the prompt tokens each found cached.
        let run = |ep: u32, tp: u32, policy: SchedulerPolicy, requests: &[(u64, u32)], one_at_a_time: bool| {
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler) = (tp, ep, ep / tp, policy);
            let cfg = cfg.engine_configs().remove(0);
            assert_eq!(cfg.attention_ranks(), ep / tp);
            let mut e = Engine::new(cfg.clone()).unwrap();
            let mut found = vec![0; requests.len()];
            let mut out = StepOutcome::default();
            for (id, &(prefix, answer)) in requests.iter().enumerate() {
                let p = Prompt::synthetic(600, &[(prefix, 512)], id as u64, cfg.block_size);
                e.add_request(id as u64, p, answer).unwrap();
                loop {
                    let stepped = e.step_into(&mut out);
                    for &(i, c) in &out.prefix_hits {
                        found[i as usize] = c;
                    }
                    let ended = out.tokens.iter().any(|t| t.finished);
                    if !stepped || (!one_at_a_time && ended && id > 0) || (!one_at_a_time && id == 0) {
                        break;
                    }
                }
            }
            found
        };
        let same = [(7, 4); 5];
        // One at a time: vLLM's balancer finds every rank empty and takes
        // the first; SGLang's alternates (0, 2, 4 on the first rank).
        assert_eq!(run(2, 1, SchedulerPolicy::Vllm, &same, true), [0, 512, 512, 512, 512]);
        assert_eq!(run(2, 1, SchedulerPolicy::Sglang, &same, true), [0, 0, 512, 512, 512]);
        // One rank (TP as wide as EP) finds it for every request after the first.
        assert_eq!(run(2, 2, SchedulerPolicy::Sglang, &same, true), [0, 512, 512, 512, 512]);
        // A long answer on prefix 1 holds the first rank; a short one on
        // prefix 2 takes the second and ends; the next on prefix 2, sent at
        // once, goes in turn under SGLang (the first rank, which did not
        // cache it), and under vLLM to the first too: the counts its
        // balancer reads still show the second rank busy (they come every
        // 100 ms), a tie. Sent once the counts have come, it goes to the
        // idle second rank, which cached it.
        let mixed = [(1, 400), (2, 2), (2, 4)];
        assert_eq!(run(2, 1, SchedulerPolicy::Vllm, &mixed, false), [0, 0, 0]);
        assert_eq!(run(2, 1, SchedulerPolicy::Sglang, &mixed, false), [0, 0, 0]);
        let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
        (cfg.tp, cfg.ep, cfg.dp) = (1, 2, 2);
        let cfg = cfg.engine_configs().remove(0);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for (id, (prefix, answer)) in mixed.into_iter().enumerate().take(2) {
            e.add_request(id as u64, Prompt::synthetic(600, &[(prefix, 512)], id as u64, cfg.block_size), answer)
                .unwrap();
        }
        let mut elapsed = Duration::ZERO;
        while e.index.contains_key(&1) || elapsed < 2 * VLLM_DP_STATS_INTERVAL {
            elapsed += e.step().unwrap().duration;
        }
        e.add_request(2, Prompt::synthetic(600, &[(2, 512)], 2, cfg.block_size), 4).unwrap();
        let hits: Vec<(u64, u32)> = e.step().unwrap().prefix_hits;
        assert_eq!(hits, [(2, 512)], "on the second rank, which cached prefix 2");
    }
}
