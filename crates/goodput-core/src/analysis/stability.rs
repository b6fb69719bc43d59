//! Whether a run measured a steady state (docs/metrics.md, "Stability"):
//! did completions keep up with arrivals, did TTFT hold level, and was the
//! window more than the ramp-up and drain around the load. A pure function
//! of the records (and, where the server's queue gauge was scraped or the
//! simulated engine sampled its queue, of those samples), so that `report`
//! recomputes it as the live run drew it.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::doc::config::LoadConfig;
use crate::doc::record::{Outcome, RequestRecord};
use crate::doc::window::Window;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `summary.stability`: the verdict on a run's window and the figures it rests on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct Stability {
    /// True when the window measured the load's steady state: requests
    /// outstanding did not grow, TTFT held level, and the load was at its
    /// level for at least half the window.
    pub steady: bool,
    /// An open loop (a rate or a trace): arrivals do not wait for completions.
    pub open_loop: bool,
    /// Requests outstanding grew past the noise: the load is beyond what the
    /// server sustains, and a longer run only grows the backlog.
    pub overloaded: bool,
    /// The stretch the trends are judged over, on the run's clock: from
    /// twice the ramp-up (and at least a quarter of the measured sending
    /// time) to the last measured request's due time (with multi-turn
    /// sessions, to the last session's opening turn's: after it, users
    /// finish their sessions and the load drains away).
    pub judged_from_s: f64,
    pub judged_to_s: f64,
    /// Measured requests due per second over the judged stretch (open loop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Requests that succeeded per second over the judged stretch.
    pub achieved_rps: f64,
    /// Requests outstanding (due and not yet ended, waiting in the client
    /// included), their mean over the judged stretch and its growth: the
    /// least-squares slope, requests per second. A load the server keeps up
    /// with holds it level; one beyond it grows it by arrivals − completions.
    pub outstanding_mean: f64,
    pub outstanding_growth_per_s: f64,
    /// The trend of TTFT against send time over the judged stretch: the
    /// Theil–Sen slope (the median of the pairwise slopes), ms per second of
    /// the run; `ttft_trend_z` is the Mann–Kendall statistic of the same
    /// pairs (|z| > 3: a trend that chance rarely gives). Over the requests
    /// that succeeded and, in an open loop, those cut at the run's end after
    /// their first token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_trend_ms_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_trend_z: Option<f64>,
    /// The median TTFT over the judged stretch, for scale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_median_ms: Option<f64>,
    /// The share of the window spent ramping up (an open loop's median
    /// latency over its first tenth of requests, when no warm-up came
    /// before it) and draining
    /// (after the last measured request was sent, or with sessions the
    /// last session opened), 0..1.
    pub transient_share: f64,
    /// The growth of the server's own queue (its waiting-requests gauge,
    /// scraped, or the simulated engine's) over the judged stretch,
    /// requests per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_queue_growth_per_s: Option<f64>,
    /// The trend of TPOT (each request's mean time per output token after
    /// its first) against send time over the judged stretch, as TTFT's:
    /// a server whose decode slows (its KV cache filling, say) shows here
    /// before its completions fall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_trend_ms_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_trend_z: Option<f64>,
    /// More measured requests failed than succeeded: whatever the window's
    /// trends, it is not a steady state of serving the load.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// Why the run is not steady, in words, with the figures; absent when steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Outstanding requests growing by more than this share of the arrival
/// rate is a load beyond the server (completions fall 5% short of arrivals).
const GROWTH_SHARE: f64 = 0.05;
/// … provided the growth over the stretch stands out of the level's own
/// noise: more than this many standard deviations of a Poisson count of
/// the mean.
const GROWTH_NOISE: f64 = 2.0;
/// TTFT rising over the stretch by more than this share of its median
/// there, and by more than [`TTFT_RISE_MIN_MS`], with a Mann–Kendall z
/// above [`TREND_Z`], is a queue building up.
const TTFT_RISE_SHARE: f64 = 0.25;
const TTFT_RISE_MIN_MS: f64 = 25.0;
const TREND_Z: f64 = 3.0;
/// A closed loop whose completions in the last third of the judged
/// stretch fall more than this share below the first third's, by more
/// than [`RATE_NOISE`] standard deviations of the two counts (a Poisson
/// count's, widened by the latencies' coefficient of variation where it
/// is above 1), is a server slowing as the run goes on (its TTFT may hold
/// level while its decode slows). Wide, so that noise never trips it.
const RATE_FALL: f64 = 0.2;
const RATE_NOISE: f64 = 3.0;
/// A latency's trend is judged only when the sends it is fitted over span
/// at least this share of the judged stretch.
const TREND_SPAN: f64 = 0.5;
/// A window more than this share ramp-up and drain is not a steady measurement.
const TRANSIENT_MAX: f64 = 0.5;
/// The judged stretch starts this many ramps after the first request.
const SETTLE: f64 = 2.0;
/// Fewer measured requests than this are too few to judge.
const MIN_REQUESTS: usize = 10;
/// A closed loop whose users sent fewer measured requests than this each
/// is too short to judge: its window is mostly their first requests.
const MIN_REQUESTS_PER_USER: f64 = 2.0;
/// Points of the outstanding count sampled over the stretch.
const SAMPLES: usize = 64;
/// The Theil–Sen slope is taken over at most this many requests, evenly
/// picked (the pairs grow as the square).
const TREND_POINTS: usize = 400;

/// Whether a window is too short to measure a rate at all, whatever the
/// server did: mostly ramp-up and drain, too few measured requests, or a
/// closed loop of fewer than [`MIN_REQUESTS_PER_USER`] a user. (An
/// overloaded server, or TTFT climbing, is a finding about the load, not
/// about the window: a sweep's knee takes such points.)
pub fn too_short(transient_share: f64, measured: u64, closed_loop_users: Option<u64>) -> bool {
    transient_share > TRANSIENT_MAX
        || measured < MIN_REQUESTS as u64
        || closed_loop_users.is_some_and(|u| few_per_user(measured, u))
}

/// Whether more of a window's measured requests failed than succeeded:
/// its verdict is then that it failed, not a steady state (nor a window
/// too short: a longer run of a failing load fails as much).
pub fn mostly_failed(failed: u64, succeeded: u64) -> bool {
    failed > succeeded
}

/// Whether `measured` requests are fewer than [`MIN_REQUESTS_PER_USER`] for
/// each of a closed loop's `users` (more than one).
fn few_per_user(measured: u64, users: u64) -> bool {
    users > 1 && (measured as f64) < MIN_REQUESTS_PER_USER * users as f64
}

/// What a verdict's words name of the command around the window: the flag
/// that caps its requests in flight, and what ran before it.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeContext {
    /// The flag a held-back verdict names as the cap on requests in flight
    /// (and as the fix): [`CAP_FLAG`], bench's and estimate's, or sweep's
    /// `--max-concurrency`.
    pub cap_flag: &'static str,
    /// What ran before the window, named where the window still drained
    /// the backlog it left: a `--stages` stage's "the stage before it (120
    /// req/s for 20 s)". None: "a backlog left before the window".
    pub before: Option<String>,
}

impl Default for JudgeContext {
    fn default() -> Self {
        JudgeContext { cap_flag: CAP_FLAG, before: None }
    }
}

