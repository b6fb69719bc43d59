//! SGLang's batch scheduler, as its `Scheduler` and `PrefillAdder` run it
//! (`python/sglang/srt/managers/scheduler.py`, `schedule_policy.py`;
//! constants from `environ.py`). docs/simulator.md ("SGLang's scheduler")
//! says what it leaves out.
//!
//! What differs from vLLM's schedule (`Engine::schedule`):
//! - **Admission reserves the answer, by an estimate.** A waiting request
//!   starts only while its prompt (less what the prefix cache holds) plus
//!   its whole `max_tokens` (clipped at 4,096) is below what is free, less
//!   what the running requests are expected still to take: each's
//!   remaining tokens times the *new-token ratio*. The first that does not
//!   fit stops admission.
//! - **The ratio learns.** It starts at 0.7 × `--schedule-conservativeness`,
//!   falls by a 600th of the way to a seventh of that on each decode step,
//!   goes back to its start when the server is idle, and, when the decodes
//!   run out of room, is set from the running batch: what it decoded plus
//!   20 steps each, over what it may decode.
//! - **Decodes are retracted, not preempted.** Out of room, the requests
//!   with the fewest tokens out (of those, the longest prompt) go back to
//!   the end of the queue until the rest fit, at least one; their KV is
//!   computed again when they return.
//! - **Prompts and decodes run in separate steps** unless mixed batches are
//!   on (`--enable-mixed-chunk`), and a decode step is not held to the
//!   prompt budget (`--chunked-prefill-size`): only to the sequence cap.
//! - **A step's prompts stop at 16,384 tokens** (`--max-prefill-tokens`),
//!   beside the chunk budget; one prompt is chunked at a time.
//!
//! - **Under DP attention each rank schedules its own** (an
//!   expert-parallel group's ranks, [`crate::engine::EngineConfig::rank_config`]): its
//!   own queue, blocks, ratio and prefill-or-decode step, with the group's
//!   `--chunked-prefill-size` and `--max-running-requests` split over the
//!   ranks and the conservativeness times 0.3.
//!
//! A decode instance of a disaggregated server
//! (`python/sglang/srt/disaggregation/decode.py`) admits differently:
//! - **It reserves before the prefill.** A request queued there (it has not
//!   been prefilled yet: its prefill instance waits for this) gets blocks
//!   for its prompt while they, and 512 tokens of decoding for every
//!   request it holds (`SGLANG_NUM_RESERVED_DECODE_TOKENS`), fit, and while
//!   the longest request could still finish were all the others retracted;
//!   first come, first served. The driver then starts its prefill.
//! - **The first token is the prefill's.** Once its KV has landed, the
//!   request's first token goes out in a pass with no forward, and its
//!   first decode makes the second.
//! - **A retraction moves the KV to the host**, and the request comes back
//!   with it once its tokens and 512 more fit; while any waits so, no
//!   request is reserved for.

use super::{Engine, Pull, StepOutcome};
use crate::engine::catalog::GpuSpec;

/// What DP attention multiplies `--schedule-conservativeness` by
/// (`ServerArgs._handle_data_parallelism`).
pub const SGLANG_DP_ATTENTION_CONSERVATIVENESS: f64 = 0.3;
/// `SGLANG_INIT_NEW_TOKEN_RATIO`: the ratio's start, times
/// `--schedule-conservativeness`.
pub const SGLANG_INIT_NEW_TOKEN_RATIO: f64 = 0.7;
/// `SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR`: the ratio's floor, as a share of its
/// start.
pub const SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR: f64 = 0.14;
/// `SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`: decode steps from start to floor.
pub const SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS: f64 = 600.0;
/// `SGLANG_RETRACT_DECODE_STEPS`: the steps each remaining request is
/// counted for when a retraction sets the ratio.
pub const SGLANG_RETRACT_DECODE_STEPS: u32 = 20;
/// `SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`: a request's `max_tokens` as the
/// scheduler counts it, at most.
pub const SGLANG_CLIP_MAX_NEW_TOKENS: u32 = 4096;
/// `--max-prefill-tokens`' default: a step's prompt tokens (past its first
/// prompt's).
pub const SGLANG_MAX_PREFILL_TOKENS: u32 = 16384;
/// `SGLANG_NUM_RESERVED_DECODE_TOKENS`: the decoding room a disaggregated
/// decode instance keeps for each request it holds.
pub const SGLANG_RESERVED_DECODE_TOKENS: u32 = 512;
/// A decode instance's request slots past the running cap, as a multiple
/// of it, when the cap is at most [`SGLANG_PREALLOC_SMALL_CAP`]
/// (`DecodeReqToTokenPool`'s `pre_alloc_size`).
const SGLANG_PREALLOC_SEATS: u32 = 2;
const SGLANG_PREALLOC_SMALL_CAP: u32 = 32;

/// SGLang's estimate of the share of their remaining tokens the running
/// requests will still take (`new_token_ratio`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct NewTokenRatio {
    init: f64,
    min: f64,
    decay: f64,
    pub(super) now: f64,
}

impl NewTokenRatio {
    /// As SGLang's scheduler sets it up for `conservativeness`.
    pub(super) fn new(conservativeness: f64) -> NewTokenRatio {
        let init = (SGLANG_INIT_NEW_TOKEN_RATIO * conservativeness).min(1.0);
        let min = (init * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR).min(1.0);
        NewTokenRatio { init, min, decay: (init - min) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS, now: init }
    }

    fn reset(&mut self) {
        self.now = self.init;
    }

    fn decay(&mut self) {
        self.now = (self.now - self.decay).max(self.min);
    }
}

/// The defaults SGLang sets by `gpu`'s memory, in the one chain of
/// `ServerArgs._handle_gpu_memory_settings`: `--chunked-prefill-size`, and
/// `cuda_graph_max_bs` below TP 4 and at TP 4 and up.
fn sglang_memory_class(gpu: &GpuSpec) -> (u32, u32, u32) {
    match gpu.memory_gib {
        m if m < 20.0 => (2048, 8, 8),
        m if m < 35.0 => (2048, 24, 80),
        m if m < 60.0 => (4096, 32, 160),
        m if m < 160.0 => (8192, 256, 512),
        _ => (16384, 512, 512),
    }
}

/// SGLang's default `--chunked-prefill-size` on `gpu`, by its memory
/// (`sglang_memory_class`): 2,048 below 35 GiB, 4,096 below 60, 8,192
/// below 160 (the A100 80GB, H100, H200), 16,384 above (the B200, MI300X).
pub fn sglang_default_chunk(gpu: &GpuSpec) -> u32 {
    sglang_memory_class(gpu).0
}

/// SGLang's default `cuda_graph_max_bs` on `gpu` at TP `tp` (its TP size,
/// every GPU of a DP-attention group), by its memory
/// (`sglang_memory_class`): 8 below 20 GiB; 24, or 80 at TP 4 and up,
/// below 35; 32 or 160 below 60; 256 or 512 below 160; 512 above.
pub fn sglang_default_cuda_graph_max_bs(gpu: &GpuSpec, tp: u32) -> u32 {
    let (_, small_tp, large_tp) = sglang_memory_class(gpu);
    if tp < 4 {
        small_tp
    } else {
        large_tp
    }
}

