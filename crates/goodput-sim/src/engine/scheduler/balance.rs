//! SGLang's data-parallel controller under DP attention: which attention
//! rank a request goes to (`--load-balance-method`), as
//! `python/sglang/srt/managers/data_parallel_controller.py` chooses it,
//! from the load snapshots the ranks' schedulers publish
//! (`Scheduler.publish_load_snapshot`, `--load-snapshot-publish-interval`).
//!
//! - `round_robin`: the ranks in turn (the default, `auto`, but on a
//!   disaggregated prefill instance).
//! - `follow_bootstrap_room`: the rank `room % ranks` of the random
//!   bootstrap room SGLang's router gives each disaggregated request (`auto`
//!   on a prefill instance, where a typed `round_robin` means it too).
//! - `total_requests`: the rank with the fewest requests (running and
//!   waiting), the first on a tie.
//! - `total_tokens`: the rank whose requests hold the fewest tokens (the KV
//!   its running requests hold, and the whole sequence of each waiting one),
//!   then the fewest requests, then the first.
//!
//! The two counted methods read the ranks' snapshots, not their live
//! state. A rank publishes after each step in which it prefilled, on every
//! 15th step otherwise, and when the server runs out of work. The
//! controller reads the snapshots at most every 20 ms, and only a rank's
//! newer one replaces what it holds; between reads it adds each request it
//! sends to its rank's counts (one request, and its prompt's tokens), so a
//! burst spreads instead of going whole to the rank that looked lightest.

use crate::engine::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// SGLang's `--load-balance-method` for the ranks of DP attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalance {
    /// SGLang's default: `follow-bootstrap-room` on a disaggregated prefill
    /// instance, `round-robin` elsewhere.
    #[default]
    Auto,
    RoundRobin,
    FollowBootstrapRoom,
    TotalRequests,
    TotalTokens,
}

impl LoadBalance {
    pub const ALL: [LoadBalance; 5] = [
        LoadBalance::Auto,
        LoadBalance::RoundRobin,
        LoadBalance::FollowBootstrapRoom,
        LoadBalance::TotalRequests,
        LoadBalance::TotalTokens,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LoadBalance::Auto => "auto",
            LoadBalance::RoundRobin => "round-robin",
            LoadBalance::FollowBootstrapRoom => "follow-bootstrap-room",
            LoadBalance::TotalRequests => "total-requests",
            LoadBalance::TotalTokens => "total-tokens",
        }
    }

    /// `--load-balance-method` as given: one method, or under `--pd` the
    /// prefill pool's and the decode pool's (`P:D`, `auto:total-tokens`).
    pub fn parse_pools(text: &str) -> Result<(LoadBalance, Option<LoadBalance>), Error> {
        match text.split_once(':') {
            Some((prefill, decode)) => Ok((prefill.parse()?, Some(decode.parse()?))),
            None => Ok((text.parse()?, None)),
        }
    }

    /// The method a server runs for this one: on a disaggregated prefill
    /// instance `auto` and `round-robin` follow the bootstrap room (SGLang's
    /// `_handle_load_balance_method`, the second with a warning); elsewhere
    /// `auto` is `round-robin`.
    pub fn resolved(self, prefill_instance: bool) -> LoadBalance {
        match self {
            LoadBalance::Auto | LoadBalance::RoundRobin if prefill_instance => LoadBalance::FollowBootstrapRoom,
            LoadBalance::Auto => LoadBalance::RoundRobin,
            m => m,
        }
    }
}

impl fmt::Display for LoadBalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LoadBalance {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let key = s.trim().to_ascii_lowercase().replace('_', "-");
        LoadBalance::ALL.into_iter().find(|m| m.as_str() == key).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "unknown --load-balance-method `{s}`; use auto (SGLang's default), round-robin, \
                 follow-bootstrap-room (with --pd), total-requests or total-tokens"
            ))
        })
    }
}

/// Steps a rank runs without a prompt between its snapshots (SGLang's
/// `--load-snapshot-publish-interval`, 15 by default).
pub const SNAPSHOT_STEPS: u32 = 15;

/// The least time between two reads of the snapshots by the controller
/// (`DataParallelController.refresh_load_budget`).
pub const READ_INTERVAL: Duration = Duration::from_millis(20);

/// One rank's counts: its requests, and the tokens they hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Load {
    pub requests: u64,
    pub tokens: u64,
}

/// The controller's view of the ranks under `total-requests` or
/// `total-tokens`, and the snapshots it reads.
#[derive(Debug, Clone)]
pub(crate) struct Balancer {
    by_tokens: bool,
    /// Each rank's last snapshot and how many it has published.
    published: Vec<(Load, u64)>,
    /// Steps each rank ran since its last snapshot.
    steps: Vec<u32>,
    /// The controller's counts, and the snapshot each was read from.
    seen: Vec<(Load, u64)>,
    /// Step time since the controller last read; `None`: it reads at the
    /// next request (the engine's first, or after it ran out of work).
    since_read: Option<Duration>,
}

impl Balancer {
    /// The balancer of `ranks` ranks for `method`, where it counts (`None`
    /// for the methods that read no load).
    pub fn new(method: LoadBalance, ranks: usize) -> Option<Balancer> {
        let by_tokens = match method {
            LoadBalance::TotalRequests => false,
            LoadBalance::TotalTokens => true,
            _ => return None,
        };
        Some(Balancer {
            by_tokens,
            published: vec![(Load::default(), 0); ranks],
            steps: vec![0; ranks],
            seen: vec![(Load::default(), 0); ranks],
            since_read: None,
        })
    }

