//! The load's rules, on no clock of their own: when each request (or
//! session) of a run is sent, which are warm-up, when sending ends, when a
//! session's next turn goes or is cut, how users join over a ramp-up and
//! change at their steps, and when the run's end cancels what is still in
//! flight. One [`Dispatcher`] is told that time advanced and that a user's
//! slot freed, and answers what to send now, and when it next needs waking.
//! Tokio's timers drive it in a live run (goodput-load's runner); the
//! simulated engine's event loop drives it in virtual time (goodput-sim), so
//! both apply the same rules. Times are durations since the run's origin.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

/// Send times from the run's origin, in order: an open loop's arrivals.
pub type Arrivals = Box<dyn Iterator<Item = Duration> + Send>;

/// How much load, and for how long: the rules a [`Dispatcher`] applies.
/// Units are requests, or with sessions whole sessions (their first turns go
/// as a lone request would; their later turns follow [`Dispatcher::turn_ended`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Measured units to send (warm-up not included); `None`: no count.
    pub requests: Option<u64>,
    /// Stop sending this long after the timed warm-up.
    pub duration: Option<Duration>,
    /// Units sent first and excluded from the window.
    pub warmup: u64,
    /// Or a warm-up by time: units due before it are warm-up, and the
    /// bounds count from its end. Zero: none.
    pub warmup_time: Duration,
    /// A closed loop's users (the whole run's): most units in flight at once.
    pub users: Option<usize>,
    /// Without arrivals, the users join one by one over this long (user k of
    /// c at k/c of it); an open loop's ramp is in its arrivals. Zero: all at once.
    pub ramp_up: Duration,
    /// From each `(at, users)` on, the cap is `users`: users who join send at
    /// once, users who leave take the slots that free first. In time order.
    pub user_steps: Vec<(Duration, usize)>,
    /// After a stop, or the end of sending by `duration`, what is still in
    /// flight is cancelled this much later; `None`: never.
    pub grace: Option<Duration>,
    /// This process sends one shard of the plan.
    pub shard: Option<Shard>,
}

/// Shard `index` of `count` processes that run one plan together, each its
/// share of the one schedule: an open loop's arrivals whose index ≡ `index`
/// (mod `count`); a closed loop's users `index`, `index + count`, … (slot
/// `i` is user `i mod c`'s, as if the users took turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Of `n` users (or slots) numbered 0…n−1, how many are this shard's
    /// (those ≡ `index` mod `count`).
    pub fn share(&self, n: u64) -> u64 {
        let (i, k) = (u64::from(self.index), u64::from(self.count));
        (n + k - 1 - i) / k
    }

    /// Whether slot `i` is this shard's: by arrival index in an open loop,
    /// by user (`i mod users`) in a closed loop of `users`.
    pub fn owns(&self, i: u64, closed_users: Option<u64>) -> bool {
        let k = u64::from(self.count);
        match closed_users {
            Some(c) => (i % c) % k == u64::from(self.index),
            None => i % k == u64::from(self.index),
        }
    }

    /// How many of slots 0…n−1 are this shard's.
    pub fn owned_below(&self, n: u64, closed_users: Option<u64>) -> u64 {
        match closed_users {
            Some(c) => n / c * self.share(c) + self.share(n % c),
            None => self.share(n),
        }
    }
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Send unit `unit` (a request, or a session's first turn): it was due at
    /// `scheduled` (its arrival; a closed loop's, the moment its slot freed)
    /// and goes at `sent` (its arrival or its slot, whichever is later).
    Send { unit: u64, scheduled: Duration, sent: Duration, warmup: bool },
    /// Send session `unit`'s next turn, due at `due`.
    Turn { unit: u64, due: Duration },
    /// The run's end: cancel whatever is still in flight.
    CancelAll { at: Duration },
}

