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
//!
//! vLLM's front end balances a dense model's `--data-parallel-size` replicas
//! the same way, by its own rule ([`ReplicaBalancer::Vllm`]).

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

    /// The method as SGLang's own flag spells it (`total_tokens`).
    pub fn sglang_name(self) -> String {
        self.as_str().replace('-', "_")
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

/// One rank's (or replica's) counts: its requests, the tokens they hold,
/// and (vLLM's count) how many of them run; the rest wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    pub requests: u64,
    pub tokens: u64,
    pub running: u64,
}

/// Who balances a dense model's data-parallel replicas from inside one
/// server, in the router's place ([`crate::engine::Router::controlled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaBalancer {
    /// SGLang's data-parallel controller by its `--load-balance-method`.
    Sglang(LoadBalance),
    /// vLLM's front end in front of one `vllm serve --data-parallel-size N`
    /// (`DPLBAsyncMPClient.get_core_engine_for_request`, its internal load
    /// balancing, the default): the replica of least 4 × waiting + running
    /// requests (the first on a tie), on the counts its coordinator
    /// publishes every 100 ms (`DPCoordinator`'s
    /// `min_stats_update_interval_ms`), each replica having sent its counts
    /// after each step in which they changed; between publications it counts
    /// each request it sends waiting where it went. Its `api_servers` front
    /// ends (`--api-server-count`, by default the data-parallel size) each
    /// keep their own counts, take the requests in turn, search from their
    /// own replica on (moving on by one after each pick), and count each
    /// request they send `api_servers` times (as if each of the others sent
    /// as many).
    Vllm { api_servers: u32 },
}

impl fmt::Display for ReplicaBalancer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicaBalancer::Sglang(m) => write!(f, "SGLang's controller by {m}"),
            ReplicaBalancer::Vllm { api_servers } => {
                f.write_str(&goodput_core::doc::config::vllm_balancer_words(*api_servers))
            }
        }
    }
}

/// How often vLLM's coordinator publishes the replicas' counts to its front
/// end while they change.
pub const VLLM_READ_INTERVAL: Duration = Duration::from_millis(100);

/// What a rank or a replica last published: its counts, and how many
/// snapshots it has published (the controller takes only a newer one).
pub type Published = (Load, u64);

/// One scheduler's snapshots: SGLang's publishes after a step in which it
/// prefilled, on its 15th step without, and when it runs out of work; vLLM's
/// (`every_step`) after each step.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Publisher {
    published: Published,
    /// Steps since the last snapshot.
    steps: u32,
    every_step: bool,
}

impl Publisher {
    /// A vLLM replica's: after every step its counts as they then are (vLLM
    /// sends them whenever they changed, before and after each step).
    pub fn every_step() -> Publisher {
        Publisher { every_step: true, ..Publisher::default() }
    }

    pub fn published(&self) -> Published {
        self.published
    }

    /// Whether it publishes vLLM's counts (waiting and running) rather than
    /// SGLang's load: a vLLM replica's ([`Publisher::every_step`]).
    pub fn counts(&self) -> bool {
        self.every_step
    }

    /// After a step: publishes `load()` where the step prefilled, where it
    /// was the 15th without a snapshot, or where the scheduler is `idle`
    /// (vLLM's: always).
    pub fn after_step(&mut self, idle: bool, prefilled: bool, load: impl FnOnce() -> Load) {
        self.steps += 1;
        if self.every_step || idle || prefilled || self.steps >= SNAPSHOT_STEPS {
            self.steps = 0;
            self.published = (load(), self.published.1 + 1);
        }
    }
}

/// The controller's counts of each rank or replica, each with the serial
/// of the snapshot it was read from: between reads it adds what it sends.
#[derive(Debug, Clone)]
struct View {
    by: Score,
    seen: Vec<Published>,
    /// Where a search for the lightest starts (ties go to the first from
    /// here): vLLM's front end `i` of `n` starts at its engine `N × i / n`,
    /// and moves on by one after each pick (its `eng_start_index`, rotated
    /// since vLLM's PR 47420 of July 2026 so that ties do not all go to one).
    start: usize,
    /// What a request sent adds to its replica's requests: one, or under
    /// vLLM's each of its `n` front ends adds `n` (as if every front end
    /// sent as many).
    adds: u64,
}

/// What a view takes the lightest by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Score {
    /// SGLang's `total_requests`.
    Requests,
    /// SGLang's `total_tokens`: tokens, then requests.
    Tokens,
    /// vLLM's: 4 × waiting + running.
    Vllm,
}