/// SGLang's default `--max-running-requests` for a KV pool of `kv_tokens`
/// and a model of `context` tokens: half the pool's tokens, and at most its
/// request pool's size, `min(max(kv_tokens / context × 512, 2048), 4096)`
/// (`ModelRunner` and the scheduler's `max_running_requests`).
pub fn sglang_default_max_running(kv_tokens: u64, context: u32) -> u32 {
    let pool = (kv_tokens as f64 / f64::from(context.max(1)) * 512.0).clamp(2048.0, 4096.0) as u64;
    (kv_tokens / 2).min(pool).clamp(1, u64::from(u32::MAX)) as u32
}

impl Engine {
    /// One step of SGLang's schedule (see the module doc). Fills
    /// `self.scheduled`. Under DP attention (an expert-parallel group's
    /// ranks) each rank runs SGLang's scheduler on its
    /// own: its own queue, pool of blocks, new-token ratio, budgets and
    /// retractions, and it prefills or decodes whatever the others do (a
    /// disaggregated decode instance's each reserves for its own requests).
    pub(super) fn schedule_sglang(&mut self, out: &mut StepOutcome) {
        self.scheduled.clear();
        // Each rank's budget, seats and queue (nothing with one rank).
        self.open_ranks();
        // A rank with nothing running was idle (SGLang resets the ratio on
        // each loop that finds nothing to run).
        for p in 0..self.pools.len() {
            if self.rank_idle(p) {
                self.sglang_ratios[p].reset();
            }
        }
        if self.sglang_decode_queue(out) {
            // No rank prefilled.
            self.sglang_prompts.fill(0);
            return;
        }
        let mixed = self.cfg.mixed_batches;
        let ranks = self.pools.len();
        let pp = self.cfg.pp.max(1);
        let mut budget = self.cfg.step_token_budget();
        // `--max-prefill-tokens` is each rank's scheduler's (a micro-batch's).
        let mut input = std::mem::take(&mut self.sglang_input);
        input.clear();
        input.resize(ranks, self.cfg.max_prefill_tokens.saturating_mul(pp));
        // Each rank's prompts this step.
        let mut prompts = std::mem::take(&mut self.sglang_prompts);
        prompts.clear();
        prompts.resize(ranks, 0);
        // Mixed, the decodes join the step first, and take their tokens out
        // of both budgets (`num_mixed_decode_tokens`).
        if mixed {
            self.schedule_sglang_decodes(out, &prompts);
            for i in 0..self.scheduled.len() {
                let (slot, n) = self.scheduled[i];
                budget = budget.saturating_sub(n);
                self.rank_took(slot, n, false);
                let p = self.pool_of(slot);
                input[p] = input[p].saturating_sub(n);
            }
        }
        let mut rem = std::mem::take(&mut self.sglang_rem);
        self.sglang_room(&mut rem);

        // 1. The prompt in chunks (SGLang's `chunked_req`), first.
        let before = self.scheduled.len();
        self.continue_prompts(&mut budget, |e, left, budget| Some(left.min(budget).min(e.cfg.max_num_batched_tokens)));
        for i in before..self.scheduled.len() {
            let (slot, n) = self.scheduled[i];
            let p = self.pool_of(slot);
            input[p] = input[p].saturating_sub(n);
            prompts[p] += 1;
        }

        // 2. New prompts, first come first served (each rank its own),
        // while each one's prompt and answer fit beside what its rank's
        // running ones are expected to take.
        let mut k = 0;
        while budget > 0 && (self.num_running() as u32) < self.max_num_seqs {
            let Some(&slot) = self.waiting.get(k) else { break };
            // Prefilled elsewhere: reserved for, never computed here.
            if self.slots[slot as usize].pull != Pull::None {
                break;
            }
            if !self.rank_admits(slot) {
                stop_rank!(self, slot, k);
            }
            let p = self.pool_of(slot);
            let cached = self.look_up(slot);
            let r = &self.slots[slot as usize];
            let extend = r.num_tokens() - cached;
            let total = f64::from(extend) + f64::from(r.max_tokens.min(SGLANG_CLIP_MAX_NEW_TOKENS));
            // An idle server takes its first request whatever it asks: one
            // that fills the whole cache would otherwise wait forever
            // (the engine refuses only what cannot fit at all).
            let idle = prompts[p] == 0 && self.rank_idle(p);
            if total >= rem[p] && !idle {
                stop_rank!(self, slot, k);
            }
            if extend >= input[p] && prompts[p] > 0 {
                stop_rank!(self, slot, k);
            }
            let left = budget.min(self.rank_left(slot));
            let whole_fits_a_step = extend <= self.cfg.max_num_batched_tokens;
            if !self.cfg.enable_chunked_prefill && whole_fits_a_step && extend > left {
                stop_rank!(self, slot, k);
            }
            let new = extend.min(left).min(self.cfg.max_num_batched_tokens);
            if !self.pools[p].admit(&mut self.slots[slot as usize].blocks, &self.hits, cached + new) {
                stop_rank!(self, slot, k);
            }
            let _ = self.waiting.remove(k);
            self.start(slot, cached, new, out);
            self.rank_took(slot, new, true);
            rem[p] -= total;
            budget -= new;
            input[p] = input[p].saturating_sub(new);
            prompts[p] += 1;
            // One prompt in chunks at a time: the rank's budget is spent.
            if new < extend && !self.block_rank(slot) {
                break;
            }
        }
        self.sglang_rem = rem;
        self.sglang_input = input;
        // A rank that prefills this step does not decode (unless mixed,
        // above); the others do.
        if !mixed && prompts.contains(&0) {
            self.schedule_sglang_decodes(out, &prompts);
        }
        // A rank's decode step with no retraction: its ratio falls toward
        // its floor.
        for (p, ratio) in self.sglang_ratios.iter_mut().enumerate() {
            if prompts[p] == 0 && self.sglang_decoded[p] == (true, false) {
                ratio.decay();
            }
        }
        self.sglang_prompts = prompts;
    }

    /// Whether the rank of pool `p` runs nothing (it admits its first
    /// request whatever it asks).
    fn rank_idle(&self, p: usize) -> bool {
        match self.rank_seats.get(p) {
            Some(&seats) => seats == 0,
            None => self.running.is_empty() && self.late.is_empty(),
        }
    }