/// The state machine of a run's sending (see the module's documentation).
pub struct Dispatcher {
    plan: Plan,
    arrivals: Option<Arrivals>,
    /// Units there are to send (a virtual load's requests); `None`: endless.
    limit: Option<u64>,
    ran_out: bool,
    closed_users: Option<u64>,
    end: Option<Duration>,
    stopped_at: Option<Duration>,
    cancelled: bool,
    /// The next unit to consider, and the next of this process's, with its arrival.
    next: u64,
    pending: Option<(u64, Option<Duration>)>,
    /// No more first sends.
    over: bool,
    /// Warm-up and measured units so far (other shards' included in `warm`).
    warm: u64,
    measured: u64,
    /// A closed loop's shard with a timed warm-up sends its users' share of
    /// the measured count (it cannot know which of the others' units are warm).
    quota: Option<u64>,
    capped: bool,
    /// When each slot free from the start opens (in order), then the times
    /// later slots freed (sorted).
    initial: Joins,
    freed: VecDeque<Duration>,
    /// User changes still to come, the users now, and slots owed to users who left.
    steps: VecDeque<(Duration, usize)>,
    users_now: usize,
    owed: usize,
    /// Sessions' next turns, by due time.
    follow: BinaryHeap<Reverse<(Duration, u64)>>,
}

/// The users who join a closed loop, in order, each at its share of the
/// ramp-up (user k of c at ramp · k / c), a shard's only (its users join
/// when they would in the whole run). Computed as taken, not stored: a cap
/// of a billion users costs nothing until they send.
#[derive(Debug, Clone)]
struct Joins {
    /// Users lo…hi−1 are still to join (those of the shard among them).
    lo: u64,
    hi: u64,
    users: u64,
    ramp: Duration,
    shard: Option<Shard>,
}

impl Joins {
    /// The first of this process's users at or after `k`.
    fn first_from(&self, k: u64) -> u64 {
        match self.shard {
            None => k,
            Some(s) => {
                let (i, n) = (u64::from(s.index), u64::from(s.count));
                k + (i + n - k % n) % n
            }
        }
    }

    /// The last of this process's users before `k`, if any.
    fn last_before(&self, k: u64) -> Option<u64> {
        let k = k.checked_sub(1)?;
        match self.shard {
            None => Some(k),
            Some(s) => {
                let (i, n) = (u64::from(s.index), u64::from(s.count));
                k.checked_sub((k % n + n - i) % n)
            }
        }
    }

    fn at(&self, k: u64) -> Duration {
        self.ramp.mul_f64(k as f64 / self.users as f64)
    }

    fn front(&self) -> Option<Duration> {
        let k = self.first_from(self.lo);
        (k < self.hi).then(|| self.at(k))
    }

    fn pop_front(&mut self) -> Option<Duration> {
        let k = self.first_from(self.lo);
        (k < self.hi).then(|| {
            self.lo = k + 1;
            self.at(k)
        })
    }

    fn pop_back(&mut self) -> Option<Duration> {
        let k = self.last_before(self.hi).filter(|&k| k >= self.lo)?;
        self.hi = k;
        Some(self.at(k))
    }
}

impl Dispatcher {
    /// A dispatcher of `plan`, with an open loop's `arrivals` (none: a closed
    /// loop, or with no users either a burst: every unit at once).
    pub fn new(plan: Plan, arrivals: Option<Arrivals>) -> Dispatcher {
        let closed_users = match (&arrivals, plan.users) {
            (None, Some(c)) => Some(c as u64),
            _ => None,
        };
        let quota = match (plan.shard, closed_users, plan.requests) {
            (Some(s), Some(c), Some(n)) if !plan.warmup_time.is_zero() => Some(s.owned_below(n, Some(c))),
            _ => None,
        };
        let users = plan.users.unwrap_or(0) as u64;
        let ramp = if arrivals.is_none() { plan.ramp_up } else { Duration::ZERO };
        let initial = Joins { lo: 0, hi: users, users, ramp, shard: plan.shard };
        let mut d = Dispatcher {
            end: plan.duration.map(|d| plan.warmup_time + d),
            capped: plan.users.is_some(),
            steps: plan.user_steps.iter().copied().collect(),
            users_now: plan.users.unwrap_or(0),
            plan,
            arrivals,
            limit: None,
            ran_out: false,
            closed_users,
            stopped_at: None,
            cancelled: false,
            next: 0,
            pending: None,
            over: false,
            warm: 0,
            measured: 0,
            quota,
            initial,
            freed: VecDeque::new(),
            owed: 0,
            follow: BinaryHeap::new(),
        };
        d.pull();
        d
    }

