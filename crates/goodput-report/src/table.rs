//! The tables of a report as neutral data: rows, columns, units, alignment
//! and the detail level of each row and column, built once from a result.
//! The terminal, Markdown, HTML and CSV only format a [`Table`] (as
//! hyperfine's exporters share one representation), so they cannot pick
//! different rows, and a new metric is one line in one place: a latency
//! distribution is a line of `Dist::spec` (in `metric`), which says its
//! label, its detail level and when a run has it at all.
//!
//! Each format shows one detail level: Markdown (for a pull request) the
//! [`Detail::Headline`] rows and columns, the terminal [`Detail::Standard`],
//! HTML and CSV [`Detail::Full`]. A row a run does not have (the read lag
//! of a client that saw no kernel receive times, the error-adjusted
//! latencies of a run without failures) is left out by [`Table::at`]; CSV
//! keeps every row, present or not, so every run and sweep point has the
//! same columns.

use crate::format;
use crate::metric::{Dist, Stat, Unit};
use goodput_core::analysis::models::ModelStats;
use goodput_core::doc::sweep::{PointRef, SweepResult};
use goodput_core::{Distribution, RunResult, Summary};

/// How much of a table a format shows: each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detail {
    /// The figures everyone reads: Markdown shows these alone.
    Headline,
    /// What the terminal shows besides.
    Standard,
    /// Everything: HTML and CSV.
    Full,
}

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A column of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its head as people read it: `p99.9`, `TTFT p50 (ms)`.
    pub head: String,
    /// Its name in a machine-read header, as metric paths spell it: `p99_9`.
    pub key: String,
    pub unit: Unit,
    pub align: Align,
    pub detail: Detail,
}

/// What a cell holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number in its column's unit; `None` where the run has none.
    Num(Option<f64>),
    /// Text, which may come from the document: each format escapes it.
    Text(String),
    /// A pass or a fail, read as `yes` or `no` (each format marks it its
    /// own way); `None` where nothing was judged.
    Verdict { pass: Option<bool>, yes: &'static str, no: &'static str },
}

impl Cell {
    /// The number it holds, if it is one.
    pub fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(v) => *v,
            _ => None,
        }
    }

    /// As people read it, a number in `unit` ([`format::value`]); a verdict
    /// in its words, `-` where there is none.
    pub fn text(&self, unit: Unit) -> String {
        match self {
            Cell::Num(v) => format::value(*v, unit),
            Cell::Text(t) => t.clone(),
            Cell::Verdict { pass: Some(true), yes, .. } => yes.to_string(),
            Cell::Verdict { pass: Some(false), no, .. } => no.to_string(),
            Cell::Verdict { pass: None, .. } => "-".into(),
        }
    }
}

/// What the analysis says of a row (a sweep's point), beside its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Recommended,
    Saturation,
}

impl Mark {
    pub fn word(self) -> &'static str {
        match self {
            Mark::Recommended => "recommended",
            Mark::Saturation => "saturation",
        }
    }
}

/// A row: its label (the first column) and a cell per column.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// As shown; it may come from the document (a model's name): each format
    /// escapes it its own way.
    pub label: String,
    /// Its name in a machine-read header: the metric's path (`ttft_ms`).
    pub key: String,
    pub detail: Detail,
    /// Whether the run has this row at all; [`Table::at`] leaves it out when not.
    pub present: bool,
    pub cells: Vec<Cell>,
    /// What the analysis says of it, shown beside its label.
    pub marks: Vec<Mark>,
    /// A sentence about it (why a point was not steady), which HTML shows
    /// on a line of its own under the row.
    pub note: Option<String>,
}

