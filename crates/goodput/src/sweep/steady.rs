//! How long a sweep's points run: for a steady state when no bounds are
//! given, run again for longer while they are not one.

use super::SweepArgs;
use std::time::Duration;

/// A point's measured time when neither --requests nor --duration is
/// given, after [`POINT_WARMUP`] of warm-up: long enough that the drain at
/// its end is a few percent of its window at the loads a sweep recommends.
pub(super) const POINT_DURATION: Duration = Duration::from_secs(60);
pub(super) const POINT_WARMUP: Duration = Duration::from_secs(10);
/// The longest a point is extended to while it is not yet a steady state.
pub(super) const POINT_CAP: Duration = Duration::from_secs(240);
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
/// than [`CONVERGED`] off the judged stretch's.
pub(super) fn needs_longer(r: &goodput_core::RunResult) -> bool {
    let Some(s) = &r.summary.stability else { return false };
    !s.overloaded && (!s.steady || !converged(r))
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

/// How long a live sweep will take, in words, before it starts: its points
/// (a grid's, or --auto's baseline, ceiling, spread and search) each for
/// its warm-up and duration. `None` when a point's length is not known
/// ahead (a request count of a closed loop).
pub(super) fn expected_duration(a: &SweepArgs, steady_bounds: bool) -> Option<String> {
    if let Some(st) = &a.stages {
        let total: Duration = st.0.iter().map(|s| s.1).sum();
        return Some(format!(
            "{} stages in one run: about {} in all",
            st.0.len(),
            humantime::format_duration(Duration::from_secs(total.as_secs()))
        ));
    }
    let search = if a.judge.slo.is_some() { a.search_steps as usize } else { 0 };
    let points = if let Some(c) = &a.concurrency {
        c.0.len()
    } else if let Some(r) = &a.rate {
        r.0.len() + search
    } else {
        2 + a.points as usize + search
    };
    let warm = match a.shape.warmup {
        crate::cli::WarmupArg::Time(d) => d,
        crate::cli::WarmupArg::Requests(_) => Duration::ZERO,
    };
    let each = warm + a.shape.duration?;
    let total = each * points as u32;
    let mut t = format!(
        "{points} points of about {} each: about {} in all",
        humantime::format_duration(each),
        humantime::format_duration(Duration::from_secs(total.as_secs()))
    );
    if steady_bounds {
        t.push_str(&format!(
            " (a point not yet steady runs again for twice as long, up to {}; pass --duration to fix their length)",
            humantime::format_duration(POINT_CAP)
        ));
    }
    Some(t)
}
