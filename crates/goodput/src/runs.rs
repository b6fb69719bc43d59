//! `--runs N` (`bench`, `estimate`): the whole measurement repeated, each
//! run with the next seed (or the same, `--same-seed`), and each headline
//! figure's spread across the runs (docs/metrics.md, "Spread across runs").
//!
//! The document's top level is the first run, exactly as a single run with
//! its seed would write it: pooling the runs' records would mix windows that
//! did not overlap (a rate over them means nothing), and the first run keeps
//! `report`, `compare` and `--records` working on one run's figures. Every
//! run's headline figures, and their spread, go in its `repeats` block.

use crate::cli::{BenchArgs, EstimateArgs};
use crate::interrupt::Interrupt;
use crate::output;
use anyhow::{bail, Result};
use goodput_core::analysis::assemble::{warm_cache_warning, warm_repeats_warning};
use goodput_core::{RequestRecord, RunResult};
use goodput_sim::engine::EngineConfig;
use std::process::ExitCode;

/// `bench --runs N`: each run against the target afresh (the embedded
/// server started anew for each), one after another.
pub async fn bench(mut a: BenchArgs) -> Result<ExitCode> {
    let n = a.runs.runs;
    if let Some((i, count)) = a.shard.shard {
        bail!(
            "--runs {n} repeats a whole run and --shard {i}/{count} runs a share of one: repeat the sharded run \
             instead (each repeat with its own --seed), or leave --shard out"
        );
    }
    if let Some(addr) = a.metrics.prometheus_listen {
        bail!(
            "--prometheus-listen {addr} serves one run's live figures, and --runs {n} makes {n} runs: leave one of \
             them out"
        );
    }
    let seeds = goodput_report::repeats::seeds(a.load.shape.seed.value, n, a.runs.same_seed);
    let interrupt = Interrupt::install("the runs", a.target.grace);
    // --records holds the first run's records: the run the top level is.
    let records = a.output.records.clone();
    let mut results: Vec<RunResult> = Vec::new();
    let mut first: Vec<RequestRecord> = Vec::new();
    let mut failed: Option<anyhow::Error> = None;
    let mut warm: Vec<(u32, f64)> = Vec::new();
    // The run a failure storm stopped: the server failing every request,
    // the runs after it would only fail as fast (and exit 0 for run 1's
    // sake, as they had).
    let mut storm: Option<usize> = None;
    for (i, &seed) in seeds.iter().enumerate() {
        if interrupt.stopped() {
            break;
        }
        a.load.shape.seed.value = seed;
        a.output.records = if i == 0 { records.clone() } else { None };
        if !a.output.quiet {
            goodput_core::tell!("run {}/{n} · seed {seed}", i + 1);
        }
        // A later run that cannot be made (the server gone) leaves the
        // runs before it to be written, and the command to fail after.
        let (mut r, recs) = match crate::bench::run(&a, Some(&interrupt)).await {
            Ok(made) => made,
            Err(e) if i > 0 => {
                failed = Some(e.context(format!("run {} of {n} (seed {seed}) could not be made", i + 1)));
                break;
            }
            Err(e) => return Err(e),
        };
        let stopped = r.interrupted;
        if crate::bench::stormed(&r) {
            storm = Some(i + 1);
        }
        // A later run whose prompts the server's cache held (an earlier
        // run's, under --same-seed): its faster TTFT is no run-to-run noise.
        let hit = r.server_signals.as_ref().and_then(|s| s.window.prefix_cache_hit_rate);
        if let Some(h) = hit.filter(|&h| i > 0 && warm_cache_warning(&r.config, &recs, h).is_some()) {
            warm.push((i as u32 + 1, h));
        }
        if i == 0 {
            first = recs;
        } else {
            r.requests = None;
        }
        results.push(r);
        if stopped || storm.is_some() {
            break;
        }
    }
    a.output.records = records;
    if results.is_empty() {
        bail!("the runs were stopped before the first one started: nothing was measured");
    }
    let why = match (&failed, storm) {
        (Some(e), _) => format!("{e:#}"),
        (None, Some(k)) => format!(
            "run {k} of {n} was stopped by a failure storm (its stop says why), so the runs after it were not made"
        ),
        (None, None) => "the command was stopped".into(),
    };
    let mut notes = if results.len() < n as usize { vec![why] } else { Vec::new() };
    // Said in the block and the run's warnings: the top level is run 1, whose own had said nothing of it.
    let warm = warm_repeats_warning(&warm, a.runs.same_seed);
    notes.extend(warm.clone());
    let mut top = with_repeats(results, n, &seeds, a.runs.same_seed, a.judge.confidence, notes);
    top.warnings.extend(warm);
    let stopped = top.repeats.as_ref().is_some_and(|rep| rep.n < n || rep.runs.iter().any(|r| r.interrupted));
    let code = output::finish(&mut top, &a.output, &a.judge, &first)?;
    if let Some(e) = failed {
        return Err(e.context("the document holds the runs made before it"));
    }
    if let Some(k) = storm {
        goodput_core::tell!(
            "error: run {k} of {n} was stopped by a failure storm: the document holds the runs made until then"
        );
        return Ok(if code == ExitCode::SUCCESS { ExitCode::from(1) } else { code });
    }
    if stopped {
        goodput_core::tell!(
            "error: the runs were interrupted before their end: the spread covers the runs made until then"
        );
        return Ok(ExitCode::from(output::EXIT_INTERRUPTED));
    }
    Ok(code)
}

/// `estimate --runs N`: the engine is deterministic, so runs differ by
/// what their seeds draw (prompt and output lengths, arrival times) and,
/// where the calibration turns it on, by the engine's noise (step times'
/// `step_time_cv` and the front end's `frontend_jitter_ms`), seeded by the
/// run's seed too.
pub fn estimate(mut a: EstimateArgs, cfg: &EngineConfig) -> Result<ExitCode> {
    let n = a.runs.runs;
    let seeds = goodput_report::repeats::seeds(a.load.shape.seed.value, n, a.runs.same_seed);
    let wall = std::time::Instant::now();
    let mut results = Vec::new();
    let mut first = Vec::new();
    for (i, &seed) in seeds.iter().enumerate() {
        a.load.shape.seed.value = seed;
        let (mut r, recs) = crate::estimate::run(&a, cfg)?;
        if i == 0 {
            first = recs;
        } else {
            r.requests = None;
        }
        results.push(r);
    }
    // The speed line compares the first run's simulated time with a run's wall time.
    let wall = wall.elapsed() / n;
    let mut notes = Vec::new();
    let c = &cfg.calibration;
    if c.step_time_cv == 0.0 && c.frontend_jitter_ms == 0.0 {
        notes.push(
            "the engine's noise is off (step_time_cv and frontend_jitter_ms are 0 unless --calibration sets them): \
             the runs differ only by what their seeds draw"
                .to_string(),
        );
    }
    let mut top = with_repeats(results, n, &seeds, a.runs.same_seed, a.judge.confidence, notes);
    crate::estimate::finish(&a, cfg, &mut top, &first, wall)
}

/// The first run with the `repeats` block of all of `results` added.
fn with_repeats(
    results: Vec<RunResult>,
    asked: u32,
    seeds: &[u64],
    same_seed: bool,
    conf: f64,
    notes: Vec<String>,
) -> RunResult {
    let mut rep = goodput_report::repeats::build(&results, asked, seeds, same_seed, conf);
    rep.notes.extend(notes);
    let mut top = results.into_iter().next().expect("a first run: callers check");
    top.repeats = Some(rep);
    top
}
