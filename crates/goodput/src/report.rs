//! `goodput report`: re-render or re-analyse a saved result. A run's records
//! re-analysed with other SLOs, percentiles or prices give what a live run
//! with those settings would (the same `analyze` on the same records, times
//! saved as integer nanoseconds); a sweep is re-rendered as it is.

use crate::cli::{OutputArgs, PercentileList, ReportArgs};
use crate::common;
use crate::{output, setup};
use anyhow::{bail, Result};
use goodput_core::analysis::assemble::{attach_server_side, ServerSide};
use goodput_core::analysis::energy::{EnergyReport, EnergySource};
use goodput_core::{RequestRecord, RunResult};
use goodput_report::read::Document;
use std::process::ExitCode;

pub fn report(a: ReportArgs) -> Result<ExitCode> {
    let mut inputs = vec![("the result read", a.run.as_path())];
    inputs.extend(a.records.as_deref().map(|p| ("--records", p)));
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    let mut outputs = vec![("--output", a.output.as_deref())];
    outputs.extend(a.exports.outputs());
    output::distinct_files(&inputs, &outputs)?;
    let doc = goodput_report::read::read_document(&a.run)?;
    if let Some(p) = &a.output {
        // Named after the document is read: a frontier writes no Markdown,
        // so `-o x.md` must not be told to use --markdown for one.
        let frontier = matches!(doc, Document::Frontier(_));
        let command = if frontier { "report on a frontier" } else { "report" };
        let writes = output::Writes { command, document: "the result document", markdown: !frontier, records: false };
        output::check_document_named(p, &writes)?;
        output::check_file(p, "--output")?;
    }
    output::check_exports(&a.exports)?;
    // The files an import read beside the one named (AIPerf's records and
    // summary) are inputs too: checked once the document says what it is.
    if let Document::Run(run) = &doc {
        let companions = goodput_report::read::peers::companions(&a.run, run);
        if !companions.is_empty() {
            inputs.extend(companions.iter().map(|p| ("a file read with the result", p.as_path())));
            output::distinct_files(&inputs, &outputs)?;
        }
    }
    match doc {
        Document::Sweep(sweep) => {
            // --gpus and --attainment had been taken and set nothing.
            if judges_again(&a) || a.judge.gpus.is_some() || a.records.is_some() || a.window.is_some() {
                bail!(
                    "{} is a sweep: it is re-rendered as it is; re-judge one of its points by re-running it, or sweep \
                     again with the new SLO, percentiles, prices, GPUs or --config",
                    a.run.display()
                );
            }
            if a.judge.fail_on_slo && sweep.points.iter().all(|p| p.result.slo.is_none()) {
                bail!(
                    "--fail-on-slo needs an SLO, and {} was swept without one: sweep again with --slo",
                    a.run.display()
                );
            }
            crate::output::say(&goodput_report::terminal::sweep::analysis_lines(&sweep));
            if let Some(p) = &a.output {
                output::write_document(p, &*sweep, "sweep")?;
            }
            for (format, dest) in a.exports.targets() {
                for f in goodput_report::export_sweep(format, &sweep, &dest)? {
                    if !a.quiet {
                        goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
                    }
                }
            }
            // The gates a live sweep applies, on the saved one (they had been
            // ignored: exit 0 whatever the sweep held).
            Ok(crate::sweep::exit_code(&sweep, &a.judge))
        }
        Document::Frontier(doc) => report_frontier(&doc, &a),
        Document::Run(run) => report_run(*run, &a),
    }
}

/// Whether a flag that judges the points again was given (an SLO, an
/// attainment, percentiles, a price, a config file): a saved sweep or
/// frontier is re-rendered as it is, and refuses them.
fn judges_again(a: &ReportArgs) -> bool {
    a.judge.slo.is_some()
        || a.judge.attainment.is_some()
        || a.percentiles.is_some()
        || a.judge.gpu_hour_usd.is_some()
        || a.judge.price.is_some()
        || a.judge.config.is_some()
}