impl View {
    /// The view of `n` for `method`, where it counts (`None` for the
    /// methods that read no load).
    fn new(method: LoadBalance, n: usize) -> Option<View> {
        let by = match method {
            LoadBalance::TotalRequests => Score::Requests,
            LoadBalance::TotalTokens => Score::Tokens,
            _ => return None,
        };
        Some(View { by, seen: vec![(Load::default(), 0); n], start: 0, adds: 1 })
    }

    /// Takes each newer snapshot in place of its count. vLLM's front end
    /// takes the coordinator's whole publication, which comes when any
    /// replica's counts changed: every count, its own additions dropped.
    fn read(&mut self, published: impl Fn(usize) -> Published) {
        if self.by == Score::Vllm {
            if (0..self.seen.len()).any(|i| published(i).1 != self.seen[i].1) {
                self.seen.iter_mut().enumerate().for_each(|(i, seen)| *seen = published(i));
            }
            return;
        }
        for (i, seen) in self.seen.iter_mut().enumerate() {
            let (load, n) = published(i);
            if seen.1 != n {
                *seen = (load, n);
            }
        }
    }

    /// The lightest (by requests, by tokens and then requests, or by vLLM's
    /// score; the first on a tie from `start`), counted with `adds` more
    /// requests (and `prompt` tokens), waiting.
    fn pick(&mut self, prompt: u32) -> usize {
        let by = self.by;
        let key = |l: &Load| match by {
            Score::Requests => (l.requests, 0),
            Score::Tokens => (l.tokens, l.requests),
            Score::Vllm => (4 * l.requests.saturating_sub(l.running) + l.running.min(l.requests), 0),
        };
        let n = self.seen.len().max(1);
        let i = (0..n).map(|k| (self.start + k) % n).min_by_key(|&i| key(&self.seen[i].0)).unwrap_or(0);
        if by == Score::Vllm {
            self.start = (self.start + 1) % n;
        }
        let load = &mut self.seen[i].0;
        load.requests += self.adds;
        if by == Score::Tokens {
            load.tokens += u64::from(prompt);
        }
        i
    }
}

/// SGLang's data-parallel controller in front of replicas of a dense model
/// (`--dp-size` without DP attention) under `total-requests` or
/// `total-tokens`, each replica publishing its own snapshots
/// ([`Publisher`]), the controller reading them at most every 20 ms of the
/// run's clock. Its `round-robin` is the router's
/// ([`crate::engine::Router::controlled`]). vLLM's front ends
/// ([`ReplicaBalancer::Vllm`]), by default one API server a replica as vLLM
/// starts them, read the replicas' counts every 100 ms, and take the
/// requests in turn.
#[derive(Debug, Clone)]
pub struct Controller {
    balancer: ReplicaBalancer,
    /// Each front end's view (SGLang's controller is one).
    views: Vec<View>,
    /// Requests dealt so far, the next one's front end by turn.
    dealt: usize,
    last_read_s: Option<f64>,
    every_s: f64,
}

impl Controller {
    /// The controller of `replicas` for `method`, where it counts (`None`
    /// for the methods that read no load).
    pub fn new(method: LoadBalance, replicas: usize) -> Option<Controller> {
        Some(Controller {
            balancer: ReplicaBalancer::Sglang(method),
            views: vec![View::new(method, replicas)?],
            dealt: 0,
            last_read_s: None,
            every_s: READ_INTERVAL.as_secs_f64(),
        })
    }

    /// The balancer of `replicas` (`None` for SGLang's methods that read no
    /// load: its round-robin is the router's).
    pub fn of(balancer: ReplicaBalancer, replicas: usize) -> Option<Controller> {
        match balancer {
            ReplicaBalancer::Sglang(m) => Controller::new(m, replicas),
            // Front end `i` of `n` starts its search at engine
            // `engines × i / n` and adds `n` a request
            // (`DPLBAsyncMPClient.eng_start_index`, `client_count`).
            ReplicaBalancer::Vllm { api_servers } => Some(Controller {
                balancer,
                views: (0..api_servers.max(1) as usize)
                    .map(|i| View {
                        by: Score::Vllm,
                        seen: vec![(Load::default(), 0); replicas],
                        start: replicas * i / api_servers.max(1) as usize,
                        adds: u64::from(api_servers.max(1)),
                    })
                    .collect(),
                dealt: 0,
                last_read_s: None,
                every_s: VLLM_READ_INTERVAL.as_secs_f64(),
            }),
        }
    }

    /// Whose balancer it is.
    pub fn balancer(&self) -> ReplicaBalancer {
        self.balancer
    }

