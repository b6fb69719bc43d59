//! Repeated runs (`--runs N`, the document's `repeats` block): the block
//! built from the runs' documents, and its tables as every format shows
//! them: the spread of each headline figure (mean, standard deviation,
//! range, the interval of the mean) and the runs side by side.

use crate::format;
use crate::metric::{Metric, Unit};
use crate::table::{Align, Cell, Column, Detail, Row, Table};
use goodput_core::doc::repeats::{RepeatRun, Repeats, Spread};
use goodput_core::RunResult;

/// The figures a repeat keeps: `compare`'s headline metrics.
pub fn figures() -> Vec<Metric> {
    Metric::main()
}

/// The `repeats` block of `runs` (in order, the first the document's top
/// level), made with `seeds`, at confidence `conf`.
pub fn build(runs: &[RunResult], asked: u32, seeds: &[u64], same_seed: bool, conf: f64) -> Repeats {
    let metrics: Vec<Metric> = figures().into_iter().filter(|m| m.shown_for(runs)).collect();
    let each: Vec<RepeatRun> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| RepeatRun {
            index: i as u32 + 1,
            seed: seeds.get(i).copied().unwrap_or_default(),
            run_id: r.run_id.clone(),
            started_unix_s: r.started_unix_s,
            interrupted: r.interrupted,
            stormed: r
                .stop
                .as_ref()
                .is_some_and(|s| s.reason == goodput_core::analysis::until::StopReason::FailureStorm),
            completed: r.summary.requests.completed,
            failed: r.summary.requests.failed,
            figures: metrics.iter().filter_map(|m| Some((m.path(), m.value(r).filter(|v| v.is_finite())?))).collect(),
        })
        .collect();
    // A run stopped before its end measured part of a run: its figures stay
    // in `runs`, and the spread is of the whole runs (of every run where
    // none is whole, as the notes say).
    let stopped: Vec<&RepeatRun> = each.iter().filter(|r| r.interrupted).collect();
    let whole = |r: &&RepeatRun| !r.interrupted || stopped.len() == each.len();
    let spread: Vec<Spread> = metrics
        .iter()
        .filter_map(|m| {
            let path = m.path();
            let values: Vec<f64> = each.iter().filter(whole).filter_map(|r| r.figures.get(&path).copied()).collect();
            // No headline figure is negative, and a share is at most one:
            // the interval of the mean is kept within what the figure can be.
            let mut s = Spread::of(&path, &values, conf)?;
            s.lo = s.lo.map(|lo| lo.max(0.0));
            if m.unit() == Unit::Ratio {
                s.hi = s.hi.map(|hi| hi.min(1.0));
            }
            Some(s)
        })
        .collect();
    let mut notes = Vec::new();
    if runs.len() < asked as usize {
        notes.push(format!("{} of the {asked} runs asked were made", runs.len()));
    }
    if !stopped.is_empty() {
        notes.push(stopped_note(&stopped, each.len()));
    }
    // Alike to rounding: a rate's sum over the same requests may differ in its last bits.
    let alike = |s: &Spread| s.max - s.min <= 1e-9 * s.max.abs().max(s.min.abs()).max(1e-12);
    if each.iter().filter(whole).count() >= 2 && !spread.is_empty() && spread.iter().all(alike) {
        notes.push(
            "every run gave the same figures: the runs could not differ (the same seed, or a deterministic server), \
             so their spread says nothing of the noise"
                .into(),
        );
    }
    Repeats {
        n: runs.len() as u32,
        asked,
        seeds: seeds[..runs.len().min(seeds.len())].to_vec(),
        same_seed,
        confidence: conf,
        runs: each,
        spread,
        notes,
    }
}

