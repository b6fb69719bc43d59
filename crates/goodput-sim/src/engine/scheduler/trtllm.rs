//! TensorRT-LLM's batch scheduler, as its C++ batch manager runs it (the
//! engine behind NIM 1.x): a capacity scheduler with the
//! `GUARANTEED_NO_EVICT` policy, then a micro-batch scheduler under
//! `max_num_tokens` and `max_batch_size`. docs/simulator.md ("The
//! reference's scheduler") cites the sources.
//!
//! What differs from vLLM's schedule (`Engine::schedule`):
//! - **Admission reserves the whole request.** A waiting request starts only
//!   when the blocks it will hold at its end (prompt plus `max_tokens`) fit
//!   in the free blocks less what the running requests will still take to
//!   their ends; the first that does not fit stops admission (no skipping).
//!   Nothing is ever preempted: a started request has its blocks promised.
//! - **Generation first.** Every decoding request takes its token before
//!   any context (prefill) work, then partly prefilled prompts continue,
//!   oldest first, then new ones.
//! - **Context chunks** (with chunked context on) are whole multiples of the
//!   KV block, but for a prompt's last chunk, first come first served; with
//!   chunked context off a prompt runs whole or waits, and nothing after it
//!   starts that step.

use super::{Engine, Pull, StepOutcome};
use crate::engine::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Whose scheduler the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerPolicy {
    /// vLLM V1's: admission by the blocks a step needs, preemption with
    /// recompute when a running request cannot grow.
    #[default]
    Vllm,
    /// TensorRT-LLM's `GUARANTEED_NO_EVICT` capacity scheduler and its
    /// micro-batch scheduler (this module).
    Trtllm,
    /// SGLang's: admission by an estimate of the running requests'
    /// remaining tokens, retraction when it was wrong (`sglang.rs`).
    Sglang,
}

/// TensorRT-LLM's default `max_batch_size` (trtllm-build's and the LLM
/// API's): the sequence cap of the trtllm policy when none is given.
pub const TRTLLM_MAX_BATCH_SIZE: u32 = 2048;

impl SchedulerPolicy {
    pub const ALL: [SchedulerPolicy; 3] = [SchedulerPolicy::Vllm, SchedulerPolicy::Trtllm, SchedulerPolicy::Sglang];

    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerPolicy::Vllm => "vllm",
            SchedulerPolicy::Trtllm => "trtllm",
            SchedulerPolicy::Sglang => "sglang",
        }
    }

    /// The server's name as prose spells it: vLLM, TensorRT-LLM, SGLang.
    pub fn title(self) -> &'static str {
        match self {
            SchedulerPolicy::Vllm => "vLLM",
            SchedulerPolicy::Trtllm => "TensorRT-LLM",
            SchedulerPolicy::Sglang => "SGLang",
        }
    }
}

impl fmt::Display for SchedulerPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SchedulerPolicy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "vllm" => Ok(SchedulerPolicy::Vllm),
            "trtllm" | "trt-llm" | "tensorrt-llm" => Ok(SchedulerPolicy::Trtllm),
            "sglang" => Ok(SchedulerPolicy::Sglang),
            _ => Err(Error::InvalidConfig(format!(
                "unknown --scheduler `{s}`; use vllm (preemption with recompute), trtllm (TensorRT-LLM's \
                 guaranteed-no-evict admission) or sglang (SGLang's admission by its new-token ratio, with \
                 retraction)"
            ))),
        }
    }
}

