//! Data parallelism's router (docs/simulator.md, "Data parallelism"): which
//! of `dp` engine replicas a request goes to. It sees what a router in front
//! of real replicas sees: the requests it sent each replica and has not seen
//! end, and (prefix-aware) the prompts it sent them, not the replicas' own
//! caches; power-of-two on polled loads compares what the replicas report
//! (their tokens), as SGLang's router does. In front of replicas of a
//! dense model under SGLang's scheduler, `--load-balance-method` puts
//! SGLang's data-parallel controller in the router's place
//! ([`Router::controlled`]), reading the loads the replicas publish.

use super::calibration::splitmix64;
use super::error::Error;
use super::kv::{BlockMap, Prompt};
use super::scheduler::{Controller, Load, LoadBalance, Published, ReplicaBalancer};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// How the router picks a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouterPolicy {
    /// In turn, whatever each holds.
    RoundRobin,
    /// The replica with the fewest requests in flight (ties: the first).
    #[default]
    LeastLoaded,
    /// vLLM router's and SGLang's `cache_aware` policy with their defaults:
    /// the replica whose past prompts share the longest leading run of
    /// blocks with this one (the lighter on a tie), when that covers more
    /// than 30 % of it; else the least-loaded replica (vllm-router 0.1.17's
    /// and SGLang's router's, smg 1.13's, rule; an older SGLang took the
    /// replica with the smallest record); and the least-loaded replica once
    /// the busiest has more than 64 requests over the idlest and more than
    /// 1.5 times as many.
    PrefixAware,
    /// vLLM router's and SGLang's `power_of_two`: of two replicas drawn at
    /// random (distinct, uniformly), the one with fewer requests in flight
    /// (a tie: the first drawn). Between two replicas it is least-loaded;
    /// among more, a replica is sometimes passed over for a busier one. The
    /// draws are a function of the request's place in the run, so a run
    /// repeats exactly. With polled loads ([`Router::polled`]) it compares
    /// the replicas' token loads at the last poll instead, as SGLang's
    /// router compares the loads its monitor fetched.
    PowerOfTwo,
}

impl RouterPolicy {
    pub const ALL: [RouterPolicy; 4] =
        [RouterPolicy::RoundRobin, RouterPolicy::LeastLoaded, RouterPolicy::PrefixAware, RouterPolicy::PowerOfTwo];

    pub fn as_str(self) -> &'static str {
        match self {
            RouterPolicy::RoundRobin => "round-robin",
            RouterPolicy::LeastLoaded => "least-loaded",
            RouterPolicy::PrefixAware => "prefix-aware",
            RouterPolicy::PowerOfTwo => "power-of-two",
        }
    }
}

impl fmt::Display for RouterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RouterPolicy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match goodput_core::doc::overlay::router_name(s) {
            Some("round-robin") => Ok(RouterPolicy::RoundRobin),
            Some("least-loaded") => Ok(RouterPolicy::LeastLoaded),
            Some("prefix-aware") => Ok(RouterPolicy::PrefixAware),
            Some("power-of-two") => Ok(RouterPolicy::PowerOfTwo),
            _ => Err(Error::InvalidConfig(format!(
                "unknown --router `{s}`; use round-robin, least-loaded, prefix-aware or power-of-two"
            ))),
        }
    }
}

/// `cache_aware`'s defaults (vLLM router and SGLang's router): the share of
/// a prompt a replica's record must cover to win it, and the imbalance
/// (absolute and relative) past which load wins instead.
const CACHE_THRESHOLD: f64 = 0.3;
const BALANCE_ABS_THRESHOLD: u32 = 64;
const BALANCE_REL_THRESHOLD: f64 = 1.5;

/// The router's state.
#[derive(Debug, Clone)]
pub struct Router {
    policy: RouterPolicy,
    /// Round-robin: the next replica. Power-of-two: how many requests it
    /// has routed, which seeds each draw.
    next: usize,
    in_flight: Vec<u32>,
    /// Prefix-aware: per replica, the block hashes of the prompts sent to
    /// it, oldest first, at most `record_cap` of them (the replica's KV
    /// blocks: what its cache could still hold).
    records: Vec<Record>,
    record_cap: usize,
    /// Power-of-two with polled loads: what it compares.
    poll: Option<Poll>,
    /// SGLang's data-parallel controller where it reads the replicas'
    /// loads, which picks instead of the policy.
    controller: Option<Controller>,
}

