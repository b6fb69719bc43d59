//! A run's result document assembled from its records: the analysis, and
//! the warnings the load itself calls for (a closed loop of too few
//! requests). Every command that makes a run document goes through here, as
//! does `report` when it analyses a saved run again.

use crate::analysis::stability::with_server_queue;
use crate::doc::config::LoadConfig;
use crate::prometheus::scrape::{ClientLoad, ServerSignals};
use crate::{analyze, AnalysisOptions, Compat, RequestRecord, RunConfig, RunResult, Target, Tool, SCHEMA};

/// What a result document holds beside what its records give.
pub struct Assembly<'a> {
    /// The tool that made it (its name, version and commit).
    pub tool: Tool,
    pub kind: &'a str,
    pub run_id: String,
    pub started_unix_s: f64,
    pub interrupted: bool,
    pub config: RunConfig,
    pub target: Target,
    pub include_requests: bool,
}

/// The result document of `records`: every figure analysed from them
/// under `opts`, and the warnings they call for.
pub fn assemble(a: Assembly<'_>, records: &[RequestRecord], opts: &AnalysisOptions) -> RunResult {
    let mut analysis = analyze(records, opts);
    analysis.summary.stability =
        crate::analysis::stability::judge(records, &analysis.window, a.config.load.as_ref(), &opts.stability);
    let peak = analysis.summary.in_flight.peak;
    let few = a.config.load.as_ref().and_then(|l| few_requests_warning(l, peak));
    let cycled = a.config.workload.as_ref().and_then(|w| cycled_dataset_warning(w, records));
    let chunks: u64 = records.iter().filter(|r| !r.warmup).map(|r| r.chunks.len() as u64).sum();
    let stamp = a.config.client.as_ref().map(|c| c.stamp.as_str());
    let late = crate::analysis::summary::read_lag_warning(&analysis.summary, stamp, chunks);
    let streamed = a.config.client.as_ref().is_some_and(|c| c.stream);
    let unstreamed =
        if streamed { unstreamed_warning(records) } else { unmeasured_terms_warning(records, opts.slo.as_ref()) };
    RunResult {
        schema: SCHEMA.into(),
        tool: a.tool,
        kind: a.kind.into(),
        run_id: a.run_id,
        started_unix_s: a.started_unix_s,
        interrupted: a.interrupted,
        stop: None,
        config: a.config,
        target: a.target,
        window: analysis.window,
        summary: analysis.summary,
        slo: analysis.slo,
        cost: analysis.cost,
        energy: None,
        compat: Compat { vllm: analysis.vllm },
        engine: None,
        server_signals: None,
        client: None,
        client_stalls: None,
        warnings: analysis.warnings.into_iter().chain(few).chain(cycled).chain(late).chain(unstreamed).collect(),
        diagnosis: Vec::new(),
        shard: None,
        merge: None,
        repeats: None,
        requests: a.include_requests.then(|| records.to_vec()),
    }
}

/// The warning for streamed requests whose output came all at once
/// ([`crate::analysis::slo::unstreamed`]): nothing had said that their TTFT
/// was the whole response's time, and a TPOT SLO passed with nothing
/// measured.
fn unstreamed_warning(records: &[RequestRecord]) -> Option<String> {
    let (completed, whole, one_read) = unstreamed_counts(records);
    if whole + one_read == 0 {
        return None;
    }
    let how = match (whole, one_read) {
        (_, 0) => "as one piece (one JSON body, or one chunk of the stream)".to_string(),
        (0, _) => "with every chunk in one read".to_string(),
        (w, o) => format!("as one piece ({w}) or with every chunk in one read ({o})"),
    };
    Some(format!(
        "{} of {completed} completed requests were asked to stream and their output (two tokens or more) came {how}: \
         the server ignores stream: true, or a proxy between buffers the stream (nginx: proxy_buffering off). Their \
         TTFT is the whole response's time, their TPOT and ITL measure nothing, and a tpot or itl_max SLO term \
         counts them as not met",
        whole + one_read
    ))
}

/// The completed measured requests, and of them those whose output (two
/// tokens or more) came all at once ([`crate::analysis::slo::unstreamed`]):
/// as one chunk, and as several in one read.
fn unstreamed_counts(records: &[RequestRecord]) -> (u64, u64, u64) {
    let ok = records.iter().filter(|r| !r.warmup && r.outcome.is_success());
    let (mut completed, mut one_piece, mut one_read) = (0u64, 0u64, 0u64);
    for r in ok {
        completed += 1;
        if crate::analysis::slo::unstreamed(r) {
            match r.chunks.len() {
                1 => one_piece += 1,
                _ => one_read += 1,
            }
        }
    }
    (completed, one_piece, one_read)
}