impl Engine {
    /// One step of TensorRT-LLM's schedule (see the module doc). Fills
    /// `self.scheduled`; never preempts.
    pub(super) fn schedule_trtllm(&mut self, out: &mut StepOutcome) {
        self.scheduled.clear();
        let bs = self.cfg.block_size;
        // Each attention data-parallel rank schedules its own requests within
        // its own budget and `max_batch_size` (`open_ranks`); the step's are
        // the ranks' together.
        let mut budget = self.cfg.step_token_budget();
        self.open_ranks();
        // Chunks are whole blocks (TensorRT-LLM's chunk unit is
        // tokens_per_block), unless a block is more than the whole budget.
        let unit = if bs <= budget { bs } else { 1 };

        // The blocks running requests will still take to their ends: not
        // free for a newcomer.
        // So are those promised to requests pulling their KV in, or whose KV
        // has landed (disaggregation): their reservation was made when they
        // were admitted to pull.
        // With several ranks, each rank's own pool and its own requests'.
        let mut available = std::mem::take(&mut self.pool_room);
        available.clear();
        available.extend(self.pools.iter().map(|p| u64::from(p.num_free())));
        let landed = self.waiting.iter().filter(|&&s| self.slots[s as usize].pull == Pull::Landed);
        let late = self.late.iter().map(|l| l.slot);
        for slot in self.running.iter().copied().chain(self.pulling.iter().copied()).chain(landed.copied()).chain(late)
        {
            let r = &self.slots[slot as usize];
            let total = self.blocks_for(r.prompt_len + r.max_tokens);
            let room = &mut available[self.pool_of(slot)];
            *room = room.saturating_sub(total.saturating_sub(r.blocks.len() as u32) as u64);
        }

        // 1. Generation: every decoding request, oldest admission first.
        // Without mixed batches it comes last, and only into a step with no
        // context.
        if self.cfg.mixed_batches {
            self.schedule_generation(&mut budget);
            // TensorRT-LLM's batch waiting: the step's prompts held back
            // while they and the decodes are few (`_waiting_requests`).
            if self.holds_contexts(budget, &available) {
                self.pool_room = available;
                return;
            }
        }

        // 2. Contexts already started (chunked), oldest first.
        self.continue_prompts(&mut budget, |e, remaining, budget| e.context_chunk(remaining, budget, unit));

        // 3. New contexts, first come first served, each admitted only when
        // its whole run fits beside what the running ones are owed.
        // With several ranks, each rank's own in their order: one that
        // cannot be admitted stops its rank's queue, not the others'.
        let mut fitting = self.num_running() as u32;
        let mut k = 0;
        while budget > 0 && fitting < self.max_num_seqs && k < self.waiting.len() {
            let slot = self.waiting[k];
            if !self.rank_admits(slot) {
                stop_rank!(self, slot, k);
            }
            let r = &self.slots[slot as usize];
            match r.pull {
                // Its reservation is already counted owed, above.
                Pull::Landed => {
                    if !self.start_landed(slot, out) {
                        stop_rank!(self, slot, k);
                    }
                    let _ = self.waiting.remove(k);
                    self.rank_took(slot, 1, true);
                    fitting += 1;
                    budget -= 1;
                    continue;
                }
                // The generation instance reserves the whole request, then
                // receives the KV into it.
                Pull::Awaiting => {
                    let (need, pool) = (self.blocks_for(r.prompt_len + r.max_tokens) as u64, self.pool_of(slot));
                    if need > available[pool] || !self.admit_pull(slot, out) {
                        stop_rank!(self, slot, k);
                    }
                    available[pool] -= need;
                    let _ = self.waiting.remove(k);
                    continue;
                }
                Pull::None | Pull::Pulling => {}
            }
            let num_tokens = r.num_tokens();
            let (need, pool) = (self.blocks_for(r.prompt_len + r.max_tokens) as u64, self.pool_of(slot));
            if need > available[pool] {
                stop_rank!(self, slot, k);
            }
            let cached = self.look_up(slot);
            let Some(new) = self.context_chunk(num_tokens - cached, budget.min(self.rank_left(slot)), unit) else {
                stop_rank!(self, slot, k)
            };
            // The capacity scheduler counted it as fitting whether or not the
            // micro-batch had room for a chunk of it this step.
            available[pool] -= need;
            fitting += 1;
            if new == 0 {
                self.rank_took(slot, 0, true);
                k += 1;
                continue;
            }
            if !self.pools[pool].admit(&mut self.slots[slot as usize].blocks, &self.hits, cached + new) {
                debug_assert!(false, "an admitted request's first chunk did not fit");
                break;
            }
            let _ = self.waiting.remove(k);
            self.start(slot, cached, new, out);
            self.rank_took(slot, new, true);
            budget -= new;
        }
        if !self.cfg.mixed_batches && !self.prefills() {
            self.schedule_generation(&mut budget);
        }
        self.pool_room = available;
    }

