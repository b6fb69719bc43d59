//! Prefill/decode disaggregation in a virtual run: the two pools' routers,
//! each prefill instance's KV link, and the transfers under way
//! (docs/simulator.md, "Prefill/decode disaggregation").

use crate::engine::disagg::KvLink;
use crate::engine::kv::Prompt;
use crate::engine::router::{Router, RouterPolicy};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// No instance.
pub(super) const NONE: u32 = u32::MAX;

/// The run's disaggregated pools: instances `0..prefill` of the run's
/// engines prefill, the rest decode.
pub(super) struct Pools {
    pub(super) prefill: usize,
    link: KvLink,
    prefill_router: Router,
    decode_router: Router,
    /// When each prefill instance's link is free: its transfers go one
    /// after another, each at the link's full bandwidth.
    link_free: Vec<Duration>,
    /// Transfers under way: (when it lands, request, prefill instance).
    transfers: BinaryHeap<Reverse<(Duration, usize, u32)>>,
    /// The prefill instance holding each request's blocks from its
    /// prefill's end until its KV has crossed (`NONE` otherwise), and the
    /// prompt tokens it holds.
    holder: Vec<u32>,
    tokens: Vec<u32>,
    /// SGLang's order: the prompt tokens whose KV has been sent while the
    /// prompt's later chunks were computed ([`Pools::send_chunk`]).
    sent: Vec<u32>,
    /// Each request's prompt, from its arrival until its prefill ends.
    prompts: Vec<Option<Prompt>>,
    /// The decode instance (an index into the run's engines) each request
    /// was given when it arrived, until its prefill ends and it is queued
    /// there (`NONE` after).
    decode_of: Vec<u32>,
    /// SGLang's order (`decode_first`): the prefill instance each request
    /// was given when it arrived, until its prefill ends (`NONE` after).
    /// Its decode instance reserves for it first, and only then is it
    /// prefilled.
    prefill_of: Vec<u32>,
    pub(super) decode_first: bool,
    /// Transfers started, and their time on the link, summed.
    pub(super) count: u64,
    pub(super) seconds: f64,
}