/// The warning for a run not asked to stream (`--no-stream`, a pooling
/// API) whose SLO has a tpot or itl_max term: its answers of two tokens or
/// more come whole, so that term counts them as not met, and a run whose
/// every request failed the SLO had said nothing of why.
fn unmeasured_terms_warning(records: &[RequestRecord], slo: Option<&crate::analysis::slo::Slo>) -> Option<String> {
    use crate::analysis::slo::SloMetric;
    let slo = slo?;
    let timed = |m: SloMetric| matches!(m, SloMetric::Tpot | SloMetric::ItlMax);
    if !slo.limits.iter().map(|l| l.metric).chain(slo.objectives.iter().map(|o| o.metric)).any(timed) {
        return None;
    }
    let (completed, one_piece, one_read) = unstreamed_counts(records);
    let whole = one_piece + one_read;
    (whole > 0).then(|| {
        format!(
            "{whole} of {completed} completed requests were not streamed (--no-stream) and answered two tokens or \
             more at once: they have no TPOT or ITL, and the SLO's tpot or itl_max term counts them as not met; \
             stream them (drop --no-stream), or judge them by ttft and e2e"
        )
    })
}

/// Requests a user of a closed loop sends by default: enough that the
/// ramp-up at the start and the drain at the end are a small part of the
/// window.
pub const REQUESTS_PER_USER: u64 = 10;

/// Below this many requests a user, a closed loop is warned about: its
/// window is mostly ramp-up and drain, not the load it names.
const FEW_PER_USER: u64 = 3;

/// What a result knows of the server's side of its run.
pub enum ServerSide {
    /// The server's metrics scraped during the run (some scrapes may have
    /// failed, or all).
    Scraped(ServerSignals),
    /// Nothing was scraped: the diagnosis is drawn from the records alone.
    Unscraped,
    /// A saved document's signals and diagnosis, kept as they are: the
    /// document did not keep the scrapes they were drawn from (one from
    /// before scrapes were kept, or another tool's result read in).
    AsSaved { signals: Option<ServerSignals>, diagnosis: Vec<crate::Diagnosis> },
}

impl From<Option<ServerSignals>> for ServerSide {
    fn from(signals: Option<ServerSignals>) -> Self {
        signals.map_or(ServerSide::Unscraped, ServerSide::Scraped)
    }
}

/// Attaches the server's side of a run to its result: the scraped
/// `signals` summarised over the result's window and cross-checked against
/// the client's `records`, the diagnosis (from the records alone when
/// nothing was scraped, or when a saved document kept no scrapes), and the
/// growth of the server's queue in the stability verdict, from the scraped
/// waiting gauge or else the simulated engine's own queue. Every command
/// that makes or remakes a result goes through here. `load` is the
/// client's: its cap on requests in flight and its rate.
pub fn attach_server_side(result: &mut RunResult, side: ServerSide, records: &[RequestRecord], load: ClientLoad) {
    // How the requests asked (streamed or not, a pooling run's fan-out) is
    // the run's, whoever passed the load.
    let load = load.asked(result.config.client.as_ref());
    // Only the simulated engine in virtual time gives a result its engine
    // block.
    let load = ClientLoad { virtual_time: result.engine.is_some(), ..load };
    result.diagnosis = match side {
        ServerSide::Scraped(mut signals) => {
            let windowed = result.config.report_window.is_some();
            let d = signals.analyse(records, &result.summary, &result.window, load, windowed);
            let warm =
                signals.window.prefix_cache_hit_rate.and_then(|h| warm_cache_warning(&result.config, records, h));
            result.warnings.extend(warm);
            if result.energy.is_none() {
                let rate = result.summary.throughput.output_tokens_per_s;
                let (energy, warnings) = scraped_energy_checked(&signals, rate);
                result.energy = energy;
                result.warnings.extend(warnings);
                let counted = result.energy.as_ref().and_then(|e| e.gpus);
                result.warnings.extend(counted.and_then(|n| gpus_unpriced_warning(result.cost.as_ref(), n)));
            }
            result.server_signals = Some(signals);
            d
        }
        ServerSide::Unscraped => crate::prometheus::scrape::diagnose(records, &result.summary, None, load),
        ServerSide::AsSaved { signals, diagnosis } => {
            result.server_signals = signals;
            diagnosis
        }
    };
    with_engine_kv_bound(result, records, load);
    with_queue_growth(result);
}

/// A simulated engine whose KV cache bound the run says so first. Its waves
/// are then the cache letting a few requests in as others end, not the
/// users' sending together: the lockstep line's fix, a ramp-up, does not
/// part them (`estimate --model llama-3.1-70b --pp 2 -c 64 -n 1000` came in
/// bursts of 3.3 sends, and in bursts of 2.8 with `--ramp-up 45s`, its TTFT
/// as long), so it is not told beside it. A saved diagnosis that already
/// holds it is left as it is.
fn with_engine_kv_bound(result: &mut RunResult, records: &[RequestRecord], load: ClientLoad) {
    use crate::prometheus::scrape::engine_kv_bound;
    let Some(engine) = &result.engine else { return };
    let Some(kv) = engine_kv_bound(engine, records, &result.summary, load) else { return };
    if result.diagnosis.iter().any(|d| d.message == kv.message) {
        return;
    }
    result.diagnosis.retain(|d| d.kind != crate::DiagnosisKind::Lockstep);
    result.diagnosis.insert(0, kv);
}