    /// No unit from `n` on is sent: there are `n` (a virtual load's requests).
    pub fn with_units(mut self, n: u64) -> Dispatcher {
        self.limit = Some(n);
        if self.pending.is_some_and(|(u, _)| u >= n) {
            self.pending = None;
            self.over = true;
            self.ran_out = true;
        }
        self
    }

    /// Whether the plan wanted more units than [`Self::with_units`] gave.
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// When what is still in flight is cancelled: a grace after a stop or
    /// the end of sending, whichever comes first.
    pub fn cancel_at(&self) -> Option<Duration> {
        let grace = self.plan.grace?;
        let from = match (self.stopped_at, self.end) {
            (Some(s), Some(e)) => s.min(e),
            (s, e) => s.or(e)?,
        };
        Some(from.saturating_add(grace))
    }

    /// Sending is over: no unit and no turn is still to go.
    pub fn finished(&self) -> bool {
        self.over && self.follow.is_empty()
    }

    /// Stops sending at `now` (a Ctrl-C): the sessions waiting for their next
    /// turn are cut there, their users free; those units are returned.
    pub fn stop(&mut self, now: Duration) -> Vec<u64> {
        if self.stopped_at.is_none() {
            self.stopped_at = Some(now);
        }
        self.over = true;
        self.pending = None;
        let cut: Vec<u64> = std::mem::take(&mut self.follow).into_iter().map(|Reverse((_, u))| u).collect();
        for _ in &cut {
            self.done(now);
        }
        cut
    }

    /// A unit is over at `at` (its request ended, or its session's last
    /// turn): its user's slot is free from then.
    pub fn done(&mut self, at: Duration) {
        if self.capped {
            // Slots free in time order; a give-up may come before a finish already told.
            let pos = self.freed.partition_point(|&t| t <= at);
            self.freed.insert(pos, at);
        }
    }

    /// Session `unit`'s turn ended at `at`, and its next is due at `due`:
    /// it is sent then ([`Action::Turn`]), its user's slot held meanwhile,
    /// unless sending is over by then: the session is cut, its slot free
    /// at `at`. Whether the turn will go.
    pub fn turn_ended(&mut self, unit: u64, at: Duration, due: Duration) -> bool {
        if self.stopped_at.is_some() || self.end.is_some_and(|end| due >= end) {
            self.done(at);
            return false;
        }
        self.follow.push(Reverse((due, unit)));
        true
    }

    /// The next thing to do at `now`, if any: call again until `None`.
    pub fn next_action(&mut self, now: Duration) -> Option<Action> {
        if let Some(at) = self.cancel_at().filter(|&t| t <= now && !self.cancelled) {
            self.cancelled = true;
            return Some(Action::CancelAll { at });
        }
        if let Some(&Reverse((due, unit))) = self.follow.peek().filter(|r| r.0 .0 <= now) {
            self.follow.pop();
            return Some(Action::Turn { unit, due });
        }
        self.step_users(now);
        if self.over {
            return None;
        }
        let (unit, arrival) = self.pending?;
        let Some(sent) = self.send_time() else {
            // Every user busy: sending ends with the end of sending all the same.
            if self.end.is_some_and(|e| now >= e) {
                self.end_sending();
            }
            return None;
        };
        if self.end.is_some_and(|e| sent >= e) {
            if self.end.is_some_and(|e| now >= e) {
                self.end_sending();
            }
            return None;
        }
        if sent > now {
            return None;
        }
        if self.capped {
            // The slot it took: a user joining, or one whose request ended,
            // whichever came first (a user that finished during a ramp-up
            // goes again then, not when the next user joins).
            match (self.initial.front(), self.freed.front()) {
                (Some(joins), Some(&freed)) if freed < joins => self.freed.pop_front(),
                (Some(_), _) => self.initial.pop_front(),
                (None, _) => self.freed.pop_front(),
            };
        }
        let scheduled = arrival.unwrap_or(sent);
        let warmup = unit < self.plan.warmup || scheduled < self.plan.warmup_time;
        self.warm += u64::from(warmup);
        self.measured += u64::from(!warmup);
        self.next = unit + 1;
        self.pending = None;
        self.pull();
        Some(Action::Send { unit, scheduled, sent, warmup })
    }

