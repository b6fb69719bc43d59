//! How long a sweep's points run: for a steady state when no bounds are
//! given, run again for longer while they are not one.

use super::SweepArgs;
use std::time::Duration;

/// A point's measured time when neither --requests nor --duration is
/// given, after [`POINT_WARMUP`] of warm-up: long enough that the drain at
/// its end is a few percent of its window at the loads a sweep recommends.
pub(super) const POINT_DURATION: Duration = Duration::from_secs(60);
pub(super) const POINT_WARMUP: Duration = Duration::from_secs(10);
/// The longest a point is extended to while it is not yet a steady state:
/// one doubling. A point still not steady after twice the time is marked
/// so and never recommended; a further doubling cost a live sweep against
/// `goodput serve` 9 of its 22 minutes and changed no recommendation (the
/// points it was spent on sit at the server's capacity, where queueing
/// keeps the verdict in doubt however long they run).
pub(super) const POINT_CAP: Duration = Duration::from_secs(120);
/// A window's throughput within this share of the judged stretch's has
/// converged: the ramp-up and drain no longer weigh on it.
const CONVERGED: f64 = 0.05;

/// The requests per second a point sustained: over its judged stretch when
/// it was steady (its window's rate is lowered by the ramp-up and drain),
/// else over its window.
pub(super) fn sustained(r: &goodput_core::RunResult) -> f64 {
    match &r.summary.stability {
        Some(s) if s.steady && s.achieved_rps > 0.0 => s.achieved_rps,
        _ => r.summary.throughput.requests_per_s,
    }
}

/// Whether a point should run longer: it is not a steady state for want of
/// time (not a load beyond the server), or its window's throughput is more
/// than [`CONVERGED`] off the judged stretch's; and it meets the SLO, when
/// one is given. A point that misses the SLO is never recommended, and a
/// longer run will not bring it within: past the warm-up, its latency can
/// only grow as a backlog builds. Nor is a point whose requests mostly
/// failed: a longer run of a failing load fails as much.
pub(super) fn needs_longer(r: &goodput_core::RunResult, attainment: f64) -> bool {
    let Some(s) = &r.summary.stability else { return false };
    let misses_slo = goodput_core::doc::sweep::meets_slo(r, attainment) == Some(false);
    !s.overloaded && !s.failed && !misses_slo && (!s.steady || !converged(r))
}

fn converged(r: &goodput_core::RunResult) -> bool {
    let (window, stretch) =
        (r.summary.throughput.requests_per_s, r.summary.stability.as_ref().map_or(0.0, |s| s.achieved_rps));
    stretch > 0.0 && (window / stretch - 1.0).abs() <= CONVERGED
}

pub(super) fn why_longer(r: &goodput_core::RunResult) -> String {
    match r.summary.stability.as_ref().and_then(|s| s.reason.clone()) {
        Some(reason) => format!("not yet a steady state ({reason})"),
        None => format!(
            "its throughput has not converged ({:.1} req/s over the window, {:.1} over its steady stretch)",
            r.summary.throughput.requests_per_s,
            r.summary.stability.as_ref().map_or(0.0, |s| s.achieved_rps)
        ),
    }
}

/// The most a live sweep's points can take: each for its warm-up and
/// duration, and each but the ceiling (--auto's) once more for twice the
/// duration when steady bounds may extend it. `None` when a point's length
/// is not known ahead (a request count).
pub(super) fn most_duration(a: &SweepArgs) -> Option<Duration> {
    if a.trace.is_some() {
        return trace_span(a).map(|span| trace_time(a, span).1);
    }
    let steady_bounds = a.shape.requests.is_none() && a.shape.duration.is_none() && a.stages.is_none();
    if a.shape.requests.is_some() {
        return None;
    }
    // The search bisects a list of concurrencies as it does rates.
    let search = if a.judge.slo.is_some() { a.search_steps as usize } else { 0 };
    let points = if let Some(c) = &a.concurrency {
        c.0.len() + search
    } else if let Some(r) = &a.rate {
        r.0.len() + search
    } else {
        2 + a.points as usize + search
    };
    let warm = match a.shape.warmup {
        crate::cli::WarmupArg::Time(d) => d,
        crate::cli::WarmupArg::Requests(_) if steady_bounds => POINT_WARMUP,
        crate::cli::WarmupArg::Requests(_) => Duration::ZERO,
    };
    let d = a.shape.duration.unwrap_or(POINT_DURATION);
    // Each point may wait out the grace for its last requests.
    let each = warm + d + a.target.grace;
    let again = if steady_bounds { warm + d * 2 + a.target.grace } else { Duration::ZERO };
    let ceiling = usize::from(a.concurrency.is_none() && a.rate.is_none());
    Some(each * points as u32 + again * (points - ceiling) as u32)
}

