//! `goodput bench`: check the options, start the embedded server when there
//! is no --url, run the load over HTTP, stream records, analyse, print and
//! write.

use crate::cli::{BenchArgs, ProfileArg};
use crate::interrupt::Interrupt;
use crate::point::{run_point, Point};
use crate::prometheus::serve_live;
use crate::{limits, output, setup};
use anyhow::Result;
use goodput_core::{RequestRecord, RunConfig, RunResult};
use goodput_report::read::records::RecordFile;
use std::process::ExitCode;
use std::sync::Arc;

pub async fn bench(a: BenchArgs) -> Result<ExitCode> {
    crate::pooling::check(&a.target, &a.workload, &a.load.shape, a.load.trace.is_some())?;
    if a.runs.runs > 1 {
        return crate::runs::bench(a).await;
    }
    let (mut result, recs) = run(&a, None).await?;
    let code = output::finish_live(&mut result, &a.output, &a.judge, &recs)?;
    Ok(storm_exit(&result, code))
}

/// A run that a failure storm stopped early failed, as one where no request
/// succeeded does (1), whatever else it would have exited with but an error.
fn storm_exit(result: &RunResult, code: ExitCode) -> ExitCode {
    if stormed(result) && code == ExitCode::SUCCESS {
        return ExitCode::from(1);
    }
    code
}

/// Whether a failure storm stopped the run early.
pub fn stormed(result: &RunResult) -> bool {
    use goodput_core::analysis::until::StopReason;
    result.stop.as_ref().is_some_and(|s| s.reason == StopReason::FailureStorm)
}