    /// What admission may still promise in each pool, in tokens, into
    /// `rem`: the free blocks' tokens (an idle cached block is free: SGLang
    /// evicts it) less what each running request there is expected still
    /// to take. A request still in its prompt is owed the rest of it and
    /// its whole answer, as it was charged when admitted; a decoding one,
    /// its rank's ratio of its remaining tokens
    /// (`_get_running_request_total_token_offset`).
    fn sglang_room(&self, rem: &mut Vec<f64>) {
        rem.clear();
        rem.extend(self.pools.iter().map(|p| f64::from(p.num_free()) * f64::from(self.cfg.block_size)));
        let late = self.late.iter().map(|l| l.slot);
        for slot in self.running.iter().copied().chain(late) {
            let (r, p) = (&self.slots[slot as usize], self.pool_of(slot));
            let left = f64::from((r.max_tokens - r.num_output).min(SGLANG_CLIP_MAX_NEW_TOKENS));
            let ratio = self.sglang_ratios[p].now;
            rem[p] -= if !r.decoding() { f64::from(r.num_tokens() - r.num_computed) + left } else { left * ratio };
        }
    }

    /// The decode pass of the ranks that prefill nothing this step
    /// (`prompts`: each rank's prompts): every decoding request takes its
    /// token (and its drafts), held to no token budget. Where its rank's
    /// blocks are not free, that rank's requests are retracted (SGLang's
    /// `retract_decode`) and its ratio set from those left. Each rank's
    /// (whether some decoded, whether it retracted) into `sglang_decoded`.
    fn schedule_sglang_decodes(&mut self, out: &mut StepOutcome, prompts: &[u32]) {
        let mut decoded = std::mem::take(&mut self.sglang_decoded);
        decoded.clear();
        decoded.resize(self.pools.len(), (false, false));
        for p in 0..self.pools.len() {
            if prompts[p] == 0 {
                decoded[p].1 = self.retract_for_decodes(p, out);
            }
        }
        for i in 0..self.running.len() {
            let slot = self.running[i];
            let (r, p) = (&self.slots[slot as usize], self.pool_of(slot));
            if !r.decoding() || prompts[p] > 0 {
                continue;
            }
            let drafts = self.drafts(r);
            let new = 1 + drafts;
            let target = r.num_computed + new;
            if !self.pools[p].grow(&mut self.slots[slot as usize].blocks, target) {
                // A lone request past the whole cache: add_request refuses
                // one that cannot fit, so it is not reached.
                continue;
            }
            self.register_full_blocks(slot, super::r_kept(target, new, drafts));
            self.scheduled.push((slot, new));
            decoded[p].0 = true;
        }
        self.sglang_decoded = decoded;
    }

    /// Retracts pool `p`'s running requests until its decodes' blocks are
    /// free, and then sets its rank's ratio from those left; whether it
    /// retracted.
    fn retract_for_decodes(&mut self, p: usize, out: &mut StepOutcome) -> bool {
        let on = |e: &Engine, s: u32| e.pool_of(s) == p;
        let need = |e: &Engine| -> u64 {
            e.running
                .iter()
                .filter(|&&s| on(e, s))
                .map(|&s| {
                    let r = &e.slots[s as usize];
                    if !r.decoding() {
                        return 0;
                    }
                    let target = r.num_computed + 1 + e.drafts(r);
                    u64::from(e.blocks_for(target).saturating_sub(r.blocks.len() as u32))
                })
                .sum()
        };
        let decoding = |e: &Engine| e.running.iter().filter(|&&s| on(e, s) && e.slots[s as usize].decoding()).count();
        let mut retracted = false;
        while need(self) > u64::from(self.pools[p].num_free()) {
            // The fewest tokens out, of those the longest prompt; SGLang
            // keeps one. Past that, a prompt in chunks gives its blocks
            // back (its charge had counted on the ratio, which was low).
            let victim = if decoding(self) > 1 {
                self.running.iter().copied().filter(|&s| on(self, s) && self.slots[s as usize].decoding()).min_by_key(
                    |&s| {
                        let r = &self.slots[s as usize];
                        (r.num_output, std::cmp::Reverse(r.prompt_len))
                    },
                )
            } else {
                self.running.iter().rev().copied().find(|&s| on(self, s) && !self.slots[s as usize].decoding())
            };
            let Some(victim) = victim else { break };
            self.retract(victim, out);
            retracted = true;
        }
        if retracted {
            let (mut done, mut most) = (0u64, 0u64);
            let mut n = 0u64;
            for &s in &self.running {
                let r = &self.slots[s as usize];
                if on(self, s) && r.decoding() {
                    done += u64::from(r.num_output);
                    most += u64::from(r.max_tokens);
                    n += 1;
                }
            }
            let ratio = (done + u64::from(SGLANG_RETRACT_DECODE_STEPS) * n) as f64 / (most + 1) as f64;
            self.sglang_ratios[p].now = ratio.min(1.0);
        }
        retracted
    }

    /// Frees a running request's blocks and puts it at the end of the
    /// queue (SGLang's `_extend_requests_to_queue`), to be computed again;
    /// one prefilled elsewhere keeps its KV on the host instead, to be
    /// loaded back (`offload_kv_cache`).
    fn retract(&mut self, slot: u32, out: &mut StepOutcome) {
        self.running.retain(|&s| s != slot);
        debug_assert_eq!(self.slots[slot as usize].pull, Pull::None);
        if self.slots[slot as usize].remote {
            self.release_counted(slot, out);
            self.offloaded.push(slot);
            return;
        }
        self.take_back(slot, out);
        self.waiting.push_back(slot);
    }