/// [`scraped_energy`] over the scrapes `analyse` summarised, with the GPUs
/// counted by their energy series, and the warnings it needs: energy series
/// that did not cover the whole window (counted only while seen, so the
/// energy is low), and figures [`checked`] refuses (withheld).
///
/// [`checked`]: crate::analysis::energy::EnergyReport::checked
fn scraped_energy_checked(
    signals: &ServerSignals,
    rate: f64,
) -> (Option<crate::analysis::energy::EnergyReport>, Vec<String>) {
    use crate::prometheus::scrape::CounterSignal;
    let cover = signals.coverage(CounterSignal::GpuEnergy);
    let gpus = u32::try_from(cover.series).ok().filter(|&n| n > 0);
    let Some(energy) = scraped_energy(&signals.window, rate, gpus) else { return (None, Vec::new()) };
    let mut warnings = Vec::new();
    let n = cover.series;
    if cover.late > 0 {
        warnings.push(format!(
            "energy: {} of the {n} GPU energy series first appeared after the window's first scrape (an exporter \
             that failed it, or a GPU reported late): each counts only from its first sample, so the energy and \
             power are low",
            cover.late
        ));
    }
    if cover.gone > 0 {
        warnings.push(format!(
            "energy: {} of the {n} GPU energy series were missing from the window's last scrape: each counts only \
             to its last sample, so the energy and power are low",
            cover.gone
        ));
    }
    if !limits_cover(&signals.window, gpus) {
        let limits = signals
            .window
            .gauges
            .get(&crate::prometheus::scrape::GaugeSignal::GpuPowerLimitGpus)
            .and_then(|d| Some((d.min?, d.max?)))
            .map(|(lo, hi)| if lo == hi { format!("{lo:.0}") } else { format!("{lo:.0} to {hi:.0}") })
            .unwrap_or_default();
        warnings.push(format!(
            "energy: the GPUs' power limits were read for {limits} GPU(s) and their energy counters for {n}: the \
             provisioned watts and the output tok/s per provisioned MW are left out (null), as they would set some \
             GPUs' limits against every GPU's energy"
        ));
    }
    match energy.checked() {
        Ok(e) => (Some(e), warnings),
        Err(why) => {
            warnings.push(why);
            (None, warnings)
        }
    }
}

/// The warning for a run priced for other GPUs than the `counted` ones its
/// energy counters report: the price is kept as given (`--gpus`, a config's
/// `gpus`, or one GPU by default), and the count that would match is named.
pub fn gpus_unpriced_warning(cost: Option<&crate::analysis::cost::CostReport>, counted: u32) -> Option<String> {
    let priced = cost?.gpus;
    (priced != counted).then(|| {
        format!(
            "the GPUs' energy counters report {counted} GPU(s), and the cost is priced for {priced} (--gpus, a \
             config's gpus, or 1 by default): if the server runs on those {counted}, give --gpus {counted}"
        )
    })
}

/// Whether `w` is a warning [`gpus_unpriced_warning`] wrote: said again
/// when a saved run is priced for another count.
pub fn is_gpus_unpriced_warning(w: &str) -> bool {
    w.starts_with("the GPUs' energy counters report ") && w.contains("and the cost is priced for")
}

/// Joules per output token and output tokens/s per provisioned megawatt from
/// the GPUs' energy counters over the scrape window, against the run's
/// output tokens/s `rate`: the engine's generated tokens over the same
/// window (the client's output rate over the window's
/// span where the engine counts none), the power limits DCGM reports as
/// what is provisioned, drawn by `gpus` GPUs where known. `None` without an
/// energy counter.
pub fn scraped_energy(
    w: &crate::prometheus::scrape::WindowSummary,
    rate: f64,
    gpus: Option<u32>,
) -> Option<crate::analysis::energy::EnergyReport> {
    use crate::prometheus::scrape::{CounterSignal, GaugeSignal};
    let energy = w.counters.get(&CounterSignal::GpuEnergy)?.delta;
    let tokens = match w.counters.get(&CounterSignal::GenerationTokens) {
        Some(c) => c.delta,
        None => rate * w.span_s,
    };
    // Power limits for other GPUs than the energy counters cover (one GPU's
    // limit not exported, a second node's exporter without it) provision
    // some of the GPUs for all of their energy: left out (the per-megawatt
    // figure had been twice what it was).
    let limit = w.gauges.get(&GaugeSignal::GpuPowerLimit).and_then(|d| d.mean).filter(|_| limits_cover(w, gpus));
    Some(crate::analysis::energy::EnergyReport::new(
        crate::analysis::energy::EnergySource::Scraped,
        energy,
        w.span_s,
        tokens.max(0.0).round() as u64,
        gpus,
        limit,
        rate,
    ))
}

/// Whether the power limits of the window were read for the same GPUs in
/// every scrape, as many as the `gpus` energy series. True where either
/// count is unknown (a document of goodput before the count was kept).
fn limits_cover(w: &crate::prometheus::scrape::WindowSummary, gpus: Option<u32>) -> bool {
    let Some(d) = w.gauges.get(&crate::prometheus::scrape::GaugeSignal::GpuPowerLimitGpus) else { return true };
    match (d.min, d.max, gpus) {
        (Some(lo), Some(hi), Some(n)) => lo == hi && lo == f64::from(n),
        _ => true,
    }
}