    /// Whether TensorRT-LLM's batch waiting holds this step's prompts back,
    /// as its `PyExecutor._schedule` and `_waiting_requests` do: where
    /// `batch_wait_timeout_iters` or `batch_wait_max_tokens_ratio` is set,
    /// one rank schedules (no attention data parallelism), and the step
    /// would run prompts beside decodes, the prompts go only once
    /// `batch_wait_timeout_iters` steps in a row have held them, or once the
    /// step's tokens (each prompt counted whole, each decode as 1 and its
    /// drafts) reach the ratio of the budget; a step that lets them go
    /// counts again from 0. `budget` is what the decodes left; `available`
    /// the blocks free of what the running requests are owed. Counts the
    /// prompts the step would take as the passes after it take them
    /// (their chunks within the budget, the sequence cap and the blocks),
    /// without taking them.
    fn holds_contexts(&mut self, budget: u32, available: &[u64]) -> bool {
        if !self.cfg.batch_waits_any() || self.pools.len() > 1 || self.scheduled.is_empty() {
            return false;
        }
        let decode_tokens: u64 = self.scheduled.iter().map(|&(_, n)| u64::from(n)).sum();
        // Every prompt has tokens: none counted, none would run.
        let (mut left, mut context_tokens) = (budget, 0u64);
        for &slot in &self.running {
            let r = &self.slots[slot as usize];
            if left == 0 || r.decoding() {
                continue;
            }
            left -= (r.num_tokens() - r.num_computed).min(left);
            context_tokens += u64::from(r.num_tokens());
        }
        let mut room = available.first().copied().unwrap_or(0);
        for (fitting, &slot) in (self.num_running() as u32..).zip(self.waiting.iter()) {
            let r = &self.slots[slot as usize];
            if left == 0 || fitting >= self.max_num_seqs || r.pull != Pull::None {
                break;
            }
            let need = u64::from(self.blocks_for(r.prompt_len + r.max_tokens));
            if need > room {
                break;
            }
            room -= need;
            left -= r.num_tokens().min(left);
            context_tokens += u64::from(r.num_tokens());
        }
        if context_tokens == 0 {
            return false;
        }
        let threshold = self.cfg.batch_wait_max_tokens_ratio * f64::from(self.cfg.step_token_budget());
        let go = self.batch_wait_iters >= self.cfg.batch_wait_timeout_iters
            || (decode_tokens + context_tokens) as f64 >= threshold;
        if go {
            self.batch_wait_iters = 0;
        } else {
            self.batch_wait_iters += 1;
        }
        !go
    }