/// Judges the window of a run's `records`; `None` when no measured request
/// succeeded. `load` (the config's) tells an open loop from a closed one;
/// `ctx` gives the words the verdict names the command's cap and what ran
/// before the window by.
pub fn judge(
    records: &[RequestRecord],
    window: &Window,
    load: Option<&LoadConfig>,
    ctx: &JudgeContext,
) -> Option<Stability> {
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.outcome.is_success()).collect();
    if ok.is_empty() {
        return None;
    }
    // `--rate inf -c N` sends every request at once, N in flight: a closed
    // loop of N, each request due when a slot frees (its send), not at the
    // start where its schedule puts it (every window had read as ramp-up
    // and drain, and every send as held back by the cap).
    let unbounded = load.and_then(|l| l.rate).is_some_and(|r| r.is_unbounded());
    let open_loop = !unbounded && load.is_some_and(|l| l.rate.is_some() || l.trace.is_some());
    let due: fn(&RequestRecord) -> Duration = if unbounded { |r| r.sent } else { |r| r.scheduled };
    let secs = |d: Duration| d.as_secs_f64();
    let a = measured.iter().map(|r| secs(due(r))).fold(f64::INFINITY, f64::min);
    // With multi-turn sessions the load is at its level until the last
    // session opens: after it, users finish their sessions and leave (a
    // closed loop's) or no session arrives to take their place (an open
    // loop's), and the requests due then are the load draining away.
    let last_opened = measured
        .iter()
        .filter(|r| r.session.is_some_and(|t| t.turn <= 1))
        .map(|r| secs(due(r)))
        .fold(f64::NEG_INFINITY, f64::max);
    let b = if measured.iter().any(|r| r.session.is_some()) {
        last_opened.max(a)
    } else {
        measured.iter().map(|r| secs(due(r))).fold(f64::NEG_INFINITY, f64::max)
    };
    let span = (b - a).max(0.0);
    // An open loop fills over about a request's latency, taken from the
    // first tenth of the measured requests (those that found the server
    // still filling: later ones wait longer past capacity); a warm-up
    // before the window, or a closed loop's users all starting at once,
    // leave no ramp inside it.
    let warmed = records.iter().any(|r| r.warmup);
    let ramp = if open_loop && !warmed { early_latency(&ok) } else { 0.0 };
    let at_level = (b - (a + ramp)).clamp(0.0, window.duration_s);
    let transient_share = if window.duration_s > 0.0 { 1.0 - at_level / window.duration_s } else { 1.0 };

    // The stretch judged: from twice the ramp (the level settles after
    // it fills), and at least a quarter of the sending time, to the end
    // of sending. Where that leaves less than half of the sending time,
    // the stretch is the second half all the same, but the outstanding
    // count still climbs there as the load fills: its growth is not
    // judged (TTFT's is).
    let start = a + (SETTLE * ramp).max(span / 4.0);
    let filled = start <= a + span / 2.0;
    let (j0, j1) = (if filled { start } else { a + span / 2.0 }, b);
    let len = (j1 - j0).max(0.0);
    let in_stretch = |t: f64| t >= j0 && t <= j1;
    let per_s = |n: usize| if len > 0.0 { n as f64 / len } else { 0.0 };
    let arrivals = measured.iter().filter(|r| in_stretch(secs(due(r)))).count();
    let completions = ok.iter().filter(|r| in_stretch(secs(r.end))).count();
    let offered_rps = open_loop.then(|| per_s(arrivals));
    let achieved_rps = per_s(completions);

    let (outstanding_mean, outstanding_growth_per_s) = outstanding(records, j0, j1, due);
    // TTFT over the stretch's sends that succeeded and, in an open loop,
    // those cut at the run's end after their first token (its TTFT was
    // measured): the sends of an overloaded open loop's later stretch are
    // all cut there, their first tokens late from the queue, and a trend
    // over the successful sends alone had stopped short of them, too short
    // to judge (a load of 100 req/s on a server of 72 had read as steady).
    let cut = cut_at_end(&measured);
    let trend_set: Vec<(f64, f64)> = measured
        .iter()
        .filter(|r| r.outcome.is_success() || (open_loop && cut(r)))
        .filter(|r| in_stretch(secs(due(r))))
        .filter_map(|r| Some((secs(r.sent), ms(r.ttft()?))))
        .collect();
    let trend = theil_sen(&trend_set);
    let ttft_median_ms = median(trend_set.iter().map(|p| p.1));
    let tpot_set: Vec<(f64, f64)> =
        ok.iter().filter(|r| in_stretch(secs(due(r)))).filter_map(|r| Some((secs(r.sent), ms(r.tpot()?)))).collect();
    let tpot_trend = theil_sen(&tpot_set);
    let tpot_median_ms = median(tpot_set.iter().map(|p| p.1));
    // A trend is told (and judged) over the send times it was fitted to:
    // the slope times the stretch had read a rise of 33 s over sends 21 ms
    // apart whose TTFTs stayed under 1 s.
    let (ttft_seen, tpot_seen) = (sent_span(&trend_set), sent_span(&tpot_set));

    let mut s = Stability {
        steady: false,
        open_loop,
        overloaded: false,
        judged_from_s: j0,
        judged_to_s: j1,
        offered_rps,
        achieved_rps,
        outstanding_mean,
        outstanding_growth_per_s,
        ttft_trend_ms_per_s: trend.map(|t| t.0),
        ttft_trend_z: trend.map(|t| t.1),
        ttft_median_ms,
        transient_share,
        server_queue_growth_per_s: None,
        tpot_trend_ms_per_s: tpot_trend.map(|t| t.0),
        tpot_trend_z: tpot_trend.map(|t| t.1),
        failed: false,
        reason: None,
    };
    let mut why = Vec::new();
    // An open loop whose cap on requests in flight held most of its sends
    // back ran as a closed loop of the cap's size: the reasons below (a
    // window of ramp-up and drain, requests piling up) are the client's
    // queue, and their fixes (more requests) were the wrong ones.
    let held = load.filter(|_| open_loop).and_then(|l| l.concurrency).and_then(|c| cap_held(&measured, c));
    if let Some((cap, share)) = held {
        // Over the window: the stretch judged runs over the schedule's due
        // times, which the held sends left long before.
        let rps = if window.duration_s > 0.0 { ok.len() as f64 / window.duration_s } else { 0.0 };
        let flag = ctx.cap_flag;
        why.push(format!(
            "the {flag} {cap} cap on requests in flight held back {:.0}% of the sends (each waited for a request to \
             end), so the server saw at most {cap} at a time at {rps:.1} req/s, not the schedule: raise {flag} \
             until it no longer binds, or lower the rate to what {cap} in flight keep up with",
            100.0 * share
        ));
    }
    // A load whose requests mostly fail is not served, however level its
    // trends: the few that succeed are no steady state of serving it.
    let failed = measured.iter().filter(|r| r.outcome.failure_kind().is_some()).count();
    if mostly_failed(failed as u64, ok.len() as u64) {
        s.failed = true;
        why.push(format!(
            "failed: {failed} of the {} measured requests failed ({:.2}%) and {} succeeded, so the server did not \
             serve this load; see the errors it gave (errors_by_kind), and mend the server or lower the load",
            measured.len(),
            100.0 * failed as f64 / measured.len() as f64,
            ok.len()
        ));
    }
    if measured.len() < MIN_REQUESTS {
        why.push(format!("{} measured requests are too few to judge a steady state", measured.len()));
    }
    // A closed loop's users start together: with about one request each,
    // the window is their first requests and the few sent after them, and
    // its rate that of a fixed number of requests, not of the loop (a sweep
    // of 64 requests at 40 to 58 users had read one flat throughput as
    // saturation, and called those points steady).
    if let Some(users) = load.filter(|_| !open_loop).and_then(|l| l.concurrency) {
        if few_per_user(measured.len() as u64, users) {
            let each = measured.len() as f64 / users as f64;
            why.push(format!(
                "{} measured requests over {users} users is {each:.1} a user: the window holds little more than \
                 their first requests, sent together; measure at least {} requests (more --requests, or a \
                 longer --duration)",
                measured.len(),
                (MIN_REQUESTS_PER_USER * users as f64).ceil()
            ));
        }
    }
    let rate = offered_rps.unwrap_or(achieved_rps).max(achieved_rps);
    // A level past the noise: by more than GROWTH_SHARE of the rate, and
    // over `over` s by more than GROWTH_NOISE Poisson deviations of `mean`.
    let past_noise =
        |g: f64, over: f64, mean: f64| g > GROWTH_SHARE * rate && g * over > GROWTH_NOISE * mean.max(1.0).sqrt();
    // A trend of `(slope, z)` fitted over sends `over` s apart that chance
    // rarely gives and that moved by more than `floor` ms and a quarter of
    // `med` over them. Sends over less than [`TREND_SPAN`] of the stretch
    // (a closed loop's users sending together as a batch ends) are not a
    // trend over the run: their latencies differ by their order in the
    // batch, not by when in the run they were sent.
    // An open loop's TTFT seen over less of the stretch because its later
    // sends there were all cut at the run's end before their first token:
    // the queue outlasted the run, which censored the trend; it is no
    // batch of sends close together, so it is judged over what was seen.
    let last_seen = trend_set.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let mut unseen = measured.iter().filter(|r| in_stretch(secs(due(r))) && secs(r.sent) > last_seen).peekable();
    let censored = open_loop && unseen.peek().is_some() && unseen.all(|r| cut(r) && r.ttft().is_none());
    let trends = |t: Option<(f64, f64)>, over: f64, med: Option<f64>, floor: f64, sign: f64, whole: bool| {
        (over >= TREND_SPAN * len || !whole)
            && matches!((t, med), (Some((slope, z)), Some(med))
                if sign * z > TREND_Z && sign * slope * over > floor.max(TTFT_RISE_SHARE * med))
    };
    let ttft_rises = trends(trend, ttft_seen, ttft_median_ms, TTFT_RISE_MIN_MS, 1.0, !censored);
    // TPOT only in a closed loop: an open loop's slowing server grows its
    // backlog (above), and its batch widening with the queue's slow swings
    // near capacity lifts TPOT without the load changing.
    let tpot_rises = !open_loop && trends(tpot_trend, tpot_seen, tpot_median_ms, 0.0, 1.0, true);
    // The same over the stretch's later half: a server still filling when
    // the window began (a warm-up too short for its first requests to end)
    // grows its backlog and latency in the first half and holds them level
    // in the second, where a load beyond it keeps growing them.
    let mid = j0 + len / 2.0;
    let (late_mean, late_growth) = outstanding(records, mid, j1, due);
    // (A latency's trend there need only be one chance rarely gives: the
    // whole stretch's rise already passed the size test.)
    let late_rises = |set: &[(f64, f64)]| {
        let late: Vec<(f64, f64)> = set.iter().copied().filter(|p| p.0 >= mid).collect();
        theil_sen(&late).is_some_and(|(_, z)| z > TREND_Z)
    };
    // Requests outstanding still climb over a stretch too early to have
    // filled, and their growth is judged only where an open loop's TTFT
    // rose over the stretch and kept rising over its later half: a load
    // still filling levels its latency as it fills, one beyond the server
    // queues ever longer (100 req/s on a server of 72, whose first
    // requests took 11 s each, had not been judged at all).
    // (A trend the run's end censored is judged rising to the end: its
    // later half holds few sends, or none, that had a first token.)
    let queueing = open_loop && ttft_rises && (censored || late_rises(&trend_set));
    let grows = (filled || queueing) && past_noise(outstanding_growth_per_s, len, outstanding_mean);
    let still = past_noise(late_growth, len / 2.0, late_mean)
        || (ttft_rises && late_rises(&trend_set))
        || (tpot_rises && late_rises(&tpot_set));
    // Only after a warm-up: without one, the stretch already starts two
    // ramps in (an open loop's) or at a quarter of the sending time. And
    // only where the climb slowed: the count grew faster over the first
    // half than over the second, by more than the same noise (a load
    // beyond the server grows it as fast in both).
    let (_, early_growth) = outstanding(records, j0, mid, due);
    let slowed = !grows || (early_growth - late_growth) * len / 2.0 > GROWTH_NOISE * outstanding_mean.max(1.0).sqrt();
    let startup = warmed && filled && held.is_none() && (grows || ttft_rises || tpot_rises) && !still && slowed;
    s.overloaded = grows && !startup;
    if startup {
        // The warm-up should have run to where the level settled: the
        // stretch's middle, on the run's clock from the first request due.
        let first = records.iter().map(|r| secs(due(r))).fold(f64::INFINITY, f64::min);
        let what: Vec<&str> = [(grows, "requests outstanding"), (ttft_rises, "TTFT"), (tpot_rises, "TPOT")]
            .into_iter()
            .filter_map(|(b, w)| b.then_some(w))
            .collect();
        why.push(format!(
            "still in its start-up transient, not overloaded: {} climbed over the first half of the {len:.0} s \
             judged and held level over the second ({late_growth:+.1} requests outstanding a second there), so \
             the server was still filling when the window began; {} (at least {:.0} s), or more requests",
            what.join(" and "),
            if warmed { "the warm-up was too short: pass a longer --warmup" } else { "pass a --warmup" },
            (mid - first).ceil()
        ));
    }
    if s.overloaded && held.is_none() {
        why.push(match offered_rps {
            Some(o) => format!(
                "arrivals {o:.1} req/s, completions {achieved_rps:.1} req/s: {outstanding_growth_per_s:.1} more \
                 requests outstanding every second"
            ),
            None => format!("{outstanding_growth_per_s:.1} more requests outstanding every second"),
        });
    }
    if let (Some((slope, _)), Some(med), false) = (trend, ttft_median_ms, startup) {
        if ttft_rises {
            let rise = slope * ttft_seen;
            why.push(format!(
                "TTFT rose {} ms per second of the run, {rise:.0} ms over the {} s of sends judged (median {med:.0} \
                 ms)",
                figure(slope),
                figure(ttft_seen)
            ));
        }
    }
    // A server whose decode slows (its KV cache filling, preempting) shows
    // in TPOT first, in a window too short for its completions to fall.
    if let (Some((slope, _)), Some(med), false) = (tpot_trend, tpot_median_ms, startup) {
        if tpot_rises {
            why.push(format!(
                "TPOT rose {} ms per second of the run, {:.1} ms over the {} s of sends judged (median {med:.1} \
                 ms): the server's decode slowed as the run went on",
                figure(slope),
                slope * tpot_seen,
                figure(tpot_seen)
            ));
        }
    }
    // A backlog left before the window (by a heavier load before it: a
    // sweep's stage before this one, or the warm-up's first wave) still
    // draining: requests outstanding and TTFT fall past the noise. The
    // window measured that backlog clearing, not its own load.
    // Only after a warm-up (or a stage before): without one, nothing came
    // before the window, and a fall is a queue's swing. Both must fall
    // where TTFT was measured; a closed loop's count holds at its users, so
    // there TTFT alone tells.
    let drains = filled && held.is_none() && past_noise(-outstanding_growth_per_s, len, outstanding_mean);
    let ttft_falls = trends(trend, ttft_seen, ttft_median_ms, TTFT_RISE_MIN_MS, -1.0, true);
    let draining = warmed && ((drains && (ttft_falls || trend.is_none())) || (!open_loop && ttft_falls));
    if draining {
        let mut figs = Vec::new();
        if drains {
            figs.push(format!("requests outstanding fell {:.1} a second", -outstanding_growth_per_s));
        }
        if let (true, Some((slope, _))) = (ttft_falls, trend) {
            figs.push(format!(
                "TTFT fell {} ms per second of the run ({:.0} ms over its {} s of sends)",
                figure(-slope),
                -slope * ttft_seen,
                figure(ttft_seen)
            ));
        }
        let left = match &ctx.before {
            Some(before) => format!("the backlog {before} left"),
            None => "a backlog left before the window".to_string(),
        };
        why.push(format!(
            "draining {left}: {} over the {len:.0} s judged, so it measured that backlog clearing, not this load; \
             let it drain first (a longer --warmup, or a longer stage)",
            figs.join(" and ")
        ));
    }
    // A closed loop's arrivals follow its completions, so its backlog never
    // grows: a server that slows is seen in its completion rate alone.
    if !open_loop && len > 0.0 {
        let third = len / 3.0;
        let ends = |lo: f64, hi: f64| ok.iter().filter(|r| secs(r.end) >= lo && secs(r.end) < hi).count() as f64;
        let (first, last) = (ends(j0, j0 + third), ends(j1 - third, j1));
        // Fewer requests outstanding (users leaving, or thinking longer)
        // complete fewer at the same latency: the server slowed only where
        // completions fell short of what the count left would complete.
        let (first_out, _) = outstanding(records, j0, j0 + third, due);
        let (last_out, _) = outstanding(records, j1 - third, j1, due);
        let kept = if first_out > 0.0 { (last_out / first_out).clamp(0.0, 1.0) } else { 1.0 };
        let expected = first * kept;
        // A renewal process's count varies as CV² times its mean: the
        // latencies' CV widens the Poisson bound where it is above 1.
        let lat: Vec<f64> =
            ok.iter().filter(|r| in_stretch(secs(r.sent))).map(|r| secs(r.end.saturating_sub(r.sent))).collect();
        let n = lat.len().max(1) as f64;
        let mean = lat.iter().sum::<f64>() / n;
        let cv2 =
            if mean > 0.0 { lat.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n / (mean * mean) } else { 0.0 };
        // Completions that come in waves (a closed loop's users sent
        // together end together, batch after batch) are counted in whole
        // waves: a third holds two waves or one by where its edges fall,
        // and the count's variance is the waves' count's times their size.
        let ends: Vec<f64> = ok.iter().map(|r| secs(r.end)).filter(|&t| in_stretch(t)).collect();
        let waves = clustering(ends, tpot_median_ms.map(|t| t / 1e3), len);
        if expected >= MIN_REQUESTS as f64
            && last < (1.0 - RATE_FALL) * expected
            && expected - last > RATE_NOISE * ((expected + last) * cv2.max(1.0) * waves).sqrt()
        {
            why.push(format!(
                "completions fell {:.0}% over the {len:.0} s judged ({:.1} req/s in its first third, {:.1} in its \
                 last): the server slowed as the run went on",
                100.0 * (1.0 - last / first),
                first / third,
                last / third
            ));
        }
    }
    if transient_share > TRANSIENT_MAX && held.is_none() {
        why.push(format!(
            "mostly ramp-up and drain: the load was at its level for {at_level:.1} s of the {:.1} s window \
             ({:.0}%); give more requests (--requests) or a longer --duration",
            window.duration_s,
            100.0 * (1.0 - transient_share)
        ));
    }
    s.steady = why.is_empty();
    s.reason = (!why.is_empty()).then(|| why.join("; "));
    Some(s)
}

