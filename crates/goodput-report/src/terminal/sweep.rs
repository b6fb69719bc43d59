//! A sweep in the terminal: a row per point as it completes, and what the
//! points say together.

use crate::escape::terminal as esc;
use goodput_core::doc::sweep::{meets_slo, Load, SweepResult};
use goodput_core::RunResult;

/// The table's head; with sessions, a column of completed sessions/s.
pub fn row_header(sessions: bool) -> String {
    row_header_for(sessions, false)
}

/// The table's head of a sweep of embeddings or rerank points (`pooled`):
/// input tokens/s and E2E where a generation's has output tokens/s, TTFT
/// and TPOT (see [`row`]).
pub fn row_header_for(sessions: bool, pooled: bool) -> String {
    if pooled {
        return format!(
            "{:<18}{:<10}{:>10}{:>12}{:>14}{:>14}{:>14}{:>14}{:>11}  {}",
            "load",
            "origin",
            "req/s",
            "in tok/s",
            "E2E p50 (ms)",
            "E2E p90 (ms)",
            "E2E p99 (ms)",
            "E2E max (ms)",
            "in flight",
            "SLO"
        );
    }
    format!(
        "{:<18}{:<10}{:>10}{}{:>12}{:>15}{:>15}{:>15}{:>15}{:>11}  {}",
        "load",
        "origin",
        "req/s",
        if sessions { format!("{:>12}", "sessions/s") } else { String::new() },
        "out tok/s",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "TPOT p99 (ms)",
        "in flight",
        "SLO"
    )
}

pub fn row(load: Load, origin: &str, r: &RunResult, judged: bool, attainment: f64) -> String {
    let s = &r.summary;
    let n = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or("-".into());
    // No request completed: no SLO verdict to give (its 0% of nothing had
    // read as a miss); the stability verdict below says why.
    let slo = if judged && s.requests.completed > 0 {
        let g = s.goodput.as_ref().map(|g| g.slo_attainment * 100.0).unwrap_or(0.0);
        let verdict = if meets_slo(r, attainment) == Some(true) { "meets" } else { "misses" };
        // Beside objectives, the verdict's share is the limits' (goodput's,
        // every threshold, had been shown beside a verdict it did not decide).
        match r.slo.as_ref().filter(|s| s.attains_by_limits()) {
            Some(slo) => {
                let within = slo.attainment.as_ref().map_or(g, |a| a.measured * 100.0);
                format!("{verdict} ({within:.0}% within limits, {g:.0}% good)")
            }
            None => format!("{verdict} ({g:.0}% good)"),
        }
    } else {
        String::new()
    };
    // The verdict with its reason (summary.stability.reason): what was
    // measured, a backlog or a ramp, and so what to change.
    let slo = match &s.stability {
        Some(st) if !st.steady => {
            let why = match &st.reason {
                Some(reason) => format!(": {}", esc(reason)),
                None if st.overloaded => " (beyond the server)".into(),
                None => " (not a steady state)".into(),
            };
            format!("{slo}{}NOT STEADY{why}", if slo.is_empty() { "" } else { " · " })
        }
        _ => slo,
    };
    if s.no_output() {
        return format!(
            "{:<18}{:<10}{:>10.2}{:>12.1}{:>14}{:>14}{:>14}{:>14}{:>11.1}  {}",
            load.label(),
            origin,
            s.throughput.requests_per_s,
            s.throughput.input_tokens_per_s,
            n(s.e2e_ms.p(50.0)),
            n(s.e2e_ms.p(90.0)),
            n(s.e2e_ms.p(99.0)),
            n(s.e2e_ms.max),
            s.in_flight.mean,
            slo
        );
    }
    format!(
        "{:<18}{:<10}{:>10.2}{}{:>12.1}{:>15}{:>15}{:>15}{:>15}{:>11.1}  {}",
        load.label(),
        origin,
        s.throughput.requests_per_s,
        s.sessions.as_ref().map(|ss| format!("{:>12.3}", ss.per_s)).unwrap_or_default(),
        s.throughput.output_tokens_per_s,
        n(s.ttft_ms.p(50.0)),
        n(s.ttft_ms.p(99.0)),
        n(s.tpot_ms.p(50.0)),
        n(s.tpot_ms.p(99.0)),
        s.in_flight.mean,
        slo
    )
}

/// What the points say together: saturation, the best throughput and
/// goodput, the highest load meeting the SLO, the recommendation and notes.
/// Text from the document passes through `escape::terminal`.
pub fn analysis_lines(doc: &SweepResult) -> String {
    use std::fmt::Write;
    let a = &doc.analysis;
    let mut o = String::new();
    let describe = |p: &goodput_core::doc::sweep::PointRef| {
        // An embeddings or rerank point: its input rate and E2E.
        if let Some(s) = doc.points.get(p.index).map(|q| &q.result.summary).filter(|s| s.no_output()) {
            return format!(
                "{} ({:.1} req/s, {:.1} input tok/s, E2E p50 {} ms)",
                p.load.label(),
                s.throughput.requests_per_s,
                s.throughput.input_tokens_per_s,
                s.e2e_ms.p(50.0).map(|v| format!("{v:.1}")).unwrap_or("-".into())
            );
        }
        let mut s = format!(
            "{} ({:.1} output tok/s, TTFT p50 {} ms",
            p.load.label(),
            p.output_tokens_per_s,
            p.ttft_p50_ms.map(|v| format!("{v:.1}")).unwrap_or("-".into())
        );
        if let Some(g) = p.goodput_tokens_per_s {
            let _ = write!(s, ", goodput {g:.1} tok/s");
        }
        if let Some(c) = p.usd_per_million_output_tokens {
            let _ = write!(s, ", ${c:.3} per M output tokens");
        }
        s.push(')');
        s
    };
    let _ = writeln!(o);
    for (name, p) in [
        ("saturation", &a.saturation),
        ("max throughput", &a.max_throughput),
        ("max goodput", &a.max_goodput),
        ("highest load meeting SLO", &a.highest_load_meeting_slo),
    ] {
        if let Some(p) = p {
            let _ = writeln!(o, "{name:<26}{}", describe(p));
        }
    }
    if let Some(r) = &a.recommendation {
        let _ = writeln!(o, "{:<26}{}", "recommended", esc(r));
    }
    for n in &a.notes {
        let _ = writeln!(o, "note: {}", esc(n));
    }
    o
}