    /// The prompts the running requests have started, oldest first, each
    /// its next chunk within `budget` (`chunk` of what is left and the
    /// budget: `None` stops the pass, 0 skips it), where its blocks can
    /// grow (under guaranteed-no-evict they always can). The tokens
    /// scheduled.
    pub(super) fn continue_prompts(
        &mut self,
        budget: &mut u32,
        chunk: impl Fn(&Engine, u32, u32) -> Option<u32>,
    ) -> u32 {
        let mut tokens = 0;
        for i in 0..self.running.len() {
            if *budget == 0 {
                break;
            }
            let slot = self.running[i];
            let r = &self.slots[slot as usize];
            if r.decoding() {
                continue;
            }
            // With several ranks, within its own rank's budget too (under
            // TensorRT-LLM's scheduler; SGLang's group keeps one).
            let left = (*budget).min(self.rank_left(slot));
            if left == 0 {
                continue;
            }
            let Some(new) = chunk(self, r.num_tokens() - r.num_computed, left) else { break };
            if new == 0 {
                continue;
            }
            let (target, pool) = (r.num_computed + new, self.pool_of(slot));
            if !self.pools[pool].grow(&mut self.slots[slot as usize].blocks, target) {
                debug_assert!(self.cfg.scheduler != SchedulerPolicy::Trtllm, "a running request could not grow");
                continue;
            }
            self.register_full_blocks(slot, target);
            self.scheduled.push((slot, new));
            self.rank_took(slot, new, false);
            *budget -= new;
            tokens += new;
        }
        tokens
    }

    /// The generation phase: every decoding request, oldest admission
    /// first, a token (and its drafts) each while `budget` lasts.
    fn schedule_generation(&mut self, budget: &mut u32) {
        for i in 0..self.running.len() {
            let slot = self.running[i];
            let r = &self.slots[slot as usize];
            if !r.decoding() {
                continue;
            }
            let drafts = self.drafts(r);
            let new = 1 + drafts;
            if new > *budget {
                break;
            }
            // Its rank's budget spent: the rest of that rank's wait.
            if new > self.rank_left(slot) {
                continue;
            }
            let (target, pool) = (r.num_computed + new, self.pool_of(slot));
            if !self.pools[pool].grow(&mut self.slots[slot as usize].blocks, target) {
                // Cannot happen: the blocks were promised at admission.
                debug_assert!(false, "a running request could not grow under guaranteed-no-evict");
                continue;
            }
            self.register_full_blocks(slot, super::r_kept(target, new, drafts));
            self.scheduled.push((slot, new));
            self.rank_took(slot, new, false);
            *budget -= new;
        }
    }