/// What the runs stopped before their end (`stopped`, of `made`) are to the
/// spread: left out of it, or, where no run is whole, all it has.
fn stopped_note(stopped: &[&RepeatRun], made: usize) -> String {
    let each: Vec<String> =
        stopped.iter().map(|r| format!("run {} ({} requests completed)", r.index, r.completed)).collect();
    let (were, its) = if stopped.len() == 1 { ("was", "its figures are") } else { ("were", "their figures are") };
    if stopped.len() == made {
        format!(
            "{} {were} interrupted before {}: the spread and intervals are of partial runs; run again to the end",
            listed(&each),
            if made == 1 { "its end" } else { "their end" }
        )
    } else {
        format!(
            "{} {were} interrupted before the end: {its} kept in runs, and left out of the spread and intervals",
            listed(&each)
        )
    }
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The seeds of `n` runs from `first`: one more each run, or all `first`.
pub fn seeds(first: u64, n: u32, same: bool) -> Vec<u64> {
    (0..u64::from(n)).map(|i| if same { first } else { first.wrapping_add(i) }).collect()
}

fn metric(path: &str) -> Option<Metric> {
    path.parse().ok()
}

/// The figure's name beside the run `r` ([`Metric::label_beside`]):
/// goodput's share is `met every threshold` beside a verdict that counted
/// the limits alone.
fn label(path: &str, r: Option<&RunResult>) -> String {
    metric(path).map_or_else(|| path.to_string(), |m| m.label_beside(r))
}

fn unit(path: &str) -> Unit {
    metric(path).map_or(Unit::Plain, |m| m.unit())
}

/// The confidence as a head: `95%`.
fn level(conf: f64) -> String {
    format!("{}%", (conf * 1000.0).round() / 10.0)
}

fn column(head: &str, key: &str, detail: Detail) -> Column {
    Column { head: head.into(), key: key.into(), unit: Unit::Plain, align: Align::Right, detail }
}

/// The spread of each figure across the runs: a row per figure, with its
/// mean, standard deviation, range and the interval of the mean; each cell
/// in the figure's own unit.
pub fn spread(r: &RunResult) -> Option<Table> {
    let rep = r.repeats.as_ref()?;
    let columns = vec![
        column("mean", "mean", Detail::Headline),
        column("sd", "sd", Detail::Headline),
        column("min", "min", Detail::Standard),
        column("max", "max", Detail::Standard),
        column(&format!("{} of mean", level(rep.confidence)), "interval", Detail::Headline),
    ];
    let rows = rep
        .spread
        .iter()
        .map(|s| {
            let u = unit(&s.figure);
            let v = |x: Option<f64>| Cell::Text(format::value(x, u));
            let interval = match (s.lo, s.hi) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", format::value(Some(lo), u), format::value(Some(hi), u)),
                _ => "-".into(),
            };
            Row {
                label: label(&s.figure, Some(r)),
                key: s.figure.clone(),
                detail: Detail::Headline,
                present: true,
                cells: vec![v(Some(s.mean)), v(s.sd), v(Some(s.min)), v(Some(s.max)), Cell::Text(interval)],
                marks: Vec::new(),
                note: None,
            }
        })
        .collect();
    Some(Table { title: format!("spread over {} runs", rep.n), label_align: Align::Left, columns, rows })
}

/// The runs side by side: a column per run (its seed in the head), a row
/// per figure.
pub fn runs(r: &RunResult) -> Option<Table> {
    let rep = r.repeats.as_ref()?;
    let columns = rep
        .runs
        .iter()
        .map(|run| {
            let head =
                format!("run {} (seed {}){}", run.index, run.seed, if run.interrupted { " stopped" } else { "" });
            column(&head, &format!("run_{}", run.index), Detail::Headline)
        })
        .collect();
    let rows = rep
        .spread
        .iter()
        .map(|s| {
            let u = unit(&s.figure);
            Row {
                label: label(&s.figure, Some(r)),
                key: s.figure.clone(),
                detail: Detail::Headline,
                present: true,
                cells: rep
                    .runs
                    .iter()
                    .map(|run| Cell::Text(format::value(run.figures.get(&s.figure).copied(), u)))
                    .collect(),
                marks: Vec::new(),
                note: None,
            }
        })
        .collect();
    Some(Table { title: "runs".into(), label_align: Align::Left, columns, rows })
}