/// How much more a count of `ends` (times, s, over a stretch `len` s long)
/// varies than a Poisson count of the same mean because they come in
/// clusters: ends within `within` s of the one before are one event (half a
/// decode step, where `step` s is known; at most a quarter of the mean gap
/// between ends), and a count of clusters of sizes S varies as its mean
/// times E[S²]/E[S] (a compound Poisson count). Ends at independent times
/// join by chance too, in runs whose E[S²]/E[S] is (1 + p)/(1 − p), p = 1 −
/// e^(−within / mean gap), at most 1.6: the result is the excess over that,
/// at least 1. A closed loop of 256 users in lockstep, whose completions
/// came in waves of about 256, gives over 100; independent users about 1.
fn clustering(mut ends: Vec<f64>, step: Option<f64>, len: f64) -> f64 {
    if ends.len() < 2 || len <= 0.0 {
        return 1.0;
    }
    let n = ends.len() as f64;
    let gap = len / n;
    let within = step.filter(|&s| s > 0.0).map_or(0.25 * gap, |s| (s / 2.0).min(0.25 * gap));
    crate::analysis::stats::sort_total(&mut ends);
    let (mut sum_sq, mut size) = (0.0, 1.0);
    for w in ends.windows(2) {
        if w[1] - w[0] <= within {
            size += 1.0;
        } else {
            sum_sq += size * size;
            size = 1.0;
        }
    }
    sum_sq += size * size;
    let p = 1.0 - (-within / gap).exp();
    let chance = (1.0 + p) / (1.0 - p);
    (sum_sq / n / chance).max(1.0)
}