/// A frontier (`plan`, `sweep --serve-grid`) re-rendered as it is: its
/// points are not re-judged. `--fail-on-slo` fails it (3, as a run that
/// misses its SLO) when no point met the SLO it was searched with.
fn report_frontier(doc: &goodput_core::doc::frontier::FrontierResult, a: &ReportArgs) -> Result<ExitCode> {
    let run = a.run.display();
    if a.records.is_some() {
        bail!(
            "{run} is a frontier: its points keep no per-request records for --records to re-analyse; drop \
             --records (it is re-rendered as it is)"
        );
    }
    // --price and --config had been taken and set nothing.
    if judges_again(a) {
        bail!(
            "{run} is a frontier: it is re-rendered as it is; run goodput plan (or the sweep) again with the new SLO, \
             percentiles, prices or --config"
        );
    }
    if let Some(g) = a.judge.gpus {
        bail!(
            "{run} is a frontier: each configuration keeps its own GPU count, so --gpus {g} sets nothing: drop \
             --gpus (run goodput plan again with --gpus N for another budget)"
        );
    }
    if a.judge.fail_on_unsteady {
        bail!(
            "{run} is a frontier: --fail-on-unsteady judges a run or a sweep, and a frontier's best point is chosen \
             among steady points already; drop --fail-on-unsteady (--fail-on-slo fails a frontier with no best point)"
        );
    }
    if a.window.is_some() || a.exports.markdown.is_some() {
        bail!("{run} is a frontier: drop --window and --markdown (it renders to the terminal, -o, --csv and --html)");
    }
    if a.judge.fail_on_slo && doc.slo.is_none() {
        bail!("--fail-on-slo needs an SLO, and {run} was searched without one: run goodput plan again with --slo");
    }
    crate::output::say(&goodput_report::frontier::terminal(doc));
    if let Some(p) = &a.output {
        output::write_document(p, doc, "frontier")?;
    }
    for (format, dest) in a.exports.targets() {
        for f in goodput_report::frontier::export(format, doc, &dest)? {
            if !a.quiet {
                goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
            }
        }
    }
    if a.judge.fail_on_slo && doc.best.is_none() {
        goodput_core::tell!(
            "error: the frontier has no best point (--fail-on-slo): {}",
            goodput_core::doc::frontier::no_best_reason(doc)
        );
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

fn report_run(run: RunResult, a: &ReportArgs) -> Result<ExitCode> {
    let mut out = OutputArgs::rewriting(
        run.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect(),
        a.output.clone(),
        a.exports.clone(),
    );
    out.quiet = a.quiet;
    // The records file the saved document names, as named from here: a
    // document written anew names it from its own folder.
    let saved = run.config.records_file.as_deref().map(|r| output::resolve_from(&a.run, r));
    match analysed(run, a)? {
        Reported::AsSaved(mut run) => {
            out.records = saved;
            output::finish(&mut run, &out, &a.judge, &[])
        }
        Reported::Anew { mut result, records, percentiles, from } => {
            let out = OutputArgs { percentiles: PercentileList(percentiles), records: from.or(saved), ..out };
            output::finish(&mut result, &out, &a.judge, &records)
        }
    }
}

/// A saved run as `report` gives it ([`analysed`]).
pub enum Reported {
    /// Nothing drawn from its records: as saved, or priced anew from its
    /// saved throughputs.
    AsSaved(RunResult),
    /// Analysed again from its `records` at `percentiles` (another SLO,
    /// percentiles, window or price).
    /// `from`: the records file they were read from (`None`: the
    /// document's own).
    Anew { result: RunResult, records: Vec<RequestRecord>, percentiles: Vec<f64>, from: Option<std::path::PathBuf> },
}

/// `run`, read from `a.run`, judged again as `a` asks: from its records
/// (`a.records`, the document's own, or the file beside it) where an SLO,
/// percentiles, a window or ratings are asked for, else priced anew or as
/// saved. `compare --slo` judges each run it compares by this.
pub fn analysed(mut run: RunResult, a: &ReportArgs) -> Result<Reported> {
    // Anything that judges or prices the run again: a config file, a price
    // named from it, an attainment target or a GPU count had been ignored
    // without a word (and the saved verdict kept, exit 0).
    let j = &a.judge;
    if j.gpu_hour_usd.is_none() && j.config.is_none() && j.price.is_none() {
        // The saved price is what prices it: checked as the flag is.
        setup::check_saved_prices(&run, &a.run)?;
    }
    let rejudge = j.slo.is_some()
        || a.percentiles.is_some()
        || j.gpu_hour_usd.is_some()
        || a.window.is_some()
        || j.config.is_some()
        || j.price.is_some()
        || j.attainment.is_some()
        || j.gpus.is_some();
    // A records file read only in part (its last line cut short), said in the result too.
    let mut cut_short = None;
    let mut from = a.records.clone();
    let records = match (&a.records, &run.requests) {
        (Some(p), _) => {
            // Streamed: one line of the file at a time, and each record's chunks packed;
            // counted against the requests the result says were sent.
            let (records, cut) = goodput_report::read::records::read_counted_records(p, &run, &a.run)?;
            cut_short = cut;
            Some(records)
        }
        (None, Some(r)) => {
            // The document's own records, counted against the requests its summary says were sent
            // (as a --records file is): an edited or cut document had been recomputed from what it
            // still held (`requests: []` read as a run of none), where `compare` read its summary.
            let q = &run.summary.requests;
            let expected = q.recorded();
            let held = r.len() as u64;
            if run.config.report_window.is_none() && held != expected {
                let what = format!(
                    "{} holds {held} per-request records where its summary says {expected} requests were sent \
                     ({} measured, {} warm-up): the document was edited or cut",
                    a.run.display(),
                    q.sent,
                    q.warmup
                );
                if rejudge {
                    bail!("{what}; pass --records FILE (the run's own --records file) to judge it again");
                }
                eprintln!("warning: {what}; shown as saved, from its summary");
                None
            } else {
                Some(r.clone())
            }
        }
        // Judged anew with no records named, nor held. A price or a GPU
        // count alone needs the saved throughputs alone; else the run's
        // records file beside it, by its name, where there is one. A file
        // there that is not this run's (another run's, or cut) is passed
        // over with a warning, as if absent: it had failed a re-pricing.
        (None, None) if rejudge => {
            if let Some(priced) = repriced(&run, a)? {
                return Ok(Reported::AsSaved(priced));
            }
            let mut outputs = vec![("--output", a.output.as_deref())];
            outputs.extend(a.exports.outputs());
            let mut found = None;
            for p in records_beside(&a.run, run.config.records_file.as_deref()) {
                output::distinct_files(&[("the records beside the result", p.as_path())], &outputs)?;
                match goodput_report::read::records::read_counted_records(&p, &run, &a.run) {
                    Ok((records, cut)) => {
                        if !a.quiet {
                            goodput_core::tell!(
                                "reading the run's records from {} (--records names others)",
                                p.display()
                            );
                        }
                        cut_short = cut;
                        found = Some(records);
                        from = Some(p);
                        break;
                    }
                    Err(e) => eprintln!(
                        "warning: {} beside {} is not its records ({e:#}); passed over",
                        p.display(),
                        a.run.display()
                    ),
                }
            }
            found
        }
        (None, None) => None,
    };
    let Some(records) = records else {
        if rejudge {
            // The file the document names, where it names one (moved or removed since).
            let named = run.config.records_file.as_deref().map_or(String::new(), |r| {
                format!("where it names it ({}) nor ", output::resolve_from(&a.run, r).display())
            });
            bail!(
                "{} holds no per-request records, nor is its records file {named}beside it ({} or {}), and an SLO, \
                 attainment, percentiles, ratings or --window are drawn from them: pass --records FILE (written by \
                 --records), or save runs with --include-requests{}",
                a.run.display(),
                a.run.with_extension("jsonl").display(),
                a.run.with_extension("parquet").display(),
                // Said where a price was given beside what needs them (not
                // by compare, whose --slo is all it asks).
                if a.judge.gpu_hour_usd.is_some() || a.judge.price.is_some() || a.judge.gpus.is_some() {
                    " (a price or a GPU count alone needs none)"
                } else {
                    ""
                }
            );
        }
        // Nothing to recompute: render the document as saved.
        return Ok(Reported::AsSaved(run));
    };
    let all_sent: Vec<f64> = records.iter().filter(|r| !r.warmup).map(|r| r.sent.as_secs_f64()).collect();
    let records = match &a.window {
        Some(w) => in_window(records, w)?,
        None => records,
    };
    let percentiles = match &a.percentiles {
        Some(p) => p.0.clone(),
        None => run.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect(),
    };
    let opts = setup::saved_options(&run, &a.judge, &percentiles)?;
    a.judge.check_attainment_applies(opts.slo.as_ref())?;
    check_references(&run, &records, opts.slo.as_ref())?;
    let mut config = run.config.clone();
    config.percentiles = Some(percentiles.clone());
    config.judge = Some(setup::judge_config(&opts));
    if let Some(w) = &a.window {
        config.report_window = Some(crate::cli::window_text(w));
    }
    let mut result = goodput_core::analysis::assemble::assemble(
        goodput_core::analysis::assemble::Assembly {
            tool: common::tool(),
            kind: &run.kind,
            run_id: run.run_id.clone(),
            started_unix_s: run.started_unix_s,
            interrupted: run.interrupted,
            config,
            target: run.target.clone(),
            include_requests: run.requests.is_some(),
        },
        &records,
        &opts,
    );
    // An imported run says again where it came from and what its file cannot give.
    if let Some(import) = goodput_report::read::peers::import_info(&run) {
        goodput_report::read::peers::apply(import, &mut result);
    }
    result.engine = run.engine.take();
    // A shard's, or a merged run's, account of where its records came from.
    result.shard = run.shard.take();
    result.merge = run.merge.take();
    // The other runs of --runs N kept their figures alone: carried as measured,
    // less those the saved SLO counted where the run is judged by another now.
    let other_slo = match (run.slo.as_ref(), result.slo.as_ref()) {
        (Some(saved), Some(now)) => !goodput_report::compare::same_slo(&saved.spec, &now.spec),
        (saved, now) => saved.is_some() != now.is_some(),
    };
    result.repeats = run.repeats.take().map(|mut rep| {
        rep.notes.push(REPEATS_AS_SAVED.into());
        if other_slo && without_slo_figures(&mut rep) {
            rep.notes.push(REPEATS_OTHER_SLO.into());
        }
        rep
    });
    // Why the run stopped is the run's, whatever it is judged against now.
    result.stop = run.stop.take();
    // The client's own stalls and cost are the run's too: dropped, a run
    // whose client stalled had passed --fail-on-unsteady when re-analysed.
    result.client_stalls = stalls_again(run.client_stalls.take(), &records, a.window.is_some());
    // The process's cost is one figure for the whole run, windowed or not
    // (docs/result.md says so).
    result.client = run.client.take();
    if a.window.is_none() {
        // The live run's words on its client, which assemble does not draw again.
        result.warnings.extend(
            run.warnings
                .iter()
                .filter(|w| w.starts_with("the client kept") || w.starts_with("the client itself stalled"))
                .filter(|w| !result.warnings.contains(w))
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    // The scrapes' histograms of too many bounds, signals of too many
    // series, and a long run's scrapes thinned: the saved samples hold them
    // without their buckets, summed, or fewer, and only the live run's
    // words say why.
    use goodput_core::prometheus::scrape::is_kept_scrapes_warning;
    let coarsened = run.warnings.iter().filter(|w| is_kept_scrapes_warning(w));
    let coarsened: Vec<String> = coarsened.filter(|w| !result.warnings.contains(w)).cloned().collect();
    result.warnings.extend(coarsened);
    if let Some(w) = &a.window {
        result.warnings.extend(window_past_the_run(w, &all_sent));
    }
    result.warnings.extend(cut_short);
    let model_energy = run.energy.as_ref().is_some_and(|e| e.source == EnergySource::Model);
    if a.window.is_some() && model_energy {
        // The engine's energy is one figure for the whole run: its J/token
        // beside the window's tokens/s per MW had mixed two spans.
        run.energy = None;
        result.warnings.push(
            "energy: the simulated engine's energy is for the whole run, so none is given for --window; report \
             the whole run for it"
                .into(),
        );
    }
    result.energy = energy_again(&mut run, result.summary.throughput.output_tokens_per_s);
    recompute_server_side(run, &mut result, &records, a.window.is_some());
    // What is written must read back: refused here, not on the next read.
    if let Some(what) = goodput_report::read::impossible(&result) {
        bail!(
            "{} re-analysed gives figures no run can have ({what}): its records were edited or damaged; nothing was \
             written",
            a.run.display()
        );
    }
    Ok(Reported::Anew { result, records, percentiles, from })
}

/// `run` priced anew (`--gpu-hour-usd`, `--gpus`, a config's price) from
/// its saved throughputs, as `analyze` prices them, when nothing else is
/// judged anew: a cost needs no per-request records (it had been refused
/// without them). `None` where an SLO, attainment, percentiles, a window,
/// or a config's SLO or ratings other than the saved ones, need the records.
fn repriced(run: &RunResult, a: &ReportArgs) -> Result<Option<RunResult>> {
    let j = &a.judge;
    if j.slo.is_some() || j.attainment.is_some() || a.percentiles.is_some() || a.window.is_some() {
        return Ok(None);
    }
    let percentiles: Vec<f64> = run.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect();
    let opts = setup::saved_options(run, j, &percentiles)?;
    let saved = run.config.judge.clone().unwrap_or_default();
    let judge = setup::judge_config(&opts);
    if judge.slo != saved.slo || judge.ratings != saved.ratings {
        return Ok(None);
    }
    let Some(cost) = opts.cost else {
        match j.gpus {
            Some(g) => bail!(
                "--gpus {g} counts the GPUs a price is paid for, and {} has no price: give --gpu-hour-usd USD too",
                a.run.display()
            ),
            None => return Ok(None),
        }
    };
    let mut run = run.clone();
    run.cost = Some(goodput_core::analysis::summary::cost_report(cost, &run.summary));
    run.config.judge = Some(goodput_core::doc::config::JudgeConfig { extra: saved.extra, ..judge });
    // The energy counters' GPUs against the GPUs priced, said again for the new count.
    run.warnings.retain(|w| !goodput_core::analysis::assemble::is_gpus_unpriced_warning(w));
    let counted = run.energy.as_ref().filter(|e| e.source == EnergySource::Scraped).and_then(|e| e.gpus);
    run.warnings
        .extend(counted.and_then(|n| goodput_core::analysis::assemble::gpus_unpriced_warning(run.cost.as_ref(), n)));
    Ok(Some(run))
}

/// Refuses an SLO's quality term on a run whose answers had no references
/// to be scored against (no dataset, and no record scored), as `bench`
/// refuses it before the run: it had been judged `measured - FAIL`.
fn check_references(run: &RunResult, records: &[RequestRecord], slo: Option<&goodput_core::Slo>) -> Result<()> {
    let Some((term, _)) = slo.and_then(|s| s.quality_terms().into_iter().next()) else { return Ok(()) };
    let dataset = run.config.workload.as_ref().is_some_and(|w| w.dataset.is_some());
    if dataset || records.iter().any(|r| r.quality.is_some()) {
        return Ok(());
    }
    bail!(
        "--slo {term} judges answers against their references, and this run has none: run bench again with \
         --dataset FILE.jsonl whose lines carry \"reference\" (or \"answer\"), or drop the term"
    );
}

/// The records file a run's `--records` wrote beside its result, by the
/// result's name (`RUN.json` → `RUN.jsonl`, else `RUN.parquet`), as
/// `merge` finds a shard's beside its result: `report RUN.json --slo SPEC`,
/// the way `compare` hints to judge runs by one SLO, had said the run
/// "holds no per-request records" with RUN.jsonl beside it. Whose records
/// they are is checked as a --records file's are (by the run's id).
/// The run's records files to try, in order: the one the document names
/// (`named`, [`output::path_from`]), then `RUN.jsonl` and `RUN.parquet`
/// beside it; those that are files.
fn records_beside(run: &std::path::Path, named: Option<&str>) -> Vec<std::path::PathBuf> {
    let named = named.map(|r| output::resolve_from(run, r));
    let beside = ["jsonl", "parquet"].into_iter().map(|e| run.with_extension(e));
    let mut found: Vec<std::path::PathBuf> = Vec::new();
    for p in named.into_iter().chain(beside) {
        if p != run && p.is_file() && !found.iter().any(|f| output::same_place(f, &p)) {
            found.push(p);
        }
    }
    found
}

/// A saved run's energy over its records analysed again, at their output
/// tokens/s `rate`: the simulated engine's (its joules, span, tokens, GPUs
/// and provisioned watts are saved) drawn again; a scraped one kept as saved
/// where the run kept no scrapes to draw it from (else `None`: the server's
/// side draws it again from them). Dropped, a report of an estimate had
/// said nothing of its energy.
fn energy_again(run: &mut RunResult, rate: f64) -> Option<EnergyReport> {
    let e = run.energy.take()?;
    let scrapes = run.server_signals.as_ref().is_some_and(|s| !s.samples.is_empty());
    match e.source {
        EnergySource::Model => {
            Some(EnergyReport::new(e.source, e.energy_j, e.seconds, e.output_tokens, e.gpus, e.provisioned_w, rate))
        }
        EnergySource::Scraped if scrapes => None,
        EnergySource::Scraped => Some(e),
    }
}

/// Said of a `repeats` block when `report` analyses the first run's
/// records again: the other runs' records were never kept.
pub const REPEATS_AS_SAVED: &str = "the runs' figures are as first analysed: report re-analyses run 1's records alone \
     (the other runs kept their figures, not their records), so the top level may differ from run 1's row";

/// Said of a `repeats` block when the run is judged by another SLO than
/// the one its runs' figures were counted by.
pub const REPEATS_OTHER_SLO: &str = "goodput and the attainment are left out of the runs' figures: they counted \
     requests by the SLO the runs were judged by, and the document is judged by another now (from run 1's records \
     alone), so compare reads run 1's for them";

/// Takes out of `rep` the figures that count requests by the SLO (goodput,
/// the attainment), each run's and their spread: under another SLO they
/// would be read as the runs' means of figures they are not (`compare`
/// reads a `--runs` document's means). True where any was there.
fn without_slo_figures(rep: &mut goodput_core::doc::repeats::Repeats) -> bool {
    let judged = |path: &str| path.parse::<goodput_report::Metric>().is_ok_and(|m| m.judged_by_slo());
    let before = rep.spread.len();
    rep.spread.retain(|s| !judged(&s.figure));
    for r in &mut rep.runs {
        r.figures.retain(|path, _| !judged(path));
    }
    rep.spread.len() != before
}

/// The client's stalls of a saved run over the records analysed again: as
/// saved for the whole run, with the requests they caught counted again
/// from the records' `client_stalled` flags; with `--window`, only the
/// listed stalls that overlap a request kept (from its schedule to its end),
/// their figures drawn from those alone.
fn stalls_again(
    saved: Option<goodput_core::ClientStalls>,
    records: &[RequestRecord],
    windowed: bool,
) -> Option<goodput_core::ClientStalls> {
    let saved = saved?;
    if !windowed {
        let requests = records.iter().filter(|r| r.client_stalled).count() as u64;
        return Some(goodput_core::ClientStalls { requests, ..saved });
    }
    let kept: Vec<goodput_core::ClientStall> = saved
        .stalls
        .iter()
        .filter(|s| records.iter().any(|r| s.touches(r.scheduled.min(r.sent), r.end)))
        .copied()
        .collect();
    let threshold = goodput_core::clamped_secs(saved.threshold_ms * 1e-3);
    let requests = records.iter().filter(|r| r.client_stalled).count() as u64;
    match goodput_core::ClientStalls::over(&kept, threshold, records) {
        Some(s) => Some(s),
        // Caught by a stall past the listed ones: the run's figures, as saved.
        None if requests > 0 => Some(goodput_core::ClientStalls { requests, ..saved }),
        None => None,
    }
}

/// The warning for a window that reaches past the stretch of the run a
/// sweep's stage kept the scrapes of (`cut`): the server's figures are
/// then over that stretch alone.
fn past_the_cut(
    signals: &goodput_core::prometheus::scrape::ServerSignals,
    window: &goodput_core::Window,
) -> Option<String> {
    let cut = signals.cut?;
    let slack = 1e-6;
    (window.start_s < cut.start_s - slack || window.end_s > cut.end_s + slack).then(|| {
        format!(
            "the window {:.1}s..{:.1}s reaches past the {:.1}s..{:.1}s this document kept the server's scrapes of \
             (a sweep's stage keeps its own): the server's signals, their cross-checks and the diagnosis cover that \
             stretch alone",
            window.start_s, window.end_s, cut.start_s, cut.end_s
        )
    })
}

/// The warning for a `--window` that runs past the run's sending: the
/// analysis covers only the stretch that held requests, and says so.
fn window_past_the_run(w: &goodput_core::TimeSlice, sent_s: &[f64]) -> Option<String> {
    let last = sent_s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let to = w.to.map_or(f64::INFINITY, |t| t.as_secs_f64());
    (to.is_finite() && to > last && last.is_finite()).then(|| {
        format!(
            "--window {} runs past the run's last request, sent at {last:.1}s: it covers {:.1}s..{last:.1}s of sending",
            crate::cli::window_text(w),
            w.from.as_secs_f64()
        )
    })
}

/// The requests of `records` sent in `w`, or an error that says when they were sent.
fn in_window(records: Vec<RequestRecord>, w: &goodput_core::TimeSlice) -> Result<Vec<RequestRecord>> {
    let inside = w.select(&records);
    if inside.is_empty() {
        let sent = records.iter().filter(|r| !r.warmup).map(|r| r.sent.as_secs_f64());
        let (first, last) = sent.fold((f64::INFINITY, 0.0f64), |(a, b), t| (a.min(t), b.max(t)));
        bail!(
            "no measured request was sent in --window {} (they were sent from {first:.1}s to {last:.1}s)",
            crate::cli::window_text(w)
        );
    }
    Ok(inside)
}

/// The server's side and the diagnosis, recomputed from the scrapes and
/// records for this window and these figures, as the live run drew them.
fn recompute_server_side(run: RunResult, result: &mut RunResult, records: &[RequestRecord], windowed: bool) {
    let load = goodput_core::prometheus::scrape::ClientLoad::of(run.config.load.as_ref());
    let imported = goodput_report::read::peers::import_info(&run).is_some();
    let side = match run.server_signals {
        Some(signals) if !signals.samples.is_empty() => {
            result.warnings.extend(past_the_cut(&signals, &result.window));
            ServerSide::Scraped(signals)
        }
        // A document from before the scrapes were kept: as saved.
        Some(saved) => {
            if windowed {
                result.warnings.push(
                    "the server's signals, their cross-checks and the diagnosis cover the whole run, not --window: \
                     this document does not keep the scrapes they were drawn from"
                        .into(),
                );
            }
            ServerSide::AsSaved { signals: Some(saved), diagnosis: run.diagnosis }
        }
        None if imported => ServerSide::AsSaved { signals: None, diagnosis: run.diagnosis },
        None => ServerSide::Unscraped,
    };
    attach_server_side(result, side, records, load);
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::prometheus::scrape::ServerSignals;
    use goodput_core::Window;

    /// A window within the stretch a stage kept its scrapes of reads them
    /// all; one past it on either side is told that the server's figures
    /// cover the stretch alone. A document of the whole run has no stretch.
    #[test]
    fn a_window_past_a_stage_s_scrapes_is_told_so() {
        let w = |a: f64, b: f64| Window { start_s: a, end_s: b, duration_s: b - a };
        let mut signals = ServerSignals::default();
        assert_eq!(past_the_cut(&signals, &w(0.0, 100.0)), None);
        signals.cut = Some(w(10.0, 20.0));
        assert_eq!(past_the_cut(&signals, &w(10.0, 20.0)), None);
        assert_eq!(past_the_cut(&signals, &w(12.0, 18.0)), None);
        for (a, b) in [(5.0, 20.0), (10.0, 25.0)] {
            let told = past_the_cut(&signals, &w(a, b)).unwrap();
            assert!(told.contains("reaches past the 10.0s..20.0s") && told.contains("that stretch alone"), "{told}");
        }
    }
}