/// A table of numbers with a label column.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The head of the label column: `latency (ms)`, `model`.
    pub title: String,
    /// The label column's alignment; the values' is each column's own.
    pub label_align: Align,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    /// The table as a format of `detail` shows it: the columns and the
    /// present rows at that level or above, in the same order.
    pub fn at(&self, detail: Detail) -> Table {
        let keep: Vec<usize> = (0..self.columns.len()).filter(|&i| self.columns[i].detail <= detail).collect();
        Table {
            title: self.title.clone(),
            label_align: self.label_align,
            columns: keep.iter().map(|&i| self.columns[i].clone()).collect(),
            rows: self
                .rows
                .iter()
                .filter(|r| r.present && r.detail <= detail)
                .map(|r| Row { cells: keep.iter().map(|&i| r.cells[i].clone()).collect(), ..r.clone() })
                .collect(),
        }
    }

    /// The columns' heads, after the title.
    pub fn heads(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.head.as_str()).collect()
    }

    /// A row's cells as people read them ([`Cell::text`] in each column's
    /// unit); CSV reads the numbers of [`Row::cells`] at full precision.
    pub fn texts(&self, row: &Row) -> Vec<String> {
        row.cells.iter().zip(&self.columns).map(|(v, c)| v.text(c.unit)).collect()
    }

    /// The whole table as text, for a format that lays it out itself: the
    /// head (the title, then the columns'), and each row's label and texts.
    /// Labels are unescaped: each format escapes them its own way.
    pub fn grid(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let head = std::iter::once(self.title.clone()).chain(self.columns.iter().map(|c| c.head.clone())).collect();
        let rows = self.rows.iter().map(|r| std::iter::once(r.label.clone()).chain(self.texts(r)).collect()).collect();
        (head, rows)
    }
}

/// The percentiles a run was analysed with (those of its TTFT), in order:
/// the percentile columns of its tables.
pub fn percentiles(s: &Summary) -> Vec<f64> {
    s.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect()
}

/// The statistics of a distribution as columns: count, mean, std, min, the
/// percentiles `ps`, max; the mean, percentiles and max are headline, std
/// and min standard, the count full.
fn stat_columns(ps: &[f64]) -> Vec<(Stat, Column)> {
    let col = |s: Stat, head: String, detail| {
        let unit = if s == Stat::Count { Unit::Count } else { Unit::Ms };
        (s, Column { head, key: s.key(), unit, align: Align::Right, detail })
    };
    let mut cols = vec![
        col(Stat::Count, "count".into(), Detail::Full),
        col(Stat::Mean, "mean".into(), Detail::Headline),
        col(Stat::Std, "std".into(), Detail::Standard),
        col(Stat::Min, "min".into(), Detail::Standard),
    ];
    cols.extend(ps.iter().map(|&p| col(Stat::P(p), format!("p{p}"), Detail::Headline)));
    cols.push(col(Stat::Max, "max".into(), Detail::Headline));
    cols
}

/// The latency table of a run, with the percentiles it was analysed with.
pub fn latency(r: &RunResult) -> Table {
    latency_with(&r.summary, &percentiles(&r.summary))
}

/// The latency table: a row per distribution in [`Dist::ALL`]'s order, a
/// column per statistic with the percentiles `ps` (a sweep's CSV gives
/// every point the percentiles of all of them).
pub fn latency_with(s: &Summary, ps: &[f64]) -> Table {
    let stats = stat_columns(ps);
    let rows = Dist::ALL
        .iter()
        .map(|&d| {
            let x = d.of(s);
            Row {
                label: d.label().to_string(),
                key: d.key().to_string(),
                detail: d.detail(),
                present: d.present(s),
                cells: stats.iter().map(|(st, _)| Cell::Num(st.of(x).or_else(|| unbounded(d, *st, x)))).collect(),
                marks: Vec::new(),
                note: None,
            }
        })
        .collect();
    Table {
        title: "latency (ms)".into(),
        label_align: Align::Left,
        columns: stats.into_iter().map(|(_, c)| c).collect(),
        rows,
    }
}