    /// The tokens of a context with `remaining` to compute that this step
    /// takes out of `budget`: with chunked context, all of them if they fit,
    /// else the whole units that fit (possibly 0: it waits, and a later,
    /// shorter context may still fit); without, all of them or `None` (it
    /// waits, and so does every context after it).
    ///
    /// A context runs on its request's rank, so within that rank's budget
    /// too (the step's is the attention data-parallel ranks' together).
    fn context_chunk(&self, remaining: u32, budget: u32, unit: u32) -> Option<u32> {
        let budget = budget.min(self.cfg.max_num_batched_tokens);
        if remaining <= budget {
            Some(remaining)
        } else if self.cfg.enable_chunked_prefill {
            Some(budget / unit * unit)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::engine::catalog::Precision;
    use crate::engine::scheduler::tests::{drain, policy_config as config, prompt};

    #[test]
    fn policy_names_parse_and_print() {
        for p in SchedulerPolicy::ALL {
            assert_eq!(p.as_str().parse::<SchedulerPolicy>().unwrap(), p);
        }
        assert_eq!("TensorRT-LLM".parse::<SchedulerPolicy>().unwrap(), SchedulerPolicy::Trtllm);
        assert_eq!("SGLang".parse::<SchedulerPolicy>().unwrap(), SchedulerPolicy::Sglang);
        let err = "lmdeploy".parse::<SchedulerPolicy>().unwrap_err().to_string();
        assert!(err.contains("--scheduler") && err.contains("trtllm") && err.contains("sglang"), "{err}");
        assert_eq!(serde_json::to_string(&SchedulerPolicy::Trtllm).unwrap(), "\"trtllm\"");
    }

    #[test]
    fn admission_waits_for_the_whole_reservation_where_vllm_preempts() {
        // 6 blocks of 4 tokens. Two requests of 8 prompt + 12 output tokens
        // each end at 20 tokens: 5 blocks. vLLM admits both (2 blocks each
        // at first), and when they grow one is preempted and recomputed;
        // TensorRT-LLM admits the second only when the first has ended.
        let run = |policy| {
            let cfg = config(Some(6), 4, policy);
            let mut e = Engine::new(cfg.clone()).unwrap();
            e.add_request(1, prompt(8, 1, &cfg), 12).unwrap();
            e.add_request(2, prompt(8, 2, &cfg), 12).unwrap();
            let first = e.step().unwrap();
            let steps = drain(&mut e);
            (first, steps, e.stats())
        };
        let (first, _, vllm) = run(SchedulerPolicy::Vllm);
        assert_eq!(first.admitted, vec![1, 2]);
        assert!(vllm.preemptions >= 1, "vLLM runs both and preempts: {vllm:?}");

        let (first, steps, trt) = run(SchedulerPolicy::Trtllm);
        assert_eq!(first.admitted, vec![1], "the second's 5 blocks are not free beside the first's 5");
        assert_eq!(trt.preemptions, 0);
        assert_eq!((trt.requests_finished, trt.generation_tokens), (2, 24));
        let one_done = steps.iter().position(|s| s.tokens.iter().any(|t| t.id == 1 && t.finished)).unwrap();
        let two_in = steps.iter().position(|s| s.admitted.contains(&2)).unwrap();
        assert_eq!(two_in, one_done + 1, "admitted the step after the first ends");
        // Every token once, in order.
        let idx: Vec<u32> = steps.iter().flat_map(|s| &s.tokens).filter(|t| t.id == 2).map(|t| t.index).collect();
        assert_eq!(idx, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_request_that_does_not_fit_stops_admission() {
        // 10 blocks of 4. A (4 + 28 tokens: 8 blocks) runs; B needs 8 and
        // waits; C would fit in the 2 left (4 + 4 tokens) but is behind B.
        let cfg = config(Some(10), 4, SchedulerPolicy::Trtllm);
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(4, 1, &cfg), 28).unwrap();
        e.add_request(2, prompt(4, 2, &cfg), 28).unwrap();
        e.add_request(3, prompt(4, 3, &cfg), 4).unwrap();
        let s = e.step().unwrap();
        assert_eq!(s.admitted, vec![1]);
        assert_eq!(e.waiting_ids().collect::<Vec<_>>(), vec![2, 3]);
        // Two blocks are really free, yet none is taken.
        assert!(e.stats().kv_blocks_free >= 8);
        drain(&mut e);
        assert_eq!((e.stats().requests_finished, e.stats().preemptions), (3, 0));
    }

    #[test]
    fn decodes_go_first_then_chunks_of_whole_blocks_within_the_budget() {
        let mut cfg = config(None, 16, SchedulerPolicy::Trtllm);
        cfg.max_num_batched_tokens = 100;
        let mut e = Engine::new(cfg.clone()).unwrap();
        e.add_request(1, prompt(90, 1, &cfg), 5).unwrap();
        assert_eq!(e.step().unwrap().batch.prefill_tokens, 90);
        e.add_request(2, prompt(500, 2, &cfg), 5).unwrap();
        let s = e.step().unwrap();
        // One decode, then 99 tokens of budget: six whole 16-token blocks.
        assert_eq!((s.batch.decodes, s.batch.prefill_tokens), (1, 96));
        // vLLM fills the budget to the token.
        cfg.scheduler = SchedulerPolicy::Vllm;
        let mut v = Engine::new(cfg.clone()).unwrap();
        v.add_request(1, prompt(90, 1, &cfg), 5).unwrap();
        v.step().unwrap();
        v.add_request(2, prompt(500, 2, &cfg), 5).unwrap();
        assert_eq!(v.step().unwrap().batch.prefill_tokens, 99);
    }

    /// With attention data-parallel ranks (EP 8 over 8 ranks of TP 1) each
    /// rank has its own `max_num_tokens`, and the group's step takes all
    /// eight (a prompt's chunk within its own rank's), as vLLM's scheduler
    /// does: the group had been held to one
    /// rank's, which capped a step at 1,536 tokens where TensorRT-LLM's
    /// DeepSeek-R1 runs take 12,288.
    #[test]
    fn attention_data_parallel_ranks_add_their_token_budgets() {
        for policy in [SchedulerPolicy::Trtllm, SchedulerPolicy::Vllm] {
            let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
            (cfg.scheduler, cfg.ep, cfg.dp, cfg.enable_prefix_caching) = (policy, 8, 8, false);
            cfg.max_num_batched_tokens = 1024;
            let mut e = Engine::new(cfg.clone()).unwrap();
            for id in 0..16 {
                e.add_request(id, prompt(1024, id, &cfg), 4).unwrap();
            }
            let s = e.step().unwrap();
            assert_eq!((s.batch.prefills, s.batch.prefill_tokens), (8, 8 * 1024), "{policy}");
            // A prompt runs on its request's rank, within that rank's budget:
            // a lone 4,096-token prompt in chunks of 1,024, not in one step.
            let mut lone = Engine::new(cfg.clone()).unwrap();
            lone.add_request(99, prompt(4096, 99, &cfg), 4).unwrap();
            assert_eq!(lone.step().unwrap().batch.prefill_tokens, 1024, "{policy}");
        }
    }

    #[test]
    fn without_chunked_context_a_prompt_runs_whole_or_waits_with_all_behind_it() {
        let mut cfg = config(None, 16, SchedulerPolicy::Trtllm);
        cfg.max_num_batched_tokens = 100;
        cfg.enable_chunked_prefill = false;
        let mut e = Engine::new(cfg.clone()).unwrap();
        for (id, len) in [(1, 60), (2, 60), (3, 30)] {
            e.add_request(id, prompt(len, id, &cfg), 3).unwrap();
        }
        let s = e.step().unwrap();
        // 40 tokens are left after the first, but the second needs 60, and
        // the third (30) does not jump it.
        assert_eq!((s.admitted.clone(), s.batch.prefill_tokens), (vec![1], 60));
        let s = e.step().unwrap();
        assert_eq!((s.admitted.clone(), s.batch.prefill_tokens, s.batch.decodes), (vec![2, 3], 90, 1));
    }

    #[test]
    fn the_default_batch_cap_is_tensorrt_llms() {
        let cfg = config(None, 16, SchedulerPolicy::Trtllm);
        assert_eq!(cfg.resolved_max_num_seqs(), TRTLLM_MAX_BATCH_SIZE);
        assert_eq!(config(None, 16, SchedulerPolicy::Vllm).resolved_max_num_seqs(), 1024);
        let mut capped = cfg.clone();
        capped.max_num_seqs = Some(2);
        let mut e = Engine::new(capped.clone()).unwrap();
        for id in 0..5 {
            e.add_request(id, prompt(32, id, &capped), 4).unwrap();
        }
        assert_eq!(e.step().unwrap().batch.seqs, 2);
        drain(&mut e);
        assert_eq!(e.stats().max_batch_seqs, 2);
    }

    #[test]
    fn the_kv_cache_is_a_share_of_the_memory_left_after_weights() {
        // TensorRT-LLM's kv_cache_free_gpu_mem_fraction takes 0.9 of what
        // is free after the weights; vLLM's 0.9 is of the whole memory, the
        // weights inside it. The 70B on two H100s gets more cache under
        // TensorRT-LLM.
        let mut cfg = EngineConfig::from_names("llama-3.1-70b", "h100", Precision::Fp8).unwrap();
        cfg.tp = 2;
        let vllm = kv_capacity(&cfg).unwrap();
        cfg.scheduler = SchedulerPolicy::Trtllm;
        let trt = kv_capacity(&cfg).unwrap();
        let ratio = trt.num_blocks as f64 / vllm.num_blocks as f64;
        assert!(ratio > 1.05 && ratio < 1.5, "{ratio}");
    }
}
