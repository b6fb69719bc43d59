//! `goodput estimate`: the simulated engine in virtual time. The same load
//! flags and the same result document as `bench`, plus the engine's own view
//! (batch sizes, KV use over time, preemptions, prefix hits); or, with
//! `--validate`, predictions set against reference measurements.

use crate::cli::{EngineArgs, EstimateArgs};
use crate::virtual_point::{estimate_result_until, prompt_kind, VirtualServer};
use crate::{output, setup};
use anyhow::{bail, Context, Result};
use goodput_core::{RequestRecord, RunResult};
use goodput_sim::engine::{validate, EngineConfig, GpuSpec};
use std::path::Path;
use std::process::ExitCode;

pub fn estimate(mut a: EstimateArgs) -> Result<ExitCode> {
    a.load.shape.seed = a.load.shape.seed.fixed_unless_given();
    if let Some(csv) = &a.validate {
        return validate_file(csv, &a.engine, a.fit.as_deref(), &a.fit_constants);
    }
    crate::virtual_point::refuse_unused_sizes(&a.engine.hw, a.given.has("tp"), a.given.has("ep"))?;
    let cfg = EngineConfig::try_from(&a.engine)?;
    refuse_other_gpus(&a.judge, &cfg)?;
    if !a.output.quiet {
        for note in crate::virtual_point::setup_notes(&a.engine.hw.precision, &cfg) {
            goodput_core::tell!("{note}");
        }
    }
    if a.runs.runs > 1 {
        return crate::runs::estimate(a, &cfg);
    }
    let wall = std::time::Instant::now();
    let (mut result, records) = run(&a, &cfg)?;
    finish(&a, &cfg, &mut result, &records, wall.elapsed())
}

/// Refuses a `--gpus`, or a `--config` file's `gpus`, other than the
/// simulated engine's own count: the engine knows the GPUs it runs on, and
/// its energy counts them, so a cost priced on another count would
/// contradict it (`estimate` and `sweep --estimate`).
pub fn refuse_other_gpus(judge: &crate::cli::JudgeArgs, cfg: &EngineConfig) -> Result<()> {
    refuse_other_gpus_named(judge, cfg, "--")
}

/// [`refuse_other_gpus`] for an engine sized by flags that begin `flag`
/// (`--` for estimate's `--tp`, `--sim-` for the embedded server's `--sim-tp`).
pub fn refuse_other_gpus_named(judge: &crate::cli::JudgeArgs, cfg: &EngineConfig, flag: &str) -> Result<()> {
    // Each pool as --pd takes it, with the sizes it runs on (the prefill
    // pool's own had been folded into --tp and --ep, and were left out).
    let pool = |n: u32, decode: bool| {
        let (tp, ep) = (cfg.pool_tp(decode), cfg.pool_ep(decode));
        let tp = if tp > 1 { format!("xTP{tp}") } else { String::new() };
        let ep = if ep > 1 { format!("xEP{ep}") } else { String::new() };
        format!("{n}{tp}{ep}")
    };
    // bench's embedded engine (`--sim-`) takes its pipeline size inside
    // --sim-engine (there is no --sim-pp, which the words had offered), and
    // names it where it is given.
    let pp = flag == "--";
    let sizes = || match cfg.pd {
        Some(pd) => format!("its {flag}pd {}:{} pools", pool(pd.prefill, false), pool(pd.decode, true)),
        None if pp => format!("{flag}tp {} × {flag}pp {} × {flag}dp {}", cfg.tp, cfg.pp, cfg.dp),
        None if cfg.pp > 1 => format!("{flag}tp {} × --pp {} in --sim-engine × {flag}dp {}", cfg.tp, cfg.pp, cfg.dp),
        None => format!("{flag}tp {} × {flag}dp {}", cfg.tp, cfg.dp),
    };
    // --dp is refused beside --pd: its pools are sized in it.
    let resize = match cfg.pd {
        Some(_) => format!("size the pools in {flag}pd (more instances, or each pool's xTP and xEP)"),
        None if pp => format!("size the engine with {flag}tp, {flag}pp and {flag}dp"),
        None if cfg.pp > 1 => format!("size the engine with {flag}tp, --sim-engine's --pp and {flag}dp"),
        None => format!("size the engine with {flag}tp and {flag}dp"),
    };
    // bench's embedded engine (`--sim-`) reports no energy: its cost alone
    // counts the GPUs (the words had named an energy it never gives).
    let counts = if flag == "--" { "its cost and energy count those" } else { "its cost counts those" };
    if let Some(g) = judge.gpus.filter(|&g| g != cfg.gpus()) {
        bail!(
            "--gpus {g} contradicts the simulated engine, which runs on {} GPU(s) ({}), and {counts}: drop --gpus \
             (the engine's count is priced), or {resize}",
            cfg.gpus(),
            sizes()
        );
    }
    // The flag wins over the file: a file's count under a matching flag is unused.
    let Some(path) = judge.config.as_deref().filter(|_| judge.gpus.is_none()) else { return Ok(()) };
    let file = crate::config::ConfigFile::read(path)?;
    if let Some(g) = file.gpus.filter(|&g| g != cfg.gpus()) {
        bail!(
            "gpus = {g} in --config {} contradicts the simulated engine, which runs on {} GPU(s) ({}), and \
             {counts}: drop `gpus` from the file (the engine's count is priced), or {resize}",
            path.display(),
            cfg.gpus(),
            sizes()
        );
    }
    Ok(())
}