/// Sets the growth of the server's queue in `result`'s stability from what
/// it keeps of the server's queue: the scraped waiting-requests gauge, or
/// the simulated engine's waiting count.
fn with_queue_growth(result: &mut RunResult) {
    let Some(s) = result.summary.stability.as_mut() else { return };
    let waiting = crate::prometheus::scrape::GaugeSignal::WaitingRequests;
    let scraped: Vec<(f64, f64)> = result
        .server_signals
        .iter()
        .flat_map(|sig| sig.samples.iter())
        .filter_map(|x| Some((x.t.as_secs_f64(), *x.signals.gauges.get(&waiting)?)))
        .collect();
    if !scraped.is_empty() {
        with_server_queue(s, scraped.into_iter());
    } else if let Some(e) = &result.engine {
        with_server_queue(s, e.series.t_s.iter().copied().zip(e.series.waiting.iter().map(|&w| f64::from(w))));
    }
}

/// Share of the prompt tokens a run's own prompts do not share that the
/// template and block rounding may still find cached: a chat template's few
/// tokens a request, and the cache's whole blocks.
const TEMPLATE_SHARE: f64 = 0.15;

/// The most of a run's prompt tokens that its own prompts could find in a
/// prefix cache, from the run itself: a shared prefix's
/// (`--shared-prefix-tokens`) every use after its first (the first of each
/// misses, unless a warm-up request opened it); a session's turn after the
/// first its history (the previous turn's prompt and answer), its first
/// turn nothing; a trace's recorded prefix reuse
/// (`reused_prefix_tokens`). `None` for a workload whose sharing this does
/// not bound: a rerank's query, a dataset, `--repeat`, a trace that recorded
/// no reuse bound.
pub fn shareable_prompt_share(config: &RunConfig, records: &[RequestRecord]) -> Option<f64> {
    let w = config.workload.as_ref()?;
    // A rerank sends its query again with each document, by design.
    let rerank = config.client.as_ref().is_some_and(|c| matches!(c.api.as_str(), "rerank" | "tei-rerank"));
    if rerank || w.dataset.is_some() || w.repeat.is_some_and(|r| r > 1) {
        return None;
    }
    if let Some(t) = &w.trace {
        let total = t.input_tokens_mean * t.requests as f64;
        return Some(if total > 0.0 { (t.reused_prefix_tokens? as f64 / total).min(1.0) } else { 0.0 });
    }
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let total: f64 = measured.iter().map(|r| r.input_tokens as f64).sum();
    if total <= 0.0 {
        return Some(0.0);
    }
    // A later turn's history: the turn before's prompt and answer, or the
    // whole prompt where that turn is not among the records.
    let turns: std::collections::HashMap<(u64, u32), &RequestRecord> =
        records.iter().filter_map(|r| r.session.as_ref().map(|s| ((s.id, s.turn), r))).collect();
    let turn = |id: u64, t: u32| turns.get(&(id, t));
    let history: f64 = measured
        .iter()
        .filter_map(|r| {
            let s = r.session.as_ref().filter(|s| s.turn > 1)?;
            let before = turn(s.id, s.turn - 1).map_or(r.input_tokens, |p| p.input_tokens + p.output_tokens);
            Some(before.min(r.input_tokens) as f64)
        })
        .sum();
    let prefix = w.shared_prefix.as_ref().map_or(0.0, |p| {
        let first =
            |rs: &[&RequestRecord]| rs.iter().filter(|r| r.session.as_ref().is_none_or(|s| s.turn <= 1)).count();
        let warmups: Vec<&RequestRecord> = records.iter().filter(|r| r.warmup).collect();
        // Each prefix's first use misses, unless a warm-up request made it.
        let misses = (f64::from(p.count) - p.ratio * first(&warmups) as f64).max(0.0);
        (p.ratio * first(&measured) as f64 - misses).max(0.0) * f64::from(p.tokens)
    });
    Some(((history + prefix) / total).min(1.0))
}

/// The warning for a server whose prefix cache hit (`hit_rate`, over the
/// window) far more of the prompts than the run's own prompts could share
/// ([`shareable_prompt_share`], plus [`TEMPLATE_SHARE`] of the rest): it
/// held them before the run began (an earlier run of the same seed), or
/// other clients send the same prompts. Either way TTFT is not what fresh
/// prompts get. It takes hits 10 points past that bound, or past half the
/// way from it to every token, whichever is less: a workload that shares
/// 75% or more by design (a long shared prefix) had never been warned of.
pub fn warm_cache_warning(config: &RunConfig, records: &[RequestRecord], hit_rate: f64) -> Option<String> {
    let shared = shareable_prompt_share(config, records)?;
    let bound = (shared + TEMPLATE_SHARE * (1.0 - shared)).min(1.0);
    if hit_rate < 0.3 || hit_rate <= bound + (0.1f64).min((1.0 - bound) / 2.0) {
        return None;
    }
    let seed =
        config.load.as_ref().and_then(|l| l.seed).map(|s| format!(" (this run's seed is {s})")).unwrap_or_default();
    Some(format!(
        "the server's prefix cache served {:.1}% of the prompt tokens it looked up, where this run's prompts share at \
         most about {:.0}%{seed}: it held them before the run (an earlier run with the same --seed), or other clients \
         send the same prompts, so TTFT is faster than fresh prompts would get; leave --seed out to draw fresh prompts \
         each run",
        hit_rate * 100.0,
        bound * 100.0
    ))
}

