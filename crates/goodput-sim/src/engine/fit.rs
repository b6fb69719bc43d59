//! Fitting the engine's constants (the step time's and the front end's,
//! the power model's and the memory kept from the KV cache) to a user's
//! own measurements
//! (docs/simulator.md, "Fitting the constants to your measurements"): the
//! shipped constants were set on public tables of other servers, and a
//! user who has measured their own deployment can move a few of them until
//! the engine reproduces those measurements, then predict other
//! configurations (`estimate`, `sweep --estimate`, `plan`) from there.
//!
//! The fit is a search, not a formula: each candidate is judged by running
//! the rows' loads through the engine ([`validate`]), so whatever the
//! engine models (the scheduler, the waves of a closed loop, the front
//! end) is in the fit. It minimises the mean squared log ratio of predicted
//! to measured over the rows of split `calibration` (every row where none
//! is marked so), one GPU family at a time, by coordinate search over each
//! named constant within bounds any engine keeps to; rows of split
//! `held-out` are never looked at until the check after.

use super::calibration::Calibration;
use super::catalog::{GpuFamily, GpuSpec};
use super::error::Error;
use super::validate::{
    in_parallel, validate, Metric, ReferenceEngine, ReferenceRow, Split, ValidationOptions, ValidationReport,
};
use goodput_core::util::{duration_text, round_significant};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The constants a fit may move, each with the range searched: shares of
/// a peak from 1 % to all of it, times from a trifle to far more than any
/// engine was seen to take; the power model's two shares of the dynamic
/// range and its idle power (a multiple of the catalog's), which rows of
/// joules per output token (a run whose GPUs' energy counters were read)
/// measure; and the memory the engine keeps from its
/// KV cache, which rows of the cache's size (a server's own) measure.
/// Spread is not fitted: no row measures it.
pub const FITTABLE: [(&str, f64, f64); 20] = [
    ("eta_compute", 0.01, 1.0),
    ("eta_weights", 0.01, 1.0),
    ("eta_kv", 0.01, 1.0),
    ("eta_link", 0.01, 1.0),
    ("eta_w4a16_moe", 0.01, 1.0),
    ("eta_fp4_weights", 0.01, 1.0),
    ("c_layer_us", 0.01, 1000.0),
    ("c_step_us", 1.0, 100_000.0),
    ("c_seq_us", 0.01, 1000.0),
    ("allreduce_latency_us", 0.1, 1000.0),
    ("frontend_overhead_ms", 0.01, 2000.0),
    ("frontend_serial_us", 0.1, 100_000.0),
    ("frontend_serial_us_per_token", 0.001, 1000.0),
    ("frontend_serial_us_per_output_token", 0.1, 10_000.0),
    ("power_compute", 0.01, 1.0),
    ("power_memory", 0.01, 1.0),
    ("power_idle", 0.1, 4.0),
    ("runtime_gib", 0.01, 64.0),
    ("activation_gib", 0.01, 64.0),
    ("sglang_preload_gib", 0.01, 64.0),
];

/// The constants the rows of a metric that is no time are fitted for: the
/// power model's for joules per output token, the memory the engine keeps
/// from its cache for the cache's size. Such rows weigh in only where one
/// of them is fitted, and only they (they move nothing else, and any other
/// constant bent to fit energy or memory would bend the times).
fn fitted_for(metric: Metric) -> Option<&'static [&'static str]> {
    match metric {
        Metric::JoulesPerOutputToken => Some(&["power_compute", "power_memory", "power_idle"]),
        Metric::KvCacheTokens => Some(&["runtime_gib", "activation_gib", "sglang_preload_gib"]),
        _ => None,
    }
}

/// What `estimate --fit` moves unless told otherwise: the prefill's share
/// of the compute peak (TTFT, prompt-bound throughput), the decode's of
/// the bandwidth (ITL), the step's fixed cost (ITL at small batches) and
/// the front end's time (TTFT of short prompts).
pub const DEFAULT_FIT: [&str; 4] = ["eta_compute", "eta_weights", "c_step_us", "frontend_overhead_ms"];

/// Passes over the constants; each pass searches every constant in turn
/// with the others held, the first over its whole range, each later one a
/// window a quarter as wide around where the last ended, on a grid as fine
/// in proportion: a pass that finds nothing better leaves the next one's
/// finer grid to look (the last pass resolves a constant to about 1 %).
const ROUNDS: usize = 3;