/// One estimate of `a` on `cfg`: its result and its records, written nowhere.
pub fn run(a: &EstimateArgs, cfg: &EngineConfig) -> Result<(RunResult, Vec<RequestRecord>)> {
    setup::no_answers(&a.workload, "estimate")?;
    setup::no_images(&a.workload, "estimate")?;
    crate::pooling::refuse_virtual(a.api, "estimate")?;
    let trace = setup::trace(&a.load)?;
    let mut plan = setup::plan(&a.load, trace.as_deref().map(|t| t.as_slice()), a.grace)?;
    let (workload, _, workload_config) = setup::workload(&a.workload, a.load.shape.seed.value, trace)?;
    crate::virtual_point::check_context(cfg, &workload, prompt_kind(a.api), "--model picks another")?;
    let tail = crate::virtual_point::context_tail_warning(cfg, &workload, prompt_kind(a.api))
        .into_iter()
        .chain(crate::virtual_point::session_context_warning(cfg, &workload, &plan));
    // The run's own draws, as bench reads them.
    for w in setup::draw_warnings(&workload, &plan)?.into_iter().chain(tail) {
        goodput_core::tell!("{w}");
    }
    // The engine modelled runs on tp × dp GPUs unless --gpus or the config says otherwise.
    let opts = setup::analysis_options_for(&a.output.percentiles.0, &a.judge, cfg.gpus())?;
    a.judge.check_attainment_applies(opts.slo.as_ref())?;
    setup::check_fail_on_slo(&a.judge, &opts)?;
    setup::check_scored_in(&a.workload, &opts, Some("estimate"))?;
    let until = crate::until::spec(&a.until, &opts)?;
    if until.is_some() {
        crate::until::cap(&mut plan, &a.load.shape);
    }
    let mut inputs = a.workload.inputs();
    inputs.extend(a.load.trace.as_deref().map(|p| ("--trace", p)));
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    inputs.extend(a.engine.hw.calibration.as_deref().map(|p| ("--calibration", p)));
    inputs.extend(output::named_file("--model", &a.engine.engine_model));
    output::check_outputs(&a.output, &inputs)?;
    let server = VirtualServer::new(cfg, prompt_kind(a.api));
    let (mut result, records) = estimate_result_until(
        server,
        &plan,
        &workload,
        workload_config,
        &opts,
        a.output.include_requests,
        until.as_ref(),
    )?;
    (result.config.label, result.config.meta) = setup::tags(&a.output);
    Ok((result, records))
}