/// A figure of an error-adjusted distribution that holds samples but no
/// value: infinite, as a failure counts (its mean, its max, a percentile
/// that falls among the failures), which the document can only write as
/// `null`. HTML had shown these as `-`, which reads as not measured, while
/// the terminal says `∞`. Its std stays none (a spread with an infinite
/// sample has no value), as does a percentile the run was not analysed
/// with; CSV writes an infinite cell empty, as before.
fn unbounded(d: Dist, st: Stat, x: &Distribution) -> Option<f64> {
    let adjusted = matches!(d, Dist::ErrorAdjustedTtft | Dist::ErrorAdjustedE2e);
    let computed = match st {
        Stat::P(p) => x.percentiles.iter().any(|(q, _)| *q == p),
        Stat::Std | Stat::Count => false,
        Stat::Mean | Stat::Min | Stat::Max => true,
    };
    (adjusted && computed && x.count > 0).then_some(f64::INFINITY)
}

/// The "by model" table of a run spread over several models: each model's
/// requests, failures, output rate, and TTFT and TPOT at the median and at
/// the run's tail percentile (the last of `ps` above 50, else the max). Its
/// labels are the models' names, from the document.
pub fn by_model(models: &[ModelStats], ps: &[f64]) -> Table {
    let tail = ps.iter().copied().rfind(|p| *p > 50.0);
    let tail_name = tail.map_or("max".to_string(), |p| format!("p{p}"));
    let tail_key = tail.map_or("max".to_string(), goodput_core::analysis::stats::percentile_key);
    let at_tail = |d: &Distribution| match tail {
        Some(p) => d.p(p),
        None => d.max,
    };
    let col =
        |head: String, key: String, unit| Column { head, key, unit, align: Align::Right, detail: Detail::Headline };
    let columns = vec![
        col("requests".into(), "requests".into(), Unit::Count),
        col("failed".into(), "failed".into(), Unit::Count),
        col("output tok/s".into(), "output_tokens_per_s".into(), Unit::TokensPerS),
        col("TTFT p50 (ms)".into(), "ttft_ms_p50".into(), Unit::Ms),
        col(format!("TTFT {tail_name} (ms)"), format!("ttft_ms_{tail_key}"), Unit::Ms),
        col("TPOT p50 (ms)".into(), "tpot_ms_p50".into(), Unit::Ms),
        col(format!("TPOT {tail_name} (ms)"), format!("tpot_ms_{tail_key}"), Unit::Ms),
    ];
    let rows = models
        .iter()
        .map(|m| Row {
            label: m.model.clone(),
            key: m.model.clone(),
            detail: Detail::Headline,
            present: true,
            cells: [
                Some(m.requests as f64),
                Some(m.failed as f64),
                Some(m.output_tokens_per_s),
                m.ttft_ms.p(50.0),
                at_tail(&m.ttft_ms),
                m.tpot_ms.p(50.0),
                at_tail(&m.tpot_ms),
            ]
            .map(Cell::Num)
            .to_vec(),
            marks: Vec::new(),
            note: None,
        })
        .collect();
    Table { title: "model".into(), label_align: Align::Left, columns, rows }
}