    /// The replica a request of `prompt` tokens goes to at `now_s`, each
    /// replica's last snapshot `published(i)`.
    pub fn dispatch(&mut self, now_s: f64, prompt: u32, published: impl Fn(usize) -> Published) -> usize {
        // Within a nanosecond: a clock's seconds summed in floating point
        // (0.7 − 0.6 < 0.1) do not put a read off by a whole request.
        if self.last_read_s.is_none_or(|t| now_s - t >= self.every_s - 1e-9) {
            self.views.iter_mut().for_each(|v| v.read(&published));
            self.last_read_s = Some(now_s);
        }
        let front = self.dealt % self.views.len();
        self.dealt += 1;
        self.views[front].pick(prompt)
    }
}

/// The controller's view of the ranks under `total-requests` or
/// `total-tokens`, and the snapshots it reads.
#[derive(Debug, Clone)]
pub(crate) struct Balancer {
    /// Each rank's snapshots.
    ranks: Vec<Publisher>,
    /// The controller's counts.
    view: View,
    /// Step time since the controller last read; `None`: it reads at the
    /// next request (the engine's first, or after it ran out of work).
    since_read: Option<Duration>,
}

impl Balancer {
    /// The balancer of `ranks` ranks for `method`, where it counts (`None`
    /// for the methods that read no load).
    pub fn new(method: LoadBalance, ranks: usize) -> Option<Balancer> {
        Some(Balancer { ranks: vec![Publisher::default(); ranks], view: View::new(method, ranks)?, since_read: None })
    }