    /// When something is next due, if anything is: a send, a turn, a change
    /// of users, the end of sending or the run's cancel. Before then only a
    /// freed slot ([`Self::done`]) changes what is due.
    pub fn next_wake(&self) -> Option<Duration> {
        let send = match (self.over, self.pending) {
            (false, Some(_)) => match (self.send_time(), self.end) {
                (Some(s), Some(e)) => Some(s.min(e)),
                (s, e) => s.or(e),
            },
            _ => None,
        };
        let turn = self.follow.peek().map(|Reverse((t, _))| *t);
        let step = self.steps.front().map(|s| s.0);
        let cancel = self.cancel_at().filter(|_| !self.cancelled);
        [send, turn, step, cancel].into_iter().flatten().min()
    }

    fn end_sending(&mut self) {
        self.over = true;
        self.pending = None;
    }

    /// When the pending unit goes: its arrival, or its slot, whichever is
    /// later; `None` while every user is busy.
    fn send_time(&self) -> Option<Duration> {
        let (_, arrival) = self.pending?;
        let slot = match (self.capped, self.initial.front(), self.freed.front()) {
            (false, _, _) => Duration::ZERO,
            (true, Some(a), Some(&b)) => a.min(b),
            (true, Some(t), None) | (true, None, Some(&t)) => t,
            (true, None, None) => return None,
        };
        Some(arrival.unwrap_or_default().max(slot))
    }

    /// Finds the next unit this process sends, counting the others' towards
    /// the bounds as the one run counts them; or ends sending.
    fn pull(&mut self) {
        loop {
            let done = match self.quota {
                Some(q) => self.measured >= q,
                None => self.plan.requests.is_some_and(|n| self.next - self.warm >= n),
            };
            if done {
                return self.end_sending();
            }
            if self.limit.is_some_and(|n| self.next >= n) {
                self.ran_out = true;
                return self.end_sending();
            }
            let at = match self.arrivals.as_mut() {
                Some(a) => match a.next() {
                    // A trace ends; a rate's schedule does not.
                    None => return self.end_sending(),
                    Some(at) if self.end.is_some_and(|e| at >= e) => return self.end_sending(),
                    Some(at) => Some(at),
                },
                None => None,
            };
            let i = self.next;
            if self.plan.shard.is_none_or(|s| s.owns(i, self.closed_users)) {
                self.pending = Some((i, at));
                return;
            }
            self.warm += u64::from(i < self.plan.warmup || at.is_some_and(|at| at < self.plan.warmup_time));
            self.next += 1;
        }
    }

    /// Applies the changes of users due by `now`: users who join have a free
    /// slot at the change's time; users who leave take a slot free then, or
    /// the next ones to free.
    fn step_users(&mut self, now: Duration) {
        while let Some(&(at, to)) = self.steps.front().filter(|s| s.0 <= now) {
            self.steps.pop_front();
            for _ in self.users_now..to {
                if self.owed > 0 {
                    self.owed -= 1;
                } else {
                    let pos = self.freed.partition_point(|&t| t <= at);
                    self.freed.insert(pos, at);
                }
            }
            for _ in to..self.users_now {
                if self.initial.pop_back().is_none() {
                    if self.freed.front().is_some_and(|&t| t <= at) {
                        self.freed.pop_front();
                    } else {
                        self.owed += 1;
                    }
                }
            }
            self.users_now = to;
        }
        // Slots that free after users left are theirs.
        while self.owed > 0 && self.freed.front().is_some_and(|&t| t <= now) {
            self.freed.pop_front();
            self.owed -= 1;
        }
    }