/// One run of `a`: its result and its records, written nowhere but
/// `--records`. Stopped with `parent` when given (one of `--runs`), else
/// by its own Ctrl-C and SIGTERM.
pub async fn run(a: &BenchArgs, parent: Option<&Interrupt>) -> Result<(RunResult, Vec<RequestRecord>)> {
    let trace = setup::trace(&a.load)?;
    let mut plan = setup::plan(&a.load, trace.as_deref().map(|t| t.as_slice()), a.target.grace)?;
    plan.shard = a.shard.shard.map(|(index, count)| goodput_load::runner::Shard { index, count });
    plan.validate()?;
    if let Some((i, n)) = a.shard.shard {
        if a.output.output.is_none() || (a.output.records.is_none() && !a.output.include_requests) {
            anyhow::bail!(
                "--shard {i}/{n} runs a share of the run, which goodput merge puts together from each shard's result \
                 and records: give -o FILE and --records FILE (or --include-requests)"
            );
        }
        if a.load.shape.seed.drawn {
            anyhow::bail!(
                "--shard {i}/{n} is one share of a run whose shards must send the same prompts on the same schedule: \
                 give every shard the same --seed (e.g. --seed 42)"
            );
        }
        // A share of nothing (it had run and said "no request succeeded").
        if plan.total_requests() == Some(0) {
            anyhow::bail!(
                "--shard {i}/{n} gets none of the run's requests (too few to deal one to every shard): give fewer \
                 shards, or more requests"
            );
        }
    }
    let (workload, tokenizer, workload_config, mut warnings) =
        setup::workload_warned(&a.workload, a.load.shape.seed.value, trace)?;
    warnings.extend(setup::draw_warnings(&workload, &plan)?);
    // Told before the run, and kept in its result.
    for w in &warnings {
        goodput_core::tell!("{w}");
    }
    let gpus = crate::target::default_gpus(&a.target, &a.sim, &a.judge)?;
    let opts = setup::analysis_options_for(&a.output.percentiles.0, &a.judge, gpus)?;
    a.judge.check_attainment_applies(opts.slo.as_ref())?;
    setup::check_fail_on_slo(&a.judge, &opts)?;
    setup::check_scored(&a.workload, &opts)?;
    // --gpus counts the GPUs a price is paid for; with none it changed
    // nothing and left no trace.
    // Once, though --runs makes several runs.
    static ONCE: std::sync::Once = std::sync::Once::new();
    if a.judge.gpus.is_some() && opts.cost.is_none() {
        ONCE.call_once(|| {
            goodput_core::tell!(
                "note: --gpus counts the GPUs a price is paid for, and no price was given (--gpu-hour-usd, or a \
             config's [prices]): it changes nothing in this run"
            )
        });
    }
    let until = crate::until::spec(&a.until, &opts)?;
    if until.is_some() {
        if let Some((i, n)) = a.shard.shard {
            anyhow::bail!(
                "--until and --stop-on-slo decide a run's length from its own records, and shard {i}/{n} sees only \
                 its share: drop them, or --shard"
            );
        }
        crate::until::cap(&mut plan, &a.load.shape);
    }
    let mut inputs = a.workload.inputs();
    inputs.extend(a.load.trace.as_deref().map(|p| ("--trace", p)));
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    inputs.extend(output::named_file("--sim-model", &a.sim.sim_model));
    output::check_outputs(&a.output, &inputs)?;
    let run_id = goodput_report::read::records::new_run_id();
    limits::check_plan(&plan, a.target.url.is_none())?;
    limits::check_memory(&plan, true)?;
    let workload = setup::repeated(workload, &a.workload, &plan)?;
    let workload =
        setup::with_images(workload, &a.workload, plan.sessions.is_some(), a.target.api, a.load.shape.seed.value)?;
    crate::target::check_embedded_context(&a.target, &a.sim, &workload)?;
    let quality = setup::quality_options(&a.workload);
    let target =
        crate::target::connect(&a.target, &a.sim, tokenizer, a.workload.ignore_eos, plan.cancel, quality).await?;
    let (label, meta) = setup::tags(&a.output);
    let config = RunConfig {
        load: Some((&plan).into()),
        workload: Some(workload_config),
        client: Some(target.config.clone()),
        percentiles: Some(a.output.percentiles.0.clone()),
        judge: Some(setup::judge_config(&opts)),
        stopping: until.as_ref().map(|u| u.config()),
        label,
        meta,
        ..RunConfig::default()
    };
    // The model's name may be the server's (its model list): shown as text.
    let model = goodput_report::escape::terminal(&target.model);
    if !a.output.quiet {
        goodput_core::tell!(
            "goodput bench → {}{} · model {} · {} · seed {}{}",
            target.base,
            match (target.embedded, a.sim.sim_profile) {
                (false, _) => String::new(),
                (true, ProfileArg::Engine) => format!(
                    " (embedded simulated engine: {} on {}{})",
                    a.sim.sim_model,
                    a.sim.sim_gpu,
                    match &a.sim.sim_pd {
                        Some(pd) => format!(", disaggregated {pd} prefill:decode instances"),
                        None if a.sim.sim_dp > 1 && a.sim.sim_internal_lb => {
                            format!(", {} replicas balanced by vLLM's own rule", a.sim.sim_dp)
                        }
                        None if a.sim.sim_dp > 1 => {
                            format!(", {} replicas behind {}", a.sim.sim_dp, a.sim.sim_router)
                        }
                        None => String::new(),
                    }
                ),
                (true, ProfileArg::Fixed) => " (embedded fixed-timing simulator)".into(),
            },
            model,
            goodput_report::terminal::load_line(&config),
            a.load.shape.seed.value,
            if a.load.shape.seed.drawn { " (drawn: --seed repeats it)" } else { "" }
        );
    }
    // The embedded engine's GPU on another family's constants: its figures
    // are a prediction that flatters or wrongs that GPU, said and kept.
    if target.embedded && a.sim.sim_profile == ProfileArg::Engine {
        if let Some(w) = crate::serve::family_warning(&a.sim.sim_gpu) {
            goodput_core::tell!("warning: {w}");
            warnings.push(w);
        }
        // A mixture of experts: the engine's throughput of such models is
        // high on the public tables held out.
        if let Some(w) = crate::serve::moe_warning(&a.sim.sim_model) {
            goodput_core::tell!("warning: {w}");
            warnings.push(w);
        }
    }
    let interrupt = match parent {
        Some(p) => p.child(),
        None => Interrupt::install("the run", a.target.grace),
    };
    let live = match a.metrics.prometheus_listen {
        Some(addr) => {
            let op = target.client.api().operation();
            let live = Arc::new(goodput_core::prometheus::live::LiveMetrics::new(op, &target.model, &target.base));
            serve_live(addr, live.clone()).await?;
            Some(live)
        }
        None => None,
    };
    // Made (an earlier file of the name emptied) only now, when nothing is
    // left to refuse the run: a run refused before it started had lost it.
    let records = match &a.output.records {
        Some(p) => Some(RecordFile::create(p, &run_id)?),
        None => None,
    };
    let point = Point {
        title: match a.shard.shard {
            Some((i, n)) => format!(" goodput bench → {} · {model} · shard {i}/{n} ", target.base),
            None => format!(" goodput bench → {} · {model} ", target.base),
        },
        plan: &plan,
        workload: Arc::new(workload),
        config,
        run_id,
        records,
        live,
        control: interrupt.control(),
        start_at: a.shard.start_at,
        until,
    };
    // Only shard 0 scrapes the server's metrics, unless every shard is told to.
    let mut metrics = a.metrics.clone();
    if a.shard.shard.is_some_and(|(index, _)| index > 0) && !a.shard.metrics_every_shard {
        metrics.no_metrics = true;
    }
    let busy = interrupt.busy();
    let (mut result, recs) = run_point(&target, point, &metrics, &a.output, &opts).await?;
    drop(busy);
    for w in warnings.into_iter().rev() {
        result.warnings.insert(0, w.strip_prefix("warning: ").unwrap_or(&w).to_owned());
    }
    if let Some(hint) = target.all_failed_hint(&result).await {
        goodput_core::tell!("hint: {hint}");
    }
    result.shard = a.shard.shard.map(|(index, count)| goodput_core::doc::shard::ShardInfo {
        run: goodput_core::doc::shard::run_identity(
            result.config.load.as_ref(),
            result.config.workload.as_ref(),
            count,
            a.shard.start_at,
        ),
        index,
        count,
        start_at_unix_s: a.shard.start_at,
        records: a.output.records.as_ref().map(|p| p.display().to_string()),
    });
    Ok((result, recs))
}