/// The warning for `--runs N` whose later runs found their prompts in the
/// server's prefix cache ([`warm_cache_warning`] said of each): `warm`
/// holds each such run's number (from 1) and the share of the prompt
/// tokens the cache served it. Their TTFT is faster than a first run's for
/// it, so the spread across the runs is the cache filling, not the
/// run-to-run noise it would be read as. With `same_seed` each run sends
/// the prompts of the one before, which is the cause.
pub fn warm_repeats_warning(warm: &[(u32, f64)], same_seed: bool) -> Option<String> {
    warm.first()?;
    // `2`, `2 and 3`, `2, 3 and 4`.
    let listed = |items: Vec<String>| match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    let number = if warm.len() == 1 { "run" } else { "runs" };
    let runs = format!("{number} {}", listed(warm.iter().map(|(i, _)| i.to_string()).collect()));
    let hits = listed(warm.iter().map(|(_, h)| format!("{:.1}%", h * 100.0)).collect());
    let (cause, fix) = if same_seed {
        (
            "--same-seed sends every run the prompts of the run before, which the server still held",
            "leave --same-seed out to give each run its own prompts (bench has no cache reset between runs)",
        )
    } else {
        (
            "an earlier run (of this command, or one before it with these seeds) or another client sent the same \
             prompts",
            "give --seed a value no earlier run used",
        )
    };
    let (they, their) = if warm.len() == 1 { ("it", "its") } else { ("they", "their") };
    Some(format!(
        "{runs} of --runs found the server's prefix cache holding {their} prompts (it served {hits} of the prompt \
         tokens looked up): {cause}, so {they} had faster TTFT than fresh prompts get, and the spread across the \
         runs is the cache's, not run-to-run noise; {fix}"
    ))
}

/// The warning for a run that sent a dataset's entries more than once
/// (more requests, or sessions, than it has entries): the repeats are the
/// same prompts, which a server's prefix cache serves.
pub fn cycled_dataset_warning(w: &crate::doc::config::WorkloadConfig, records: &[RequestRecord]) -> Option<String> {
    let entries = w.dataset_entries?;
    // A session's later turns are its entry's own; warm-up requests drew entries too.
    // Turns count from 1 (`SessionTurn`): `turn == 0` had counted none of a
    // session run's requests, and a dataset gone round had never been warned of.
    let used = records.iter().filter(|r| r.session.as_ref().is_none_or(|s| s.turn <= 1)).count() as u64;
    if used <= entries {
        return None;
    }
    let skipped = w.dataset_skipped.map(|k| format!(" ({k} more were skipped)")).unwrap_or_default();
    Some(format!(
        "the run sent {used} prompts from the {entries} usable entries of {}{skipped}: it went round the dataset \
         {:.1} times, so later requests repeat earlier prompts and a server's prefix cache serves them (faster TTFT \
         than new prompts get); give a larger dataset, or fewer requests",
        w.dataset.as_deref().unwrap_or("the dataset"),
        used as f64 / entries as f64
    ))
}