/// The figures a sweep's spread table shows for each repeated point.
const SWEEP_FIGURES: [&str; 5] =
    ["ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "e2e_ms.p99", "throughput.output_tokens_per_s"];

/// A sweep's repeated points (`sweep --runs N`): a row per point, each
/// cell a figure's mean ± sd over the point's runs; `None` when no point
/// was repeated.
pub fn sweep_spread(sw: &goodput_core::doc::sweep::SweepResult) -> Option<Table> {
    let repeated: Vec<_> = sw.points.iter().filter_map(|p| Some((p, p.result.repeats.as_ref()?))).collect();
    let n = repeated.first()?.1.asked;
    let columns = SWEEP_FIGURES.iter().map(|f| column(&label(f, None), f, Detail::Headline)).collect();
    let rows = repeated
        .iter()
        .map(|(p, rep)| Row {
            label: format!("{} ({} runs)", p.load.label(), rep.n),
            key: p.load.label(),
            detail: Detail::Headline,
            present: true,
            cells: SWEEP_FIGURES
                .iter()
                .map(|f| {
                    let u = unit(f);
                    Cell::Text(rep.spread.iter().find(|s| s.figure == *f).map_or("-".into(), |s| {
                        format!("{} ± {}", format::value(Some(s.mean), u), format::value(s.sd, u))
                    }))
                })
                .collect(),
            marks: Vec::new(),
            note: None,
        })
        .collect();
    Some(Table { title: format!("spread over {n} runs a point"), label_align: Align::Left, columns, rows })
}

/// What a sweep's spread table is, in a sentence.
pub const SWEEP_NOTE: &str = "each point's mean ± sd over its runs; the points' tables, the charts and the \
     analysis read each point's first run";

/// Which run the top level is, how the runs differ, and what the interval
/// of the mean assumes, in a sentence; then the block's notes.
pub fn note(rep: &Repeats) -> String {
    let seeds = if rep.same_seed {
        format!("all with seed {}", rep.seeds.first().copied().unwrap_or_default())
    } else {
        match (rep.seeds.first(), rep.seeds.last()) {
            (Some(a), Some(b)) if a != b => format!("seeds {a} to {b}"),
            (Some(a), _) => format!("seed {a}"),
            _ => String::new(),
        }
    };
    let mut s = format!(
        "{} runs, {seeds}; every other figure of this report is run 1's; the interval of the mean is Student's t over the runs, \
         taken as independent draws of one setting",
        rep.n
    );
    for n in &rep.notes {
        s.push_str("; ");
        s.push_str(n);
    }
    s
}

/// The spread in a line, for a sweep's point: the runs, then TTFT's p99
/// and the output rate as mean ± sd.
pub fn line(rep: &Repeats) -> String {
    let mut parts = vec![format!("{} runs", rep.n)];
    for figure in ["ttft_ms.p99", "throughput.output_tokens_per_s"] {
        if let Some(s) = rep.spread.iter().find(|s| s.figure == figure) {
            let u = unit(figure);
            parts.push(format!(
                "{} {} ± {}",
                label(figure, None),
                format::value(Some(s.mean), u),
                format::value(s.sd, u)
            ));
        }
    }
    parts.extend(rep.notes.iter().cloned());
    parts.join(" · ")
}

/// `runs.csv`: a row per run, its figures at full precision.
pub fn csv_rows(rep: &Repeats) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header: Vec<String> =
        ["run", "seed", "run_id", "started_unix_s", "interrupted", "completed", "failed"].map(String::from).into();
    header.extend(rep.spread.iter().map(|s| s.figure.clone()));
    let rows = rep
        .runs
        .iter()
        .map(|run| {
            let mut row = vec![
                run.index.to_string(),
                run.seed.to_string(),
                run.run_id.clone(),
                run.started_unix_s.to_string(),
                run.interrupted.to_string(),
                run.completed.to_string(),
                run.failed.to_string(),
            ];
            row.extend(rep.spread.iter().map(|s| run.figures.get(&s.figure).map_or(String::new(), f64::to_string)));
            row
        })
        .collect();
    (header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `completed` requests, each with its first token `ttft` ms
    /// after it was sent.
    fn run(completed: u64, ttft: u64, interrupted: bool) -> RunResult {
        use goodput_core::analysis::assemble::{assemble, Assembly};
        use goodput_core::{AnalysisOptions, Channel, OutputChunk, RequestRecord, Target, Tool};
        use std::time::Duration;
        let ms = Duration::from_millis;
        let recs: Vec<RequestRecord> = (0..completed)
            .map(|id| {
                let sent = ms(id * 100);
                let mut r = RequestRecord::new(id, sent, sent);
                for k in 0..4 {
                    r.chunks.push(OutputChunk { t: sent + ms(ttft + k * 10), tokens: 1, channel: Channel::Content });
                }
                r.end = sent + ms(ttft + 31);
                (r.input_tokens, r.output_tokens) = (16, 4);
                r.outcome = goodput_core::Outcome::Success;
                r
            })
            .collect();
        let a = Assembly {
            tool: Tool { name: "goodput".into(), version: "0.1.0".into(), commit: None },
            kind: "bench",
            run_id: format!("run-{ttft}"),
            started_unix_s: 1_767_225_600.0,
            interrupted,
            config: Default::default(),
            target: Target::default(),
            include_requests: false,
        };
        assemble(a, &recs, &AnalysisOptions::default())
    }

    #[test]
    fn an_interrupted_run_is_kept_but_left_out_of_the_spread_and_said_so() {
        let runs = [run(60, 100, false), run(60, 110, false), run(21, 400, true)];
        let rep = build(&runs, 3, &[1, 2, 3], false, 0.95);
        assert_eq!(rep.runs.len(), 3, "the interrupted run is kept in the document");
        assert!(rep.runs[2].interrupted);
        let ttft = rep.spread.iter().find(|s| s.figure == "ttft_ms.p99").expect("TTFT's spread");
        assert!(ttft.max < 200.0, "the interrupted run's TTFT entered the spread: {ttft:?}");
        for s in &rep.spread {
            assert_eq!(s.n, 2, "{} counted the interrupted run", s.figure);
        }
        let note = rep.notes.iter().find(|n| n.contains("interrupted")).expect("a note of the interrupted run");
        assert!(note.contains("run 3 (21 requests completed)") && note.contains("left out of the spread"), "{note}");
        // Where no run is whole, the spread is of them all, and says so.
        let all = [run(21, 400, true)];
        let rep = build(&all, 3, &[1], false, 0.95);
        assert!(rep.spread.iter().all(|s| s.n == 1));
        assert!(rep.notes.iter().any(|n| n.contains("partial runs")), "{:?}", rep.notes);
    }

    #[test]
    fn seeds_count_up_or_stay() {
        assert_eq!(seeds(7, 3, false), vec![7, 8, 9]);
        assert_eq!(seeds(7, 3, true), vec![7, 7, 7]);
        assert_eq!(seeds(u64::MAX, 2, false), vec![u64::MAX, 0]);
    }
}