    /// The units an open loop sends by its arrivals and bounds alone (no
    /// users to wait for), at most `most`: their send times, in order.
    pub fn uncapped_sends(plan: &Plan, arrivals: Arrivals, most: usize) -> Vec<Duration> {
        let plan = Plan { users: None, user_steps: Vec::new(), shard: None, ..plan.clone() };
        let mut d = Dispatcher::new(plan, Some(arrivals));
        let mut sends = Vec::new();
        while sends.len() < most {
            let Some(now) = d.next_wake() else { break };
            while sends.len() < most {
                let Some(a) = d.next_action(now) else { break };
                if let Action::Send { scheduled, .. } = a {
                    sends.push(scheduled);
                }
            }
            if d.finished() {
                break;
            }
        }
        sends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn joins_are_the_users_of_the_shard_in_order_and_cost_nothing_before() {
        // Users 0…6 over a 700 ms ramp-up; shard 1 of 3 has users 1 and 4.
        let shard = Some(Shard { index: 1, count: 3 });
        let mut j = Joins { lo: 0, hi: 7, users: 7, ramp: ms(700), shard };
        assert_eq!((j.front(), j.pop_front(), j.front()), (Some(ms(100)), Some(ms(100)), Some(ms(400))));
        assert_eq!(j.pop_back(), Some(ms(400)), "the last to join leaves first");
        assert_eq!((j.pop_front(), j.pop_back()), (None, None));
        let mut all = Joins { lo: 0, hi: 3, users: 3, ramp: Duration::ZERO, shard: None };
        assert_eq!(
            (all.pop_back(), all.pop_front(), all.pop_front(), all.pop_front()),
            (Some(ms(0)), Some(ms(0)), Some(ms(0)), None)
        );
        // A billion users: the first joins at once, the dispatcher holds no list.
        let plan = Plan { users: Some(1_000_000_000), requests: Some(20), ..Plan::default() };
        let sends = drive(Dispatcher::new(plan, None), ms(100));
        assert_eq!(sends.len(), 20);
        assert!(sends.iter().all(|s| s.2.is_zero()), "each of the 20 has a user of its own");
    }

    fn arrivals(times: &[u64]) -> Option<Arrivals> {
        Some(Box::new(times.iter().map(|&t| ms(t)).collect::<Vec<_>>().into_iter()))
    }

    /// Runs `d` on a clock of its own, every unit taking `service`: the
    /// sends as (unit, scheduled, sent, warm-up), in order.
    fn drive(mut d: Dispatcher, service: Duration) -> Vec<(u64, Duration, Duration, bool)> {
        let (mut now, mut ends, mut sends) = (Duration::ZERO, Vec::<Duration>::new(), Vec::new());
        loop {
            while let Some(a) = d.next_action(now) {
                if let Action::Send { unit, scheduled, sent, warmup } = a {
                    sends.push((unit, scheduled, sent, warmup));
                    ends.push(sent + service);
                }
            }
            ends.sort();
            let next_end = ends.first().copied();
            match [next_end, d.next_wake()].into_iter().flatten().min() {
                None => return sends,
                Some(t) if next_end == Some(t) => {
                    now = now.max(t);
                    ends.remove(0);
                    d.done(now);
                }
                Some(t) => now = now.max(t),
            }
            if d.finished() && ends.is_empty() {
                return sends;
            }
        }
    }

    #[test]
    fn a_closed_loop_sends_when_a_slot_frees_until_its_count() {
        let plan = Plan { requests: Some(5), users: Some(2), ..Plan::default() };
        let sends = drive(Dispatcher::new(plan, None), ms(100));
        let sent: Vec<Duration> = sends.iter().map(|s| s.2).collect();
        assert_eq!(sent, [0, 0, 100, 100, 200].map(ms));
        assert!(sends.iter().all(|s| s.1 == s.2 && !s.3), "due when its slot freed");
        assert_eq!(sends.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_capped_open_loop_sends_at_its_arrival_or_its_slot_whichever_is_later() {
        let plan = Plan { requests: Some(3), users: Some(1), ..Plan::default() };
        let sends = drive(Dispatcher::new(plan, arrivals(&[0, 100, 200, 300])), ms(250));
        let times: Vec<(Duration, Duration)> = sends.iter().map(|s| (s.1, s.2)).collect();
        assert_eq!(times, [(ms(0), ms(0)), (ms(100), ms(250)), (ms(200), ms(500))]);
    }

    #[test]
    fn warm_up_by_count_and_by_time_comes_first_and_the_bounds_count_after_it() {
        // Two warm-up units by count, then three measured.
        let plan = Plan { requests: Some(3), warmup: 2, users: Some(1), ..Plan::default() };
        let warm: Vec<bool> = drive(Dispatcher::new(plan, None), ms(100)).iter().map(|s| s.3).collect();
        assert_eq!(warm, [true, true, false, false, false]);
        // 10/s, 350 ms of warm-up then 500 ms of measured sending.
        let plan = Plan { duration: Some(ms(500)), warmup_time: ms(350), ..Plan::default() };
        let every = (0..100).map(|i| ms(100 * i)).collect::<Vec<_>>();
        let sends = drive(Dispatcher::new(plan, Some(Box::new(every.into_iter()))), ms(10));
        let warm: Vec<bool> = sends.iter().map(|s| s.3).collect();
        assert_eq!(warm, [true, true, true, true, false, false, false, false, false]);
        assert_eq!(sends.last().unwrap().1, ms(800));
        // A closed loop with a timed warm-up: its count is of measured units.
        let plan = Plan { requests: Some(3), warmup_time: ms(250), users: Some(1), ..Plan::default() };
        let sends = drive(Dispatcher::new(plan, None), ms(100));
        assert_eq!(sends.iter().map(|s| s.3).collect::<Vec<_>>(), [true, true, true, false, false, false]);
    }

    #[test]
    fn the_end_of_sending_ends_a_closed_loop_and_the_run_s_end_comes_a_grace_later() {
        let plan = Plan { duration: Some(ms(300)), users: Some(2), grace: Some(ms(200)), ..Plan::default() };
        let mut d = Dispatcher::new(plan, None);
        assert_eq!(d.cancel_at(), Some(ms(500)));
        let sends = drive(Dispatcher::new(d.plan.clone(), None), ms(120));
        assert!(sends.iter().all(|s| s.2 < ms(300)));
        assert_eq!(sends.len(), 6, "rounds of two at 0, 120 and 240 ms");
        // Every user busy at the end: sending ends at it, and the cancel comes.
        assert!(matches!(d.next_action(ms(0)), Some(Action::Send { .. })));
        assert!(matches!(d.next_action(ms(0)), Some(Action::Send { .. })));
        assert_eq!((d.next_action(ms(0)), d.next_wake()), (None, Some(ms(300))));
        assert_eq!(d.next_action(ms(300)), None);
        assert!(d.finished());
        assert_eq!(d.next_wake(), Some(ms(500)));
        assert_eq!(d.next_action(ms(500)), Some(Action::CancelAll { at: ms(500) }));
        assert_eq!(d.next_wake(), None);
        // A stop comes first: sending ends there, and the cancel a grace later;
        // a stop after the end of sending does not put the cancel off.
        let mut d = Dispatcher::new(Plan { grace: Some(ms(200)), users: Some(1), ..Plan::default() }, None);
        assert_eq!(d.cancel_at(), None);
        d.stop(ms(50));
        assert!(d.finished() && d.cancel_at() == Some(ms(250)));
        let mut d = Dispatcher::new(Plan { duration: Some(ms(10)), grace: Some(ms(5)), ..Plan::default() }, None);
        d.stop(ms(12));
        assert_eq!(d.cancel_at(), Some(ms(15)));
    }

    #[test]
    fn a_ramp_up_opens_the_users_one_by_one_and_shards_keep_their_users() {
        let plan = Plan { requests: Some(4), users: Some(4), ramp_up: ms(400), ..Plan::default() };
        let sent: Vec<Duration> = drive(Dispatcher::new(plan.clone(), None), ms(1000)).iter().map(|s| s.2).collect();
        assert_eq!(sent, [0, 100, 200, 300].map(ms));
        // Shard 1 of 3 holds user 1 alone, who joins at 100 ms; it sends the
        // units of user 1 (1, 5, …), and counts the others' towards the bound.
        let shard = Plan { requests: Some(8), shard: Some(Shard { index: 1, count: 3 }), ..plan };
        let sends = drive(Dispatcher::new(shard, None), ms(1000));
        assert_eq!(sends.iter().map(|s| (s.0, s.2)).collect::<Vec<_>>(), [(1, ms(100)), (5, ms(1100))]);
        // With arrivals the ramp is theirs: the users are there from the start.
        let plan = Plan { requests: Some(2), users: Some(2), ramp_up: ms(400), ..Plan::default() };
        let sent: Vec<Duration> =
            drive(Dispatcher::new(plan, arrivals(&[0, 0, 0])), ms(10)).iter().map(|s| s.2).collect();
        assert_eq!(sent, [ms(0), ms(0)]);
    }

    #[test]
    fn users_join_at_their_steps_and_leave_with_the_slots_that_free() {
        // 2 users, 4 from 250 ms, 1 from 450 ms; 100 ms units, until 700 ms.
        let plan = Plan {
            duration: Some(ms(700)),
            users: Some(2),
            user_steps: vec![(ms(250), 4), (ms(450), 1)],
            ..Plan::default()
        };
        let sends = drive(Dispatcher::new(plan, None), ms(100));
        let at = |t: u64| sends.iter().filter(|s| s.2 == ms(t)).count();
        assert_eq!([0, 100, 200, 250, 300, 350, 400, 450, 500, 600].map(at), [2, 2, 2, 2, 2, 2, 2, 0, 1, 1]);
        assert!(sends.iter().all(|s| s.2 < ms(700)));
    }

    #[test]
    fn a_session_s_next_turn_goes_when_due_unless_sending_ends_first() {
        let plan = Plan { duration: Some(ms(1000)), users: Some(1), ..Plan::default() };
        let mut d = Dispatcher::new(plan, None);
        assert!(matches!(d.next_action(ms(0)), Some(Action::Send { unit: 0, .. })));
        assert_eq!(d.next_action(ms(0)), None, "its user is busy");
        assert!(d.turn_ended(0, ms(100), ms(600)));
        assert_eq!(d.next_wake(), Some(ms(600)));
        assert_eq!(d.next_action(ms(600)), Some(Action::Turn { unit: 0, due: ms(600) }));
        // Due after the end of sending: the session is cut, its user free then.
        assert!(!d.turn_ended(0, ms(700), ms(1200)));
        assert!(matches!(d.next_action(ms(700)), Some(Action::Send { unit: 1, sent, .. }) if sent == ms(700)));
        // A stop cuts the sessions waiting for a turn.
        assert!(d.turn_ended(1, ms(800), ms(900)));
        assert_eq!(d.stop(ms(850)), [1]);
        assert!(d.finished() && d.next_action(ms(900)).is_none());
    }

    #[test]
    fn open_loop_shards_share_the_arrivals_and_a_limit_says_when_units_ran_out() {
        let plan = Plan { requests: Some(5), shard: Some(Shard { index: 0, count: 2 }), ..Plan::default() };
        let sends = drive(Dispatcher::new(plan, arrivals(&[0, 10, 20, 30, 40, 50, 60])), ms(1));
        assert_eq!(sends.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(), [(0, ms(0)), (2, ms(20)), (4, ms(40))]);
        let plan = Plan { requests: Some(5), users: Some(1), ..Plan::default() };
        let d = Dispatcher::new(plan.clone(), None).with_units(3);
        assert!(!d.ran_out());
        let mut d = Dispatcher::new(plan.clone(), None).with_units(1);
        assert!(d.next_action(ms(0)).is_some() && d.ran_out() && d.finished());
        assert!(!Dispatcher::new(plan, None).with_units(5).ran_out());
        // An open loop's sends by its arrivals and bounds alone.
        let plan = Plan { requests: Some(2), warmup_time: ms(15), users: Some(1), ..Plan::default() };
        assert_eq!(
            Dispatcher::uncapped_sends(&plan, arrivals(&[0, 10, 20, 30, 40]).unwrap(), 100),
            [0, 10, 20, 30].map(ms)
        );
        let every = Box::new(std::iter::repeat(Duration::ZERO));
        assert_eq!(Dispatcher::uncapped_sends(&Plan { duration: Some(ms(1)), ..Plan::default() }, every, 7).len(), 7);
    }
}