/// The warning for a closed loop (the `load` block of a config) given too
/// few requests for its users to reach a steady state; `peak` is the most
/// requests it had in flight.
pub fn few_requests_warning(load: &LoadConfig, peak: u64) -> Option<String> {
    let (Some(c), Some(n)) = (load.concurrency, load.requests) else { return None };
    if load.open_or_bounded() || c < 2 || n >= FEW_PER_USER * c {
        return None;
    }
    let fix =
        format!("give --requests {} or more ({REQUESTS_PER_USER} a user) for its steady state", REQUESTS_PER_USER * c);
    Some(if n < c {
        format!("{n} requests is fewer than the {c} users of --concurrency: the load never had {c} in flight (peak {peak}); {fix}")
    } else {
        format!(
            "{n} requests over {c} users is {:.1} each: the ramp-up and the drain at the end make up much of the \
             window, so its figures are not those of {c} users at work; {fix}",
            n as f64 / c as f64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::config::{Rate, SessionsConfig};

    #[test]
    fn later_runs_served_from_the_cache_are_named_with_the_fix() {
        assert_eq!(warm_repeats_warning(&[], true), None, "no run found the cache warm");
        let both = warm_repeats_warning(&[(2, 0.99), (3, 0.985)], true).unwrap();
        assert!(both.starts_with("runs 2 and 3 of --runs found the server's prefix cache holding their"), "{both}");
        assert!(both.contains("it served 99.0% and 98.5%") && both.contains("leave --same-seed out"), "{both}");
        let one = warm_repeats_warning(&[(4, 0.9)], false).unwrap();
        assert!(one.starts_with("run 4 of --runs found the server's prefix cache holding its prompts"), "{one}");
        assert!(one.contains("give --seed a value no earlier run used") && !one.contains("--same-seed"), "{one}");
        let three = warm_repeats_warning(&[(2, 0.9), (3, 0.9), (4, 0.9)], true).unwrap();
        assert!(three.starts_with("runs 2, 3 and 4 of"), "{three}");
    }

    #[test]
    fn scraped_energy_divides_the_counters_increase_and_provisions_the_power_limits() {
        use crate::prometheus::scrape::window::CounterSummary;
        use crate::prometheus::scrape::{CounterSignal, GaugeSignal, WindowSummary};
        let counter = |delta: f64| CounterSummary { delta, rate_per_s: Some(delta / 10.0), resets: 0 };
        let mut w = WindowSummary { span_s: 10.0, ..WindowSummary::default() };
        let rate = 1000.0;
        assert_eq!(scraped_energy(&w, rate, None), None, "no energy counter, no figures");
        // Two GPUs drew 9 kJ over 10 s while the engine generated 10,000 tokens.
        w.counters.insert(CounterSignal::GpuEnergy, counter(9000.0));
        w.counters.insert(CounterSignal::GenerationTokens, counter(10_000.0));
        let e = scraped_energy(&w, rate, None).unwrap();
        assert_eq!((e.joules_per_output_token, e.mean_power_w), (Some(0.9), Some(900.0)));
        assert_eq!(e.output_tokens_per_s_per_provisioned_mw, None, "no power limit scraped");
        let limits = crate::Distribution { count: 3, mean: Some(1400.0), ..Default::default() };
        w.gauges.insert(GaugeSignal::GpuPowerLimit, limits);
        let e = scraped_energy(&w, rate, None).unwrap();
        assert_eq!(e.provisioned_w, Some(1400.0));
        assert!((e.output_tokens_per_s_per_provisioned_mw.unwrap() - 1000.0 / 1400e-6).abs() < 1e-6);
        // Without the engine's token counter, the client's rate over the span.
        w.counters.remove(&CounterSignal::GenerationTokens);
        assert_eq!(scraped_energy(&w, rate, None).unwrap().output_tokens, 10_000);
    }

    #[test]
    fn scraped_energy_counts_its_gpus_and_says_what_its_series_missed() {
        use crate::prometheus::scrape::{parse::parse, ScrapeSample, Signals, WindowSummary};
        use std::time::Duration;
        // Two 700 W GPUs drawing 300 W and 500 W; GPU 1 first reported at
        // 2 s with its total since boot, GPU 0 missing from the last scrape.
        let text = |g0: Option<f64>, g1: Option<f64>| {
            let mut t = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n".to_owned();
            for (gpu, mj) in [("0", g0), ("1", g1)] {
                if let Some(mj) = mj {
                    t += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {mj}\n");
                }
            }
            t + "# TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge\n\
                 DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu=\"0\"} 700\n\
                 DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu=\"1\"} 700\n"
        };
        let scrapes = [
            text(Some(5e9), None),
            text(Some(5e9 + 300e3), None),
            text(Some(5e9 + 600e3), Some(5e9 + 1000e3)),
            text(Some(5e9 + 900e3), Some(5e9 + 1500e3)),
            text(None, Some(5e9 + 2000e3)),
        ];
        let samples: Vec<ScrapeSample> = scrapes
            .iter()
            .enumerate()
            .map(|(i, t)| ScrapeSample { t: Duration::from_secs(i as u64), signals: Signals::from_scrape(&parse(t)) })
            .collect();
        let mut signals = ServerSignals { samples, ..ServerSignals::default() };
        let points = || signals.samples.iter().map(|s| (s.t, &s.signals));
        signals.window = crate::prometheus::scrape::summarize_points(points(), Duration::ZERO, Duration::from_secs(4));
        let (e, warnings) = scraped_energy_checked(&signals, 100.0);
        let e = e.unwrap_or_else(|| panic!("{warnings:?}"));
        // 900 J from GPU 0, 1000 J from GPU 1, none of the 5 MJ since boot
        assert_eq!((e.energy_j, e.gpus, e.provisioned_w), (1900.0, Some(2), Some(1400.0)));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("energy: 1 of the 2 GPU energy series first appeared after"), "{warnings:?}");
        assert!(warnings[1].starts_with("energy: 1 of the 2 GPU energy series were missing from"), "{warnings:?}");

        // A since-boot total taken as drawn: withheld, with the reason.
        signals.window = WindowSummary { span_s: 4.0, ..signals.window.clone() };
        signals.window.counters.get_mut(&crate::prometheus::scrape::CounterSignal::GpuEnergy).unwrap().delta = 5e6;
        let (e, warnings) = scraped_energy_checked(&signals, 100.0);
        assert_eq!(e, None);
        assert!(warnings.last().unwrap().starts_with("energy withheld: 5000000 J over 4.0 s"), "{warnings:?}");
    }

    /// Two GPUs' energy and one GPU's power limit: the per-megawatt figure
    /// had set 700 W against both GPUs' draw (twice its value), unwarned.
    #[test]
    fn power_limits_for_fewer_gpus_than_the_energy_covers_provision_nothing() {
        use crate::prometheus::scrape::{parse::parse, ScrapeSample, Signals};
        use std::time::Duration;
        let text = |t: f64, limits: usize| {
            let mut x = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n".to_owned();
            for gpu in 0..2 {
                x += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {}\n", 5e9 + 300e3 * t);
            }
            x += "# TYPE DCGM_FI_DEV_ENFORCED_POWER_LIMIT gauge\n";
            for gpu in 0..limits {
                x += &format!("DCGM_FI_DEV_ENFORCED_POWER_LIMIT{{gpu=\"{gpu}\"}} 700\n");
            }
            x
        };
        let checked = |limits: usize| {
            let samples: Vec<ScrapeSample> = (0..5)
                .map(|i| ScrapeSample {
                    t: Duration::from_secs(i),
                    signals: Signals::from_scrape(&parse(&text(i as f64, limits))),
                })
                .collect();
            let mut signals = ServerSignals { samples, ..ServerSignals::default() };
            let points = || signals.samples.iter().map(|s| (s.t, &s.signals));
            signals.window =
                crate::prometheus::scrape::summarize_points(points(), Duration::ZERO, Duration::from_secs(4));
            scraped_energy_checked(&signals, 1000.0)
        };
        let (both, warnings) = checked(2);
        let both = both.unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((both.gpus, both.provisioned_w, both.mean_power_w), (Some(2), Some(1400.0), Some(600.0)));
        assert!((both.output_tokens_per_s_per_provisioned_mw.unwrap() - 1000.0 / 1400e-6).abs() < 1e-6);
        let (one, warnings) = checked(1);
        let one = one.unwrap();
        assert_eq!((one.provisioned_w, one.output_tokens_per_s_per_provisioned_mw), (None, None));
        assert_eq!(one.mean_power_w, Some(600.0));
        assert!(warnings.len() == 1 && warnings[0].contains("read for 1 GPU(s) and their energy counters for 2"));
    }

    #[test]
    fn a_price_for_other_gpus_than_the_energy_counters_report_is_warned_about() {
        let priced =
            |gpus| crate::analysis::cost::CostConfig { gpu_hour_usd: 2.0, gpus }.report(1.0, 1.0, 1.0, None, None);
        let one = priced(1);
        let said = gpus_unpriced_warning(Some(&one), 2).unwrap();
        assert!(
            said.contains("report 2 GPU(s), and the cost is priced for 1") && said.contains("give --gpus 2"),
            "{said}"
        );
        assert_eq!(gpus_unpriced_warning(Some(&priced(2)), 2), None);
        assert_eq!(gpus_unpriced_warning(None, 2), None, "nothing priced, nothing mispriced");
    }

    #[test]
    fn a_warm_cache_is_warned_about_only_past_what_the_prompts_share() {
        use crate::doc::config::{SharedPrefixConfig, WorkloadConfig};
        let recs: Vec<RequestRecord> = (0..10)
            .map(|i| {
                let mut r = RequestRecord::new(i, std::time::Duration::ZERO, std::time::Duration::ZERO);
                r.input_tokens = 1000;
                r
            })
            .collect();
        let synthetic = RunConfig {
            workload: Some(WorkloadConfig { input_tokens: Some("1000".into()), ..Default::default() }),
            load: Some(LoadConfig { seed: Some(7), ..Default::default() }),
            ..Default::default()
        };
        let w = warm_cache_warning(&synthetic, &recs, 0.99).unwrap();
        assert!(w.contains("99.0%") && w.contains("about 15%") && w.contains("seed is 7"), "{w}");
        assert_eq!(warm_cache_warning(&synthetic, &recs, 0.054), None, "a first run's template hits");
        // Half of every prompt a shared prefix: 60% hits is the workload's own.
        let mut shared = synthetic.clone();
        shared.workload.as_mut().unwrap().shared_prefix =
            Some(SharedPrefixConfig { tokens: 500, ratio: 1.0, count: 1 });
        assert_eq!(warm_cache_warning(&shared, &recs, 0.6), None);
        assert!(warm_cache_warning(&shared, &recs, 0.95).is_some());
        // Sessions' later turns share their history, never their first:
        // bounded by what the records show, where they had not been bounded.
        let mut sessions = synthetic.clone();
        sessions.load.as_mut().unwrap().sessions = Some(SessionsConfig { turns: "2".into(), think_time: "0s".into() });
        // A run of `goodput serve`'s: 6 sessions of 2 turns (counted from
        // 1), 1535 prompt tokens then 3053.
        let turns: Vec<RequestRecord> = (0..12u64)
            .map(|i| {
                let mut r = RequestRecord::new(i, std::time::Duration::ZERO, std::time::Duration::ZERO);
                let turn = (i % 2) as u32 + 1;
                r.session = Some(crate::doc::record::SessionTurn { id: i / 2, turn, turns: 2 });
                (r.input_tokens, r.output_tokens) = if turn == 1 { (1535, 8) } else { (3053, 8) };
                r
            })
            .collect();
        let total = 6.0 * (1535.0 + 3053.0);
        let share = shareable_prompt_share(&sessions, &turns).unwrap();
        assert!((share - 6.0 * 1543.0 / total).abs() < 1e-9, "{share}");
        // The first run: 16 tokens of turn 1 (the template), 1536 of turn 2 (its history).
        let cold = 6.0 * (16.0 + 1536.0) / total;
        assert_eq!(warm_cache_warning(&sessions, &turns, cold), None, "a first run's own history");
        // The same seed again: turn 1 had 1520 of its 1535 tokens cached.
        let warm = 6.0 * (1520.0 + 1536.0) / total;
        let w = warm_cache_warning(&sessions, &turns, warm).expect("a session run on a warm cache");
        assert!(w.contains("seed is 7") && w.contains("leave --seed out"), "{w}");

        // A shared prefix of ~87% of every prompt (2048 of 2348): each
        // prefix's first use misses, and a warm cache had never been warned of.
        let long: Vec<RequestRecord> =
            recs.iter().take(6).map(|r| RequestRecord { input_tokens: 2348, ..r.clone() }).collect();
        let mut prefixed = synthetic.clone();
        prefixed.workload.as_mut().unwrap().shared_prefix =
            Some(SharedPrefixConfig { tokens: 2048, ratio: 1.0, count: 1 });
        let cold = (5.0 * 2048.0 + 6.0 * 16.0) / (6.0 * 2348.0);
        assert_eq!(warm_cache_warning(&prefixed, &long, cold), None, "a first run: its prefix's first use missed");
        assert!(warm_cache_warning(&prefixed, &long, 0.99).is_some(), "the same prompts again");
        // A warm-up request opened the prefix: every measured use may hit it.
        let mut warmed = long.clone();
        warmed[0].warmup = true;
        let own = (5.0 * 2048.0 + 5.0 * 16.0) / (5.0 * 2348.0);
        assert_eq!(warm_cache_warning(&prefixed, &warmed, own), None);

        // A trace, bounded by the prefix reuse it records: 82.5% hits is
        // its own, 98.7% (the same seed again) is not.
        let trace = RunConfig {
            workload: Some(WorkloadConfig {
                trace: Some(crate::doc::config::TraceWorkload {
                    input_tokens_mean: 1000.0,
                    requests: 10,
                    reused_prefix_tokens: Some(8000),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            load: Some(LoadConfig { seed: Some(7), ..Default::default() }),
            ..Default::default()
        };
        assert_eq!(warm_cache_warning(&trace, &recs, 0.825), None);
        assert!(warm_cache_warning(&trace, &recs, 0.987).is_some());
        // One that recorded no bound is not judged.
        let mut unbounded = trace.clone();
        unbounded.workload.as_mut().unwrap().trace.as_mut().unwrap().reused_prefix_tokens = None;
        assert_eq!(warm_cache_warning(&unbounded, &recs, 0.99), None);
    }

    #[test]
    fn a_dataset_sent_more_than_once_is_warned_about() {
        let w = crate::doc::config::WorkloadConfig {
            dataset: Some("qa.jsonl".into()),
            dataset_entries: Some(50),
            ..Default::default()
        };
        let recs = |n: u64| -> Vec<RequestRecord> {
            (0..n).map(|i| RequestRecord::new(i, std::time::Duration::ZERO, std::time::Duration::ZERO)).collect()
        };
        assert_eq!(cycled_dataset_warning(&w, &recs(50)), None);
        let m = cycled_dataset_warning(&w, &recs(1000)).unwrap();
        assert!(m.contains("1000 prompts from the 50 usable entries of qa.jsonl:") && m.contains("20.0 times"), "{m}");
        let skipping = crate::doc::config::WorkloadConfig { dataset_skipped: Some(2), ..w.clone() };
        let m = cycled_dataset_warning(&skipping, &recs(100)).unwrap();
        assert!(m.contains("50 usable entries of qa.jsonl (2 more were skipped)"), "{m}");
        // Sessions: only a session's first turn (turn 1) draws an entry.
        let sessions = |n: u64| {
            let mut turns = recs(3 * n);
            for (i, r) in turns.iter_mut().enumerate() {
                r.session =
                    Some(crate::doc::record::SessionTurn { id: i as u64 / 3, turn: i as u32 % 3 + 1, turns: 3 });
            }
            turns
        };
        assert_eq!(cycled_dataset_warning(&w, &sessions(40)), None, "40 conversations of 3 turns");
        let m = cycled_dataset_warning(&w, &sessions(100)).expect("100 conversations from 50 entries");
        assert!(m.contains("100 prompts from the 50 usable entries") && m.contains("2.0 times"), "{m}");
    }

    #[test]
    fn a_closed_loop_of_few_requests_a_user_is_warned_about() {
        let load = |c: u64, n: u64| LoadConfig { concurrency: Some(c), requests: Some(n), ..LoadConfig::default() };
        let never = few_requests_warning(&load(256, 200), 200).unwrap();
        assert!(never.contains("never had 256 in flight (peak 200)") && never.contains("--requests 2560"), "{never}");
        let few = few_requests_warning(&load(64, 150), 64).unwrap();
        assert!(few.contains("2.3 each") && few.contains("--requests 640"), "{few}");
        assert_eq!(few_requests_warning(&load(64, 192), 64), None, "three a user is enough not to warn");
        assert_eq!(few_requests_warning(&load(1, 1), 1), None, "one user");
        let mut timed = load(64, 10);
        timed.duration = Some("60s".into());
        assert_eq!(few_requests_warning(&timed, 64), None, "a duration bounds it too");
        let mut open = load(64, 10);
        open.rate = Some(Rate(5.0));
        assert_eq!(few_requests_warning(&open, 64), None, "an open loop's users are not a closed loop's");
        let mut sessions = load(64, 10);
        sessions.sessions = Some(SessionsConfig { turns: "2".into(), think_time: "0s".into() });
        assert_eq!(few_requests_warning(&sessions, 64), None, "sessions are counted, and paced, otherwise");
    }
}
