//! The `repeats` block of `--runs N` built from runs' documents, and its
//! tables: each figure's spread is the runs' own values, kept within what
//! the figure can be, and every format's table has a row per figure.

use crate::common::*;
use goodput_report::repeats;

fn runs_of(profiles: &[Profile]) -> Vec<goodput_core::RunResult> {
    profiles.iter().map(|&p| run_of("llama-3.1-8b", p, records(p), Some(SLO), false)).collect()
}

#[test]
fn the_block_holds_each_run_and_each_figures_spread() {
    let runs = runs_of(&[
        Profile { seed: 1, ..Profile::default() },
        Profile { seed: 2, ..Profile::default() },
        Profile { seed: 3, ttft_ms: 60.0, ..Profile::default() },
    ]);
    let seeds = repeats::seeds(10, 3, false);
    let rep = repeats::build(&runs, 3, &seeds, false, 0.95);
    assert_eq!((rep.n, rep.asked, rep.seeds.clone()), (3, 3, vec![10, 11, 12]));
    assert!(rep.notes.is_empty(), "{:?}", rep.notes);
    let ttft: Vec<f64> = runs.iter().map(|r| r.summary.ttft_ms.p(50.0).unwrap()).collect();
    for (run, v) in rep.runs.iter().zip(&ttft) {
        assert_eq!(run.figures["ttft_ms.p50"], *v);
        assert_eq!(run.completed, 60);
    }
    let s = rep.spread.iter().find(|s| s.figure == "ttft_ms.p50").unwrap();
    assert!((s.mean - ttft.iter().sum::<f64>() / 3.0).abs() < 1e-9);
    assert_eq!(s.max, ttft.iter().copied().fold(f64::MIN, f64::max));
    // The slower third run shows: the spread is wide, and the interval holds the mean.
    assert!(s.sd.unwrap() > 1.0 && s.lo.unwrap() < s.mean && s.mean < s.hi.unwrap(), "{s:?}");
    // Goodput and attainment-based figures are there: the runs were judged.
    assert!(rep.spread.iter().any(|s| s.figure == "goodput.requests_per_s"), "{:?}", rep.spread);

    // The tables: a row per figure; a column per run, its seed in the head.
    let mut top = runs[0].clone();
    top.repeats = Some(rep.clone());
    let t = repeats::spread(&top).unwrap();
    assert_eq!(t.rows.len(), rep.spread.len());
    assert_eq!(t.title, "spread over 3 runs");
    let side = repeats::runs(&top).unwrap();
    assert_eq!(side.heads(), vec!["run 1 (seed 10)", "run 2 (seed 11)", "run 3 (seed 12)"]);
    let (header, rows) = repeats::csv_rows(&rep);
    assert_eq!(rows.len(), 3);
    assert_eq!(header.len(), rows[0].len());
    assert!(repeats::note(&rep).contains("seeds 10 to 12"));
}

/// An error rate of 0, 0 and a third: Student's t on three runs reaches
/// below zero, and the interval is kept at zero.
#[test]
fn the_interval_stays_within_what_a_figure_can_be() {
    let runs = runs_of(&[
        Profile { seed: 1, ..Profile::default() },
        Profile { seed: 2, ..Profile::default() },
        Profile { seed: 3, fail_every: 3, ..Profile::default() },
    ]);
    let rep = repeats::build(&runs, 3, &repeats::seeds(1, 3, false), false, 0.95);
    let e = rep.spread.iter().find(|s| s.figure == "error_rate").unwrap();
    assert!(e.mean > 0.1 && e.sd.unwrap() > 0.1, "{e:?}");
    assert_eq!(e.lo, Some(0.0), "{e:?}");
    assert!(e.hi.unwrap() <= 1.0, "{e:?}");
}

/// Runs that gave the same figures, and runs fewer than asked, say so.
#[test]
fn identical_and_missing_runs_are_noted() {
    let p = Profile::default();
    let same = runs_of(&[p, p]);
    let rep = repeats::build(&same, 4, &repeats::seeds(5, 4, true), true, 0.95);
    assert_eq!((rep.n, rep.seeds.clone()), (2, vec![5, 5]));
    let notes = rep.notes.join(" | ");
    assert!(notes.contains("2 of the 4 runs asked were made"), "{notes}");
    assert!(notes.contains("every run gave the same figures"), "{notes}");
    assert!(repeats::note(&rep).contains("all with seed 5"));
}

/// Runs under an SLO with an objective beside its limit: the block keeps
/// the limits' share the verdicts used (`slo.attainment.measured`) beside
/// goodput's, and the tables name them `SLO attainment (limits)` and `met
/// every threshold` (goodput's every-threshold share had read `SLO
/// attainment`); under limits alone the one share is kept once, as before.
#[test]
fn beside_objectives_the_verdicts_share_and_goodputs_are_kept_apart() {
    let runs = [mixed_run(3), mixed_run(4)];
    let rep = repeats::build(&runs, 2, &repeats::seeds(1, 2, false), false, 0.95);
    let mut top = runs[0].clone();
    top.repeats = Some(rep);
    let t = repeats::runs(&top).unwrap();
    let row = |label: &str| {
        let r = t.rows.iter().find(|r| r.label == label).unwrap_or_else(|| panic!("no {label}"));
        (r.key.clone(), t.texts(r))
    };
    assert_eq!(
        row("SLO attainment (limits)"),
        ("slo.attainment.measured".into(), vec!["100.00%".into(), "100.00%".into()])
    );
    assert_eq!(row("met every threshold"), ("goodput.slo_attainment".into(), vec!["60.00%".into(), "80.00%".into()]));
    assert!(!t.rows.iter().any(|r| r.label == "SLO attainment"));
    let alone: Vec<_> = runs
        .iter()
        .map(|r| run_of("llama-3.1-8b", Profile::default(), r.requests.clone().unwrap(), Some("ttft<=100ms"), false))
        .collect();
    let rep = repeats::build(&alone, 2, &repeats::seeds(1, 2, false), false, 0.95);
    assert!(!rep.spread.iter().any(|s| s.figure == "slo.attainment.measured"), "{:?}", rep.spread);
    let mut top = alone[0].clone();
    top.repeats = Some(rep);
    let labels: Vec<String> = repeats::spread(&top).unwrap().rows.iter().map(|r| r.label.clone()).collect();
    assert!(labels.contains(&"SLO attainment".to_string()), "{labels:?}");
}
