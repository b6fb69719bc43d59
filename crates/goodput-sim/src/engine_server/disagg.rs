//! Prefill/decode disaggregation on the live server: a generation first
//! goes to a prefill instance (least-loaded) as a request of one token; once
//! that token is out, its KV crosses the instance's link (one transfer after
//! another, on the wall clock at the server's speed), the prefill instance
//! frees its blocks, and the request goes on to a decode instance, whose
//! stream the client reads (docs/simulator.md, "Prefill/decode
//! disaggregation").

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
    pub(super) link: KvLink,
    pub(super) router: Arc<Mutex<Router>>,
    /// When each prefill instance's link is next free, on the wall clock.
    link_free: Vec<Mutex<Instant>>,
}

impl PrefillPool {
    pub(super) fn new(link: KvLink, prefill: usize, blocks: u32) -> PrefillPool {
        PrefillPool {
            prefill,
            link,
            router: Arc::new(Mutex::new(Router::new(crate::engine::RouterPolicy::LeastLoaded, prefill, blocks))),
            link_free: (0..prefill).map(|_| Mutex::new(Instant::now())).collect(),
        }
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

/// Runs request `id`'s prefill on the least-loaded prefill instance and
/// moves its KV (less what the `decode` instance's prefix cache holds) over
/// that instance's link; returns when the KV has landed
/// (with the time from the prefill's end, and the prompt tokens the prefill
/// instance's prefix cache served), when the decode pool may take
/// the request (with [`Command::Add`]'s `prefilled`). Dropped with the
/// client, it aborts the prefill, or frees the blocks its KV held.
pub(super) async fn prefill(
    s: &EngineServer,
    id: u64,
    prompt: &Prompt,
    arrived: Instant,
    decode: &mpsc::UnboundedSender<Command>,
) -> Result<(std::time::Duration, u32), Refused> {
    let pool = s.pd.as_ref().expect("called only when disaggregated");
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
        prefilled: false,
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
    let held = Held { id, commands };
    drop(ticket);
    let ended = Instant::now();
    // Only the blocks the decode instance's prefix cache lacks cross
    // (vLLM's NIXL connector pulls just those).
    let (ask, answer) = oneshot::channel();
    let lacking = match decode.send(Command::CachedPrefix(prompt.clone(), ask)) {
        Ok(()) => prompt.len().saturating_sub(answer.await.unwrap_or(0)),
        Err(_) => return Err(Refused::Gone),
    };
    let took = pool.link.transfer_time(lacking).div_f64(s.cfg.speed);
    let landed = {
        let mut free = lock(&pool.link_free[p]);
        let start = (*free).max(ended);
        *free = start + took;
        *free
    };
    sleep_until(landed).await;
    drop(held);
    Ok((landed - ended, cached))
}