/// The runs of the rows a fit takes for each constant: a pass's grid of 9
/// points and three narrowings of 5, over [`ROUNDS`] passes.
pub const RUNS_A_CONSTANT: usize = ROUNDS * (9 + 3 * 5);

/// One fitted constant of one family.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedConstant {
    pub family: GpuFamily,
    pub name: &'static str,
    pub shipped: f64,
    pub fitted: f64,
}

/// A fit and its check.
#[derive(Debug, Clone)]
pub struct FitReport {
    pub constants: Vec<FittedConstant>,
    /// The fitted constants of each family the rows hold.
    pub calibrations: BTreeMap<GpuFamily, Calibration>,
    /// Rows fitted on, and rows held out (checked only).
    pub fit_rows: usize,
    pub held_out_rows: usize,
    /// Every row, with the options' constants and with the fitted ones.
    pub before: ValidationReport,
    pub after: ValidationReport,
    /// Runs of the fitted rows through the engine.
    pub evaluations: usize,
}

/// Reads `a,b,c` into constant names, each one a fit can move.
pub fn parse_constants(list: &str) -> Result<Vec<&'static str>, Error> {
    let mut out: Vec<&'static str> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(&(known, _, _)) = FITTABLE.iter().find(|(k, _, _)| *k == name) else {
            let names: Vec<&str> = FITTABLE.iter().map(|(k, _, _)| *k).collect();
            return Err(Error::InvalidCalibration(format!(
                "cannot fit `{name}`: the constants a fit moves are {}",
                names.join(", ")
            )));
        };
        if !out.contains(&known) {
            out.push(known);
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidCalibration("no constant to fit: name at least one, eta_compute,c_step_us".into()));
    }
    Ok(out)
}