impl Pools {
    /// `blocks`: a prefill and a decode instance's KV blocks; `policy`:
    /// how each pool's router picks its instance (`--router`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        link: KvLink,
        prefill: usize,
        decode: usize,
        blocks: (u32, u32),
        requests: usize,
        decode_first: bool,
        policy: RouterPolicy,
    ) -> Pools {
        Pools {
            prefill,
            link,
            prefill_router: Router::new(policy, prefill, blocks.0),
            decode_router: Router::new(policy, decode, blocks.1),
            link_free: vec![Duration::ZERO; prefill],
            transfers: BinaryHeap::new(),
            holder: vec![NONE; requests],
            tokens: vec![0; requests],
            sent: vec![0; requests],
            prompts: vec![None; requests],
            decode_of: vec![NONE; requests],
            prefill_of: vec![NONE; requests],
            decode_first,
            count: 0,
            seconds: 0.0,
        }
    }

    /// The prefill instance a request goes to. Its decode instance is
    /// chosen now too, as vLLM's proxy names both when a request comes
    /// (counted there from now), and its prompt is kept for it.
    pub(super) fn route_prefill(&mut self, i: usize, prompt: &Prompt) -> usize {
        self.prompts[i] = Some(prompt.clone());
        self.decode_of[i] = (self.prefill + self.decode_router.route(prompt)) as u32;
        self.prefill_router.route(prompt)
    }

    /// SGLang's order: the prefill and decode instances a request goes to,
    /// both chosen as it comes (counted there from now); its prompt is
    /// kept for its prefill, which waits for the decode instance to
    /// reserve for it ([`Pools::reserved`]).
    pub(super) fn route_both(&mut self, i: usize, prompt: &Prompt) -> (usize, usize) {
        self.prompts[i] = Some(prompt.clone());
        let p = self.prefill_router.route(prompt);
        self.prefill_of[i] = p as u32;
        (p, self.prefill + self.decode_router.route(prompt))
    }

    /// SGLang's order: request `i`'s decode instance reserved for it, so its
    /// prefill may start: its prefill instance and its prompt (`None` for a
    /// request given up on).
    pub(super) fn reserved(&mut self, i: usize) -> Option<(usize, Prompt)> {
        let prompt = self.prompts[i].take()?;
        self.tokens[i] = prompt.len();
        Some((self.prefill_of[i] as usize, prompt))
    }

    /// SGLang's order: request `i`'s prefill ended on instance `p`, which
    /// keeps its blocks; its decode instance holds blocks for it already,
    /// so its KV crosses now ([`Pools::start_transfer`]). False for a
    /// request given up on.
    pub(super) fn prefill_ended(&mut self, i: usize, p: usize) -> bool {
        if std::mem::replace(&mut self.prefill_of[i], NONE) == NONE {
            return false;
        }
        self.holder[i] = p as u32;
        true
    }

    /// A request left instance `r` (either pool).
    pub(super) fn done(&mut self, r: usize) {
        if r < self.prefill {
            self.prefill_router.done(r);
        } else {
            self.decode_router.done(r - self.prefill);
        }
    }

    /// Request `i`'s prefill ended on instance `p`, which keeps its blocks:
    /// its decode instance (an index into the run's engines, from now its
    /// replica, counted out by [`Pools::done`]) and its prompt, to queue
    /// there; `None` for a request given up on.
    pub(super) fn prefilled(&mut self, i: usize, p: usize) -> Option<(usize, Prompt)> {
        let prompt = self.prompts[i].take()?;
        let d = std::mem::replace(&mut self.decode_of[i], NONE);
        self.holder[i] = p as u32;
        self.tokens[i] = prompt.len();
        Some((d as usize, prompt))
    }

    /// SGLang's order: a chunk of request `i`'s prompt, not its last, ended
    /// on prefill instance `p` at `now` with `computed` of its tokens done,
    /// and their KV not sent yet goes over the instance's link now, behind
    /// the transfers before it (SGLang's `send_kv_chunk`: its decode
    /// instance holds blocks for it already). Only what is left crosses
    /// after the prefill ([`Pools::start_transfer`]).
    pub(super) fn send_chunk(&mut self, now: Duration, i: usize, p: usize, computed: u32) {
        if self.prefill_of[i] as usize != p {
            return;
        }
        let tokens = computed.saturating_sub(self.sent[i]);
        if tokens == 0 {
            return;
        }
        self.sent[i] = computed;
        self.send(now, p, tokens);
    }

    /// `tokens` of a prompt's KV go over prefill instance `p`'s link from
    /// `now`, behind its earlier transfers: when they have landed.
    fn send(&mut self, now: Duration, p: usize, tokens: u32) -> Duration {
        let link = &mut self.link_free[p];
        *link = now.max(*link) + self.link.transfer_time(tokens);
        *link
    }

    /// Request `i`'s decode instance admitted it to pull its KV at `now`:
    /// its prompt's, less the `cached` leading tokens that instance holds
    /// and what was sent chunk by chunk during its prefill, crosses its
    /// prefill instance's link once the transfers before it have.
    pub(super) fn start_transfer(&mut self, now: Duration, i: usize, cached: u32) {
        let p = self.holder[i];
        if p == NONE {
            return;
        }
        let tokens = self.tokens[i].saturating_sub(cached.max(std::mem::take(&mut self.sent[i])));
        let landed = self.send(now, p as usize, tokens);
        self.transfers.push(Reverse((landed, i, p)));
        self.count += 1;
        self.seconds += (landed - now).as_secs_f64();
    }

    /// When the next transfer lands.
    pub(super) fn next_landing(&self) -> Option<Duration> {
        self.transfers.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The next transfer landed by `now`, if any: the request, and the
    /// prefill instance that held its blocks (`None` for a request given up
    /// on meanwhile).
    pub(super) fn land(&mut self, now: Duration) -> Option<(usize, Option<usize>)> {
        let &Reverse((t, i, p)) = self.transfers.peek()?;
        if t > now {
            return None;
        }
        self.transfers.pop();
        if self.holder[i] != p {
            return Some((i, None));
        }
        self.holder[i] = NONE;
        Some((i, Some(p as usize)))
    }

    /// A request given up on: the prefill instance holding anything of it
    /// (its blocks, its prefill ended and its KV not crossed; or, in
    /// SGLang's order, its prefill under way or to come), to abort it there.
    pub(super) fn give_up(&mut self, i: usize) -> Option<usize> {
        self.prompts[i] = None;
        self.sent[i] = 0;
        let p = std::mem::replace(&mut self.prefill_of[i], NONE);
        if p != NONE {
            self.prefill_router.done(p as usize);
            return Some(p as usize);
        }
        // Not yet on its decode instance: counted out of its router here.
        let d = std::mem::replace(&mut self.decode_of[i], NONE);
        if d != NONE {
            self.decode_router.done(d as usize - self.prefill);
        }
        let p = std::mem::replace(&mut self.holder[i], NONE);
        (p != NONE).then_some(p as usize)
    }
}