/// Writes `--records`, prints and writes the result, and says what the
/// engine saw and how fast the simulation ran (`wall`).
pub fn finish(
    a: &EstimateArgs,
    cfg: &EngineConfig,
    result: &mut RunResult,
    records: &[RequestRecord],
    wall: std::time::Duration,
) -> Result<ExitCode> {
    if let Some(p) = &a.output.records {
        let mut f = goodput_report::read::records::RecordFile::create(p, &result.run_id)?;
        for r in records {
            f.write(r);
        }
    }
    // What the figures can be trusted for goes in the document's engine
    // block (its JSON, Markdown and HTML), and on standard error after the
    // report.
    let notes = engine_notes(a, cfg, result);
    if let Some(e) = result.engine.as_mut() {
        e.notes = notes.clone();
    }
    let code = output::finish(result, &a.output, &a.judge, records)?;
    if let Some(e) = &result.engine {
        let mut lines = goodput_report::terminal::engine_lines(e);
        lines.extend(e.spec_decode.as_ref().map(spec_line));
        crate::output::say(&goodput_report::terminal::wrap(&lines, output::columns()));
    }
    if !a.output.quiet {
        for n in &notes {
            goodput_core::tell!("note: {n}");
        }
        let simulated = result.engine.as_ref().map_or(0.0, |e| e.makespan_s);
        goodput_core::tell!(
            "simulated {:.1} s in {:.3} s of wall time ({:.0}× real time)",
            simulated,
            wall.as_secs_f64(),
            simulated / wall.as_secs_f64().max(1e-9)
        );
    }
    Ok(code)
}

/// What a reader of the estimate should know about how far its figures
/// hold: the GPU's family is uncalibrated, and under load (as the reference
/// rows' closed loops were: a mean of `LOADED_IN_FLIGHT` in flight or more)
/// the engine's TTFT is its least certain figure, with the held-out error
/// that applies to how the requests started; and its energy, how far the
/// power model was from a GPU's measured steps.
fn engine_notes(a: &EstimateArgs, cfg: &EngineConfig, result: &RunResult) -> Vec<String> {
    let mut notes = Vec::new();
    notes.extend(crate::virtual_point::family_note(&cfg.gpu, a.engine.hw.calibration.as_deref()));
    notes.extend(goodput_sim::engine::accuracy::moe_note(&cfg.model));
    notes.extend(goodput_sim::engine::accuracy::amd_moe_note(&cfg.model, &cfg.gpu));
    notes.extend(goodput_sim::engine::accuracy::mxfp4_kernels_note(cfg));
    if result.summary.in_flight.mean >= LOADED_IN_FLIGHT {
        use goodput_sim::engine::accuracy::{ttft_note, Start};
        let start = if a.load.rate.is_some() || a.load.trace.is_some() {
            Start::Schedule
        } else if a.load.shape.ramp_up.is_some() {
            Start::Apart
        } else {
            Start::Together
        };
        notes.push(ttft_note(start));
        notes.extend(goodput_sim::engine::accuracy::served_load_note(cfg.scheduler, &cfg.gpu));
    }
    if result.energy.is_some() {
        notes.push(goodput_sim::engine::accuracy::energy_note_on([(cfg.gpu.family, &cfg.calibration)]));
    }
    notes
}

/// The mean requests in flight from which an estimate is under load as the
/// reference rows its TTFT note quotes were (closed loops of 5 users or
/// more).
pub(crate) const LOADED_IN_FLIGHT: f64 = 5.0;

/// The acceptance the engine's draws achieved, in the words a live run's
/// `speculative decoding` diagnosis uses for a server's counters.
fn spec_line(sd: &goodput_core::doc::engine::EngineSpecDecode) -> String {
    let parts = goodput_core::prometheus::scrape::diagnose::acceptance_words(
        sd.acceptance_rate,
        sd.mean_accepted_length,
        &sd.acceptance_by_position,
    );
    format!("  speculative decoding: {} (over {} proposals, warm-up included)\n", parts.join(", "), sd.drafts)
}