/// Fits `constants` to the rows: per GPU family, on its rows of split
/// `calibration`, or on all its rows where the file marks none so. Starts
/// from `options.calibrations` (the shipped constants where a family has
/// none); rows no family of the fit holds are predicted as given.
pub fn fit(rows: &[ReferenceRow], options: &ValidationOptions, constants: &[&'static str]) -> Result<FitReport, Error> {
    fit_telling(rows, options, constants, &|_| {})
}

/// [`fit`], telling `say` how long it will take and where each pass ends:
/// a file of hundreds of closed loops takes seconds a run, and the fit
/// runs it [`RUNS_A_CONSTANT`] times a constant.
pub fn fit_telling(
    rows: &[ReferenceRow],
    options: &ValidationOptions,
    constants: &[&'static str],
    say: &dyn Fn(&str),
) -> Result<FitReport, Error> {
    if rows.is_empty() {
        return Err(Error::InvalidCalibration("no rows to fit: the file holds no reference row".into()));
    }
    let before = validate(rows, options)?;
    let fitted_on = fitted_on(rows);
    let mut families: BTreeMap<GpuFamily, Vec<ReferenceRow>> = BTreeMap::new();
    let counts = |r: &&ReferenceRow| fitted_for(r.metric).is_none_or(|c| c.iter().any(|c| constants.contains(c)));
    for row in rows.iter().filter(|r| fitted_on(r)).filter(counts) {
        families.entry(GpuSpec::lookup(&row.gpu)?.family).or_default().push(row.clone());
    }
    if families.is_empty() {
        return Err(Error::InvalidCalibration(
            "no row to fit on: every row is `held-out`; mark those to fit on `calibration` in the split column".into(),
        ));
    }
    for (metric, how) in [
        (
            Metric::JoulesPerOutputToken,
            "the power model: measure with the GPUs' energy counters read (a DCGM exporter's endpoint given to \
             --metrics-url)",
        ),
        (
            Metric::KvCacheTokens,
            "the memory the engine keeps from its cache: measure a server that gives its cache's size (vLLM's \
             cache_config_info, SGLang's max_total_num_tokens, TensorRT-LLM's KV blocks) with its metrics scraped",
        ),
    ] {
        let for_it = fitted_for(metric).unwrap_or_default();
        let named: Vec<&str> = constants.iter().copied().filter(|c| for_it.contains(c)).collect();
        if !named.is_empty() && !families.values().flatten().any(|r| r.metric == metric) {
            return Err(Error::InvalidCalibration(format!(
                "cannot fit {}: only rows of {} measure {how}; or leave {} out",
                named.join(" and "),
                metric.as_str(),
                if named.len() == 1 { "it" } else { "them" }
            )));
        }
    }
    // The front end's constants that the options set on TensorRT-LLM rows
    // (NIM's) are the calibration's once they are fitted.
    let nim = (options.tensorrt_llm_frontend_ms, options.tensorrt_llm_frontend_us_per_output_token);
    let mut options = options.clone();
    if constants.contains(&"frontend_overhead_ms") {
        options.tensorrt_llm_frontend_ms = None;
    }
    if constants.contains(&"frontend_serial_us_per_output_token") {
        options.tensorrt_llm_frontend_us_per_output_token = None;
    }
    let mut report_constants = Vec::new();
    let mut evaluations = 0;
    for (family, family_rows) in &families {
        let mut start = options.calibrations.get(family).cloned().unwrap_or_else(|| Calibration::for_family(*family));
        // TensorRT-LLM's served rows ran with NIM's front end: a fit of it
        // starts there, and says it moved from there.
        if family_rows.iter().any(|r| r.engine == ReferenceEngine::TensorRtLlm && r.is_served()) {
            if let (true, Some(ms)) = (constants.contains(&"frontend_overhead_ms"), nim.0) {
                start.frontend_overhead_ms = ms;
            }
            if let (true, Some(us)) = (constants.contains(&"frontend_serial_us_per_output_token"), nim.1) {
                start.frontend_serial_us_per_output_token = us;
            }
        }
        let (fitted, runs) = fit_family(*family, family_rows, &options, &start, constants, say)?;
        evaluations += runs;
        for &name in constants {
            report_constants.push(FittedConstant {
                family: *family,
                name,
                shipped: start.get(name).unwrap_or(f64::NAN),
                fitted: fitted.get(name).unwrap_or(f64::NAN),
            });
        }
        options.calibrations.insert(*family, fitted);
    }
    let after = validate(rows, &options)?;
    let calibrations = families.keys().map(|f| (*f, options.calibrations[f].clone())).collect();
    Ok(FitReport {
        constants: report_constants,
        calibrations,
        fit_rows: families.values().map(Vec::len).sum(),
        held_out_rows: rows.iter().filter(|r| !fitted_on(r)).count(),
        before,
        after,
        evaluations,
    })
}

/// Which rows a fit is on: those of split `calibration`, or, where none is
/// marked so, those marked nothing (the others are held out).
fn fitted_on<'a>(rows: impl IntoIterator<Item = &'a ReferenceRow>) -> impl Fn(&ReferenceRow) -> bool {
    let marked = rows.into_iter().any(|r| r.split == Some(Split::Calibration));
    move |r| if marked { r.split == Some(Split::Calibration) } else { r.split.is_none() }
}

/// The mean squared log ratio of predicted to measured over `rows` with
/// `calibration` for `family`; a candidate the engine cannot run, or that
/// predicts nothing, is worse than any.
fn loss(family: GpuFamily, rows: &[ReferenceRow], options: &ValidationOptions, calibration: &Calibration) -> f64 {
    let mut options = options.clone();
    options.calibrations.insert(family, calibration.clone());
    let Ok(report) = validate(rows, &options) else { return f64::INFINITY };
    let n = report.predictions.len().max(1) as f64;
    report
        .predictions
        .iter()
        .map(|p| {
            let ratio = 1.0 + p.rel_error;
            if ratio.is_finite() && ratio > 0.0 {
                ratio.ln().powi(2)
            } else {
                f64::INFINITY
            }
        })
        .sum::<f64>()
        / n
}

fn with(calibration: &Calibration, name: &str, value: f64) -> Result<Calibration, Error> {
    calibration.overlay(&serde_json::json!({ name: value }))
}

/// Coordinate search in log space: each constant's range first on a grid,
/// then narrowed around the best point; later rounds search near where the
/// last one ended. The grid's points are run in parallel.
fn fit_family(
    family: GpuFamily,
    rows: &[ReferenceRow],
    options: &ValidationOptions,
    start: &Calibration,
    constants: &[&'static str],
    say: &dyn Fn(&str),
) -> Result<(Calibration, usize), Error> {
    let mut best = start.clone();
    // Start within the searched range.
    for &name in constants {
        let (lo, hi) = bounds(name);
        let v = best.get(name).unwrap_or(lo).clamp(lo, hi);
        best = with(&best, name, v)?;
    }
    let clock = std::time::Instant::now();
    let mut best_loss = loss(family, rows, options, &best);
    let mut runs = 1;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = RUNS_A_CONSTANT * constants.len();
    say(&format!(
        "fitting {} on {} {family} rows: a run of them took {:.2} s, and the fit runs them {most} times more, \
         {} at once (about {})",
        constants.join(", "),
        rows.len(),
        clock.elapsed().as_secs_f64(),
        cores,
        about(clock.elapsed().mul_f64(most as f64 / cores as f64)),
    ));
    if !best_loss.is_finite() {
        // The shipped constants run every row (validate above did); a
        // clamped start that does not is refused rather than searched.
        return Err(Error::InvalidCalibration(format!(
            "the {family} rows cannot be run with the constants to start from"
        )));
    }
    for round in 0..ROUNDS {
        let before = best_loss;
        for &name in constants {
            let (lo, hi) = bounds(name);
            let (llo, lhi) = (lo.ln(), hi.ln());
            let current = best.get(name).unwrap_or(lo).ln();
            // The first round scans the range; the next ones a window a
            // quarter as wide around the value, each time.
            let half = (lhi - llo) / 2.0 / 4f64.powi(round as i32);
            let (mut a, mut b) =
                if round == 0 { (llo, lhi) } else { ((current - half).max(llo), (current + half).min(lhi)) };
            let mut points = 9;
            for _ in 0..4 {
                let grid: Vec<f64> = (0..points).map(|i| a + (b - a) * i as f64 / (points - 1) as f64).collect();
                let candidates: Vec<Calibration> =
                    grid.iter().map(|t| with(&best, name, t.exp().clamp(lo, hi))).collect::<Result<_, _>>()?;
                let losses = in_parallel(&candidates, |c| loss(family, rows, options, c));
                runs += candidates.len();
                let (i, l) =
                    losses.iter().copied().enumerate().min_by(|x, y| x.1.total_cmp(&y.1)).expect("a grid has points");
                if l < best_loss {
                    best_loss = l;
                    best = candidates[i].clone();
                }
                let step = (b - a) / (points - 1) as f64;
                let centre = best.get(name).unwrap_or(lo).ln();
                a = (centre - step).max(llo);
                b = (centre + step).min(lhi);
                points = 5;
            }
        }
        let now: Vec<String> = constants
            .iter()
            .map(|&n| format!("{n} {}", round_significant(best.get(n).unwrap_or(f64::NAN), 4)))
            .collect();
        say(&format!(
            "pass {} of {ROUNDS}: {} (mean squared log error {:.4}, from {:.4})",
            round + 1,
            now.join(", "),
            best_loss,
            before
        ));
    }
    Ok((best, runs))
}

/// A time to come, as a sentence names it: to the second, or to the
/// millisecond below one.
fn about(d: Duration) -> String {
    let d =
        if d.as_secs() > 0 { Duration::from_secs(d.as_secs()) } else { Duration::from_millis(d.as_millis() as u64) };
    duration_text(d)
}

fn bounds(name: &str) -> (f64, f64) {
    FITTABLE.iter().find(|(k, _, _)| *k == name).map(|&(_, lo, hi)| (lo, hi)).expect("names were checked")
}

impl FitReport {
    /// The fitted constants as a calibration file, one object per family
    /// (what `--calibration` reads): only the constants fitted, each
    /// family's others stay shipped.
    pub fn calibration_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for c in &self.constants {
            let entry = out.entry(c.family.as_str()).or_insert_with(|| serde_json::json!({}));
            entry[c.name] = serde_json::json!(round_significant(c.fitted, 4));
        }
        serde_json::Value::Object(out)
    }

    /// The constants, shipped and fitted, and the median |error| before and
    /// after on the rows fitted on and on the rows held out, by metric.
    pub fn to_markdown(&self) -> String {
        let mut s = String::from("| family | constant | before | fitted |\n|---|---|---:|---:|\n");
        for c in &self.constants {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.family,
                c.name,
                round_significant(c.shipped, 4),
                round_significant(c.fitted, 4)
            );
        }
        let fitted_on = fitted_on(self.before.predictions.iter().map(|p| &p.row));
        s.push_str("\n| rows | metric | before | after |\n|---|---|---:|---:|\n");
        for (label, on) in [("fitted on", true), ("held out", false)] {
            let mut metrics: Vec<&str> = Vec::new();
            for p in &self.before.predictions {
                if fitted_on(&p.row) == on && !metrics.contains(&p.row.metric.as_str()) {
                    metrics.push(p.row.metric.as_str());
                }
            }
            for metric in metrics {
                let median = |report: &ValidationReport| {
                    let mut errors: Vec<f64> = report
                        .predictions
                        .iter()
                        .filter(|p| fitted_on(&p.row) == on && p.row.metric.as_str() == metric)
                        .map(|p| p.rel_error.abs() * 100.0)
                        .collect();
                    let n = errors.len();
                    let m = goodput_core::analysis::stats::percentile_of(&mut errors, 50.0).unwrap_or(f64::NAN);
                    (m, n)
                };
                let ((b, n), (a, _)) = (median(&self.before), median(&self.after));
                let _ = writeln!(s, "| {label} ({n}) | {metric} | {b:.1} % | {a:.1} % |");
            }
        }
        if self.held_out_rows == 0 {
            s.push_str(
                "\nNo row was held out: the errors after are on the rows fitted on, and say how well the \
                 constants can follow them, not how well they predict. To check them, hold some rows out: \
                 `held-out` in a CSV's split column, or a measured sweep of three points or more (every \
                 other one is held out).\n",
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::validate::parse_csv;

    /// Rows of Llama-3.1-8B on one H100 under vLLM, each `value` what the
    /// engine predicts with `truth` (so a fit from elsewhere has an exact
    /// answer to find): one user's TTFT at three prompt lengths and ITL,
    /// and 16 users' output tokens/s; the 16 users' rows held out.
    fn rows_made_with(truth: &Calibration) -> Vec<ReferenceRow> {
        let mut csv = String::from(
            "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source,split\n",
        );
        for (input, users, metric, split) in [
            (256, 1, "ttft_ms_mean", "calibration"),
            (2048, 1, "ttft_ms_mean", "calibration"),
            (8192, 1, "ttft_ms_mean", "calibration"),
            (256, 1, "tpot_ms_mean", "calibration"),
            (2048, 1, "tpot_ms_mean", "calibration"),
            (1024, 16, "output_tokens_per_s", "held-out"),
            (1024, 16, "tpot_ms_mean", "held-out"),
        ] {
            let unit = if metric == "output_tokens_per_s" { "tok/s" } else { "ms" };
            let _ = writeln!(
                csv,
                "r{input}-{users}-{metric},llama-3.1-8b,h100-sxm,1,1,bf16,vllm,{input},64,concurrency,{users},{metric},1,{unit},made,{split}"
            );
        }
        made_with(&csv, truth)
    }

    /// The CSV's rows (their values any), each `value` what the engine
    /// predicts on Hopper with `truth`.
    fn made_with(csv: &str, truth: &Calibration) -> Vec<ReferenceRow> {
        let mut options = ValidationOptions::default();
        options.calibrations.insert(GpuFamily::Hopper, truth.clone());
        let made = validate(&parse_csv(csv).unwrap(), &options).unwrap();
        made.predictions.into_iter().map(|p| ReferenceRow { value: p.predicted, ..p.row }).collect()
    }

    /// Each of `names` the fit found within 3 % of the constant that made
    /// the rows.
    fn found_again(report: &FitReport, truth: &Calibration, names: &[&str]) {
        let fitted = &report.calibrations[&GpuFamily::Hopper];
        for name in names {
            let (got, want) = (fitted.get(name).unwrap(), truth.get(name).unwrap());
            assert!(
                (got / want - 1.0).abs() < 0.03,
                "{name}: fitted {got}, made with {want}\n{}",
                report.to_markdown()
            );
        }
    }

    #[test]
    fn a_fit_finds_the_constants_that_made_the_rows_and_predicts_the_held_out_ones() {
        let shipped = Calibration::for_family(GpuFamily::Hopper);
        let truth = Calibration { eta_compute: 0.38, eta_weights: 0.52, frontend_overhead_ms: 40.0, ..shipped.clone() };
        let rows = rows_made_with(&truth);
        let constants = parse_constants("eta_compute, eta_weights,frontend_overhead_ms").unwrap();
        let told = std::cell::RefCell::new(Vec::new());
        let report =
            fit_telling(&rows, &ValidationOptions::default(), &constants, &|l| told.borrow_mut().push(l.to_string()))
                .unwrap();
        // What it will take, then each pass's constants, its error falling.
        let told = told.into_inner();
        assert!(told[0].starts_with("fitting eta_compute, eta_weights, frontend_overhead_ms on 5 hopper rows"));
        assert!(told[0].contains("runs them 216 times more"), "{}", told[0]);
        assert!(told[1].starts_with("pass 1 of 3: eta_compute ") && told.len() == 4, "{told:?}");
        assert_eq!(report.evaluations, 1 + 216, "{told:?}");
        let fitted = &report.calibrations[&GpuFamily::Hopper];
        found_again(&report, &truth, &["eta_compute", "eta_weights", "frontend_overhead_ms"]);
        // Only the named constants moved.
        assert_eq!(fitted.c_step_us, shipped.c_step_us);
        assert_eq!((report.fit_rows, report.held_out_rows), (5, 2));
        // Before, the shipped constants miss the made rows; after, every
        // row, the two never fitted on included, is within 2 %.
        let worst = |r: &ValidationReport| r.predictions.iter().map(|p| p.rel_error.abs()).fold(0.0, f64::max);
        assert!(worst(&report.before) > 0.2, "{}", report.to_markdown());
        assert!(worst(&report.after) < 0.02, "{}", report.to_markdown());
        // The file it writes is one object for the family, of the fitted constants alone,
        // and reads back to the fitted calibration.
        let json = report.calibration_json();
        assert_eq!(json.as_object().unwrap().keys().collect::<Vec<_>>(), ["hopper"]);
        assert_eq!(json["hopper"].as_object().unwrap().len(), 3);
        let read = Calibration::for_family_from_json(GpuFamily::Hopper, &json.to_string()).unwrap();
        assert!((read.eta_compute / fitted.eta_compute - 1.0).abs() < 1e-3);
        let table = report.to_markdown();
        assert!(table.contains("| hopper | eta_compute | 0.55 |"), "{table}");
        assert!(table.contains("| held out (1) | output_tokens_per_s |"), "{table}");
        assert!(!report.after.glance_section("made").contains("J / token"));
    }

    /// docs/simulator.md's figure for GPUStack's vLLM runs on Hopper: a fit
    /// on six of them (Qwen3-14B's and GPT-OSS-20B's prompt-bound runs,
    /// the split moved for this check only), the file's other vLLM rows
    /// before and after.
    #[test]
    #[ignore = "50 s in a debug build, 1 s in release: cargo test --release -p goodput-sim --lib -- --ignored fit_on_six"]
    fn a_fit_on_six_served_vllm_runs_carries_to_the_others_as_the_docs_say() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/validation/gpustack-hopper.csv");
        let rows: Vec<ReferenceRow> = parse_csv(&std::fs::read_to_string(path).unwrap())
            .unwrap()
            .into_iter()
            .filter(|r| !r.id.ends_with("-128"))
            .map(|r| {
                let fit_on = r.id.starts_with("gs-q14-h100-tp1-vllm") || r.id.starts_with("gs-20b-");
                ReferenceRow { split: Some(if fit_on { Split::Calibration } else { Split::HeldOut }), ..r }
            })
            .collect();
        let report = fit(&rows, &ValidationOptions::default(), &["eta_compute", "eta_w4a16_moe"]).unwrap();
        let hopper = &report.calibrations[&GpuFamily::Hopper];
        let (c, m) = (round_significant(hopper.eta_compute, 3), round_significant(hopper.eta_w4a16_moe, 3));
        assert_eq!((c, m), (0.37, 0.54), "{}", report.to_markdown());
        let others = |r: &ValidationReport| {
            let mut e: Vec<f64> = r
                .predictions
                .iter()
                .filter(|p| {
                    p.row.split == Some(Split::HeldOut)
                        && p.row.engine == crate::engine::validate::ReferenceEngine::Vllm
                })
                .map(|p| p.rel_error.abs() * 100.0)
                .collect();
            assert_eq!(e.len(), 15);
            format!("{:.1}", goodput_core::analysis::stats::percentile_of(&mut e, 50.0).unwrap())
        };
        assert_eq!((others(&report.before), others(&report.after)), ("13.8".into(), "7.8".into()));
        let doc = include_str!("../../../../docs/simulator.md");
        assert!(doc.contains("`eta_compute` 0.370 and `eta_w4a16_moe` 0.540"), "docs/simulator.md's fit changed");
        assert!(doc.contains("rows go from 13.8 % to 7.8 %"), "docs/simulator.md's figure changed");
    }

    /// The power model's shares, from rows of joules per output token at
    /// loads whose steps are memory-bound (one user) and compute-bound
    /// (long prompts, many users): found again, and the latency constants
    /// not moved by them; with no such row, refused.
    #[test]
    fn a_fit_of_the_power_model_finds_its_shares_from_energy_rows() {
        let shipped = Calibration::for_family(GpuFamily::Hopper);
        let truth = Calibration { power_compute: 0.7, power_memory: 0.85, ..shipped.clone() };
        let mut csv = String::from(
            "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source,split\n",
        );
        for (input, output, users, metric, unit, split) in [
            (128, 256, 1, "joules_per_output_token", "J", "calibration"),
            (8192, 16, 8, "joules_per_output_token", "J", "calibration"),
            (1024, 64, 4, "joules_per_output_token", "J", "calibration"),
            (2048, 64, 16, "joules_per_output_token", "J", "held-out"),
            (1024, 64, 4, "tpot_ms_mean", "ms", "calibration"),
        ] {
            let _ = writeln!(
                csv,
                "e{input}-{users}-{metric},llama-3.1-8b,h100-sxm,1,1,bf16,vllm,{input},{output},concurrency,{users},{metric},1,{unit},made,{split}"
            );
        }
        let rows = made_with(&csv, &truth);
        let report = fit(&rows, &ValidationOptions::default(), &["power_compute", "power_memory"]).unwrap();
        found_again(&report, &truth, &["power_compute", "power_memory"]);
        let held = report.after.predictions.iter().find(|p| p.row.split == Some(Split::HeldOut)).unwrap();
        assert!(held.rel_error.abs() < 0.02, "{}", report.to_markdown());
        assert!(
            report.to_markdown().contains("| held out (1) | joules_per_output_token |"),
            "{}",
            report.to_markdown()
        );
        // The glance gives energy a column of its own where rows measure it.
        let glance = report.after.glance_section("made");
        assert!(glance.contains("| E2E | J / token |") && glance.contains(" | 0."), "{glance}");
        // The times' constants fitted alone leave the energy rows out: the
        // shipped power model misses them, and nothing bends to it.
        let report = fit(&rows, &ValidationOptions::default(), &["eta_weights"]).unwrap();
        assert_eq!(report.fit_rows, 1);
        assert!((report.calibrations[&GpuFamily::Hopper].eta_weights / shipped.eta_weights - 1.0).abs() < 0.01);
        // Power constants with no energy row to fit on.
        let times: Vec<ReferenceRow> =
            rows.iter().filter(|r| r.metric != Metric::JoulesPerOutputToken).cloned().collect();
        let err = fit(&times, &ValidationOptions::default(), &["power_memory"]).unwrap_err().to_string();
        assert!(err.contains("cannot fit power_memory: only rows of joules_per_output_token"), "{err}");

        // Idle power 1.6 times the catalog's: the closed loops keep the GPU
        // busy, so one user's row pins idle and the memory share only
        // together; an open loop at a trickle, whose GPU waits between
        // requests, tells them apart.
        let truth = Calibration { power_idle: 1.6, power_memory: 0.85, ..shipped.clone() };
        let mut csv = csv
            .replace(",source,split\n", ",source,split,requests\n")
            .replace(",made,calibration\n", ",made,calibration,\n");
        csv = csv.replace(",made,held-out\n", ",made,held-out,\n");
        csv.push_str(
            "trickle,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,rate,0.5,joules_per_output_token,1,J,made,calibration,20\n\
             drip,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,512,64,rate,0.1,joules_per_output_token,1,J,made,calibration,10\n",
        );
        let rows = made_with(&csv, &truth);
        let report = fit(&rows, &ValidationOptions::default(), &["power_idle", "power_memory"]).unwrap();
        let fitted = &report.calibrations[&GpuFamily::Hopper];
        found_again(&report, &truth, &["power_idle", "power_memory"]);
        let note = crate::engine::accuracy::energy_note_on([(GpuFamily::Hopper, fitted)]);
        assert!(note.contains("power_idle 1.") && note.contains("the catalog's idle watts"), "{note}");
    }

    /// The memory the engine keeps from its cache, from rows of the cache's
    /// size at TP 1 and TP 2 (one held out): found again; with no such row,
    /// refused.
    #[test]
    fn a_fit_of_the_memory_kept_from_the_cache_finds_it_from_the_cache_s_size() {
        let truth = Calibration { runtime_gib: 3.0, ..Calibration::for_family(GpuFamily::Hopper) };
        let mut csv = String::from(
            "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source,split\n",
        );
        for (tp, metric, unit, split) in [
            (1, "kv_cache_tokens", "tokens", "calibration"),
            (2, "kv_cache_tokens", "tokens", "held-out"),
            (1, "tpot_ms_mean", "ms", "calibration"),
        ] {
            let _ = writeln!(
                csv,
                "k{tp}-{metric},llama-3.1-8b,h100-sxm,{tp},{tp},bf16,vllm,512,16,concurrency,1,{metric},1,{unit},made,{split}"
            );
        }
        let rows = made_with(&csv, &truth);
        let report = fit(&rows, &ValidationOptions::default(), &["runtime_gib"]).unwrap();
        let fitted = report.calibrations[&GpuFamily::Hopper].runtime_gib;
        assert!((fitted / 3.0 - 1.0).abs() < 0.01, "{}", report.to_markdown());
        let held = report.after.predictions.iter().find(|p| p.row.split == Some(Split::HeldOut)).unwrap();
        assert!(held.rel_error.abs() < 0.001, "{}", report.to_markdown());
        let times: Vec<ReferenceRow> = rows.iter().filter(|r| r.metric != Metric::KvCacheTokens).cloned().collect();
        let err = fit(&times, &ValidationOptions::default(), &["runtime_gib"]).unwrap_err().to_string();
        assert!(err.contains("cannot fit runtime_gib: only rows of kv_cache_tokens measure"), "{err}");
    }

    /// A served TensorRT-LLM row ran with NIM's front end (5 ms), not the
    /// calibration's 15: a fit of the front end starts, and is reported as
    /// moving, from there.
    #[test]
    fn a_fit_of_the_front_end_on_tensorrt_llm_rows_starts_from_nims() {
        let csv = "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source\n\
                   t,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,200,16,concurrency,1,ttft_ms_mean,60,ms,made\n";
        let rows = parse_csv(csv).unwrap();
        let report = fit(&rows, &ValidationOptions::default(), &["frontend_overhead_ms"]).unwrap();
        let c = &report.constants[0];
        assert_eq!(c.shipped, crate::engine::validate::NIM_FRONTEND_MS);
        // A lone 200-token prefill takes a few ms: most of the 60 is the front end's.
        assert!(c.fitted > 40.0 && c.fitted < 60.0, "{c:?}");
        assert!(report.after.predictions[0].rel_error.abs() < 0.01, "{}", report.to_markdown());
    }

    #[test]
    fn a_fit_names_what_it_cannot_do() {
        let err = parse_constants("eta_compute,step_time_cv").unwrap_err().to_string();
        assert!(err.contains("cannot fit `step_time_cv`") && err.contains("c_step_us"), "{err}");
        assert!(parse_constants(" , ").unwrap_err().to_string().contains("no constant to fit"));
        assert_eq!(parse_constants("c_step_us,c_step_us").unwrap(), ["c_step_us"]);
        let mut rows = rows_made_with(&Calibration::default());
        for r in &mut rows {
            r.split = Some(Split::HeldOut);
        }
        let err = fit(&rows, &ValidationOptions::default(), &DEFAULT_FIT).unwrap_err().to_string();
        assert!(err.contains("every row is `held-out`"), "{err}");
        // Rows with no split are all fitted on, and the table says none was held out.
        for r in &mut rows {
            r.split = None;
        }
        let report = fit(&rows[..2], &ValidationOptions::default(), &["eta_compute"]).unwrap();
        assert_eq!((report.fit_rows, report.held_out_rows), (2, 0));
        assert!(report.to_markdown().contains("No row was held out"), "{}", report.to_markdown());
    }
}