    /// A disaggregated decode instance's queues, as SGLang's
    /// `process_decode_queue` and `get_new_prebuilt_batch` take them (see
    /// the module doc): requests retracted to the host come back, then
    /// (unless one still waits) requests are reserved for, first come first
    /// served (the step's [`StepOutcome::pulls`] name them: their prefill
    /// may start); then those whose KV landed send their first token. True
    /// when some did: that pass is the step, and has no forward. Under DP
    /// attention each rank does this on its own, in its own pool and within
    /// its own seats: a request that does not fit stops its own rank's
    /// queue, not the others'.
    fn sglang_decode_queue(&mut self, out: &mut StepOutcome) -> bool {
        let remote_waits = self.waiting.front().is_some_and(|&s| self.slots[s as usize].pull != Pull::None);
        if !remote_waits && self.offloaded.is_empty() {
            return false;
        }
        let pools = self.pools.len();
        let reserve = u64::from(SGLANG_RESERVED_DECODE_TOKENS);
        // A rank's running cap, and its request slots.
        let cap = self.cfg.resolved_max_num_seqs().max(1);
        let seats =
            if cap <= SGLANG_PREALLOC_SMALL_CAP { cap.saturating_mul(1 + SGLANG_PREALLOC_SEATS) } else { cap } as usize;
        // Each pool's queue, stopped at its first request that does not fit.
        let mut stopped = vec![false; pools];

        // 1. Back from the host, oldest first (`resume_retracted_reqs`).
        let mut room: Vec<i64> = (0..pools).map(|p| self.sglang_allocatable(p, false)).collect();
        let mut i = 0;
        while let Some((at, slot, p)) = self.next_open(|e, i| e.offloaded.get(i).copied(), i, &stopped) {
            i = at;
            let r = &self.slots[slot as usize];
            let required = i64::from(r.num_tokens()) + reserve as i64;
            // With nothing else held it comes back whatever it needs: it
            // fitted before, and nothing else would ever free room for it.
            let taken = self.sglang_seats_taken(p);
            let computed = r.num_computed;
            if taken >= seats
                || (required > room[p] && taken > 0)
                || !self.pools[p].admit(&mut self.slots[slot as usize].blocks, &[], computed)
            {
                stopped[p] = true;
                i += 1;
                continue;
            }
            self.offloaded.remove(i);
            room[p] -= required;
            self.register_full_blocks(slot, computed);
            self.join_running(slot);
        }

        // 2. Reserved for, first come first served (`pop_preallocated`):
        // its prompt and 512 tokens, and, were all the running requests
        // retracted, its whole answer. Not on a rank while one of its
        // requests waits on the host.
        for (p, stop) in stopped.iter_mut().enumerate() {
            *stop = self.offloaded.iter().any(|&s| self.pool_of(s) == p);
            room[p] = self.sglang_allocatable(p, true);
        }
        let retractable: Vec<i64> = (0..pools).map(|p| self.sglang_running_tokens(p)).collect();
        let mut i = self.landed_ahead();
        while let Some((at, slot, p)) = self.next_open(|e, i| e.waiting.get(i).copied(), i, &stopped) {
            i = at;
            let r = &self.slots[slot as usize];
            debug_assert_eq!(r.pull, Pull::Awaiting);
            let prompt = i64::from(r.prompt_len);
            let required = prompt + reserve as i64;
            let whole = sglang_whole_need(r, retractable[p]);
            // An idle rank takes its first request whatever it asks (one
            // whose prompt and 512 pass the cache would wait for ever; the
            // engine refuses only what cannot fit at all).
            let taken = self.sglang_seats_taken(p);
            let tokens = r.prompt_len;
            if taken >= seats
                || (required.max(whole) > room[p] && taken > 0)
                || !self.pools[p].admit(&mut self.slots[slot as usize].blocks, &[], tokens)
            {
                stopped[p] = true;
                i += 1;
                continue;
            }
            room[p] -= required;
            self.waiting.remove(i);
            let r = &mut self.slots[slot as usize];
            r.pull = Pull::Pulling;
            r.num_registered = 0;
            out.pulls.push((r.id, 0));
            self.pulling.push(slot);
        }

        // 3. Landed: the first token, the prefill's, goes out now, on each
        // rank within its running cap.
        let mut sent = false;
        let mut i = 0;
        while let Some(&slot) = self.waiting.get(i) {
            if self.slots[slot as usize].pull != Pull::Landed {
                break;
            }
            let p = self.pool_of(slot);
            if self.running_on(p) >= cap as usize {
                i += 1;
                continue;
            }
            self.waiting.remove(i);
            let r = &mut self.slots[slot as usize];
            let n = r.num_tokens();
            r.pull = Pull::None;
            r.num_computed = n;
            r.num_output = 1;
            r.admitted_once = true;
            let finished = r.max_tokens <= 1;
            let (id, prompt) = (r.id, r.prompt_len);
            self.stats.requests_admitted += 1;
            self.stats.prompt_tokens += u64::from(prompt);
            self.stats.generation_tokens += 1;
            out.admitted.push(id);
            out.tokens.push(super::TokenEvent { id, index: 0, tokens: 1, first: true, finished });
            sent = true;
            if finished {
                self.finish(slot);
            } else {
                self.register_full_blocks(slot, n);
                self.join_running(slot);
            }
        }
        sent
    }

    /// From the `i`th on of the requests `get` gives, the first whose pool's
    /// queue is not `stopped`: its index, slot and pool; none once every
    /// pool's is stopped or the requests run out.
    fn next_open(
        &self,
        get: impl Fn(&Engine, usize) -> Option<u32>,
        mut i: usize,
        stopped: &[bool],
    ) -> Option<(usize, u32, usize)> {
        while !stopped.iter().all(|&s| s) {
            let slot = get(self, i)?;
            let p = self.pool_of(slot);
            if !stopped[p] {
                return Some((i, slot, p));
            }
            i += 1;
        }
        None
    }

    /// The running requests of pool `p` (all of them with one pool).
    fn running_on(&self, p: usize) -> usize {
        match self.pools.len() {
            1 => self.running.len(),
            _ => self.running.iter().filter(|&&s| self.pool_of(s) == p).count(),
        }
    }

    /// A decode instance's requests of pool `p` that hold a request slot:
    /// running, reserved for (their KV on its way, or landed).
    fn sglang_seats_taken(&self, p: usize) -> usize {
        let on = |s: &&u32| self.pool_of(**s) == p;
        let landed = self.waiting.iter().take(self.landed_ahead());
        self.running_on(p) + self.pulling.iter().filter(on).count() + landed.filter(on).count()
    }

    /// The tokens pool `p`'s running requests hold: what retracting them
    /// all would free.
    fn sglang_running_tokens(&self, p: usize) -> i64 {
        let on = self.running.iter().filter(|&&s| self.pool_of(s) == p);
        on.map(|&s| i64::from(self.slots[s as usize].num_tokens())).sum()
    }

    /// What a decode instance may still reserve in pool `p`, in tokens
    /// (`_allocatable_tokens`): the free tokens, less the larger of 512 for
    /// each request it holds and the room the longest running request
    /// would need to finish were all the others retracted; less, when
    /// `count_offloaded`, what the requests on the host will need.
    fn sglang_allocatable(&self, p: usize, count_offloaded: bool) -> i64 {
        let tokens = |s: &u32| i64::from(self.slots[*s as usize].num_tokens());
        let on = |s: &&u32| self.pool_of(**s) == p;
        let retractable = self.sglang_running_tokens(p);
        let single = self
            .running
            .iter()
            .filter(on)
            .map(|&s| sglang_whole_need(&self.slots[s as usize], retractable))
            .max()
            .unwrap_or(0);
        let reserve = i64::from(SGLANG_RESERVED_DECODE_TOKENS);
        let held = self.sglang_seats_taken(p) as i64;
        let free = i64::from(self.pools[p].num_free()) * i64::from(self.cfg.block_size);
        let mut room = free - (reserve * held).max(single);
        if count_offloaded {
            room -= self.offloaded.iter().filter(on).map(|s| tokens(s) + reserve).sum::<i64>();
        }
        room
    }
}

