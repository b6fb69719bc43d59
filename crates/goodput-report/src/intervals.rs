//! A run's intervals (`summary.intervals`, docs/metrics.md "Intervals") as
//! tables the formats share: a row per per-request distribution with a
//! column per percentile, each cell `[low, high]`, and a row per rate and
//! the attainment (beside objectives, the limits' the verdict used and
//! goodput's, every threshold). A side the sample does not bound reads `—`.

use crate::metric::Dist;
use crate::metric::Unit;
use crate::table::{Align, Cell, Column, Detail, Row, Table};
use goodput_core::analysis::interval::{Interval, Intervals, Unit as Independent};
use goodput_core::RunResult;

/// The run's intervals, when its document has them.
pub fn of(r: &RunResult) -> Option<&Intervals> {
    r.summary.intervals.as_ref()
}

/// A bound as people read it: three figures or so (`412`, `61.8`, `5.02`),
/// `—` where the sample gives none.
pub fn bound(v: Option<f64>, unit: Unit) -> String {
    let Some(v) = v else { return "—".into() };
    match unit {
        Unit::Ratio => format!("{:.1}%", v * 100.0),
        _ if v.abs() >= 100.0 => format!("{v:.0}"),
        _ if v.abs() >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// `[388, 455]`, `[388, —]`.
pub fn text(i: &Interval, unit: Unit) -> String {
    format!("[{}, {}]", bound(i.lo, unit), bound(i.hi, unit))
}

/// The confidence as a head: `95%`, `99.5%`.
pub fn level(iv: &Intervals) -> String {
    format!("{}%", (iv.confidence * 1000.0).round() / 10.0)
}

/// The percentile intervals: a row per distribution that has them (in
/// [`Dist::ALL`]'s order and at its detail level), a column per percentile
/// the run was analysed with.
pub fn latency(r: &RunResult) -> Option<Table> {
    let iv = of(r)?;
    let s = &r.summary;
    let ps = crate::table::percentiles(s);
    let columns = ps
        .iter()
        .map(|&p| Column {
            head: format!("p{p}"),
            key: goodput_core::analysis::stats::percentile_key(p),
            unit: Unit::Plain,
            align: Align::Right,
            detail: Detail::Headline,
        })
        .collect();
    let rows = Dist::ALL
        .iter()
        .filter_map(|&d| {
            let row = iv.latency.get(d.key())?;
            let cells = ps
                .iter()
                .map(|&p| {
                    let key = goodput_core::analysis::stats::percentile_key(p);
                    Cell::Text(row.get(&key).map_or("-".into(), |i| text(i, Unit::Ms)))
                })
                .collect();
            Some(Row {
                label: d.label().to_string(),
                key: d.key().to_string(),
                detail: d.detail(),
                present: d.present(s) && d.of(s).count > 0,
                cells,
                marks: Vec::new(),
                note: None,
            })
        })
        .collect();
    Some(Table { title: format!("{} intervals (ms)", level(iv)), label_align: Align::Left, columns, rows })
}

/// The rates' and the attainment's intervals beside their values.
pub fn rates(r: &RunResult) -> Option<Table> {
    let iv = of(r)?;
    let s = &r.summary;
    let th = &s.throughput;
    let g = s.goodput.as_ref();
    let gi = iv.goodput.as_ref();
    // A run without output has no output rate to bound.
    let out = (!crate::metric::no_output(s)).then_some(());
    let col = |head: &str, key: &str| Column {
        head: head.into(),
        key: key.into(),
        unit: Unit::Plain,
        align: Align::Right,
        detail: Detail::Headline,
    };
    let row = |label: &str, key: &str, unit: Unit, value: Option<f64>, i: Option<&Interval>| Row {
        label: label.into(),
        key: key.into(),
        detail: Detail::Headline,
        present: value.is_some() && i.is_some(),
        cells: vec![
            Cell::Text(value.map_or("-".into(), |v| crate::format::value(Some(v), unit))),
            Cell::Text(i.map_or("-".into(), |i| text(i, unit))),
        ],
        marks: Vec::new(),
        note: None,
    };
    let mut rows = vec![
        row(
            "requests/s",
            "requests_per_s",
            Unit::RequestsPerS,
            Some(th.requests_per_s),
            Some(&iv.throughput.requests_per_s),
        ),
        row(
            "output tok/s",
            "output_tokens_per_s",
            Unit::TokensPerS,
            out.map(|()| th.output_tokens_per_s),
            Some(&iv.throughput.output_tokens_per_s),
        ),
        row(
            "goodput req/s",
            "goodput.requests_per_s",
            Unit::RequestsPerS,
            g.map(|g| g.requests_per_s),
            gi.map(|g| &g.requests_per_s),
        ),
        row(
            "goodput tok/s",
            "goodput.output_tokens_per_s",
            Unit::TokensPerS,
            g.map(|g| g.output_tokens_per_s).filter(|_| out.is_some()),
            gi.map(|g| &g.output_tokens_per_s),
        ),
    ];
    // Beside objectives the verdict holds the limits' share to its target:
    // that is the attainment, and goodput's, every threshold, is named so
    // (it had been the attainment beside a verdict it did not decide).
    match r.slo.as_ref().filter(|slo| slo.attains_by_limits()) {
        Some(slo) => {
            rows.push(row(
                "attainment (limits)",
                "slo_limits_attainment",
                Unit::Ratio,
                slo.limits_attainment(),
                gi.and_then(|g| g.limits_attainment.as_ref()),
            ));
            rows.push(row(
                slo.goodput_share_label(),
                "slo_attainment",
                Unit::Ratio,
                g.map(|g| g.slo_attainment),
                gi.map(|g| &g.slo_attainment),
            ));
        }
        None => rows.push(row(
            "attainment",
            "slo_attainment",
            Unit::Ratio,
            g.map(|g| g.slo_attainment),
            gi.map(|g| &g.slo_attainment),
        )),
    }
    Some(Table {
        title: format!("{} intervals", level(iv)),
        label_align: Align::Left,
        columns: vec![col("measured", "value"), col("interval", "interval")],
        rows,
    })
}

/// Whether a percentile shown at `detail` has a side the sample does not bound.
pub fn has_unbounded(r: &RunResult, detail: Detail) -> bool {
    latency(r).is_some_and(|t| {
        t.at(detail).rows.iter().any(|row| row.cells.iter().any(|c| matches!(c, Cell::Text(t) if t.contains('—'))))
    })
}

/// Whether `r`'s users moved in lockstep (its diagnosis says so): its
/// requests, sent in waves, were not independent, which its percentiles'
/// intervals and the stop they decided see only where batch means can,
/// and compare's tests on its records do not (docs/metrics.md, "Users in lockstep broke it most").
pub fn in_lockstep(r: &RunResult) -> bool {
    r.diagnosis.iter().any(|d| d.kind == goodput_core::DiagnosisKind::Lockstep)
}

/// What the intervals of `r` assume, in a sentence: requests taken as
/// independent, except the percentiles widened where neighbouring requests
/// were found to depend on each other ([`widened`]); where its users moved
/// in lockstep ([`in_lockstep`]), that its requests were not independent.
pub fn assumption(r: &RunResult, iv: &Intervals) -> String {
    let unit = match iv.unit {
        Independent::Requests => {
            let mut unit = "requests taken as independent".to_string();
            if let Some(w) = widened(iv) {
                unit += &format!(", except {w}");
            }
            if in_lockstep(r) {
                let runs = goodput_core::prometheus::scrape::runs_advice(r.engine.is_some());
                unit += &if iv.dependence.is_empty() {
                    format!(
                        ", which these, sent in waves, were not: the percentiles' intervals can be far too narrow \
                         (see the diagnosis; {runs})"
                    )
                } else {
                    format!(
                        "; these were sent in waves (see the diagnosis): a tail with too few requests beyond it to \
                         tell takes the median's factor, and {runs}"
                    )
                };
            }
            unit
        }
        Independent::Sessions => "whole sessions resampled (a session's requests are not independent)".into(),
    };
    format!("{unit}; rates by batch means over {} sub-windows; none for ITL", iv.batches)
}

/// The intervals widened for the dependence between neighbouring requests
/// (percentiles', attainments'), in words: how many, and the most widened
/// with its factor (`summary.intervals.dependence`). None where none was.
pub fn widened(iv: &Intervals) -> Option<String> {
    let all = iv.dependence.iter().flat_map(|(k, row)| row.iter().map(move |(p, f)| (k.as_str(), p.as_str(), *f)));
    let (key, p, f) = all.max_by(|a, b| a.2.total_cmp(&b.2))?;
    let n: usize = iv.dependence.values().map(|row| row.len()).sum();
    let name = match (key, p) {
        ("goodput", "limits_attainment") => "the limits' attainment".to_string(),
        ("goodput", _) => "the SLO attainment".to_string(),
        _ => format!("{} {p}", Dist::ALL.iter().find(|d| d.key() == key).map_or(key, |d| d.label())),
    };
    let s = if n == 1 { "" } else { "s" };
    Some(format!(
        "{n} interval{s} widened where neighbouring requests depended on each other (batch means in the order \
         they ended; most, {name}, as {f:.1}× fewer requests)"
    ))
}

/// The sentence for a `—`.
pub const UNBOUNDED: &str = "—: too few requests to bound that side";