/// A sweep's points, a row per point in run order, labelled by its load:
/// its origin, throughput, latencies, failures, goodput and verdicts; the
/// recommended point and the saturation marked. HTML shows every column,
/// Markdown the headline ones (the steadiness among them). (The terminal prints a point's row as it
/// completes, with its own columns: `terminal::sweep::row`.)
pub fn sweep_points(sw: &SweepResult) -> Table {
    let col =
        |head: &str, key: &str, unit, align, detail| Column { head: head.into(), key: key.into(), unit, align, detail };
    let (l, r) = (Align::Left, Align::Right);
    let (h, f) = (Detail::Headline, Detail::Full);
    // Beside objectives a point's verdict holds the limits' share to its
    // target: that is the attainment, and goodput's (every threshold) a
    // column of its own, named so (it had stood as the attainment beside
    // verdicts it did not decide).
    let every = sw.points.iter().find_map(|p| p.result.slo.as_ref().filter(|s| s.attains_by_limits()));
    let columns = [
        Some(col("origin", "origin", Unit::Plain, l, f)),
        Some(col("req/s", "requests_per_s", Unit::RequestsPerS, r, h)),
        Some(col("output tok/s", "output_tokens_per_s", Unit::TokensPerS, r, h)),
        Some(col("TTFT p50 (ms)", "ttft_ms_p50", Unit::Ms, r, h)),
        Some(col("TTFT p99 (ms)", "ttft_ms_p99", Unit::Ms, r, h)),
        Some(col("TPOT p50 (ms)", "tpot_ms_p50", Unit::Ms, r, h)),
        Some(col("E2E p99 (ms)", "e2e_ms_p99", Unit::Ms, r, h)),
        Some(col("failed", "requests_failed", Unit::Count, r, h)),
        Some(col("goodput tok/s", "goodput_output_tokens_per_s", Unit::TokensPerS, r, h)),
        Some(match every {
            Some(_) => col("attainment (limits)", "slo_limits_attainment", Unit::Ratio, r, f),
            None => col("attainment", "slo_attainment", Unit::Ratio, r, f),
        }),
        every.map(|slo| col(slo.goodput_share_label(), "slo_attainment", Unit::Ratio, r, f)),
        Some(col("SLO", "meets_slo", Unit::Plain, l, h)),
        Some(col("$ per M", "usd_per_million_output_tokens", Unit::Usd, r, f)),
        Some(col("steady", "steady", Unit::Plain, l, h)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let a = &sw.analysis;
    let rows = sw
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let res = &p.result;
            let s = &res.summary;
            let g = s.goodput.as_ref();
            let is = |x: &Option<PointRef>| x.as_ref().is_some_and(|x| x.index == i);
            let marks = [(&a.recommended, Mark::Recommended), (&a.saturation, Mark::Saturation)]
                .into_iter()
                .filter(|(x, _)| is(x))
                .map(|(_, m)| m)
                .collect();
            let n = Cell::Num;
            let cells = [
                Some(Cell::Text(p.origin.clone())),
                Some(n(Some(s.throughput.requests_per_s))),
                Some(n(Some(s.throughput.output_tokens_per_s))),
                Some(n(s.ttft_ms.p(50.0))),
                Some(n(s.ttft_ms.p(99.0))),
                Some(n(s.tpot_ms.p(50.0))),
                Some(n(s.e2e_ms.p(99.0))),
                Some(n(Some(s.requests.failed as f64))),
                Some(n(g.map(|g| g.output_tokens_per_s))),
                Some(match every {
                    Some(_) => n(res.slo.as_ref().and_then(|s| s.limits_attainment())),
                    None => n(g.map(|g| g.slo_attainment)),
                }),
                every.map(|_| n(g.map(|g| g.slo_attainment))),
                Some(slo_cell(sw.point_meets_slo(i), goodput_core::doc::sweep::steady(res))),
                Some(n(res.cost.as_ref().and_then(|c| c.usd_per_million_output_tokens))),
                Some(Cell::Verdict { pass: s.stability.as_ref().map(|st| st.steady), yes: "steady", no: "NOT STEADY" }),
            ]
            .into_iter()
            .flatten()
            .collect();
            // Why, for a row of its own: NOT STEADY alone says nothing of
            // what was measured (a backlog, a ramp) or what to change.
            let note = s
                .stability
                .as_ref()
                .filter(|st| !st.steady)
                .and_then(|st| st.reason.as_ref())
                .map(|why| format!("NOT STEADY: {why}"));
            Row {
                label: p.load.label(),
                key: i.to_string(),
                detail: Detail::Headline,
                present: true,
                cells,
                marks,
                note,
            }
        })
        .collect();
    Table { title: "load".into(), label_align: Align::Left, columns, rows }
}