/// The verdict on a window in which no measured request succeeded (every
/// one failed or was cancelled, or the run was cut before its window): not
/// steady, with nothing measured, so its window counts as all transient.
/// [`judge`] gives `None` there; a sweep marks such a point with this.
pub fn no_completions(sent: u64, failed: u64, cancelled: u64, open_loop: bool) -> Stability {
    let reason = if sent == 0 {
        "no completed requests: none was measured (the point was cut short before its window)".to_string()
    } else {
        format!("no completed requests: of {sent} measured, {failed} failed and {cancelled} were cancelled")
    };
    Stability { steady: false, open_loop, transient_share: 1.0, reason: Some(reason), ..Stability::default() }
}

/// The flag a held-back verdict names as the cap on requests in flight
/// where its [`JudgeContext`] names no other: bench's and estimate's.
pub const CAP_FLAG: &str = "-c";

/// Sends later than their schedule by more than this were held back (by a
/// cap, or a client behind): a timer's lateness is well under it.
const HELD_S: f64 = 0.010;
/// The cap binds when at least this share of the sends was held back.
const HELD_SHARE: f64 = 0.5;

/// `(cap, share of the sends held back)` when an open loop's cap of `cap`
/// requests in flight bound it: most sends left more than [`HELD_S`] after
/// their schedule, and the requests in flight reached the cap (a client
/// too slow to send on time holds sends back too, below its cap: that is
/// the client-bottleneck diagnosis, not this).
fn cap_held(measured: &[&RequestRecord], cap: u64) -> Option<(u64, f64)> {
    if measured.is_empty() {
        return None;
    }
    let late = measured.iter().filter(|r| r.sent.saturating_sub(r.scheduled).as_secs_f64() > HELD_S).count();
    let share = late as f64 / measured.len() as f64;
    if share < HELD_SHARE {
        return None;
    }
    // The most in flight at once: ends before sends at the same instant.
    let mut edges: Vec<(Duration, i64)> =
        measured.iter().flat_map(|r| [(r.sent, 1), (r.end.max(r.sent), -1)]).collect();
    edges.sort_unstable();
    let peak = edges.iter().scan(0i64, |n, e| {
        *n += e.1;
        Some(*n)
    });
    (i64::try_from(cap).is_ok_and(|cap| peak.max().unwrap_or(0) >= cap)).then_some((cap, share))
}

/// Sets the growth of the server's queue from `(t_s, waiting)` samples over
/// the judged stretch (at least three inside it), and names it in the
/// reason of an unsteady run.
pub fn with_server_queue(s: &mut Stability, samples: impl Iterator<Item = (f64, f64)>) {
    let inside: Vec<(f64, f64)> = samples.filter(|(t, _)| *t >= s.judged_from_s && *t <= s.judged_to_s).collect();
    if inside.len() < 3 {
        return;
    }
    let Some(g) = least_squares(&inside) else { return };
    s.server_queue_growth_per_s = Some(g);
    let noted = s.reason.as_deref().is_some_and(|r| r.contains("server's queue"));
    if let (false, false, true) = (s.steady, noted, g > 0.0) {
        let mean = inside.iter().map(|p| p.1).sum::<f64>() / inside.len() as f64;
        if g * (s.judged_to_s - s.judged_from_s) > GROWTH_NOISE * mean.max(1.0).sqrt() {
            // Beside the load's figures, before the ramp-up and drain's.
            let r = s.reason.get_or_insert_with(String::new);
            let clause = format!("the server's queue grew {g:.1} requests per second");
            *r = match r.find("mostly ramp-up and drain") {
                Some(0) => format!("{clause}; {r}"),
                Some(i) => format!("{}; {clause}; {}", r[..i].trim_end_matches("; "), &r[i..]),
                None => format!("{r}; {clause}"),
            };
        }
    }
}

/// The mean and least-squares slope of requests outstanding (due, not yet
/// ended; warm-up included, as it loads the server too) over `[j0, j1]`.
fn outstanding(records: &[RequestRecord], j0: f64, j1: f64, due_at: fn(&RequestRecord) -> Duration) -> (f64, f64) {
    let mut due: Vec<f64> = records.iter().map(|r| due_at(r).as_secs_f64()).collect();
    let mut ended: Vec<f64> = records.iter().map(|r| r.end.max(due_at(r)).as_secs_f64()).collect();
    crate::analysis::stats::sort_total(&mut due);
    crate::analysis::stats::sort_total(&mut ended);
    let at = |t: f64| due.partition_point(|&x| x <= t) as f64 - ended.partition_point(|&x| x <= t) as f64;
    if j1 <= j0 {
        return (at(j0), 0.0);
    }
    let pts: Vec<(f64, f64)> = (0..SAMPLES)
        .map(|i| {
            let t = j0 + (j1 - j0) * (i as f64 + 0.5) / SAMPLES as f64;
            (t, at(t))
        })
        .collect();
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    (mean, least_squares(&pts).unwrap_or(0.0))
}