fn validate_file(csv: &Path, e: &EngineArgs, fit: Option<&Path>, fit_constants: &str) -> Result<ExitCode> {
    let constants = match fit {
        Some(_) => Some(goodput_sim::engine::fit::parse_constants(fit_constants)?),
        None => None,
    };
    if let Some(out) = fit {
        let mut inputs = vec![("--validate", csv)];
        inputs.extend(e.hw.calibration.as_deref().map(|p| ("--calibration", p)));
        output::distinct_files(&inputs, &[("--fit", Some(out))])?;
        output::check_file(out, "--fit")?;
    }
    // A measured run or sweep is set against the engine estimate's flags
    // describe; a CSV's rows each describe their own.
    let measured = if crate::measured::is_document_file(csv) { Some(crate::measured::rows_csv(csv, e)?) } else { None };
    let text = match &measured {
        Some(m) => {
            for note in &m.notes {
                goodput_core::tell!("note: {note}");
            }
            std::borrow::Cow::Borrowed(m.csv.as_str())
        }
        None => {
            goodput_core::util::input::read_text(csv, "--validate", goodput_core::util::input::SETTINGS_CAP)?.into()
        }
    };
    let mut rows = validate::parse_csv(&text).with_context(|| format!("{}", csv.display()))?;
    if let Some(m) = &measured {
        m.attach_replays(&mut rows);
    }
    let mut options = validate::ValidationOptions::default();
    if let Some(p) = &e.hw.calibration {
        let overlay =
            goodput_core::util::input::read_text(p, "--calibration", goodput_core::util::input::SETTINGS_CAP)?;
        let mut families = std::collections::BTreeSet::new();
        for row in &rows {
            families.insert(GpuSpec::lookup(&row.gpu)?.family);
        }
        for family in families {
            let calibration = goodput_sim::engine::Calibration::for_family_from_json(family, &overlay)
                .with_context(|| format!("--calibration {}", p.display()))?;
            options.calibrations.insert(family, calibration);
        }
    }
    let name = csv.file_name().map_or_else(|| csv.display().to_string(), |n| n.to_string_lossy().into_owned());
    if let (Some(out), Some(constants)) = (fit, constants) {
        let report = goodput_sim::engine::fit::fit_telling(&rows, &options, &constants, &|line| {
            goodput_core::tell!("{line}");
        })
        .with_context(|| format!("fitting to {}", csv.display()))?;
        output::write_document(out, &report.calibration_json(), "calibration")?;
        crate::output::say(&format!(
            "{}{}\n## The fit\n\n{}\nFitted on {} rows in {} runs of them through the engine; written to {} \
             (give it to --calibration).\n",
            report.after.to_markdown(),
            report.after.glance_section(&name),
            report.to_markdown(),
            report.fit_rows,
            report.evaluations,
            if out == Path::new("-") { "standard output".to_string() } else { out.display().to_string() }
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let report = validate::validate(&rows, &options)?;
    crate::output::say(&format!("{}{}", report.to_markdown(), report.glance_section(&name)));
    if let Some(n) = cache_note(&report) {
        goodput_core::tell!("note: {n}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a server's own cache size is off the engine's by more than
/// [`CACHE_OFF`], how to set the engine's: its measured memory share, or a
/// fit of the memory the engine keeps (each scheduler's own constant).
fn cache_note(report: &validate::ValidationReport) -> Option<String> {
    let off = report
        .predictions
        .iter()
        .filter(|p| p.row.metric == validate::Metric::KvCacheTokens && p.rel_error.abs() > CACHE_OFF)
        .max_by(|a, b| a.rel_error.abs().total_cmp(&b.rel_error.abs()))?;
    let constant = match off.row.engine {
        validate::ReferenceEngine::Sglang => "sglang_preload_gib",
        validate::ReferenceEngine::TensorRtLlm => "runtime_gib or activation_gib",
        validate::ReferenceEngine::Vllm => "runtime_gib",
    };
    Some(format!(
        "the server's KV cache holds {:.0} tokens where the engine's holds {:.0} ({:+.1} %, row {}): give the \
         server's memory share (--gpu-memory-utilization) if it was not its default, or fit the memory the engine \
         keeps from its cache (--fit FILE --fit-constants {constant}); batch limits and queueing follow the cache",
        off.row.value,
        off.predicted,
        off.rel_error * 100.0,
        off.row.id
    ))
}

/// How far a server's own cache size may be from the engine's before
/// `estimate --validate` says how to set it: a few blocks' rounding, and
/// the memory share's last digit.
const CACHE_OFF: f64 = 0.02;