/// Loads polled every `every_s` seconds from the run's start, as SGLang's
/// router's load monitor fetches each worker's `/get_load` every
/// `--worker-load-check-interval` seconds (10 by default) and its
/// `power_of_two` compares those until the next fetch. A load is the
/// replica's tokens ([`crate::engine::Engine::load_tokens`]), as
/// `/get_load`'s `num_tokens` is.
#[derive(Debug, Clone)]
struct Poll {
    every_s: f64,
    /// When the next poll is due.
    next_s: f64,
    /// Each replica's load at the last poll.
    loads: Vec<u64>,
}

#[derive(Debug, Clone, Default)]
struct Record {
    /// Hash → how many times it sits in `order`.
    count: BlockMap<u32>,
    order: VecDeque<u64>,
}

impl Record {
    fn matched(&self, hashes: &[u64]) -> usize {
        hashes.iter().take_while(|h| self.count.contains_key(h)).count()
    }

    fn insert(&mut self, hashes: &[u64], cap: usize) {
        for &h in hashes {
            *self.count.entry(h).or_insert(0) += 1;
            self.order.push_back(h);
        }
        while self.order.len() > cap {
            let Some(old) = self.order.pop_front() else { break };
            if let Some(c) = self.count.get_mut(&old) {
                *c -= 1;
                if *c == 0 {
                    self.count.remove(&old);
                }
            }
        }
    }
}

impl Router {
    /// A router over `replicas` replicas, each of whose caches holds
    /// `blocks_per_replica` blocks.
    pub fn new(policy: RouterPolicy, replicas: usize, blocks_per_replica: u32) -> Router {
        let replicas = replicas.max(1);
        Router {
            policy,
            next: 0,
            in_flight: vec![0; replicas],
            records: if policy == RouterPolicy::PrefixAware { vec![Record::default(); replicas] } else { Vec::new() },
            record_cap: blocks_per_replica.max(1) as usize,
            poll: None,
            controller: None,
        }
    }

    /// The server's own balancer in place of the policy, as a server
    /// started with several data-parallel replicas of a dense model sends
    /// its requests to them: SGLang's controller by its method (round-robin
    /// is the router's own, total-requests and total-tokens read the loads
    /// the replicas publish), or vLLM's front end (reading the counts they
    /// publish); `None`, or another method, leaves the policy.
    pub fn controlled(mut self, balancer: Option<ReplicaBalancer>) -> Router {
        if balancer == Some(ReplicaBalancer::Sglang(LoadBalance::RoundRobin)) {
            self.policy = RouterPolicy::RoundRobin;
        }
        self.controller = balancer.and_then(|b| Controller::of(b, self.in_flight.len()));
        self
    }

    /// The balancer that reads the loads the replicas publish, where one
    /// does (each replica must then publish them for it:
    /// [`crate::engine::Engine::publish_loads`]).
    pub fn reads_published(&self) -> Option<ReplicaBalancer> {
        self.controller.as_ref().map(Controller::balancer)
    }

    /// Power-of-two comparing the loads it polled every `every_s` seconds
    /// (from the run's start, the first at 0) instead of its live counts;
    /// `None`, or another policy, routes on live counts as before. A poll's
    /// loads are what the caller of [`Router::route_at`] gives for each
    /// replica when the router first routes at or after the poll's time:
    /// the tokens each replica holds and waits to prefill, as SGLang's
    /// monitor fetches them. Between polls every pair drawn goes to the
    /// replica that was lighter at the poll, however many it has been sent
    /// since.
    pub fn polled(mut self, every_s: Option<f64>) -> Router {
        self.poll = every_s.filter(|s| *s > 0.0 && self.policy == RouterPolicy::PowerOfTwo).map(|every_s| Poll {
            every_s,
            next_s: 0.0,
            loads: vec![0; self.in_flight.len()],
        });
        self
    }

    pub fn policy(&self) -> RouterPolicy {
        self.policy
    }

    /// Whether it compares polled loads ([`Router::polled`]).
    pub fn polls(&self) -> bool {
        self.poll.is_some()
    }

    pub fn replicas(&self) -> usize {
        self.in_flight.len()
    }

    /// Requests sent to each replica that have not ended.
    pub fn in_flight(&self) -> &[u32] {
        &self.in_flight
    }

    /// Picks the replica for a request with this prompt and counts it in
    /// flight there (a router whose loads are polled: as if at time 0, with
    /// every replica empty).
    pub fn route(&mut self, prompt: &Prompt) -> usize {
        self.route_at(prompt, 0.0, |_| 0)
    }