    /// The rank a request of `prompt` tokens goes to, counted there until
    /// the rank's next snapshot is read.
    pub fn dispatch(&mut self, prompt: u32) -> u32 {
        if self.since_read.is_none_or(|t| t >= READ_INTERVAL) {
            let ranks = &self.ranks;
            self.view.read(|r| ranks[r].published());
            self.since_read = Some(Duration::ZERO);
        }
        self.view.pick(prompt) as u32
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
        for (r, p) in self.ranks.iter_mut().enumerate() {
            p.after_step(idle, prefilled(r), || load(r));
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
            assert_eq!(m.sglang_name().to_uppercase().parse::<LoadBalance>().unwrap(), m);
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

    /// In front of replicas the controller deals round-robin in turn (the
    /// router's), and for the counted methods reads what each replica last
    /// published, at most every 20 ms of the run's clock, adding what it
    /// sends between.
    #[test]
    fn the_replicas_controller_reads_their_snapshots_every_20_ms() {
        let prompt = crate::engine::kv::Prompt::from_tokens(&[1; 10], 16);
        let mut rr = crate::engine::Router::new(crate::engine::RouterPolicy::LeastLoaded, 3, 64)
            .controlled(Some(ReplicaBalancer::Sglang(LoadBalance::RoundRobin)));
        assert_eq!([0.0; 4].map(|t| rr.route_with(&prompt, t, |_| 0, |_| (Load::default(), 0))), [0, 1, 2, 0]);
        assert!(rr.reads_published().is_none() && Controller::new(LoadBalance::Auto, 2).is_none());
        assert!(Controller::new(LoadBalance::RoundRobin, 2).is_none());
        let mut c = Controller::new(LoadBalance::TotalTokens, 2).unwrap();
        let mut published = [
            (Load { requests: 1, tokens: 5000, ..Load::default() }, 1),
            (Load { requests: 3, tokens: 900, ..Load::default() }, 1),
        ];
        assert_eq!(c.dispatch(0.0, 1000, |i| published[i]), 1, "900 tokens against 5,000");
        assert_eq!(c.dispatch(0.010, 1000, |i| published[i]), 1, "1,900 with the one sent");
        // Newer snapshots, but read only 20 ms after the last read.
        published = [
            (Load { requests: 0, tokens: 0, ..Load::default() }, 2),
            (Load { requests: 9, tokens: 9000, ..Load::default() }, 2),
        ];
        assert_eq!(c.dispatch(0.015, 4000, |i| published[i]), 1, "2,900 against 5,000: the old view");
        assert_eq!(c.dispatch(0.016, 100, |i| published[i]), 0, "5,000 against 6,900: the old view");
        assert_eq!(c.dispatch(0.020, 100, |i| published[i]), 0, "read at 20 ms: 0 against 9,000");
        // A snapshot already read is not read again.
        assert_eq!(c.dispatch(0.041, 20000, |i| published[i]), 0, "100 against 9,000");
        assert_eq!(c.dispatch(0.042, 100, |i| published[i]), 1, "20,100 against 9,000");
        // A replica publishes after a step that prefilled, on its 15th step
        // without, and when it runs out of work.
        let mut p = Publisher::default();
        let load = |n| move || Load { requests: n, tokens: 0, ..Load::default() };
        p.after_step(false, true, load(4));
        assert_eq!(p.published(), (Load { requests: 4, tokens: 0, ..Load::default() }, 1));
        for _ in 0..SNAPSHOT_STEPS - 1 {
            p.after_step(false, false, load(3));
        }
        assert_eq!(p.published().1, 1, "14 steps without a prompt");
        p.after_step(false, false, load(3));
        assert_eq!(p.published(), (Load { requests: 3, tokens: 0, ..Load::default() }, 2));
        p.after_step(true, false, load(0));
        assert_eq!(p.published(), (Load::default(), 3));
    }

    /// vLLM's front end scores a replica 4 × waiting + running on the counts
    /// last published, reads them every 100 ms, and counts what it sends
    /// between as waiting; a replica publishes after every step.
    #[test]
    fn vllms_balancer_weighs_waiting_four_times_on_counts_read_every_100_ms() {
        let counts = |requests, running| Load { requests, tokens: 0, running };
        // Two replicas: two front ends, which take the requests in turn,
        // each with its own additions (two a request: one for each).
        let mut c = Controller::of(ReplicaBalancer::Vllm { api_servers: 2 }, 2).unwrap();
        let mut published = [(counts(3, 3), 1), (counts(1, 0), 1)];
        assert_eq!(c.dispatch(0.0, 10, |i| published[i]), 0, "front end 0: 3 running (3) against 1 waiting (4)");
        assert_eq!(c.dispatch(0.050, 10, |i| published[i]), 0, "front end 1 has not seen front end 0's send");
        assert_eq!(c.dispatch(0.060, 10, |i| published[i]), 1, "front end 0: 3 + 4 × 2 sent as waiting against 4");
        // Newer counts are read only 100 ms after the last read, by each.
        published = [(counts(9, 9), 2), (counts(0, 0), 2)];
        assert_eq!(c.dispatch(0.099, 10, |i| published[i]), 1, "front end 1: 11 against 4, the old view");
        assert_eq!(c.dispatch(0.100, 10, |i| published[i]), 1, "front end 0 reads: 9 against 0");
        // The publication is whole: the second replica's count, unchanged,
        // drops what was added to it; a tie goes to the first from the front
        // end's start, which moves on by one after each pick.
        published = [(counts(0, 0), 3), (counts(0, 0), 2)];
        assert_eq!(c.dispatch(0.200, 10, |i| published[i]), 1, "front end 1 reads 0 and 0, from 1 (its third pick)");
        assert_eq!(c.dispatch(0.210, 10, |i| published[i]), 1, "front end 0: 0 and 0, from 1 (its fourth pick)");
        assert_eq!(c.dispatch(0.220, 10, |i| published[i]), 0, "front end 1: 0 and 2 × 4, from 0");
        // A replica behind vLLM's balancer publishes after every step.
        let mut p = Publisher::every_step();
        for n in 1..=3 {
            p.after_step(false, false, || counts(n, 1));
            assert_eq!(p.published(), (counts(n, 1), n));
        }
        let one = ReplicaBalancer::Vllm { api_servers: 1 };
        assert_eq!(one.to_string(), "vLLM's balancer, least 4 × waiting + running");
        let four = ReplicaBalancer::Vllm { api_servers: 4 }.to_string();
        assert_eq!(four, "vLLM's balancer, least 4 × waiting + running, over 4 API servers");
        // One front end deals every request from one view, adding one.
        let mut c = Controller::of(one, 2).unwrap();
        let none = |_| (counts(0, 0), 1);
        assert_eq!([0.0, 0.01, 0.02, 0.03].map(|t| c.dispatch(t, 10, none)), [0, 1, 0, 1]);
        let sglang = ReplicaBalancer::Sglang(LoadBalance::TotalTokens);
        assert_eq!(sglang.to_string(), "SGLang's controller by total-tokens");
    }

    /// A rank's snapshot replaces the controller's count only once the rank
    /// has published it and 20 ms have passed since the last read; a rank
    /// that only decodes publishes on its 15th step, one that prefilled at
    /// once; every rank publishes when the engine runs out of work.
    #[test]
    fn the_controller_reads_published_loads_at_most_every_20_ms() {
        let load = |requests| Load { requests, tokens: 0, ..Load::default() };
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
        assert_eq!(b.view.seen.iter().map(|s| s.0.requests).collect::<Vec<_>>(), [1, 0]);
    }
}
