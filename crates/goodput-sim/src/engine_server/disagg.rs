//! Prefill/decode disaggregation on the live server: a generation first
//! goes to a prefill instance (least-loaded) as a request of one token; once
//! that token is out, the prefill instance keeps the request's blocks and
//! the request queues on its decode instance, which admits it (a sequence
//! slot, blocks for its prompt) and then pulls its KV over the prefill
//! instance's link (one transfer after another, on the wall clock at the
//! server's speed); landed, the prefill instance frees its blocks and the
//! decode instance computes the request, whose stream the client reads
//! (docs/simulator.md, "Prefill/decode disaggregation").

use super::metrics::lock;
use super::progress::{Command, Progress, Ticket, Update};
use super::server::EngineServer;
use crate::clock::sleep_until;
use crate::engine::{Error, KvLink, Prompt, Router};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The prefill pool (the server's first `prefill` drivers) and its links.
pub(super) struct PrefillPool {
    pub(super) prefill: usize,
    pub(super) router: Arc<Mutex<Router>>,
    /// Each prefill instance's link (shared with the instance's driver,
    /// which sends chunks over it in SGLang's order).
    links: Vec<PrefillLink>,
    /// The tokens one request may hold on a prefill instance (one
    /// attention rank's cache).
    kv_tokens: u64,
}

impl PrefillPool {
    /// `first`: a prefill instance's engine; `policy`: how the pool's
    /// router picks its instance (`--router`); `speed`: the server's.
    pub(super) fn new(
        link: KvLink,
        prefill: usize,
        first: &crate::engine::Engine,
        policy: crate::engine::RouterPolicy,
        speed: f64,
    ) -> PrefillPool {
        let blocks = first.capacity().num_blocks;
        PrefillPool {
            kv_tokens: first.request_kv_tokens(),
            prefill,
            router: Arc::new(Mutex::new(Router::new(policy, prefill, blocks))),
            links: (0..prefill).map(|_| PrefillLink::new(link, Arc::new(Mutex::new(Instant::now())), speed)).collect(),
        }
    }

    /// Prefill instance `p`'s link, for its driver to send each chunk's KV
    /// over as the chunk ends, as SGLang's prefill instances do.
    pub(super) fn link(&self, p: usize) -> PrefillLink {
        self.links[p].clone()
    }
}

/// A prefill instance's link on the wall clock: its transfers go one after
/// another, each at the link's full bandwidth. The handler of a request
/// sends what is left of its KV after the prefill ([`transfer`]); in
/// SGLang's order the instance's driver first sends each chunk of a prompt
/// but its last as the chunk ends (`send_kv_chunk`: the decode instance
/// holds blocks for it already).
#[derive(Clone)]
pub(super) struct PrefillLink {
    link: KvLink,
    /// When the link is next free.
    free: Arc<Mutex<Instant>>,
    speed: f64,
}

impl PrefillLink {
    /// `link`, free from `free` on, on a server at `speed`.
    pub(super) fn new(link: KvLink, free: Arc<Mutex<Instant>>, speed: f64) -> PrefillLink {
        PrefillLink { link, free, speed }
    }

    /// `tokens` of a prompt's KV go over the link from `now`, behind its
    /// earlier transfers: when they have landed.
    pub(super) fn send(&self, now: Instant, tokens: u32) -> Instant {
        let took = self.link.transfer_time(tokens).div_f64(self.speed);
        let mut free = lock(&self.free);
        *free = (*free).max(now) + took;
        *free
    }
}

/// The blocks a prefill instance keeps for a request while its KV crosses:
/// dropped (the transfer done, or the client gone), it frees them.
struct Held {
    id: u64,
    commands: mpsc::UnboundedSender<Command>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Release(self.id));
    }
}

/// Why the prefill did not hand the request on.
pub(super) enum Refused {
    /// The engine refused the request: the message for a 400.
    Invalid(String),
    /// An engine stopped or dropped the request.
    Gone,
}

/// A request whose prefill ended: the prefill instance holds its KV until
/// this is dropped.
pub(super) struct Prefilled {
    held: Held,
    /// The prefill instance, whose link its KV crosses.
    instance: usize,
    /// The prompt tokens the prefill instance's prefix cache served.
    pub(super) cached: u32,
    /// The leading prompt tokens whose KV crossed chunk by chunk during
    /// the prefill (SGLang's order).
    pub(super) sent: u32,
}