/// The span of the `--trace` a sweep names, read: its last request's
/// time at speed 1. `None` where it cannot be read (the sweep then says
/// why).
fn trace_span(a: &SweepArgs) -> Option<Duration> {
    let t = crate::setup::read_trace(a.trace.as_deref()?, 1.0, a.trace_format).ok()?;
    Some(t.entries.iter().map(|e| e.at).max().unwrap_or_default())
}

/// `--trace` of `span`: the replays a sweep makes (a speed's each, and the
/// search's between them) and their longest time in all: each the span
/// over its speed (or `--duration`, if shorter) and the grace; a search's
/// at the slowest speed's.
fn trace_time(a: &SweepArgs, span: Duration) -> (usize, Duration) {
    let speeds = a.trace_speed.clone().unwrap_or_else(|| vec![1.0]);
    let each = |speed: f64| {
        let replay = span.div_f64(speed);
        a.shape.duration.map_or(replay, |d| d.min(replay)) + a.target.grace
    };
    let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
    let search = if a.judge.slo.is_some() { a.search_steps as usize } else { 0 };
    let most = speeds.iter().map(|&s| each(s)).sum::<Duration>() + each(slowest) * search as u32;
    (speeds.len() + search, most)
}

/// How long a live sweep will take, in words, before it starts: its points
/// (a grid's, or --auto's baseline, ceiling, spread and search) each for
/// its warm-up and duration. `None` when a point's length is not known
/// ahead (a request count of a closed loop). `trace_span`: the span of
/// the `--trace` the sweep read (its last request's time at speed 1).
pub(super) fn expected_duration(a: &SweepArgs, steady_bounds: bool, trace_span: Option<Duration>) -> Option<String> {
    if a.trace.is_some() {
        let (points, most) = trace_time(a, trace_span?);
        return Some(format!(
            "{points} replay{} of the trace: at most {} in all (each its span over its speed, cut by --duration, and \
             the grace for its last answers)",
            if points == 1 { "" } else { "s" },
            goodput_core::util::duration_text(Duration::from_secs(most.as_secs()))
        ));
    }
    if let Some(st) = &a.stages {
        let total: Duration = st.stages.iter().map(|s| s.1).sum();
        return Some(format!(
            "{} stages in one run: about {} in all",
            st.stages.len(),
            goodput_core::util::duration_text(Duration::from_secs(total.as_secs()))
        ));
    }
    // The search bisects a list of concurrencies as it does rates (its
    // points had been left out of a concurrency sweep's count).
    let search = if a.judge.slo.is_some() { a.search_steps as usize } else { 0 };
    let points = if let Some(c) = &a.concurrency {
        c.0.len() + search
    } else if let Some(r) = &a.rate {
        r.0.len() + search
    } else {
        2 + a.points as usize + search
    };
    let warm = match a.shape.warmup {
        crate::cli::WarmupArg::Time(d) => d,
        crate::cli::WarmupArg::Requests(_) => Duration::ZERO,
    };
    let d = a.shape.duration?;
    let each = warm + d;
    let total = each * points as u32;
    let mut t = format!(
        "{points} point{} of about {} each: about {} in all",
        if points == 1 { "" } else { "s" },
        goodput_core::util::duration_text(each),
        goodput_core::util::duration_text(Duration::from_secs(total.as_secs()))
    );
    if steady_bounds {
        // Every point but the ceiling may run once more, for twice as long.
        let again = if d * 2 <= POINT_CAP { warm + d * 2 } else { Duration::ZERO };
        let ceiling = usize::from(a.concurrency.is_none() && a.rate.is_none());
        let most = total + again * (points - ceiling) as u32;
        t.push_str(&format!(
            ", up to {} if every point that is not yet a steady state, and meets the SLO, runs again for {} \
             (pass --duration to fix their length)",
            goodput_core::util::duration_text(Duration::from_secs(most.as_secs())),
            goodput_core::util::duration_text(d * 2)
        ));
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(argv: &[&str]) -> SweepArgs {
        let argv = ["goodput", "sweep", "--url", "http://127.0.0.1:1"].iter().chain(argv);
        match <crate::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    /// A trace's replays take its span over each speed, and the grace; the
    /// search's are counted at the slowest speed's; --duration cuts each.
    #[test]
    fn a_trace_sweep_takes_its_span_over_each_speed() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.jsonl");
        // Its last request at 40 s.
        std::fs::write(
            &trace,
            "{\"timestamp\": 0, \"input_tokens\": 8, \"output_tokens\": 2}\n\
             {\"timestamp\": 40, \"input_tokens\": 8, \"output_tokens\": 2}\n",
        )
        .unwrap();
        let t = trace.to_str().unwrap();
        let grace = args(&[]).target.grace;
        let a = args(&["--trace", t, "--trace-speed", "1,4"]);
        let span = trace_span(&a).unwrap();
        assert_eq!(span, Duration::from_secs(40));
        assert_eq!(trace_time(&a, span), (2, Duration::from_secs(50) + grace * 2));
        let a = args(&["--trace", t, "--trace-speed", "2,4", "--slo", "ttft<=1s", "--search-steps", "2"]);
        assert_eq!(trace_time(&a, span), (4, Duration::from_secs(30) + Duration::from_secs(40) + grace * 4));
        let a = args(&["--trace", t, "--duration", "5s"]);
        assert_eq!(most_duration(&a), Some(Duration::from_secs(5) + grace));
        assert!(expected_duration(&a, false, Some(span)).unwrap().starts_with("1 replay of the trace: at most"));
    }

    /// A point not yet steady runs again for longer; one whose requests
    /// mostly failed does not (a longer run of a failing load fails as much).
    #[test]
    fn a_point_whose_requests_mostly_failed_is_not_run_again_for_longer() {
        use goodput_core::analysis::assemble::{assemble, Assembly};
        use goodput_core::analysis::stability::Stability;
        let a = Assembly {
            tool: crate::common::tool(),
            kind: "bench",
            run_id: String::new(),
            started_unix_s: 0.0,
            interrupted: false,
            config: goodput_core::RunConfig::default(),
            target: Default::default(),
            include_requests: false,
        };
        let mut r = assemble(a, &[], &Default::default());
        let unsteady = Stability { steady: false, reason: Some("not yet".into()), ..Stability::default() };
        r.summary.stability = Some(unsteady.clone());
        assert!(needs_longer(&r, 0.9));
        r.summary.stability = Some(Stability { failed: true, ..unsteady });
        assert!(!needs_longer(&r, 0.9));
    }

    #[test]
    fn the_estimate_counts_a_concurrency_sweep_s_search_points_and_says_1_point() {
        let slo = ["--slo", "e2e:p95<=1s", "--search-steps", "3", "--duration", "10s", "--warmup", "5s"];
        let c = args(&[&["--concurrency", "1,2,4,8,16,32"][..], &slo].concat());
        let t = expected_duration(&c, false, None).unwrap();
        assert!(t.starts_with("9 points of about 15 s each: about 2 min 15 s in all"), "{t}");
        let r = args(&[&["--rate", "16,2,8,12,4"][..], &slo].concat());
        assert!(expected_duration(&r, false, None).unwrap().starts_with("8 points"));
        let one = args(&["--concurrency", "4", "--duration", "10s"]);
        let t = expected_duration(&one, false, None).unwrap();
        assert!(t.starts_with("1 point of about"), "{t}");
    }
}