    /// [`Router::route`] at `now_s` seconds into the run, when a poll that
    /// fell due since the last routing is taken first: `load(i)` is replica
    /// `i`'s load then, asked only for a poll.
    pub fn route_at(&mut self, prompt: &Prompt, now_s: f64, load: impl Fn(usize) -> u64) -> usize {
        self.route_with(prompt, now_s, load, |_| (Load::default(), 0))
    }

    /// [`Router::route_at`], `published(i)` giving what replica `i` last
    /// published, which SGLang's controller reads ([`Router::controlled`]).
    pub fn route_with(
        &mut self,
        prompt: &Prompt,
        now_s: f64,
        load: impl Fn(usize) -> u64,
        published: impl Fn(usize) -> Published,
    ) -> usize {
        if let Some(c) = self.controller.as_mut() {
            let i = c.dispatch(now_s, prompt.len(), published);
            self.in_flight[i] += 1;
            return i;
        }
        if let Some(p) = self.poll.as_mut().filter(|p| now_s >= p.next_s) {
            for (i, l) in p.loads.iter_mut().enumerate() {
                *l = load(i);
            }
            p.next_s = ((now_s / p.every_s).floor() + 1.0) * p.every_s;
        }
        let n = self.in_flight.len();
        let i = if n == 1 {
            0
        } else {
            match self.policy {
                RouterPolicy::RoundRobin => {
                    let i = self.next;
                    self.next = (self.next + 1) % n;
                    i
                }
                RouterPolicy::LeastLoaded => self.least_loaded(),
                RouterPolicy::PrefixAware => self.prefix_aware(prompt.block_hashes()),
                RouterPolicy::PowerOfTwo => {
                    self.next = self.next.wrapping_add(1);
                    self.power_of_two(self.next as u64)
                }
            }
        };
        if self.policy == RouterPolicy::PrefixAware {
            self.records[i].insert(prompt.block_hashes(), self.record_cap);
        }
        self.in_flight[i] += 1;
        i
    }

    /// A request sent to `replica` ended (finished, failed or given up on).
    pub fn done(&mut self, replica: usize) {
        if let Some(c) = self.in_flight.get_mut(replica) {
            *c = c.saturating_sub(1);
        }
    }

    fn least_loaded(&self) -> usize {
        (0..self.in_flight.len()).min_by_key(|&i| self.in_flight[i]).unwrap_or(0)
    }

    /// Two distinct replicas drawn uniformly from the `nth` request's
    /// bits; the one with fewer in flight (where polled: the lighter load at
    /// the last poll), the first drawn on a tie.
    fn power_of_two(&self, nth: u64) -> usize {
        let n = self.in_flight.len() as u64;
        let bits = splitmix64(nth ^ 0x706f_7765_725f_325f);
        // The second from the n − 1 others: distinct without redrawing.
        let a = (bits % n) as usize;
        let b = ((a as u64 + 1 + (bits >> 32) % (n - 1)) % n) as usize;
        let lighter = match &self.poll {
            Some(p) => p.loads[a] <= p.loads[b],
            None => self.in_flight[a] <= self.in_flight[b],
        };
        if lighter {
            a
        } else {
            b
        }
    }