    /// The rank a request of `prompt` tokens goes to, counted there until
    /// the rank's next snapshot is read.
    pub fn dispatch(&mut self, prompt: u32) -> u32 {
        if self.since_read.is_none_or(|t| t >= READ_INTERVAL) {
            for (seen, &(load, n)) in self.seen.iter_mut().zip(&self.published) {
                if seen.1 != n {
                    *seen = (load, n);
                }
            }
            self.since_read = Some(Duration::ZERO);
        }
        let key = |l: &Load| if self.by_tokens { (l.tokens, l.requests) } else { (l.requests, 0) };
        let rank = (0..self.seen.len()).min_by_key(|&r| key(&self.seen[r].0)).unwrap_or(0);
        let load = &mut self.seen[rank].0;
        load.requests += 1;
        if self.by_tokens {
            load.tokens += u64::from(prompt);
        }
        rank as u32
    }

    /// After a step of `duration`: each rank that prefilled in it
    /// (`prefilled(rank)`) publishes its counts (`load(rank)`), as does
    /// every rank on its 15th step without, and all of them when the engine
    /// has no more work (`idle`), after which the controller reads at its
    /// next request.
    pub fn after_step(
        &mut self,
        duration: Duration,
        idle: bool,
        prefilled: impl Fn(usize) -> bool,
        load: impl Fn(usize) -> Load,
    ) {
        self.since_read = if idle { None } else { self.since_read.map(|t| t + duration) };
        for r in 0..self.published.len() {
            let steps = &mut self.steps[r];
            *steps += 1;
            if idle || prefilled(r) || *steps >= SNAPSHOT_STEPS {
                *steps = 0;
                let n = self.published[r].1 + 1;
                self.published[r] = (load(r), n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_parses_as_sglang_spells_it_and_resolves_by_instance() {
        for m in LoadBalance::ALL {
            assert_eq!(m.as_str().parse::<LoadBalance>().unwrap(), m);
            assert_eq!(m.as_str().replace('-', "_").to_uppercase().parse::<LoadBalance>().unwrap(), m);
        }
        let e = "least_loaded".parse::<LoadBalance>().unwrap_err().to_string();
        assert!(e.contains("least_loaded") && e.contains("total-tokens"), "{e}");
        use LoadBalance::*;
        assert_eq!([Auto, RoundRobin].map(|m| m.resolved(true)), [FollowBootstrapRoom; 2]);
        assert_eq!([Auto, RoundRobin].map(|m| m.resolved(false)), [RoundRobin; 2]);
        assert_eq!([TotalRequests, TotalTokens].map(|m| m.resolved(true)), [TotalRequests, TotalTokens]);
        assert!(Balancer::new(RoundRobin, 2).is_none() && Balancer::new(Auto, 2).is_none());
    }

    /// Between reads the controller counts what it sent: a burst of
    /// requests spreads over the ranks, by requests or by prompt tokens.
    #[test]
    fn a_burst_is_spread_by_what_the_controller_sent() {
        let prompts = [4000, 100, 4000, 100, 100, 100];
        let ranks = |method| {
            let mut b = Balancer::new(method, 2).unwrap();
            prompts.map(|p| b.dispatch(p))
        };
        assert_eq!(ranks(LoadBalance::TotalRequests), [0, 1, 0, 1, 0, 1]);
        // 4,000 | 100, 4,100 | then 4,000 against 4,100 | 4,100 on both,
        // the first rank fewer requests | 4,200 against 4,100.
        assert_eq!(ranks(LoadBalance::TotalTokens), [0, 1, 1, 0, 0, 1]);
    }

    /// A rank's snapshot replaces the controller's count only once the rank
    /// has published it and 20 ms have passed since the last read; a rank
    /// that only decodes publishes on its 15th step, one that prefilled at
    /// once; every rank publishes when the engine runs out of work.
    #[test]
    fn the_controller_reads_published_loads_at_most_every_20_ms() {
        let load = |requests| Load { requests, tokens: 0 };
        let mut b = Balancer::new(LoadBalance::TotalRequests, 2).unwrap();
        assert_eq!((b.dispatch(10), b.dispatch(10)), (0, 1));
        let step = Duration::from_millis(5);
        let live = [load(0), load(3)];
        for _ in 0..SNAPSHOT_STEPS - 1 {
            b.after_step(step, false, |_| false, |r| live[r]);
        }
        assert_eq!(b.dispatch(10), 0, "nothing published in 14 steps: one sent to each, the first on a tie");
        b.after_step(step, false, |_| false, |r| live[r]);
        assert_eq!(b.dispatch(10), 1, "published on the 15th step, 5 ms after the last read: not read yet");
        for _ in 0..3 {
            b.after_step(step, false, |_| false, |r| live[r]);
        }
        assert_eq!(b.dispatch(10), 0, "read 20 ms after the last: 0 and 3");
        // The first rank prefills: it publishes after each such step, the
        // second (decoding) does not.
        let live = [load(9), load(0)];
        for _ in 0..4 {
            b.after_step(step, false, |r| r == 0, |r| live[r]);
        }
        assert_eq!(b.dispatch(10), 1, "the first rank's 9 read; the second's 3 as last read");
        // Out of work: all publish, and the next request reads at once.
        b.after_step(step, true, |_| false, |_| load(0));
        assert_eq!(b.dispatch(10), 0);
        assert_eq!(b.seen.iter().map(|s| s.0.requests).collect::<Vec<_>>(), [1, 0]);
    }
}