/// What request `r` would need to finish were every running request
/// retracted (`retractable`, their tokens, freed): its prompt and its answer
/// (at most [`SGLANG_CLIP_MAX_NEW_TOKENS`]) beyond them.
fn sglang_whole_need(r: &super::Request, retractable: i64) -> i64 {
    i64::from(r.prompt_len) + i64::from(r.max_tokens.min(SGLANG_CLIP_MAX_NEW_TOKENS)) - retractable
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::engine::scheduler::tests::{drain, policy_config, prompt};

    fn config(blocks: Option<u32>, policy: SchedulerPolicy) -> EngineConfig {
        policy_config(blocks, crate::engine::DEFAULT_BLOCK_SIZE, policy)
    }

    /// Under DP attention (an expert-parallel group's ranks) each rank runs
    /// SGLang's scheduler on its own: the group's `--chunked-prefill-size`
    /// and `--max-running-requests` split over the ranks and the
    /// conservativeness times 0.3, as SGLang's server arguments set them; a
    /// rank prefills while another decodes in the same step; a rank out of
    /// room retracts only its own requests and sets only its own ratio.
    /// (The group had kept one queue, one pool and the ranks' limits added
    /// up: a step with a prompt anywhere decoded nowhere, and a retraction
    /// took from any rank.)
    #[test]
    fn each_dp_attention_rank_runs_its_own_sglang_scheduler() {
        let group = |blocks: Option<u32>, conservativeness: f64| {
            let fp8 = crate::engine::catalog::Precision::Fp8;
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler) = (1, 2, 2, SchedulerPolicy::Sglang);
            (cfg.num_gpu_blocks_override, cfg.block_size, cfg.enable_prefix_caching) = (blocks, 16, false);
            (cfg.max_num_batched_tokens, cfg.max_num_seqs) = (8192, Some(256));
            // SGLang's default: prompts and decodes in separate steps.
            (cfg.schedule_conservativeness, cfg.mixed_batches) = (conservativeness, false);
            cfg.engine_configs().remove(0)
        };
        let rank = group(None, 1.0).rank_config();
        assert_eq!((rank.max_num_batched_tokens, rank.max_num_seqs), (4096, Some(128)));
        assert!((rank.schedule_conservativeness - 0.3).abs() < 1e-12);
        let mut vllm = group(None, 1.0);
        vllm.scheduler = SchedulerPolicy::Vllm;
        assert_eq!(vllm.rank_config().max_num_batched_tokens, 8192, "vLLM's ranks each take the budget given");
        let mut whole = group(None, 1.0);
        whole.enable_chunked_prefill = false;
        assert_eq!(whole.rank_config().max_num_batched_tokens, 8192, "a prompt taken whole stays whole");

        // Disaggregated, a prefill instance's ranks and a decode instance's
        // each schedule their own too.
        let mut pd = EngineConfig::from_names("qwen3-30b-a3b", "h100", crate::engine::catalog::Precision::Fp8).unwrap();
        (pd.tp, pd.ep, pd.scheduler) = (1, 2, SchedulerPolicy::Sglang);
        pd.pd = Some(crate::engine::Disaggregation::parse("1:1").unwrap());
        let [p, d] = &pd.engine_configs()[..] else { panic!("two instances") };
        assert_eq!(p.attention_ranks(), 2);
        let (mut prefill, decode) = (Engine::new(p.clone()).unwrap(), Engine::new(d.clone()).unwrap());
        prefill.hold_finished();
        assert_eq!((prefill.pools.len(), prefill.rank_budget.len()), (2, 2));
        assert_eq!((decode.pools.len(), decode.rank_budget.len()), (2, 2));

        // A disaggregated prefill instance puts a request on the rank its
        // bootstrap room names, a random draw, not in turn; the decode
        // instance deals them in turn.
        let (mut prefill, mut decode) = (Engine::new(p.clone()).unwrap(), Engine::new(d.clone()).unwrap());
        prefill.hold_finished();
        let room_rank = |id: u64| (bootstrap_room(id) % 2) as u32;
        for id in 1..=64 {
            prefill.add_request(id, prompt(100, id, p), 1).unwrap();
            decode.add_remote_request(id, prompt(100, id, d), 8).unwrap();
        }
        let ranks = |e: &Engine| (1..=64).map(|id| e.slots[e.index[&id] as usize].rank).collect::<Vec<u32>>();
        assert_eq!(ranks(&prefill), (1..=64).map(room_rank).collect::<Vec<_>>());
        assert_eq!(ranks(&decode), (0..64).map(|i| i % 2).collect::<Vec<_>>());
        assert!((1..64).any(|id| room_rank(id) == room_rank(id + 1)), "a random draw, not the ranks in turn");
        let first = (1..=64).filter(|&id| room_rank(id) == 0).count();
        assert!((16..=48).contains(&first), "{first} of 64 on the first rank");

        // The decode instance's ranks each reserve in their own pool (2,048
        // tokens a rank, 4,096 in all), first come first served on each: the
        // first rank's requests of 1,000 prompt tokens (1,512 reserved with
        // the 512) leave room for one of them, the second's of 100 (612)
        // for three. One queue over the pooled cache had reserved 1, 2 and
        // 3 and stopped at 4.
        let mut d = d.clone();
        d.num_gpu_blocks_override = Some(256);
        let mut decode = Engine::new(d.clone()).unwrap();
        for id in 1..=8 {
            let len = if id % 2 == 1 { 1000 } else { 100 };
            decode.add_remote_request(id, prompt(len, id, &d), 200).unwrap();
        }
        let mut out = StepOutcome::default();
        decode.step_into(&mut out);
        let reserved: Vec<u64> = out.pulls.iter().map(|&(id, _)| id).collect();
        assert_eq!(reserved, [1, 2, 4, 6]);

        // Requests go to the ranks in turn: 1 to the first, 2 to the second,
        // 3 to the first. Once 1 and 2 decode, 3's prompt runs on the first
        // rank (whose 1 waits) while 2 decodes on the second.
        let cfg = group(None, 1.0);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in [1, 2] {
            e.add_request(id, prompt(64, id, &cfg), 64).unwrap();
        }
        for _ in 0..3 {
            e.step().unwrap();
        }
        e.add_request(3, prompt(64, 3, &cfg), 64).unwrap();
        let step = e.step().unwrap();
        assert_eq!(step.admitted, [3]);
        let decoded: Vec<u64> = step.tokens.iter().filter(|t| !t.first).map(|t| t.id).collect();
        assert_eq!(decoded, [2], "the second rank decodes beside the first rank's prompt");

        // 32 blocks a rank, nothing held back for the answers: the first
        // rank's two requests (64 + 300 tokens, 23 blocks each) run out of
        // room and retract each other; the second rank's (64 + 40) never.
        let cfg = group(Some(64), 0.0);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for (id, answer) in [(1, 300), (2, 40), (3, 300), (4, 40)] {
            e.add_request(id, prompt(64, id, &cfg), answer).unwrap();
        }
        let mut retracted = Vec::new();
        let (mut first_ratio_set, mut second_ratio_set) = (false, false);
        while let Some(out) = e.step() {
            retracted.extend(out.preempted);
            first_ratio_set |= e.sglang_ratios[0].now > 0.0;
            second_ratio_set |= e.sglang_ratios[1].now > 0.0;
            assert!(retracted.len() < 1000);
        }
        assert!(!retracted.is_empty() && retracted.iter().all(|id| id % 2 == 1), "{retracted:?}");
        assert!(first_ratio_set, "the first rank's retraction set its ratio");
        assert!(!second_ratio_set, "the second rank's ratio stayed at its start of 0");
        assert_eq!(e.stats().requests_finished, 4);
    }

    /// 256 blocks of 16 tokens (4,096). Eight requests of 16 prompt and
    /// 1,000 answer tokens: vLLM admits all eight at once (their prompts
    /// fit) and preempts as they grow. SGLang admits a request while its
    /// 1,016 tokens are below what is free less what the running ones are
    /// expected to take: four at first, each charged its whole answer. Once
    /// they run, each is owed 0.7 of its remaining answer, so a fifth fits
    /// at once; a sixth does not (4,096 − 5 × 17 − 5 × 700 < 1,016) until
    /// the ratio has fallen on some 200 decode steps, long before the first
    /// ends: the ratio learns.
    /// SGLang's controller over the ranks of DP attention sends each request
    /// by its `--load-balance-method` (`balance.rs`): in turn by default;
    /// by the requests or the tokens it has sent since it last read the
    /// ranks' loads; and those loads are the ones the ranks last published
    /// (after a prefill, or every 15th step), not their live counts.
    #[test]
    fn sglangs_controller_sends_each_request_by_its_load_balance_method() {
        use crate::engine::LoadBalance;
        let group = |method: LoadBalance| {
            let fp8 = crate::engine::catalog::Precision::Fp8;
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", fp8).unwrap();
            (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler, cfg.mixed_batches) = (1, 2, 2, SchedulerPolicy::Sglang, false);
            cfg.load_balance = method;
            cfg.validate().unwrap();
            cfg.engine_configs().remove(0)
        };
        let rank = |e: &Engine, id: u64| e.slots[e.index[&id] as usize].rank;
        let lengths = [1000, 100, 1000, 100];
        for (method, want) in [
            (LoadBalance::Auto, [0, 1, 0, 1]),
            (LoadBalance::RoundRobin, [0, 1, 0, 1]),
            (LoadBalance::TotalRequests, [0, 1, 0, 1]),
            (LoadBalance::TotalTokens, [0, 1, 1, 0]),
        ] {
            let cfg = group(method);
            let mut e = Engine::new(cfg.clone()).unwrap();
            for (id, len) in (1..).zip(lengths) {
                e.add_request(id, prompt(len, id, &cfg), 8).unwrap();
            }
            assert_eq!((1..=4).map(|id| rank(&e, id)).collect::<Vec<_>>(), want, "{method}");
        }

        // 1 on the first rank decodes long, 2 on the second ends at once.
        let cfg = group(LoadBalance::TotalRequests);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, &cfg), 400).unwrap();
        e.add_request(2, prompt(64, 2, &cfg), 2).unwrap();
        let (mut steps, mut elapsed) = (0, Duration::ZERO);
        while e.index.contains_key(&2) || elapsed < balance::READ_INTERVAL {
            elapsed += e.step().unwrap().duration;
            steps += 1;
        }
        assert!(steps < balance::SNAPSHOT_STEPS, "{steps} steps");
        // The second rank is empty, but its last snapshot (its prompt's
        // step) says one request, as the first rank's does: a tie.
        e.add_request(3, prompt(64, 3, &cfg), 400).unwrap();
        assert_eq!(rank(&e, 3), 0, "the loads as last published, not as they are");
        // Fifteen steps on, the second rank has published its empty queue
        // (and the first its two): both of the next two go to the second.
        for _ in 0..balance::SNAPSHOT_STEPS {
            e.step().unwrap();
        }
        for id in [4, 5] {
            e.add_request(id, prompt(64, id, &cfg), 8).unwrap();
        }
        assert_eq!([rank(&e, 4), rank(&e, 5)], [1, 1]);
    }

    #[test]
    fn sglangs_admission_keeps_room_for_the_answers_it_expects_and_learns() {
        let run = |policy| {
            let cfg = config(Some(256), policy);
            let mut e = Engine::new(cfg.clone()).unwrap();
            for id in 1..=8 {
                e.add_request(id, prompt(16, id, &cfg), 1000).unwrap();
            }
            let first = e.step().unwrap();
            let steps = drain(&mut e);
            (first, steps, e.stats())
        };
        let (first, _, vllm) = run(SchedulerPolicy::Vllm);
        assert_eq!(first.admitted.len(), 8);
        assert!(vllm.preemptions >= 4, "vLLM admits all and preempts: {vllm:?}");

        let (first, steps, sglang) = run(SchedulerPolicy::Sglang);
        assert_eq!(first.admitted, vec![1, 2, 3, 4], "the fifth's 1,016 tokens are not below the 32 left");
        assert_eq!((sglang.requests_finished, sglang.generation_tokens), (8, 8 * 1000));
        assert!(sglang.preemptions < vllm.preemptions, "{} against vLLM's {}", sglang.preemptions, vllm.preemptions);
        let at = |id| steps.iter().position(|s| s.admitted.contains(&id)).unwrap();
        let first_done = steps.iter().position(|s| s.tokens.iter().any(|t| t.finished)).unwrap();
        assert!(at(5) < 5, "the fifth is admitted once the four run, at step {}", at(5));
        assert!(
            at(6) > 100 && at(6) + 500 < first_done,
            "the sixth is admitted at step {}, once the ratio fell, long before the first ends ({first_done})",
            at(6)
        );
    }

    /// With no room held for the running answers (conservativeness 0),
    /// SGLang admits by prompt and answer alone, the decodes run out of
    /// room, and the requests with the fewest tokens out are retracted;
    /// the ratio is then what the batch decoded plus 20 steps each, over
    /// what it may decode. Every request still ends, each token once.
    #[test]
    fn decodes_out_of_room_retract_the_least_advanced_and_set_the_ratio() {
        let mut cfg = config(Some(40), SchedulerPolicy::Sglang);
        cfg.schedule_conservativeness = 0.0;
        let mut e = Engine::new(cfg.clone()).unwrap();
        // 640 tokens. Each asks 64 + 128 = 192: three admitted (576 < 640
        // less nothing held), then a fourth is not (192 ≥ 64).
        for id in 1..=6 {
            e.add_request(id, prompt(64, id, &cfg), 128).unwrap();
        }
        let mut steps = Vec::new();
        let mut ratio_after = None;
        while let Some(s) = e.step() {
            if !s.preempted.is_empty() && ratio_after.is_none() {
                let (mut done, mut most, mut n) = (0u64, 0u64, 0u64);
                for &slot in &e.running {
                    let r = &e.slots[slot as usize];
                    if r.decoding() {
                        (done, most, n) = (done + u64::from(r.num_output), most + u64::from(r.max_tokens), n + 1);
                    }
                }
                let want = ((done + 20 * n) as f64 / (most + 1) as f64).min(1.0);
                // The step's decodes ran after the ratio was set: one token each.
                let want_lo = ((done - n + 20 * n) as f64 / (most + 1) as f64).min(1.0);
                let got = e.sglang_ratios[0].now;
                assert!(got >= want_lo - 1e-9 && got <= want + 1e-9, "ratio {got}, want {want_lo}..{want}");
                ratio_after = Some((s.preempted.clone(), got));
            }
            steps.push(s);
            assert!(steps.len() < 10_000);
        }
        let (retracted, ratio) = ratio_after.expect("the decodes ran out of room");
        assert!(ratio > 0.0, "a retraction sets the ratio above its start of 0");
        assert!(!retracted.is_empty());
        let stats = e.stats();
        assert_eq!((stats.requests_finished, stats.generation_tokens), (6, 6 * 128));
        for id in 1..=6 {
            let idx: Vec<u32> = steps.iter().flat_map(|s| &s.tokens).filter(|t| t.id == id).map(|t| t.index).collect();
            assert_eq!(idx, (0..128).collect::<Vec<_>>(), "request {id}'s tokens, once each, in order");
        }
    }

    /// SGLang holds its prompt chunks to `--chunked-prefill-size`, not its
    /// decodes: 200 sequences decode in one step under a budget of 64
    /// tokens (vLLM refuses a cap above its budget).
    #[test]
    fn a_decode_step_is_not_held_to_the_prompt_budget() {
        let mut cfg = config(None, SchedulerPolicy::Sglang);
        (cfg.max_num_batched_tokens, cfg.max_num_seqs, cfg.mixed_batches) = (64, Some(256), false);
        cfg.validate().unwrap();
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 1..=200 {
            e.add_request(id, prompt(16, id, &cfg), 8).unwrap();
        }
        let steps = drain(&mut e);
        let widest = steps.iter().map(|s| s.batch.decodes).max().unwrap();
        assert_eq!(widest, 200, "every sequence decodes in one step");
        assert!(steps.iter().all(|s| s.batch.prefill_tokens <= 64), "prompts stay within the budget");
        assert!(steps.iter().all(|s| s.batch.decodes == 0 || s.batch.prefills == 0), "separate steps");
        cfg.scheduler = SchedulerPolicy::Vllm;
        assert!(cfg.validate().unwrap_err().to_string().contains("vLLM refuses it"));
    }

    /// A step's prompts stop at `--max-prefill-tokens` (16,384) past the
    /// first: three prompts of 8,000 under a chunk budget of 32,768 run two
    /// in the first step (the third's 8,000 is not below the 384 left);
    /// vLLM runs all three.
    #[test]
    fn a_step_s_prompts_stop_at_sglangs_max_prefill_tokens() {
        for (policy, want) in [(SchedulerPolicy::Sglang, 16_000), (SchedulerPolicy::Vllm, 24_000)] {
            let mut cfg = config(None, policy);
            cfg.max_num_batched_tokens = 32_768;
            let mut e = Engine::new(cfg.clone()).unwrap();
            for id in 1..=3 {
                e.add_request(id, prompt(8000, id, &cfg), 4).unwrap();
            }
            let s = e.step().unwrap();
            assert_eq!(s.batch.prefill_tokens, want, "{policy}");
        }
        // Raised past the three (as AMD's DeepSeek-R1 scripts set it,
        // 196,608), all three run in the first step; lowered to 4,000, the
        // first alone (a step always takes its first prompt).
        for (cap, want) in [(196_608, 24_000), (4_000, 8_000)] {
            let mut cfg = config(None, SchedulerPolicy::Sglang);
            cfg.max_num_batched_tokens = 32_768;
            cfg.max_prefill_tokens = cap;
            let mut e = Engine::new(cfg.clone()).unwrap();
            for id in 1..=3 {
                e.add_request(id, prompt(8000, id, &cfg), 4).unwrap();
            }
            assert_eq!(e.step().unwrap().batch.prefill_tokens, want, "--max-prefill-tokens {cap}");
        }
        // The other schedulers refuse it.
        let mut cfg = config(None, SchedulerPolicy::Vllm);
        cfg.max_prefill_tokens = 4_000;
        let err = Engine::new(cfg).err().expect("refused").to_string();
        assert!(err.contains("--max-prefill-tokens 4000 is SGLang's"), "{err}");
    }

    /// The ratio falls on decode steps only, and an idle server starts it
    /// again from 0.7 (× the conservativeness).
    #[test]
    fn the_ratio_falls_with_decodes_and_starts_again_after_idle() {
        let mut cfg = config(None, SchedulerPolicy::Sglang);
        cfg.schedule_conservativeness = 0.5;
        let mut e = Engine::new(cfg.clone()).unwrap();
        assert_eq!(e.sglang_ratios[0].now, 0.35);
        e.add_request(1, prompt(64, 1, &cfg), 101).unwrap();
        drain(&mut e);
        // One prefill step, then 100 decode steps each a 600th of the way
        // from 0.35 down to 0.35 × 0.14.
        let want = 0.35 - 100.0 * (0.35 - 0.35 * 0.14) / 600.0;
        assert!((e.sglang_ratios[0].now - want).abs() < 1e-9, "{} against {want}", e.sglang_ratios[0].now);
        e.add_request(2, prompt(64, 2, &cfg), 4).unwrap();
        e.step().unwrap();
        assert_eq!(e.sglang_ratios[0].now, 0.35, "reset when it found the server idle; a prefill step keeps it");
    }

    /// A request whose prompt and answer fill the whole cache runs alone
    /// (SGLang's admission asks for them to be below what is free).
    #[test]
    fn a_request_that_fills_the_cache_still_runs_alone() {
        let cfg = config(Some(8), SchedulerPolicy::Sglang);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(64, 1, &cfg), 64).unwrap();
        e.add_request(2, prompt(16, 2, &cfg), 8).unwrap();
        let steps = drain(&mut e);
        assert_eq!(e.stats().requests_finished, 2);
        assert_eq!(steps[0].admitted, vec![1]);
    }

    /// A conservativeness out of range is refused; disaggregated instances
    /// are taken.
    #[test]
    fn what_the_sglang_scheduler_does_not_take_is_refused() {
        let mut cfg = config(None, SchedulerPolicy::Sglang);
        cfg.pd = Some(crate::engine::Disaggregation::parse("1:1").unwrap());
        cfg.validate().unwrap();
        let mut cfg = config(None, SchedulerPolicy::Sglang);
        cfg.schedule_conservativeness = -1.0;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("--schedule-conservativeness -1 must lie in [0, 100]"), "{e}");
    }

    /// SGLang's defaults: its chunk by GPU memory, its running cap by the
    /// KV pool.
    #[test]
    fn sglangs_defaults_follow_the_gpu_and_the_pool() {
        use crate::engine::catalog::GpuSpec;
        for (gpu, chunk) in
            [("l4", 2048), ("l40s", 4096), ("a100", 8192), ("h100", 8192), ("h200", 8192), ("b200", 16384)]
        {
            assert_eq!(sglang_default_chunk(&GpuSpec::lookup(gpu).unwrap()), chunk, "{gpu}");
        }
        // Half the pool, within 2,048..4,096 by the pool over the context.
        assert_eq!(sglang_default_max_running(1_000, 131_072), 500);
        assert_eq!(sglang_default_max_running(400_000, 131_072), 2048);
        assert_eq!(sglang_default_max_running(400_000, 8_192), 4096);
        let cfg = config(None, SchedulerPolicy::Sglang);
        let tokens = kv_capacity(&cfg).unwrap().tokens();
        assert_eq!(cfg.resolved_max_num_seqs(), sglang_default_max_running(tokens, 131_072));
    }

    /// Steps a decode instance until it is idle or has `pulls` reserved,
    /// landing each reserved request's KV at once: the steps.
    fn decode_instance(e: &mut Engine) -> Vec<StepOutcome> {
        let (mut steps, mut out) = (Vec::new(), StepOutcome::default());
        loop {
            let stepped = e.step_into(&mut out);
            for &(id, _) in &out.pulls {
                e.kv_landed(id);
            }
            match stepped {
                true => steps.push(out.clone()),
                // An idle engine may still reserve (and its KV land).
                false if out.pulls.is_empty() => return steps,
                false => {}
            }
            assert!(steps.len() < 100_000, "the decode instance does not finish");
        }
    }

    /// A decode instance of 2,048 tokens and eight requests of 100 prompt
    /// and 200 answer tokens, none prefilled yet. vLLM's decode instance
    /// admits a request when blocks for its prompt are free: all eight.
    /// SGLang's reserves its prompt and 512 decoding tokens for each it
    /// holds: 2,048 − 612 − 612 − 612 leaves 212, so three, and no more
    /// while they are held (1,712 free less 3 × 512).
    #[test]
    fn a_decode_instance_reserves_512_tokens_a_request_before_the_prefill() {
        let reserve = |policy| {
            let cfg = config(Some(128), policy);
            let mut e = Engine::new(cfg.clone()).unwrap();
            for id in 1..=8 {
                e.add_remote_request(id, prompt(100, id, &cfg), 200).unwrap();
            }
            let first = e.step();
            let again = e.step();
            (first.map(|s| s.pulls), again.map(|s| s.pulls), e)
        };
        let (vllm, _, _) = reserve(SchedulerPolicy::Vllm);
        assert_eq!(vllm.map(|p| p.len()), None, "vLLM's idle engine admits all eight with no step to run");
        let (first, again, e) = reserve(SchedulerPolicy::Sglang);
        assert!(first.is_none() && again.is_none(), "nothing to run while the KV crosses");
        assert_eq!(e.num_waiting(), 8, "reserved or queued, all wait");
        assert_eq!(e.pulling.len(), 3);
        assert_eq!(e.pools[0].num_free(), 128 - 3 * 7, "the prompts' blocks only");
        let (_, _, v) = reserve(SchedulerPolicy::Vllm);
        assert_eq!(v.pulling.len(), 8);
    }

    /// The first token is the prefill instance's: once the KV has landed it
    /// goes out in a pass of no time and no forward, and the first decode
    /// makes the second. A request of 8 tokens takes 7 decode steps here
    /// (vLLM's decode instance computes the last prompt token again: 8).
    #[test]
    fn a_decode_instance_sends_the_prefills_token_without_a_forward() {
        for (policy, forwards) in [(SchedulerPolicy::Sglang, 7), (SchedulerPolicy::Vllm, 8)] {
            let cfg = config(None, policy);
            let mut e = Engine::new(cfg.clone()).unwrap();
            e.add_remote_request(1, prompt(300, 1, &cfg), 8).unwrap();
            let steps = decode_instance(&mut e);
            let passes: Vec<&StepOutcome> = steps.iter().filter(|s| !s.tokens.is_empty()).collect();
            let idx: Vec<u32> = passes.iter().flat_map(|s| &s.tokens).map(|t| t.index).collect();
            assert_eq!(idx, (0..8).collect::<Vec<_>>(), "{policy:?}");
            let with_forward = passes.iter().filter(|s| s.batch.seqs > 0).count();
            assert_eq!(with_forward, forwards, "{policy:?}");
            if policy == SchedulerPolicy::Sglang {
                let first = passes[0];
                assert_eq!((first.duration, first.batch.seqs, first.admitted.clone()), (Duration::ZERO, 0, vec![1]));
                assert!(passes[1..].iter().all(|s| s.batch.decodes == 1 && s.batch.prefill_tokens == 0));
            }
            let stats = e.stats();
            assert_eq!((stats.requests_finished, stats.generation_tokens, stats.prompt_tokens), (1, 8, 300));
        }
    }

    /// Out of room, a decode instance retracts to the host: the request
    /// comes back with its KV, and no prompt is computed there again.
    /// Eight requests of 16 + 2,000 tokens on 4,096 tokens of cache (256
    /// blocks): four are reserved for at first (a fifth's whole answer no
    /// longer fits beside their 4 × 528), and their answers outgrow the
    /// 512 tokens kept for each.
    #[test]
    fn a_decode_instance_retracts_to_the_host_and_computes_no_prompt_again() {
        let cfg = config(Some(256), SchedulerPolicy::Sglang);
        let mut e = Engine::new(cfg.clone()).unwrap();
        for id in 1..=8 {
            e.add_remote_request(id, prompt(16, id, &cfg), 2000).unwrap();
        }
        let steps = decode_instance(&mut e);
        let stats = e.stats();
        assert!(stats.preemptions > 0, "the decodes ran out of room: {stats:?}");
        assert!(steps.iter().all(|s| s.batch.prefill_tokens == 0 && s.batch.prefills == 0));
        assert_eq!((stats.requests_finished, stats.generation_tokens), (8, 8 * 2000));
        for id in 1..=8 {
            let idx: Vec<u32> = steps.iter().flat_map(|s| &s.tokens).filter(|t| t.id == id).map(|t| t.index).collect();
            assert_eq!(idx, (0..2000).collect::<Vec<_>>(), "request {id}'s tokens, once each, in order");
        }
        // Each token computed once: the decode steps' tokens are the
        // answers' less the prefills' first tokens.
        let decoded: u64 = steps.iter().map(|s| u64::from(s.batch.tokens)).sum();
        assert_eq!(decoded, 8 * 1999);
    }

    /// An idle decode instance reserves for its first request whatever it
    /// asks: 900 + 50 tokens on 1,024 fit, though its prompt and 512 do
    /// not.
    #[test]
    fn an_idle_decode_instance_takes_a_request_whose_reserve_passes_its_cache() {
        let cfg = config(Some(64), SchedulerPolicy::Sglang);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_remote_request(1, prompt(900, 1, &cfg), 50).unwrap();
        e.add_remote_request(2, prompt(900, 2, &cfg), 50).unwrap();
        let steps = decode_instance(&mut e);
        let stats = e.stats();
        assert_eq!((stats.requests_finished, stats.generation_tokens), (2, 100));
        // One at a time: the second waits for the first to end.
        let end = |id| steps.iter().position(|s| s.tokens.iter().any(|t| t.id == id && t.finished)).unwrap();
        let start = |id| steps.iter().position(|s| s.tokens.iter().any(|t| t.id == id && t.first)).unwrap();
        assert!(start(2) > end(1), "{} {}", start(2), end(1));
    }
}