    fn prefix_aware(&self, hashes: &[u64]) -> usize {
        let (min, max) =
            (self.in_flight.iter().copied().min().unwrap_or(0), self.in_flight.iter().copied().max().unwrap_or(0));
        if max - min > BALANCE_ABS_THRESHOLD && f64::from(max) > BALANCE_REL_THRESHOLD * f64::from(min) {
            return self.least_loaded();
        }
        let best = (0..self.records.len()).max_by(|&a, &b| {
            // The longest match; on a tie the lighter load, then the first.
            let key = |i: usize| (self.records[i].matched(hashes), std::cmp::Reverse(self.in_flight[i]));
            key(a).cmp(&key(b)).then(b.cmp(&a))
        });
        let best = best.unwrap_or(0);
        let share =
            if hashes.is_empty() { 0.0 } else { self.records[best].matched(hashes) as f64 / hashes.len() as f64 };
        if share > CACHE_THRESHOLD {
            return best;
        }
        // A miss: the least loaded, as the current routers take it.
        self.least_loaded()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(len: u32, shared: u32, seed: u64) -> Prompt {
        Prompt::synthetic(len, &[(7, shared)], seed, 16)
    }

    #[test]
    fn policies_parse_and_name_the_choices() {
        for p in RouterPolicy::ALL {
            assert_eq!(p.as_str().parse::<RouterPolicy>().unwrap(), p);
        }
        assert_eq!("cache_aware".parse::<RouterPolicy>().unwrap(), RouterPolicy::PrefixAware);
        assert_eq!("power_of_two".parse::<RouterPolicy>().unwrap(), RouterPolicy::PowerOfTwo);
        let err = "random".parse::<RouterPolicy>().unwrap_err().to_string();
        assert!(err.contains("round-robin") && err.contains("power-of-two"), "{err}");
    }

    /// Power-of-two is least-loaded between two replicas (a tie to either);
    /// among four it draws every pair, so it sometimes takes a busier
    /// replica than the idlest, but never the busier of the pair it drew:
    /// never the busiest of all.
    #[test]
    fn power_of_two_takes_the_lighter_of_two_drawn() {
        let p = prompt(64, 0, 1);
        let mut two = Router::new(RouterPolicy::PowerOfTwo, 2, 1000);
        let mut ties = [0; 2];
        for k in 0..200 {
            let before = two.in_flight.clone();
            let i = two.route(&p);
            match before[0].cmp(&before[1]) {
                std::cmp::Ordering::Equal => ties[i] += 1,
                lighter => assert_eq!(i, usize::from(lighter.is_gt()), "request {k}: {before:?}"),
            }
            if k % 3 == 0 {
                two.done(k % 2);
            }
        }
        assert!(ties[0] > 0 && ties[1] > 0, "a tie goes to the first drawn, either: {ties:?}");
        let mut four = Router::new(RouterPolicy::PowerOfTwo, 4, 1000);
        four.in_flight = vec![0, 5, 10, 15];
        let mut chosen = [0usize; 4];
        for _ in 0..1200 {
            chosen[four.route(&p)] += 1;
            four.in_flight = vec![0, 5, 10, 15];
        }
        // Of the six pairs, 3 hold replica 0, 2 replica 1 and not 0, 1 replica 2 and 3: 1/2, 1/3, 1/6, 0.
        assert_eq!(chosen[3], 0, "{chosen:?}");
        for (i, share) in [(0, 0.5), (1, 1.0 / 3.0), (2, 1.0 / 6.0)] {
            assert!((chosen[i] as f64 / 1200.0 - share).abs() < 0.05, "{chosen:?}");
        }
        // The draws repeat: a second router routes the same.
        let (mut a, mut b) =
            (Router::new(RouterPolicy::PowerOfTwo, 5, 1000), Router::new(RouterPolicy::PowerOfTwo, 5, 1000));
        assert!((0..100).all(|_| a.route(&p) == b.route(&p)));
    }

    /// With loads polled every 10 s, power-of-two between two replicas
    /// sends a whole interval's requests to the one lighter at its poll,
    /// and the next poll turns them to the other; before the first poll
    /// with traffic (all loads 0) each tie goes to the first drawn, either.
    /// Live counts alternate instead.
    #[test]
    fn polled_power_of_two_herds_between_polls() {
        let p = prompt(64, 0, 1);
        let mut polled = Router::new(RouterPolicy::PowerOfTwo, 2, 1000).polled(Some(10.0));
        // Requests every 0.5 s that never end: 20 an interval.
        let mut picks = Vec::new();
        // Each request holds 64 tokens: a poll's loads follow the counts.
        let route = |r: &mut Router, t: f64| {
            let held: Vec<u64> = r.in_flight().iter().map(|&c| 64 * u64::from(c)).collect();
            r.route_at(&p, t, |i| held[i])
        };
        for k in 0..60 {
            picks.push(route(&mut polled, k as f64 * 0.5));
        }
        let first = &picks[..20];
        assert!(first.contains(&0) && first.contains(&1), "ties in the first interval: {first:?}");
        // At 10 s the replica sent fewer is lighter: all of the next 20 go there.
        let lighter = |upto: usize| {
            let ones = picks[..upto].iter().filter(|&&i| i == 1).count();
            usize::from(ones < upto - ones)
        };
        let second = lighter(20);
        assert!(picks[20..40].iter().all(|&i| i == second), "{:?}", &picks[20..40]);
        // By 20 s it holds the more: the third interval's go to the other.
        let third = lighter(40);
        assert_ne!(third, second);
        assert!(picks[40..60].iter().all(|&i| i == third), "{:?}", &picks[40..60]);
        // Live counts keep the two within one of each other.
        let mut live = Router::new(RouterPolicy::PowerOfTwo, 2, 1000).polled(None);
        for k in 0..60 {
            route(&mut live, k as f64 * 0.5);
            let f = live.in_flight();
            assert!(f[0].abs_diff(f[1]) <= 1, "{f:?}");
        }
        // After 30 s of silence in which the busier replica's requests
        // ended, the poll at 60 s sees it the lighter, and every request
        // until the next poll (70 s) goes there, 20 of them past the other.
        let busier = usize::from(polled.in_flight()[1] > polled.in_flight()[0]);
        while polled.in_flight()[busier] > 0 {
            polled.done(busier);
        }
        assert!((0..40).all(|k| route(&mut polled, 60.0 + k as f64 * 0.25) == busier));
        assert!(polled.in_flight()[busier] > polled.in_flight()[1 - busier]);
        assert_eq!(route(&mut polled, 70.0), 1 - busier, "the poll at 70 s");
        // The loads are tokens, not requests: one long prompt outweighs
        // three short ones, and the next interval goes to the three.
        let mut tokens = Router::new(RouterPolicy::PowerOfTwo, 2, 1000).polled(Some(10.0));
        let held = [4096, 3 * 128];
        assert!((0..20).all(|k| tokens.route_at(&p, 10.0 + k as f64 * 0.1, |i| held[i]) == 1));
        // Another policy ignores a poll.
        let ll = Router::new(RouterPolicy::LeastLoaded, 2, 1000).polled(Some(10.0));
        assert!(ll.poll.is_none());
    }

    #[test]
    fn round_robin_takes_turns_and_least_loaded_fills_the_emptiest() {
        let p = prompt(64, 0, 1);
        let mut rr = Router::new(RouterPolicy::RoundRobin, 3, 1000);
        let got: Vec<usize> = (0..6).map(|_| rr.route(&p)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
        let mut ll = Router::new(RouterPolicy::LeastLoaded, 3, 1000);
        assert_eq!([ll.route(&p), ll.route(&p), ll.route(&p)], [0, 1, 2]);
        ll.done(1);
        assert_eq!(ll.route(&p), 1);
        assert_eq!(ll.in_flight(), &[1, 1, 1]);
    }

    #[test]
    fn prefix_aware_keeps_a_prefix_on_one_replica_until_the_load_tips() {
        let mut r = Router::new(RouterPolicy::PrefixAware, 2, 100_000);
        // Two prefixes: each lands on its own replica and stays there.
        let a: Vec<usize> = (0..10).map(|s| r.route(&Prompt::synthetic(1024, &[(1, 960)], s, 16))).collect();
        let b: Vec<usize> = (0..10).map(|s| r.route(&Prompt::synthetic(1024, &[(2, 960)], 100 + s, 16))).collect();
        assert!(a.iter().all(|&i| i == a[0]), "{a:?}");
        assert!(b.iter().all(|&i| i == b[0]) && b[0] != a[0], "{b:?}");
        // One prefix alone: it stays on its replica until that one holds 64
        // more than the other, then the load decides.
        let mut r = Router::new(RouterPolicy::PrefixAware, 2, 100_000);
        let picks: Vec<usize> = (0..100).map(|s| r.route(&Prompt::synthetic(1024, &[(1, 960)], s, 16))).collect();
        let first = picks[0];
        assert!(picks[..65].iter().all(|&i| i == first), "{picks:?}");
        assert!(picks[65..].contains(&(1 - first)), "{picks:?}");
        // A prompt no record covers past 30 % goes to the least-loaded
        // replica (vllm-router 0.1.17's rule and smg 1.13's), not the one
        // whose record is smallest (an older SGLang's): replica 0 has sent
        // ten prompts, all ended; replica 1 one, still in flight.
        let mut r = Router::new(RouterPolicy::PrefixAware, 2, 100_000);
        for s in 0..10 {
            assert_eq!(r.route(&Prompt::synthetic(1024, &[(1, 960)], s, 16)), 0);
            r.done(0);
        }
        assert_eq!(r.route(&Prompt::synthetic(1024, &[(2, 960)], 50, 16)), 0, "the least loaded, the first on a tie");
        r.done(0);
        r.in_flight[1] = 1;
        assert_eq!(r.route(&Prompt::synthetic(1024, &[(3, 960)], 60, 16)), 0, "a miss: the least loaded");
    }
}