/// Runs request `id`'s prefill on the least-loaded prefill instance;
/// returns when it has ended, the instance keeping the request's blocks.
/// Dropped with the client, it aborts the prefill. A prompt that no
/// prefill instance's KV cache holds is refused saying so (`max_tokens`:
/// the request's, for the message).
pub(super) async fn prefill(
    s: &EngineServer,
    id: u64,
    prompt: &Prompt,
    max_tokens: u32,
    arrived: Instant,
) -> Result<Prefilled, Refused> {
    let Some(pool) = s.pd.as_ref() else { return Err(Refused::Gone) };
    if prompt.len() as u64 + 1 > pool.kv_tokens {
        return Err(Refused::Invalid(too_long_to_prefill(s, pool, prompt.len(), max_tokens)));
    }
    let p = lock(&pool.router).route(prompt);
    let commands = s.commands[p].clone();
    let mut ticket = Ticket { id, commands: commands.clone(), live: true, router: pool.router.clone(), replica: p };
    let progress = Arc::new(Progress::default());
    let (reply, answer) = oneshot::channel();
    let add = Command::Add {
        id,
        prompt: prompt.clone(),
        max_tokens: 1,
        arrived,
        progress: progress.clone(),
        reply,
        pull: None,
        pooling: false,
    };
    if commands.send(add).is_err() {
        ticket.live = false;
        return Err(Refused::Gone);
    }
    match answer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            ticket.live = false;
            return Err(Refused::Invalid(match e {
                Error::InvalidRequest { message, .. } => message,
                other => other.to_string(),
            }));
        }
        Err(_) => {
            ticket.live = false;
            return Err(Refused::Gone);
        }
    }
    // The one token: the prefill is done and the instance holds its KV.
    if let Update::Closed = progress.changed(0).await {
        ticket.live = false;
        return Err(Refused::Gone);
    }
    ticket.live = false;
    let cached = progress.cached.load(std::sync::atomic::Ordering::Acquire);
    let sent = progress.sent.load(std::sync::atomic::Ordering::Acquire);
    Ok(Prefilled { held: Held { id, commands }, instance: p, cached, sent })
}

/// Why a prompt is refused by the prefill pool: its instances' KV cache
/// is smaller than the prompt, however large the decode pool's (whose
/// cache the banner gives). The prefill instance's own refusal had named
/// its cache as the engine's, and the one output token it makes as the
/// request's.
fn too_long_to_prefill(s: &EngineServer, pool: &PrefillPool, prompt: u32, max_tokens: u32) -> String {
    let e = &s.cfg.engine;
    let (p_tp, d_tp) = (e.pool_tp(false), e.pool_tp(true));
    let (p, d) = e.pd.map_or((pool.prefill as u32, 1), |pd| (pd.prefill, pd.decode));
    let decode = s.request_kv_tokens();
    let decode = if decode > pool.kv_tokens { format!(" (a decode instance's holds {decode})") } else { String::new() };
    format!(
        "the {prompt}-token prompt (max_tokens {max_tokens}) needs more KV cache than a prefill instance holds: \
         {} tokens at TP {p_tp}{decode}; shorten the prompt, or give the prefill pool a larger TP (e.g. --pd \
         {p}xTP{}:{d}xTP{d_tp}) or more memory (a lower precision, --kv-cache-dtype fp8, --gpu-memory-utilization)",
        pool.kv_tokens,
        p_tp.saturating_mul(2)
    )
}

/// Moves a prefilled request's KV (its `prompt` tokens', less the leading
/// `cached` its decode instance holds and what crossed chunk by chunk)
/// over its prefill instance's link, from now (its decode instance has
/// admitted it), once that link's earlier transfers are done; returns when
/// it has landed, the prefill instance's blocks freed, with the time it
/// took.
pub(super) async fn transfer(s: &EngineServer, prefilled: Prefilled, prompt: u32, cached: u32) -> std::time::Duration {
    let pool = s.pd.as_ref().expect("called only when disaggregated");
    let tokens = prompt.saturating_sub(cached.max(prefilled.sent));
    let now = Instant::now();
    let landed = pool.links[prefilled.instance].send(now, tokens);
    sleep_until(landed).await;
    drop(prefilled.held);
    landed - now
}