/// A sweep point's SLO verdict as its analysis counts it: a point that met
/// every objective but was not a steady state is not counted as meeting
/// the SLO, so it reads "met, NOT STEADY", a fail, as the terminal's row
/// reads "meets … · NOT STEADY" (it had read "met" beside an analysis that
/// named a lower load the highest meeting the SLO).
fn slo_cell(meets: Option<bool>, steady: bool) -> Cell {
    match meets {
        Some(true) if !steady => Cell::Verdict { pass: Some(false), yes: "met", no: "met, NOT STEADY" },
        _ => Cell::Verdict { pass: meets, yes: "met", no: "missed" },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary whose every distribution holds four samples (the read
    /// lag only with `read_lag`), with `failed` failures: set through the
    /// document, by each distribution's path, so a new one needs no line here.
    fn summary(read_lag: bool, failed: u64) -> Summary {
        let d = Distribution::from_samples(&mut [10.0, 20.0, 30.0, 40.0], &[50.0, 90.0, 99.0]);
        let s = goodput_core::analyze(&[], &Default::default()).summary;
        let mut v = serde_json::to_value(&s).unwrap();
        for dist in Dist::ALL {
            if dist != Dist::ClientReadLag || read_lag {
                let at = format!("/{}", dist.key().replace('.', "/"));
                *v.pointer_mut(&at).unwrap() = serde_json::to_value(&d).unwrap();
            }
        }
        let mut s: Summary = serde_json::from_value(v).unwrap();
        s.requests.failed = failed;
        s
    }

    /// A sweep point that met every objective but was not steady is not
    /// counted as meeting the SLO: its cell reads so, as a fail.
    #[test]
    fn a_point_met_but_not_steady_reads_so() {
        let text = |c: &Cell| (c.text(Unit::Plain), matches!(c, Cell::Verdict { pass: Some(true), .. }));
        assert_eq!(text(&slo_cell(Some(true), true)), ("met".to_string(), true));
        assert_eq!(text(&slo_cell(Some(true), false)), ("met, NOT STEADY".to_string(), false));
        assert_eq!(text(&slo_cell(Some(false), false)), ("missed".to_string(), false));
        assert_eq!(text(&slo_cell(None, false)), ("-".to_string(), false));
    }

    fn labels(t: &Table) -> Vec<&str> {
        t.rows.iter().map(|r| r.label.as_str()).collect()
    }

    #[test]
    fn every_level_shows_its_rows_in_one_order() {
        let t = latency_with(&summary(true, 2), &[50.0, 90.0, 99.0]);
        assert_eq!(labels(&t.at(Detail::Headline)), ["TTFT", "TPOT", "ITL", "E2E", "TTFB"]);
        let standard = [
            "TTFT",
            "TTFT content",
            "TPOT",
            "ITL",
            "chunk gap",
            "ITL max/req",
            "E2E",
            "TTFB",
            "client queue",
            "read lag/req",
        ];
        assert_eq!(labels(&t.at(Detail::Standard)), standard);
        let mut full = standard.to_vec();
        full.extend(["TTFT (errors as ∞)", "E2E (errors as ∞)"]);
        assert_eq!(labels(&t.at(Detail::Full)), full);
        assert_eq!(labels(&t), full, "the whole table has every row");
        let keys: Vec<&str> = t.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, Dist::ALL.map(|d| d.key()));
    }

    #[test]
    fn the_read_lag_and_the_error_adjusted_rows_only_when_the_run_has_them() {
        let t = latency_with(&summary(false, 0), &[50.0]);
        let full = t.at(Detail::Full);
        assert!(!labels(&full).contains(&"read lag/req"), "{:?}", labels(&full));
        assert!(!labels(&full).iter().any(|l| l.contains("errors as ∞")), "{:?}", labels(&full));
        assert_eq!(full.rows.len(), 9);
        // The whole table keeps them, marked absent, for CSV's fixed columns.
        assert_eq!(t.rows.len(), 12);
        assert_eq!(t.rows.iter().filter(|r| !r.present).count(), 3);
        let with_lag = latency_with(&summary(true, 0), &[50.0]).at(Detail::Standard);
        assert_eq!(with_lag.rows.last().unwrap().label, "read lag/req");
        let failed = latency_with(&summary(false, 1), &[50.0]).at(Detail::Full);
        assert_eq!(labels(&failed)[9..], ["TTFT (errors as ∞)", "E2E (errors as ∞)"]);
    }

    /// An error-adjusted figure that falls among the failures reads `∞`,
    /// as the terminal says it (HTML had shown `-`, as if not measured);
    /// CSV leaves it empty, and a percentile not analysed stays `-`.
    #[test]
    fn error_adjusted_figures_among_the_failures_read_infinite() {
        let mut s = summary(false, 1);
        let mut samples = [150.0, 151.0, f64::INFINITY];
        s.error_adjusted.ttft_ms = Distribution::from_samples(&mut samples, &[50.0, 99.0]);
        let t = latency_with(&s, &[50.0, 99.0, 95.0]).at(Detail::Full);
        let row = t.rows.iter().find(|r| r.key == "error_adjusted.ttft_ms").expect("the row");
        // count, mean, std, min, p50, p99, p95, max
        assert_eq!(t.texts(row), ["3", "∞", "-", "150.00", "151.00", "∞", "-", "∞"]);
        assert_eq!(crate::escape::csv_num(row.cells[1].num()), "");
        // Not an error-adjusted row: none is none.
        let ttft = &t.rows[0];
        assert_eq!(t.texts(ttft)[6], "-");
    }

    #[test]
    fn columns_by_level_with_their_units_and_keys() {
        let t = latency_with(&summary(true, 0), &[50.0, 99.9]);
        assert_eq!(t.title, "latency (ms)");
        assert_eq!(t.at(Detail::Headline).heads(), ["mean", "p50", "p99.9", "max"]);
        assert_eq!(t.at(Detail::Standard).heads(), ["mean", "std", "min", "p50", "p99.9", "max"]);
        assert_eq!(t.at(Detail::Full).heads(), ["count", "mean", "std", "min", "p50", "p99.9", "max"]);
        let keys: Vec<&str> = t.columns.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["count", "mean", "std", "min", "p50", "p99_9", "max"]);
        let units: Vec<Unit> = t.columns.iter().map(|c| c.unit).collect();
        assert_eq!(units, [Unit::Count, Unit::Ms, Unit::Ms, Unit::Ms, Unit::Ms, Unit::Ms, Unit::Ms]);
        assert!(t.columns.iter().all(|c| c.align == Align::Right) && t.label_align == Align::Left);
    }

    #[test]
    fn cells_hold_the_values_and_read_in_their_unit() {
        let t = latency_with(&summary(true, 0), &[50.0]).at(Detail::Full);
        let ttft = &t.rows[0];
        let std = ttft.cells[2].num().expect("a standard deviation");
        let nums: Vec<Option<f64>> = ttft.cells.iter().map(Cell::num).collect();
        assert_eq!(nums, [Some(4.0), Some(25.0), Some(std), Some(10.0), Some(25.0), Some(40.0)]);
        let std = format!("{std:.2}");
        assert_eq!(t.texts(ttft), ["4", "25.00", &std, "10.00", "25.00", "40.00"]);
        // A percentile the run was not analysed with is no value.
        let t = latency_with(&summary(true, 0), &[95.0]);
        assert_eq!(t.rows[0].cells[4], Cell::Num(None));
        assert_eq!(t.texts(&t.rows[0])[4], "-");
    }

    #[test]
    fn by_model_columns_end_at_the_tail_percentile_or_the_max() {
        let mut d = Distribution::from_samples(&mut [10.0, 20.0, 30.0], &[50.0, 99.0]);
        d.max = Some(30.0);
        let row = ModelStats {
            model: "m".into(),
            requests: 3,
            completed: 3,
            failed: 0,
            output_tokens_per_s: 12.34,
            ttft_ms: d.clone(),
            tpot_ms: d,
        };
        let t = by_model(std::slice::from_ref(&row), &[50.0, 90.0, 99.0]);
        assert_eq!(t.title, "model");
        assert_eq!(t.heads()[4], "TTFT p99 (ms)");
        assert_eq!(t.rows[0].label, "m");
        assert_eq!(t.texts(&t.rows[0]), ["3", "0", "12.3", "20.00", "29.80", "20.00", "29.80"]);
        let t = by_model(&[row], &[50.0]);
        assert_eq!((t.heads()[4], t.heads()[6]), ("TTFT max (ms)", "TPOT max (ms)"));
        assert_eq!(t.texts(&t.rows[0])[4], "30.00");
        assert_eq!(t.at(Detail::Headline), t, "every by-model row and column is headline");
    }
}