fn least_squares(pts: &[(f64, f64)]) -> Option<f64> {
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The Theil–Sen slope of `(x, y)` points and the Mann–Kendall z of the
/// same pairs, over at most [`TREND_POINTS`] of them picked evenly; `None`
/// with fewer than 3 points or no spread in x.
pub fn theil_sen(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = if pts.len() > TREND_POINTS {
        (0..TREND_POINTS).map(|i| pts[i * pts.len() / TREND_POINTS]).collect()
    } else {
        pts.to_vec()
    };
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    if pts.len() < 3 {
        return None;
    }
    let mut slopes = Vec::with_capacity(pts.len() * (pts.len() - 1) / 2);
    let mut s = 0i64;
    for (i, p) in pts.iter().enumerate() {
        for q in &pts[i + 1..] {
            s += match (q.1 - p.1).partial_cmp(&0.0) {
                Some(std::cmp::Ordering::Greater) if q.0 > p.0 => 1,
                Some(std::cmp::Ordering::Less) if q.0 > p.0 => -1,
                _ => 0,
            };
            if q.0 > p.0 {
                slopes.push((q.1 - p.1) / (q.0 - p.0));
            }
        }
    }
    let slope = median(slopes.into_iter())?;
    let n = pts.len() as f64;
    let var = n * (n - 1.0) * (2.0 * n + 5.0) / 18.0;
    let z = match s {
        0 => 0.0,
        s if s > 0 => (s as f64 - 1.0) / var.sqrt(),
        s => (s as f64 + 1.0) / var.sqrt(),
    };
    Some((slope, z))
}

/// The median latency (sent to end) of the first tenth of `ok` by send
/// time (at least 5 of them), in seconds.
fn early_latency(ok: &[&RequestRecord]) -> f64 {
    let mut by_send: Vec<&&RequestRecord> = ok.iter().collect();
    by_send.sort_by_key(|r| r.sent);
    let k = (by_send.len() / 10).max(5).min(by_send.len());
    median(by_send[..k].iter().map(|r| r.end.saturating_sub(r.sent).as_secs_f64())).unwrap_or(0.0)
}

/// Whether a request was cut at the run's end: cancelled when the last
/// of `measured` ended (the run cancels what is still in flight then;
/// the load's own cancellations, `--cancel-rate`, fall before it).
fn cut_at_end(measured: &[&RequestRecord]) -> impl Fn(&RequestRecord) -> bool {
    let last = measured.iter().map(|r| r.end).max().unwrap_or_default();
    move |r| matches!(r.outcome, Outcome::Cancelled) && last.saturating_sub(r.end) <= CUT_S
}

/// A cancelled request that ended within this of the run's last end was
/// cut by the run's end.
const CUT_S: Duration = Duration::from_millis(100);

/// The span of the send times (the first of each point) of `pts`, in seconds.
fn sent_span(pts: &[(f64, f64)]) -> f64 {
    let lo = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    (hi - lo).max(0.0)
}

/// A figure (a slope in ms per second, a span of sends in seconds) to two
/// significant figures under 10, whole above: a slow creep over a long
/// stretch (0.3 ms/s) had read "rose 0 ms per second".
fn figure(slope: f64) -> String {
    match slope.abs() {
        a if a >= 10.0 => format!("{slope:.0}"),
        a if a >= 1.0 => format!("{slope:.1}"),
        _ => format!("{slope:.2}"),
    }
}

fn median(v: impl Iterator<Item = f64>) -> Option<f64> {
    // By selection, not a sort: Theil–Sen's median is of up to 79,800
    // slopes, and sorting them was a twentieth of a `plan`'s time.
    let mut v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    crate::analysis::stats::percentile_of(&mut v, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::config::Rate;
    use crate::doc::record::{Channel, CountSource, Outcome, OutputChunk};

    /// [`super::judge`] as bench calls it: its cap is `-c`, and nothing
    /// before the window is named.
    fn judge(records: &[RequestRecord], window: &Window, load: Option<&LoadConfig>) -> Option<Stability> {
        super::judge(records, window, load, &JudgeContext::default())
    }

    /// A request due at `due` s, sent then, with its first token `ttft` s
    /// later and its end `e2e` s after it was sent.
    fn req(id: u64, due: f64, ttft: f64, e2e: f64) -> RequestRecord {
        let d = Duration::from_secs_f64;
        let mut r = RequestRecord::new(id, d(due), d(due));
        r.first_byte = Some(d(due + ttft));
        r.chunks = vec![
            OutputChunk { t: d(due + ttft), tokens: 1, channel: Channel::Content },
            OutputChunk { t: d(due + e2e), tokens: 1, channel: Channel::Content },
        ]
        .into();
        r.end = d(due + e2e);
        r.output_tokens = 2;
        r.output_tokens_source = CountSource::Usage;
        r.outcome = Outcome::Success;
        r
    }

    fn window(records: &[RequestRecord]) -> Window {
        let a = records.iter().filter(|r| !r.warmup).map(|r| r.sent).min().unwrap().as_secs_f64();
        let b = records.iter().filter(|r| !r.warmup).map(|r| r.end).max().unwrap().as_secs_f64();
        Window { start_s: a, end_s: b, duration_s: b - a }
    }

    fn open(rate: f64) -> LoadConfig {
        LoadConfig { rate: Some(Rate(rate)), ..LoadConfig::default() }
    }

    /// A single server taking `service` s a request, fed at `rate` req/s
    /// (evenly) for `n` requests: its queue holds level below capacity and
    /// grows past it.
    fn queue(rate: f64, service: f64, n: u64) -> Vec<RequestRecord> {
        let mut free = 0.0f64;
        (0..n)
            .map(|i| {
                let due = i as f64 / rate;
                let start = free.max(due);
                free = start + service;
                req(i, due, start - due + 0.01, free - due)
            })
            .collect()
    }

    /// `queue`'s requests as a client capped at one in flight sends them:
    /// each sent when the one before ended (the server never queues).
    fn capped(rate: f64, service: f64, n: u64) -> Vec<RequestRecord> {
        let d = Duration::from_secs_f64;
        let mut free = 0.0f64;
        (0..n)
            .map(|i| {
                let due = i as f64 / rate;
                let sent = free.max(due);
                free = sent + service;
                let mut r = req(i, sent, 0.01, service);
                r.scheduled = d(due);
                r
            })
            .collect()
    }

    #[test]
    fn an_open_loop_its_cap_held_back_is_told_so_with_the_cap_as_the_fix() {
        // 100 req/s due, one in flight of 0.1 s each: 10 req/s, every send late.
        let held = capped(100.0, 0.1, 60);
        let load = LoadConfig { concurrency: Some(1), ..open(100.0) };
        let s = judge(&held, &window(&held), Some(&load)).unwrap();
        let why = s.reason.clone().unwrap();
        assert!(!s.steady && why.starts_with("the -c 1 cap on requests in flight held back 98% of the sends"), "{why}");
        assert!(why.contains("at 10.0 req/s") && why.contains("raise -c"), "{why}");
        // A sweep names its own cap's flag, in both places, in words
        // otherwise the same.
        let sweep = JudgeContext { cap_flag: "--max-concurrency", ..JudgeContext::default() };
        let swept = super::judge(&held, &window(&held), Some(&load), &sweep).unwrap();
        let named = swept.reason.clone().unwrap();
        assert!(named.starts_with("the --max-concurrency 1 cap") && named.contains("raise --max-concurrency until"));
        assert!(!named.contains("-c "), "{named}");
        assert_eq!(named.replace("--max-concurrency", "-c"), why);
        assert_eq!(Stability { reason: None, ..swept }, Stability { reason: None, ..s });
        // Neither the window's ramp and drain nor the pile of due requests
        // (the client's own queue) is told, with their fixes.
        assert!(!why.contains("give more requests") && !why.contains("outstanding every second"), "{why}");
        // Sends late by as much, with the cap never reached (a client behind
        // its schedule, not its cap): not this.
        let s = judge(&held, &window(&held), Some(&LoadConfig { concurrency: Some(2), ..open(100.0) })).unwrap();
        assert!(!s.reason.clone().unwrap_or_default().contains("cap on requests"), "{s:?}");
        // `--rate inf -c 1`, every request due at once: a closed loop of
        // one, steady (it had read as held back, and before that as all
        // ramp-up and drain). A cap past what i64 holds never wraps.
        let all_at_once = capped(f64::INFINITY, 0.1, 60);
        let load = LoadConfig { concurrency: Some(1), ..open(f64::INFINITY) };
        let s = judge(&all_at_once, &window(&all_at_once), Some(&load)).unwrap();
        assert!(s.steady && !s.open_loop, "{s:?}");
        assert_eq!(cap_held(&held.iter().collect::<Vec<_>>(), u64::MAX), None);
        // A cap that never held a send back: steady.
        let ok = queue(9.0, 0.1, 400);
        let s = judge(&ok, &window(&ok), Some(&LoadConfig { concurrency: Some(64), ..open(9.0) })).unwrap();
        assert!(s.steady, "{s:?}");
    }

    /// A closed loop of `users`, each sending its next request as the one
    /// before ends, for `secs` s; a request sent at `t` takes `e2e(t)` s.
    fn closed_loop(users: u64, secs: f64, e2e: impl Fn(f64) -> f64) -> Vec<RequestRecord> {
        let mut out = Vec::new();
        for u in 0..users {
            let mut t = 0.01 * u as f64;
            while t < secs {
                let took = e2e(t);
                out.push(req(out.len() as u64, t, 0.05, took));
                t += took;
            }
        }
        out
    }

    #[test]
    fn a_closed_loop_whose_server_slows_is_not_steady_and_one_that_holds_is() {
        let load = LoadConfig { concurrency: Some(16), ..LoadConfig::default() };
        // Decode slows: a request takes 0.4 s at the start and 0.8 s by the
        // end of 60 s (throughput falls by half), TTFT flat.
        let slowing = closed_loop(16, 60.0, |t| 0.4 * (1.0 + t / 60.0));
        let s = judge(&slowing, &window(&slowing), Some(&load)).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && why.contains("completions fell") && why.contains("server slowed"), "{s:?}");
        // Level, with jitter of ±20% a request: steady.
        let level = closed_loop(16, 60.0, |t| 0.4 * (1.0 + 0.2 * (t * 7.3).sin()));
        let s = judge(&level, &window(&level), Some(&load)).unwrap();
        assert!(s.steady, "{s:?}");
        // A fall of about 15% over the whole window: within the margin.
        let mild = closed_loop(16, 60.0, |t| 0.4 * (1.0 + 0.2 * t / 60.0));
        let s = judge(&mild, &window(&mild), Some(&load)).unwrap();
        assert!(s.steady, "{s:?}");
    }

    /// A closed loop of `users` running `sessions` sessions of `turns`
    /// turns in turn, each user opening its next session as its last
    /// ends; a turn sent at `t` takes `took(t)` s and is followed by
    /// `think` s of thought. With `marked` false, the turns carry no
    /// session (as a run without `--turns` of the same shape would).
    fn sessions(
        users: u64,
        sessions: u64,
        turns: u32,
        took: impl Fn(f64) -> f64,
        think: f64,
        marked: bool,
    ) -> Vec<RequestRecord> {
        let mut free: Vec<f64> = (0..users).map(|u| 0.01 * u as f64).collect();
        let mut out = Vec::new();
        for id in 0..sessions {
            let u = (0..free.len()).min_by(|&i, &j| free[i].total_cmp(&free[j])).unwrap();
            let mut t = free[u];
            for turn in 1..=turns {
                let took = took(t);
                let mut r = req(out.len() as u64, t, 0.05, took);
                r.session = marked.then_some(crate::doc::record::SessionTurn { id, turn, turns });
                out.push(r);
                t += took + if turn < turns { think } else { 0.0 };
            }
            free[u] = t;
        }
        out
    }

    #[test]
    fn a_session_loop_whose_users_finish_their_last_sessions_is_steady() {
        // 300 sessions of 5 turns over 64 users, each turn 1 s and 5 s of
        // thought between turns: about 4.7 sessions a user, so the last
        // fifth of the run is users finishing their sessions and leaving.
        let load = LoadConfig { concurrency: Some(64), ..LoadConfig::default() };
        let recs = sessions(64, 300, 5, |_| 1.0, 5.0, true);
        let s = judge(&recs, &window(&recs), Some(&load)).unwrap();
        assert!(s.steady, "{s:?}");
        // The stretch ends as the last session opens, not at its last turn.
        let opened = recs.iter().filter(|r| r.session.unwrap().turn == 1).map(|r| r.sent).max().unwrap();
        let last = recs.iter().map(|r| r.sent).max().unwrap();
        assert!(s.judged_to_s == opened.as_secs_f64() && s.judged_to_s < last.as_secs_f64() - 10.0, "{s:?}");
        // The same turns unmarked, judged to the last send: completions
        // fall as the users leave, and so do the requests outstanding, so
        // the fall is not blamed on the server.
        let unmarked = sessions(64, 300, 5, |_| 1.0, 5.0, false);
        let s = judge(&unmarked, &window(&unmarked), Some(&load)).unwrap();
        assert!(!s.reason.clone().unwrap_or_default().contains("server slowed"), "{s:?}");
        // A session loop whose server slows is still told so: each turn
        // takes longer as the run goes on, eight times as long by its end.
        let slowing = sessions(64, 300, 5, |t| 0.5 * (1.0 + t / 20.0), 1.0, true);
        let s = judge(&slowing, &window(&slowing), Some(&load)).unwrap();
        assert!(!s.steady && s.reason.clone().unwrap().contains("slowed"), "{s:?}");
    }

    #[test]
    fn a_trend_over_sends_close_together_is_not_judged_and_a_rise_is_told_over_its_sends() {
        // 128 users sent together, then 72 more sent within 20 ms of each
        // other as the first batch ends at 1 s; each waits its place in the
        // batch (TTFT 0.1 to 0.9 s in the order sent).
        let load = LoadConfig { concurrency: Some(128), ..LoadConfig::default() };
        let burst: Vec<RequestRecord> = (0..200)
            .map(|i| {
                let (sent, k) = if i < 128 { (0.0, i) } else { (1.0 + 0.02 * (i - 128) as f64 / 72.0, i - 128) };
                let ttft = 0.1 + 0.8 * k as f64 / 128.0;
                req(i, sent, ttft, ttft + 0.05)
            })
            .collect();
        let s = judge(&burst, &window(&burst), Some(&load)).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!why.contains("TTFT rose"), "{why}");
        // A rise is told over the span of the sends it was fitted to, no
        // more than the TTFTs there moved: 10 req/s for 40 s, TTFT rising
        // 50 ms a second, the requests due after 31 s failing (so TTFT is
        // seen over 21 s of the 30 s judged).
        let mut recs: Vec<RequestRecord> = (0..400)
            .map(|i| {
                let due = i as f64 / 10.0;
                req(i, due, 0.05 + 0.05 * due, 0.1 + 0.05 * due)
            })
            .collect();
        for r in recs.iter_mut().filter(|r| r.sent.as_secs_f64() > 31.0) {
            r.outcome = Outcome::Failed { kind: crate::doc::record::FailureKind::HttpStatus, message: "500".into() };
        }
        let s = judge(&recs, &window(&recs), Some(&open(10.0))).unwrap();
        let why = s.reason.clone().unwrap();
        let rise: f64 =
            why.split("ms per second of the run, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        let seen: Vec<f64> = recs
            .iter()
            .filter(|r| r.outcome.is_success() && r.sent.as_secs_f64() >= s.judged_from_s)
            .map(|r| r.ttft().unwrap().as_secs_f64() * 1e3)
            .collect();
        let most = seen.iter().fold(0.0f64, |a, &b| a.max(b)) - seen.iter().fold(f64::INFINITY, |a, &b| a.min(b));
        assert!(rise > 0.5 * most && rise <= most + 1.0, "{rise} against {most}: {why}");
        assert!(why.contains(" s of sends judged"), "{why}");
    }

    #[test]
    fn a_queue_below_capacity_is_steady_and_beyond_it_is_not() {
        // Capacity 10 req/s.
        let ok = queue(9.0, 0.1, 400);
        let s = judge(&ok, &window(&ok), Some(&open(9.0))).unwrap();
        assert!(s.steady, "{s:?}");
        assert!((s.offered_rps.unwrap() - 9.0).abs() < 0.3 && (s.achieved_rps - 9.0).abs() < 0.3, "{s:?}");
        assert!(s.outstanding_growth_per_s.abs() < 0.1 && s.ttft_trend_ms_per_s.unwrap().abs() < 1.0, "{s:?}");
        assert_eq!(s.reason, None);

        let over = queue(11.0, 0.1, 400);
        let s = judge(&over, &window(&over), Some(&open(11.0))).unwrap();
        assert!(!s.steady && s.overloaded, "{s:?}");
        assert!((s.achieved_rps - 10.0).abs() < 0.3, "{s:?}");
        assert!((s.outstanding_growth_per_s - 1.0).abs() < 0.2, "{s:?}");
        // The wait grows 1/11 s per request due, 1 s every 10 s: 100 ms/s.
        assert!((s.ttft_trend_ms_per_s.unwrap() - 100.0).abs() < 10.0, "{s:?}");
        let reason = s.reason.unwrap();
        assert!(reason.starts_with("arrivals 11.0 req/s, completions 10.0 req/s"), "{reason}");
        assert!(reason.contains("TTFT rose 100 ms per second"), "{reason}");
    }

    /// A server admitting `capacity` req/s in turn, each request then
    /// decoding for 10 s, fed at `rate` req/s for 30 s; the run ends at
    /// 35 s and cancels what is still in flight, those past their first
    /// token keeping it.
    fn cut_at_35(rate: f64, capacity: f64) -> Vec<RequestRecord> {
        let mut admitted = f64::NEG_INFINITY;
        (0..(rate * 30.0) as u64)
            .map(|i| {
                let due = i as f64 / rate;
                admitted = (admitted + 1.0 / capacity).max(due);
                let ttft = admitted - due + 0.05;
                let mut r = req(i, due, ttft, ttft + 10.0);
                if due + ttft + 10.0 > 35.0 {
                    let d = Duration::from_secs_f64;
                    r.outcome = Outcome::Cancelled;
                    r.end = d(35.0);
                    r.output_tokens = 0;
                    if due + ttft > 35.0 {
                        r.chunks = Vec::new().into();
                        r.first_byte = None;
                    } else {
                        r.chunks = vec![OutputChunk { t: d(due + ttft), tokens: 1, channel: Channel::Content }].into();
                    }
                }
                r
            })
            .collect()
    }

    /// An open loop beyond its server whose first requests take 10 s
    /// (long decodes) is judged before its outstanding count has filled,
    /// and its later sends are cut at the run's end: it is overloaded all
    /// the same, told by its TTFT rising to the run's end (cut requests'
    /// first tokens counted, and a trend whose later sends got none judged
    /// over what was seen); a load below the server is steady.
    #[test]
    fn an_open_loop_beyond_its_server_cut_at_the_runs_end_is_overloaded() {
        for rate in [100.0, 130.0] {
            let recs = cut_at_35(rate, 72.0);
            let s = judge(&recs, &window(&recs), Some(&open(rate))).unwrap();
            let why = s.reason.clone().unwrap_or_default();
            assert!(!s.steady && s.overloaded, "{rate} req/s: {s:?}");
            assert!(why.starts_with(&format!("arrivals {rate:.1} req/s")) && why.contains("TTFT rose"), "{why}");
            // Judged before the count filled: the stretch is the second half.
            assert!(s.judged_from_s > 10.0, "{s:?}");
        }
        let healthy = cut_at_35(60.0, 72.0);
        assert!(healthy.iter().any(|r| matches!(r.outcome, Outcome::Cancelled)));
        let s = judge(&healthy, &window(&healthy), Some(&open(60.0))).unwrap();
        assert!(s.steady && !s.overloaded, "{s:?}");
    }

    /// A slow creep over a long run is told as the figure it is, not
    /// rounded to "0 ms per second".
    #[test]
    fn a_slow_ttft_creep_is_told_with_its_figure() {
        let recs: Vec<RequestRecord> = (0..3000)
            .map(|i| {
                let due = i as f64 / 20.0;
                let ttft = 0.05 + 0.0004 * due;
                req(i, due, ttft, ttft + 0.05)
            })
            .collect();
        let s = judge(&recs, &window(&recs), Some(&open(20.0))).unwrap();
        assert!(!s.steady && !s.overloaded, "{s:?}");
        let reason = s.reason.unwrap_or_default();
        assert!(reason.starts_with("TTFT rose 0.40 ms per second of the run, "), "{reason}");
        assert!(reason.contains(" ms over the ") && reason.contains(" s of sends judged"), "{reason}");
    }

    #[test]
    fn a_window_of_mostly_ramp_up_and_drain_is_not_steady() {
        // 20 requests at 10 req/s, each 3 s long: 1.9 s of sending, 4.9 s of window.
        let short: Vec<RequestRecord> = (0..20).map(|i| req(i, i as f64 * 0.1, 0.05, 3.0)).collect();
        let s = judge(&short, &window(&short), Some(&open(10.0))).unwrap();
        assert!(!s.steady && s.transient_share > 0.9, "{s:?}");
        assert!(s.reason.unwrap().starts_with("mostly ramp-up and drain"));
        // A warm-up before the window leaves only the drain in it.
        let mut warmed: Vec<RequestRecord> = (0..300).map(|i| req(i, i as f64 * 0.1, 0.05, 1.0)).collect();
        warmed.iter_mut().take(20).for_each(|r| r.warmup = true);
        let s = judge(&warmed, &window(&warmed), Some(&open(10.0))).unwrap();
        assert!(s.steady && s.transient_share < 0.05, "{s:?}");
        // A closed loop of 4 users, 2 requests each: half the window drains.
        let closed: Vec<RequestRecord> = (0..8).map(|i| req(i, (i / 4) as f64, 0.05, 1.0)).collect();
        let s = judge(&closed, &window(&closed), None).unwrap();
        assert!(!s.steady && s.offered_rps.is_none(), "{s:?}");
    }

    #[test]
    fn a_closed_loop_of_about_one_request_a_user_is_not_steady() {
        // 58 users sent together, 64 requests: each user's first, and six
        // more after the first ends; each 1 s long.
        let closed = |users: u64| LoadConfig { concurrency: Some(users), ..LoadConfig::default() };
        let few: Vec<RequestRecord> =
            (0..64).map(|i| req(i, if i < 58 { 0.0 } else { 1.0 + 0.01 * i as f64 }, 0.05, 1.0)).collect();
        let s = judge(&few, &window(&few), Some(&closed(58))).unwrap();
        assert!(!s.steady, "{s:?}");
        assert!(s.reason.as_deref().unwrap().contains("1.1 a user") && s.reason.unwrap().contains("116"));
        // Eight users of eight requests each, one a second: steady.
        let many: Vec<RequestRecord> =
            (0..64).map(|i| req(i, (i / 8) as f64 + 0.01 * (i % 8) as f64, 0.05, 1.0)).collect();
        let s = judge(&many, &window(&many), Some(&closed(8))).unwrap();
        assert!(s.steady, "{s:?}");
    }

    #[test]
    fn the_servers_queue_is_set_beside_the_clients_count() {
        let over = queue(11.0, 0.1, 400);
        let mut s = judge(&over, &window(&over), Some(&open(11.0))).unwrap();
        let t0 = s.judged_from_s;
        with_server_queue(&mut s, (0..20).map(|i| (t0 + i as f64, i as f64)));
        assert!((s.server_queue_growth_per_s.unwrap() - 1.0).abs() < 1e-9, "{s:?}");
        assert!(s.reason.as_deref().unwrap().ends_with("the server's queue grew 1.0 requests per second"), "{s:?}");
        // Too few scrapes inside the stretch say nothing.
        let mut s = judge(&over, &window(&over), Some(&open(11.0))).unwrap();
        with_server_queue(&mut s, [(0.0, 1.0), (1.0, 2.0)].into_iter());
        assert_eq!(s.server_queue_growth_per_s, None);
    }

    /// A single server taking `service` s a request, fed evenly at each
    /// `(rate, n)` in turn; the requests of the first `warm` phases are warm-up.
    fn phases(service: f64, loads: &[(f64, u64)], warm: usize) -> Vec<RequestRecord> {
        let (mut free, mut t, mut out) = (0.0f64, 0.0f64, Vec::new());
        for (k, &(rate, n)) in loads.iter().enumerate() {
            for _ in 0..n {
                let start = free.max(t);
                free = start + service;
                let mut r = req(out.len() as u64, t, start - t + 0.01, free - t);
                r.warmup = k < warm;
                out.push(r);
                t += 1.0 / rate;
            }
        }
        out
    }

    #[test]
    fn a_point_whose_requests_nearly_all_fail_failed_and_is_not_steady() {
        let mut recs = queue(9.0, 0.1, 400);
        for r in recs.iter_mut().filter(|r| r.id % 100 != 0) {
            r.outcome = Outcome::Failed { kind: crate::doc::record::FailureKind::HttpStatus, message: "500".into() };
        }
        let s = judge(&recs, &window(&recs), Some(&open(9.0))).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && s.failed && why.starts_with("failed: 396 of the 400 measured requests failed"), "{s:?}");
        // A few failures among many successes leave the verdict to the trends.
        let mut recs = queue(9.0, 0.1, 400);
        recs[3].outcome = Outcome::Failed { kind: crate::doc::record::FailureKind::HttpStatus, message: "500".into() };
        let s = judge(&recs, &window(&recs), Some(&open(9.0))).unwrap();
        assert!(s.steady && !s.failed, "{s:?}");
    }

    /// Requests due at `rate` req/s from 0 to `secs`, each `e2e` s long on a
    /// server that never queues; those due before `warm` s are warm-up.
    fn unqueued(rate: f64, secs: f64, e2e: f64, warm: f64) -> Vec<RequestRecord> {
        (0..(rate * secs) as u64)
            .map(|i| {
                let due = i as f64 / rate;
                let mut r = req(i, due, 0.05, e2e);
                r.warmup = due < warm;
                r
            })
            .collect()
    }

    #[test]
    fn a_warm_up_shorter_than_the_fill_is_a_start_up_transient_not_an_overload() {
        // 10 req/s of 15 s each: the count in flight climbs for 15 s to 150
        // and holds there. A 1 s warm-up leaves the climb in the window.
        let short = unqueued(10.0, 31.0, 15.0, 1.0);
        let s = judge(&short, &window(&short), Some(&open(10.0))).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && !s.overloaded, "{s:?}");
        assert!(
            why.starts_with("still in its start-up transient, not overloaded") && why.contains("--warmup"),
            "{why}"
        );
        assert!(!why.contains("arrivals"), "{why}");
        // A warm-up past the climb: steady.
        let long = unqueued(10.0, 60.0, 15.0, 20.0);
        let s = judge(&long, &window(&long), Some(&open(10.0))).unwrap();
        assert!(s.steady, "{s:?}");
        // A load beyond the server keeps climbing: overloaded, as before.
        let over = phases(0.1, &[(11.0, 20), (11.0, 400)], 1);
        let s = judge(&over, &window(&over), Some(&open(11.0))).unwrap();
        assert!(s.overloaded && s.reason.clone().unwrap().starts_with("arrivals 11.0 req/s"), "{s:?}");
    }

    #[test]
    fn a_window_draining_the_backlog_of_a_heavier_load_before_it_is_not_steady() {
        // 15 req/s for 200 requests on a server of 10 req/s leaves about 66
        // queued; the 5 req/s after it (measured) clears them over 13 s.
        let after_heavy = phases(0.1, &[(15.0, 200), (5.0, 100)], 1);
        let s = judge(&after_heavy, &window(&after_heavy), Some(&open(5.0))).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && !s.overloaded && why.starts_with("draining a backlog left before the window"), "{s:?}");
        assert!(why.contains("requests outstanding fell") && why.contains("TTFT fell"), "{why}");
        // Told what ran before the window, the judge names it.
        let stage = "the stage before it (15 req/s for 13.333 s)".to_string();
        let staged = JudgeContext { before: Some(stage.clone()), ..JudgeContext::default() };
        let s = super::judge(&after_heavy, &window(&after_heavy), Some(&open(5.0)), &staged).unwrap();
        let named = s.reason.clone().unwrap();
        let figures = why.strip_prefix("draining a backlog left before the window: ").unwrap();
        assert_eq!(named, format!("draining the backlog {stage} left: {figures}"));
        // After a lighter load, the same stage is steady.
        let after_light = phases(0.1, &[(5.0, 200), (5.0, 100)], 1);
        let s = judge(&after_light, &window(&after_light), Some(&open(5.0))).unwrap();
        assert!(s.steady, "{s:?}");
    }

    #[test]
    fn a_short_closed_loop_whose_decode_slows_is_not_steady() {
        let load = LoadConfig { concurrency: Some(16), ..LoadConfig::default() };
        // 12 s, TTFT level, each request's decode 40% slower by the end (a
        // KV cache filling): too short for the completion rate's fall to
        // pass its noise, not for TPOT's trend.
        let slowing = closed_loop(16, 12.0, |t| 0.4 * (1.0 + 0.4 * t / 12.0));
        let s = judge(&slowing, &window(&slowing), Some(&load)).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && why.starts_with("TPOT rose") && why.contains("decode slowed"), "{s:?}");
        assert!(!why.contains("completions fell"), "{why}");
        let level = closed_loop(16, 12.0, |t| 0.4 * (1.0 + 0.2 * (t * 7.3).sin()));
        let s = judge(&level, &window(&level), Some(&load)).unwrap();
        assert!(s.steady, "{s:?}");
    }

    /// `users` sent together, each wave a request's `e2e(t)` s after the
    /// one before, for `secs` s.
    fn waves(users: u64, secs: f64, e2e: impl Fn(f64) -> f64) -> Vec<RequestRecord> {
        let mut out = Vec::new();
        let mut t = 0.0;
        while t < secs {
            let took = e2e(t);
            for _ in 0..users {
                out.push(req(out.len() as u64, t, 0.05, took));
            }
            t += took;
        }
        out
    }

    #[test]
    fn a_closed_loop_in_whole_waves_is_not_a_slowing_server_and_one_that_slows_still_is() {
        let load = LoadConfig { concurrency: Some(64), ..LoadConfig::default() };
        // 64 users in lockstep, 1.3 s a wave, level: the stretch's first
        // third holds two waves of completions and its last one, so
        // counted as independent ends the rate had halved ("completions
        // fell 50% … the server slowed"). Counted as waves, two against one
        // is within the noise.
        let level = waves(64, 10.0, |_| 1.3);
        let s = judge(&level, &window(&level), Some(&load)).unwrap();
        let third = (s.judged_to_s - s.judged_from_s) / 3.0;
        let ends = |lo: f64, hi: f64| level.iter().filter(|r| (lo..hi).contains(&r.end.as_secs_f64())).count();
        let (first, last) =
            (ends(s.judged_from_s, s.judged_from_s + third), ends(s.judged_to_s - third, s.judged_to_s));
        assert_eq!((first, last), (128, 64), "the case: two waves against one");
        assert!(s.steady, "{s:?}");
        // A live client's waves, their ends microseconds apart, are waves too.
        let jittered: Vec<f64> = (0..128).map(|i| 1.0 + f64::from(i / 64) + 20e-6 * f64::from(i % 64)).collect();
        assert!(clustering(jittered, Some(0.02), 2.0) > 20.0);
        // Independent ends at even spacing, and ones joined only by chance
        // (two at a time), count as they are.
        let even: Vec<f64> = (0..100).map(|i| i as f64 * 0.1).collect();
        assert_eq!(clustering(even, Some(0.02), 10.0), 1.0);
        // Waves that slow (each request's decode twice as long by the end)
        // are still caught, by TPOT's trend.
        let slowing = waves(64, 60.0, |t| 0.4 * (1.0 + t / 60.0));
        let s = judge(&slowing, &window(&slowing), Some(&load)).unwrap();
        let why = s.reason.clone().unwrap_or_default();
        assert!(!s.steady && why.contains("TPOT rose"), "{s:?}");
    }

    #[test]
    fn theil_sen_shrugs_off_outliers() {
        let mut pts: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, 2.0 * i as f64 + 1.0)).collect();
        pts[10].1 = 1e6;
        pts[20].1 = -1e6;
        let (slope, z) = theil_sen(&pts).unwrap();
        assert_eq!(slope, 2.0);
        assert!(z > 8.0, "{z}");
        assert_eq!(theil_sen(&pts[..2]), None);
        let flat: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, (i % 7) as f64)).collect();
        assert!(theil_sen(&flat).unwrap().1.abs() < 3.0);
    }

    #[test]
    fn no_success_no_verdict_and_older_documents_read() {
        let mut r = req(0, 0.0, 0.1, 1.0);
        r.outcome = Outcome::Cancelled;
        assert_eq!(judge(&[r], &Window::default(), None), None);
        let s: Stability = serde_json::from_str(r#"{"steady": true}"#).unwrap();
        assert!(s.steady && s.reason.is_none());
    }
}
