//! `sweep --serve-cmd … --serve-grid … --estimate`: the same grid in
//! virtual time first. Each configuration's parameters are set on the
//! simulated engine's knobs (under their own names or a server's, as
//! `goodput_core::doc::overlay::knob_of` maps them), swept as `sweep
//! --estimate` sweeps the engine, and set in a predicted frontier document;
//! after the servers are measured, the two are compared
//! (`goodput_core::doc::overlay`), so one command gives the comparison.

use super::grid::Params;
use super::points::frontier_point;
use crate::cli::{SweepArgs, DEFAULT_ENGINE_MODEL};
use crate::virtual_point::spec_decoding;
use anyhow::{bail, Context, Result};
use goodput_core::doc::config::ep_ranks;
use goodput_core::doc::frontier::{analyze_frontier, ConfigStatus, FrontierConfig, FrontierResult, FrontierSource};
use goodput_core::doc::overlay::{is_bookkeeping, knob_of, knobs_and_aliases, switch_value};
use goodput_sim::engine::{Disaggregation, ModelSpec};
use std::path::{Path, PathBuf};

/// Every parameter of the grid maps onto a knob of the simulator (or is
/// `gpus` or `id`): checked before any server starts.
pub fn check_grid(grid: &[Params]) -> Result<()> {
    for p in grid {
        for (k, v) in &p.0 {
            if is_bookkeeping(k) {
                continue;
            }
            let Some(knob) = knob_of(k) else {
                bail!(
                    "--estimate: the grid's parameter {k} maps onto no knob of the simulator, so the grid cannot be \
                     run in virtual time; the knobs, each with its other names (vLLM's, SGLang's and llama.cpp's \
                     among them), are {}, and gpus, id, launch, metrics and ports are bookkeeping. Drop --estimate, or name \
                     the parameter after its knob",
                    knobs_and_aliases()
                );
            };
            let numeric = matches!(
                knob,
                "tp" | "dp"
                    | "ep"
                    | "pp"
                    | "max_num_seqs"
                    | "max_num_batched_tokens"
                    | "scheduler_recv_interval"
                    | "max_prefill_tokens"
            );
            if numeric && !v.trim().parse::<u32>().is_ok_and(|n| n > 0) {
                bail!("--estimate: {k}={v} in {} is not a positive whole number ({knob})", p.id());
            }
            if knob == "spec_tokens"
                && !v.trim().parse::<u32>().is_ok_and(|n| n <= goodput_sim::engine::MAX_SPEC_TOKENS)
            {
                bail!(
                    "--estimate: {k}={v} in {} is not a count of draft tokens from 0 (none) to {}",
                    p.id(),
                    goodput_sim::engine::MAX_SPEC_TOKENS
                );
            }
            let most_steps = goodput_sim::engine::MAX_BATCH_WAIT_TIMEOUT_ITERS;
            if knob == "batch_wait_timeout_iters" && !v.trim().parse::<u32>().is_ok_and(|n| n <= most_steps) {
                bail!(
                    "--estimate: {k}={v} in {} is not a count of steps from 0 (never held; TensorRT-LLM's default) \
                     to {most_steps}",
                    p.id()
                );
            }
            if knob == "batch_wait_max_tokens_ratio" && !v.trim().parse::<f64>().is_ok_and(|r| (0.0..=1.0).contains(&r))
            {
                bail!("--estimate: {k}={v} in {} is not a share from 0 to 1 of the step's token budget", p.id());
            }
            if knob == "mxfp4_activations" {
                if let Err(m) = v.parse::<goodput_sim::engine::Mxfp4Activations>() {
                    bail!("--estimate: {k}={v} in {}: {m}", p.id());
                }
            }
            let most = goodput_sim::engine::MAX_SCHEDULE_CONSERVATIVENESS;
            if knob == "schedule_conservativeness" && !v.trim().parse::<f64>().is_ok_and(|c| (0.0..=most).contains(&c))
            {
                bail!(
                    "--estimate: {k}={v} in {} is not a number from 0 to {most} (SGLang's --schedule-conservativeness; \
                     1 by default)",
                    p.id()
                );
            }
            // The switches, each with what it turns on.
            let switch = match knob {
                "mixed_batches" => Some("prompts and decodes in one step"),
                "internal_lb" => Some("vLLM's own balancing of its replicas"),
                "async_scheduling" => Some("the scheduler a step ahead"),
                _ => None,
            };
            if let Some(what) = switch.filter(|_| switch_value(v).is_none()) {
                bail!("--estimate: {k}={v} in {} is not true or false ({what})", p.id());
            }
            if knob == "pd" {
                goodput_sim::engine::Disaggregation::parse(v.trim())
                    .map_err(|e| anyhow::anyhow!("--estimate: {k}={v} in {}: {e}", p.id()))?;
            }
            // SGLang's --load-balance-method also picks the ranks of its DP
            // attention (engine_args), by methods no router has.
            // One method, or each pool's (P:D).
            let ranks_method = is_sglangs_balance(k) && goodput_sim::engine::LoadBalance::parse_pools(v).is_ok();
            if knob == "router" && goodput_core::doc::overlay::router_name(v).is_none() && !ranks_method {
                bail!(
                    "--estimate: {k}={v} in {} is no router policy the simulator has: round-robin (round_robin), \
                     least-loaded (total_requests), prefix-aware (cache_aware) or power-of-two (power_of_two)",
                    p.id()
                );
            }
        }
    }
    Ok(())
}

/// Whether a grid's parameter is SGLang's own `--load-balance-method`:
/// the replicas' router for a server of dense data parallelism, the choice
/// of rank under its DP attention.
fn is_sglangs_balance(param: &str) -> bool {
    goodput_core::doc::overlay::param_key(param) == goodput_core::doc::overlay::RANK_BALANCE
}

/// Whether the configuration of `hw` runs SGLang's scheduler over ranks of
/// DP attention (in either pool, disaggregated), or over replicas of a
/// dense model (`dp` above 1, not disaggregated), among which its
/// data-parallel controller picks.
fn sglang_ranks(hw: &crate::cli::EngineHwArgs) -> bool {
    let sglang = hw.scheduler.parse::<goodput_sim::engine::SchedulerPolicy>().ok()
        == Some(goodput_sim::engine::SchedulerPolicy::Sglang);
    let pd = hw.pd.as_deref().and_then(|t| Disaggregation::parse(t).ok());
    let ranks = pd.map_or_else(|| ep_ranks(hw.tp, hw.ep), |pd| pd.most_ranks(hw.tp, hw.ep));
    // Replicas of a dense model, not disaggregated.
    let replicas = pd.is_none() && ep_ranks(hw.tp, hw.ep) <= 1 && hw.dp > 1;
    sglang && (ranks > 1 || replicas)
}

/// The sweep's `--spec-acceptance` and `--spec-draft-cost`, where a
/// configuration drafts: checked before any server starts, not as each
/// drafting configuration's failed prediction after the servers ran.
pub fn check_drafts(a: &SweepArgs, grid: &[Params]) -> Result<()> {
    let drafts = grid
        .iter()
        .flat_map(|p| &p.0)
        .filter(|(k, _)| knob_of(k) == Some("spec_tokens"))
        .filter_map(|(_, v)| v.trim().parse::<u32>().ok())
        .chain([a.hw.spec_tokens])
        .find(|&k| k > 0);
    if let Some(tokens) = drafts {
        spec_decoding(tokens, a.hw.spec_acceptance, a.hw.spec_draft_cost)
            .check()
            .map_err(|e| anyhow::anyhow!("--estimate: {e}"))?;
    }
    Ok(())
}

/// The GPUs the simulated engine occupies: tp × pp × dp, or a
/// disaggregated layout's pools (each instance on its pool's TP times its
/// expert-parallel ranks, times pp), each 1 when absent.
fn occupied(hw: &crate::cli::EngineHwArgs) -> Option<u32> {
    let pools = hw.pd.as_deref().and_then(|t| Disaggregation::parse(t).ok());
    let Some(pd) = pools else {
        return hw.tp.max(1).checked_mul(hw.pp.max(1))?.checked_mul(hw.instances());
    };
    Some(goodput_core::doc::config::pool_gpus(pd.pools(hw.tp.max(1), hw.ep.max(1)), hw.pp))
}

/// A disaggregated configuration's `dp` as `plan` writes it: beside `pd`
/// it counts units of the pools (over an expert-parallel instance's
/// ranks), so the engine runs P and D times the units, and no `dp` beside
/// them (which it refuses). `1:1` with dp 2 is `2:2`.
fn units_as_pools(hw: &mut crate::cli::EngineHwArgs) {
    let Some(pd) = hw.pd.as_deref().and_then(|t| Disaggregation::parse(t).ok()) else { return };
    let units = (hw.dp / ep_ranks(hw.tp.max(1), hw.ep.max(1))).max(1);
    hw.pd = Some(pd.times(units).spec());
    hw.dp = 1;
}

/// Sets the grid's parallelism knobs (tp, pp, dp and pd, under any of their
/// names) on `hw`; whether the configuration gave any.
fn set_parallelism(hw: &mut crate::cli::EngineHwArgs, params: &Params) -> Result<bool> {
    let mut any = false;
    for (k, v) in &params.0 {
        let v = v.trim();
        let n = || {
            v.parse::<u32>().ok().filter(|&n| n > 0).with_context(|| {
                format!("{k}={v} in {} is not a positive whole number: it sets the GPUs it occupies", params.id())
            })
        };
        match knob_of(k) {
            Some("tp") => hw.tp = n()?,
            Some("dp") => hw.dp = n()?,
            Some("pp") => hw.pp = n()?,
            // Counts GPUs only within a pool of its own (units_as_pools, occupied).
            Some("ep") => {
                hw.ep = n()?;
                continue;
            }
            // A layout that does not parse (SGLang's disaggregation=prefill) names no pools.
            Some("pd") if goodput_sim::engine::Disaggregation::parse(v).is_ok() => hw.pd = Some(v.to_string()),
            Some("pd") => continue,
            _ => continue,
        }
        any = true;
    }
    Ok(any)
}

/// The GPUs a measured configuration occupies: `gpus` where the grid gives
/// it, else tp × pp × dp (each 1 when absent, under any of their names) where
/// it gives any of them, as the prediction counts them, else `default`
/// (--gpus, or 1). With a note when `gpus` and tp × pp × dp disagree.
pub fn configuration_gpus(params: &Params, default: Option<u32>) -> Result<(u32, Option<String>)> {
    let mut hw = crate::cli::EngineHwArgs { tp: 1, pp: 1, dp: 1, ep: 1, pd: None, ..Default::default() };
    let parallel = set_parallelism(&mut hw, params)?;
    units_as_pools(&mut hw);
    let parallel = match parallel {
        true => Some(occupied(&hw).with_context(|| {
            format!("{}: tp × pp × dp is past any count of GPUs; give counts that multiply to one", params.id())
        })?),
        false => None,
    };
    let given = params.get("gpus").and_then(|g| g.trim().parse::<u32>().ok()).filter(|&n| n > 0);
    Ok(match (given, parallel) {
        (Some(g), Some(p)) if g != p => (
            g,
            Some(format!(
                "{}: the grid gives gpus={g}, yet tp × pp × dp = {p}: its per-GPU figures count {g} GPUs (drop gpus, \
                 or set it to match)",
                params.id()
            )),
        ),
        (Some(g), _) => (g, None),
        // --gpus counts every configuration alike; where the grid sets
        // parallelism and --gpus says otherwise (a template that fixes its own
        // TP), say which count the figures take.
        (None, Some(p)) => match default.filter(|&d| d != p) {
            Some(d) => (
                p,
                Some(format!(
                    "{}: tp × pp × dp = {p} counts its GPUs, not --gpus {d} (where the template sets parallelism of \
                     its own, give gpus= in the grid)",
                    params.id()
                )),
            ),
            None => (p, None),
        },
        (None, None) => (default.unwrap_or(1), None),
    })
}

/// The model the prediction simulates: `--model` when the catalog knows it
/// (a Hugging Face id works) or it is a config.json, else `--sim-model`.
pub(super) fn engine_model(a: &SweepArgs) -> String {
    match a.target.model.as_deref() {
        Some(m) if Path::new(m).is_file() || ModelSpec::lookup(m).is_ok() => m.to_string(),
        _ if a.sim.sim_model.is_empty() => DEFAULT_ENGINE_MODEL.into(),
        _ => a.sim.sim_model.clone(),
    }
}

/// The arguments of `sweep --estimate` for one configuration: the sweep's
/// own, with the configuration's parameters on the engine's knobs, its
/// document written to `output`.
fn engine_args(a: &SweepArgs, params: &Params, model: &str, output: &Path) -> Result<SweepArgs> {
    let mut args = a.clone();
    args.estimate = true;
    args.serve.serve_cmd = None;
    args.target.url = None;
    args.target.model = Some(model.to_string());
    args.output.exports = Default::default();
    args.output.records = None;
    args.output.quiet = true;
    args.output.output = Some(output.to_path_buf());
    // A DCGM exporter's URL is the live servers'.
    args.metrics.metrics_url.clear();
    // The engine writes no answers: the prediction is judged by the SLO's
    // timing terms, and scores nothing (its quality terms and flags had
    // failed every prediction).
    args.workload.score = None;
    args.workload.keep_text = false;
    args.workload.repeat = 1;
    args.judge.slo = args.judge.slo.as_ref().and_then(|s| s.timing_only());
    set_knobs(&mut args.hw, params, "--estimate")?;
    Ok(args)
}

/// Sets a configuration's parameters on the engine's knobs (under their
/// own names or a server's), as `sweep --estimate` runs the grid and
/// `estimate --validate` sets a measured grid against the engine; `flag`
/// begins an error.
pub(crate) fn set_knobs(hw: &mut crate::cli::EngineHwArgs, params: &Params, flag: &str) -> Result<()> {
    for (k, v) in &params.0 {
        let v = v.trim();
        let n = || v.parse::<u32>().with_context(|| format!("{flag}: {k}={v} is not a whole number"));
        match knob_of(k) {
            Some("gpu") => hw.gpu = v.to_string(),
            Some("tp") => hw.tp = n()?,
            Some("dp") => hw.dp = n()?,
            Some("ep") => hw.ep = n()?,
            Some("pp") => hw.pp = n()?,
            Some("precision") => hw.precision = v.to_string(),
            Some("kv_cache_dtype") => hw.kv_cache_dtype = v.to_string(),
            Some("max_num_seqs") => hw.max_num_seqs = Some(n()?),
            Some("max_num_batched_tokens") => hw.max_num_batched_tokens = Some(n()?),
            Some("pd") => hw.pd = Some(v.to_string()),
            Some("scheduler") => hw.scheduler = v.to_string(),
            // SGLang's own flag: below, once the layout is known.
            Some("router") if is_sglangs_balance(k) => {}
            Some("router") => hw.router = v.to_string(),
            Some("mixed_batches") => hw.no_mixed_batches = switch_value(v) == Some(false),
            Some(knob @ ("internal_lb" | "async_scheduling")) => {
                let on =
                    switch_value(v).with_context(|| format!("{flag}: {k}={v} is not a switch: give true or false"))?;
                match knob {
                    "internal_lb" => hw.internal_lb = on,
                    // Absent, the servers' default (estimate's).
                    _ => (hw.async_scheduling, hw.no_async_scheduling) = (on, !on),
                }
            }
            Some("scheduler_recv_interval") => hw.scheduler_recv_interval = n()?,
            Some("max_prefill_tokens") => hw.max_prefill_tokens = n()?,
            Some("mxfp4_activations") => hw.mxfp4_activations = Some(v.trim().to_string()),
            Some("batch_wait_timeout_iters") => {
                hw.batch_wait_timeout_iters =
                    v.trim().parse().with_context(|| format!("{flag}: {k}={v} is not a whole number of steps"))?;
            }
            Some("batch_wait_max_tokens_ratio") => {
                hw.batch_wait_max_tokens_ratio =
                    v.trim().parse().with_context(|| format!("{flag}: {k}={v} is not a number"))?;
            }
            Some("schedule_conservativeness") => {
                hw.schedule_conservativeness =
                    v.parse::<f64>().with_context(|| format!("{flag}: {k}={v} is not a number"))?;
            }
            // The sweep's --spec-acceptance and --spec-draft-cost describe
            // the drafts of the configurations that have them.
            Some("spec_tokens") => {
                hw.spec_tokens = n()?;
                if hw.spec_tokens == 0 {
                    (hw.spec_acceptance, hw.spec_draft_cost) = (None, None);
                }
            }
            _ => {}
        }
    }
    // SGLang's --load-balance-method, on a server whose DP attention has
    // ranks, picks among them: the router in front of its groups stays the
    // grid's `router` (plan names both where several groups run), or the
    // sweep's. On a dense model's replicas under SGLang's scheduler its
    // controller picks them, in the router's place. Elsewhere it is the
    // replicas' router.
    match params.0.iter().find(|(k, _)| is_sglangs_balance(k)) {
        Some((_, v)) if sglang_ranks(hw) => hw.load_balance_method = v.trim().to_string(),
        Some((_, v)) if goodput_core::doc::overlay::router_name(v).is_some() => hw.router = v.trim().to_string(),
        Some((k, v)) => bail!(
            "{flag}: {k}={v} in {}: SGLang's {v} picks among the ranks of its DP attention or its replicas (the \
             scheduler sglang, with more ep than tp or dp above 1), and this configuration has neither; for \
             replicas under another scheduler the simulator's routers are round_robin, total_requests \
             (least-loaded), cache_aware and power_of_two",
            params.id()
        ),
        _ => {}
    }
    units_as_pools(hw);
    // A router picks among replicas: a configuration of one, or of pools
    // (each routes to its least-loaded instance), has none to pick, as its
    // server has none (a grid's product of routers and dp=1 had failed
    // those predictions with the engine's refusal).
    if hw.dp <= 1 || hw.pd.is_some() {
        hw.router = goodput_sim::engine::RouterPolicy::default().to_string();
        // Nor has vLLM's own balancer.
        hw.internal_lb = false;
    }
    // --router-poll polls the loads power-of-two compares: the grid's other
    // routers route on their own, as their servers do.
    if hw.router.parse::<goodput_sim::engine::RouterPolicy>().ok()
        != Some(goodput_sim::engine::RouterPolicy::PowerOfTwo)
    {
        hw.router_poll = None;
    }
    Ok(())
}

/// The command that fits the engine to the measured grid at `out` and
/// writes the constants beside it (`frontier.calibration.json`): the
/// engine the prediction ran, the sweep's engine flags that are not their
/// defaults with it.
pub(super) fn fit_command(a: &SweepArgs, out: &Path) -> String {
    let quote = |s: &str| shlex::try_quote(s).map_or_else(|_| s.to_string(), |q| q.into_owned());
    let mut cmd = format!("goodput estimate --model {} --gpu {}", quote(&engine_model(a)), quote(&a.hw.gpu));
    if a.hw.precision != "auto" {
        cmd += &format!(" --precision {}", quote(&a.hw.precision));
    }
    if a.hw.scheduler != "vllm" {
        cmd += &format!(" --scheduler {}", quote(&a.hw.scheduler));
    }
    if let Some(c) = &a.hw.calibration {
        cmd += &format!(" --calibration {}", quote(&c.display().to_string()));
    }
    format!(
        "{cmd} --validate {} --fit {}",
        quote(&out.display().to_string()),
        quote(&beside(out, "calibration", "json").display().to_string())
    )
}

/// `frontier.json` → `frontier.predicted.json` beside it (`suffix`
/// `predicted`), or `frontier.compare.json`.
pub fn beside(out: &Path, suffix: &str, ext: &str) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "frontier".into());
    out.with_file_name(format!("{stem}.{suffix}.{ext}"))
}

/// With --estimate, the grid in virtual time: a predicted frontier document
/// with a configuration per parameter set, in the grid's order, written
/// beside `out` (`frontier.predicted.json`). `None` without --estimate.
pub async fn predict(
    a: &SweepArgs,
    grid: &[Params],
    logs: &Path,
    out: &Path,
    percentile: f64,
    attainment: f64,
) -> Result<Option<FrontierResult>> {
    if !a.estimate {
        return Ok(None);
    }
    let model = engine_model(a);
    let mut doc = FrontierResult {
        started_unix_s: crate::common::unix_now(),
        notes: vec![format!(
            "the grid run in virtual time by the simulated engine (model {model}; each configuration's parameters on \
             its knobs, the rest from --gpu, --precision, --tp and the other engine flags), as sweep --estimate runs it"
        )],
        ..FrontierResult::new(crate::common::tool(), FrontierSource::Predicted, attainment, percentile)
    };
    for (i, params) in grid.iter().enumerate() {
        let mut args =
            engine_args(a, params, &model, &logs.join(format!("{:02}-{}.predicted.json", i + 1, params.slug())))?;
        let gpus = occupied(&args.hw).context("tp × pp × dp is past any count of GPUs")?;
        args.judge.gpus = Some(gpus);
        if let Some(g) = params.get("gpus").filter(|g| g.trim().parse::<u32>().ok() != Some(gpus)) {
            doc.notes.push(format!(
                "{}: the grid gives gpus={g}, and the simulated engine occupies tp × pp × dp = {gpus}: per GPU, each \
                 side counts its own (set tp, pp or dp in the grid to match)",
                params.id()
            ));
        }
        // The GPU as the catalog names it (`H100` and `h100` are both
        // `H100 SXM`), as a plan's configurations give it.
        let gpu = goodput_sim::engine::GpuSpec::lookup(&args.hw.gpu).map_or_else(|_| args.hw.gpu.clone(), |g| g.name);
        let mut c = FrontierConfig::new(params.id(), params.map(), Some(gpu), gpus, a.judge.gpu_hour_usd);
        let res = async {
            let mut sw = super::start(args, super::Shared::default()).await?;
            sw.measure().await?;
            Ok::<_, anyhow::Error>(sw)
        }
        .await;
        match res {
            Ok(sw) => {
                if doc.model.is_empty() {
                    doc.model = sw.target.model.clone();
                    doc.workload = sw.workload_config.clone();
                    doc.sessions = crate::setup::sessions_config(&sw.args.shape);
                    doc.slo = sw.opts.slo.as_ref().map(|s| s.to_string());
                }
                let mut pts: Vec<_> = sw.points.iter().collect();
                pts.sort_by(|x, y| x.load.value().total_cmp(&y.load.value()));
                c.points = pts.into_iter().map(|p| frontier_point(p, gpus, percentile, attainment)).collect();
            }
            Err(e) => {
                c.status = ConfigStatus::Failed;
                c.error = Some(format!("{e:#}"));
            }
        }
        if !a.output.quiet {
            match c.status {
                ConfigStatus::Ok => goodput_core::tell!(
                    "predicted {}: {} point{}",
                    goodput_report::escape::terminal(&c.id),
                    c.points.len(),
                    if c.points.len() == 1 { "" } else { "s" }
                ),
                ConfigStatus::Failed => {
                    goodput_core::tell!("predicted {}: failed: {}", c.id, c.error.as_deref().unwrap_or("-"))
                }
            }
        }
        doc.configs.push(c);
    }
    analyze_frontier(&mut doc);
    crate::plan::mark_uncalibrated(&mut doc, &crate::virtual_point::named_families(a.hw.calibration.as_deref()));
    // A mixture of experts' throughput, high on the tables held out.
    doc.notes.extend(crate::serve::moe_warning(&model));
    let p = beside(out, "predicted", "json");
    crate::output::write_document(&p, &doc, "predicted frontier")?;
    if !a.output.quiet {
        goodput_core::tell!("predicted frontier (virtual time) written to {}", p.display());
    }
    // Nothing to compare the servers with: refused before their minutes (a
    // flag out of range had failed every prediction, and every server ran).
    if let Some(first) = doc.configs.first().filter(|_| doc.configs.iter().all(|c| c.status == ConfigStatus::Failed)) {
        bail!(
            "--estimate: no configuration of the grid could be predicted ({}: {}), so no server was started: fix \
             the engine flags, or drop --estimate to measure the servers alone",
            first.id,
            first.error.as_deref().unwrap_or("-")
        );
    }
    Ok(Some(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(sets: &[&[(&str, &str)]]) -> Vec<Params> {
        sets.iter().map(|s| Params(s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())).collect()
    }

    #[test]
    fn a_grid_runs_in_virtual_time_only_where_each_parameter_has_a_knob() {
        // Knobs under their own names and servers' flags, and bookkeeping.
        let ok =
            grid(&[&[("tp", "2"), ("np", "4"), ("b", "512"), ("quantization", "fp8"), ("gpus", "2"), ("id", "x")]]);
        assert!(check_grid(&ok).is_ok());
        let e = check_grid(&grid(&[&[("seqs", "4"), ("temperature", "0")]])).unwrap_err().to_string();
        assert!(e.contains("temperature maps onto no knob") && e.contains("max_num_batched_tokens"), "{e}");
        for bad in ["0", "two", "-1"] {
            let e = check_grid(&grid(&[&[("tp", bad)]])).unwrap_err().to_string();
            assert!(e.contains(&format!("tp={bad}")) && e.contains("positive whole number"), "{e}");
        }
        // A router's policy under its own names or the routers'.
        assert!(check_grid(&grid(&[&[("dp", "2"), ("router", "cache_aware")], &[("policy", "round-robin")]])).is_ok());
        let e = check_grid(&grid(&[&[("dp", "2"), ("router", "random")]])).unwrap_err().to_string();
        assert!(e.contains("router=random in") && e.contains("prefix-aware (cache_aware)"), "{e}");
    }

    /// The sweep's arguments as `goodput sweep ARGS` parses them.
    fn sweep_args(args: &[&str]) -> SweepArgs {
        let argv = ["goodput", "sweep"].iter().chain(args);
        match <crate::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    /// A prediction is judged by the SLO's timing terms and scores nothing:
    /// the engine writes no answers (a quality term or --score had failed
    /// every prediction); an SLO of quality terms alone judges none.
    #[test]
    fn a_prediction_leaves_out_what_judges_answers() {
        let p = &grid(&[&[("tp", "2")]])[0];
        let a =
            sweep_args(&["--slo", "ttft:p95<=1s,rouge_l>=0.5,exact>=0.8", "--score", "exact,rouge-l", "--repeat", "2"]);
        let e = engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap();
        assert_eq!(e.judge.slo.as_ref().map(|s| s.to_string()).as_deref(), Some("ttft:p95<=1s"));
        assert!(e.workload.score.is_none() && e.workload.repeat == 1);
        let a = sweep_args(&["--slo", "rouge_l>=0.5"]);
        assert!(engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().judge.slo.is_none());
    }

    /// A configuration's GPUs: gpus=, else tp × pp × dp, else --gpus; a
    /// --gpus the parallelism overrides is said so, and a product no count
    /// holds is refused.
    #[test]
    fn a_configuration_counts_its_gpus_and_says_which() {
        let g = grid(&[
            &[("dp", "2")],
            &[("gpus", "4"), ("tp", "2")],
            &[("seqs", "8")],
            &[("tp", "65536"), ("pp", "65536")],
        ]);
        let (n, note) = configuration_gpus(&g[0], Some(8)).unwrap();
        assert_eq!(n, 2);
        assert!(note.unwrap().contains("not --gpus 8"));
        assert_eq!(configuration_gpus(&g[0], None).unwrap(), (2, None));
        let (n, note) = configuration_gpus(&g[1], Some(8)).unwrap();
        assert!(n == 4 && note.unwrap().contains("tp × pp × dp = 2"));
        assert_eq!(configuration_gpus(&g[2], Some(8)).unwrap(), (8, None));
        assert!(configuration_gpus(&g[3], None).unwrap_err().to_string().contains("past any count of GPUs"));
    }

    /// A disaggregated configuration as `plan` writes it: its `dp` beside
    /// `pd` counts units of the pools, so the engine runs every unit's
    /// instances (and no `dp`, which it refuses beside them), and its GPUs
    /// are the pools', each instance on its pool's TP and EP ranks.
    #[test]
    fn a_disaggregated_configurations_units_are_its_pools() {
        let g = grid(&[
            &[("tp", "1"), ("dp", "2"), ("pd", "1:1")],
            &[("tp", "1"), ("dp", "1"), ("pd", "2:1xTP2")],
            &[("tp", "1"), ("dp", "4"), ("ep", "4"), ("pd", "1xEP4:1xEP8")],
            &[("tp", "2"), ("pp", "2"), ("pd", "1:1")],
        ]);
        let gpus: Vec<u32> = g.iter().map(|p| configuration_gpus(p, None).unwrap().0).collect();
        assert_eq!(gpus, [4, 4, 12, 8]);
        let a = sweep_args(&[]);
        let e = engine_args(&a, &g[0], "llama-3.1-8b", Path::new("p.json")).unwrap();
        assert_eq!((e.hw.pd.as_deref(), e.hw.dp), (Some("2:2"), 1));
        let e = engine_args(&a, &g[1], "llama-3.1-8b", Path::new("p.json")).unwrap();
        assert_eq!((e.hw.pd.as_deref(), e.hw.dp), (Some("2:1xTP2"), 1));
        // Not disaggregated, dp is the replicas.
        let e = engine_args(&a, &grid(&[&[("dp", "2")]])[0], "llama-3.1-8b", Path::new("p.json")).unwrap();
        assert_eq!((e.hw.pd.as_deref(), e.hw.dp), (None, 2));
    }

    /// A grid's router is each configuration's, and one of a single
    /// replica or of pools has none to pick (the engine refuses one).
    #[test]
    fn a_configurations_router_picks_among_its_replicas_alone() {
        let g = grid(&[
            &[("dp", "2"), ("router", "cache_aware")],
            &[("dp", "1"), ("router", "cache_aware")],
            &[("dp", "2"), ("pd", "1:1"), ("router", "round-robin")],
        ]);
        let a = sweep_args(&["--router", "round-robin"]);
        let routers: Vec<String> =
            g.iter().map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw.router).collect();
        assert_eq!(routers, ["cache_aware", "least-loaded", "least-loaded"]);
        let e = engine_args(&a, &grid(&[&[("dp", "2")]])[0], "llama-3.1-8b", Path::new("p.json")).unwrap();
        assert_eq!(e.hw.router, "round-robin", "the sweep's own, where the grid names none");
    }

    /// SGLang's `load_balance_method` in a grid is the rank method of a
    /// configuration under its DP attention, and the replicas' router
    /// elsewhere: `total_tokens`, which no router has, passes the check.
    #[test]
    fn sglangs_load_balance_method_picks_the_ranks_of_its_dp_attention() {
        let ranks = [("scheduler", "sglang"), ("tp", "1"), ("ep", "2"), ("dp", "2")];
        let g = grid(&[
            &[&ranks[..], &[("load_balance_method", "total_tokens")]].concat(),
            &[("scheduler", "sglang"), ("dp", "2"), ("load_balance_method", "total_requests")],
            &[&ranks[..], &[("load_balance_method", "auto:total_tokens")], &[("pd", "1:1")]].concat(),
            // Two groups: plan names the router in front of them beside the
            // method, in either order.
            &[&[("router", "power_of_two")], &ranks[..], &[("dp", "4"), ("load_balance_method", "total_requests")]]
                .concat(),
            &[&ranks[..], &[("dp", "4"), ("load_balance_method", "total_tokens"), ("router", "power_of_two")]].concat(),
        ]);
        assert!(check_grid(&g).is_ok());
        let a = sweep_args(&["--router", "round-robin"]);
        let hw: Vec<(String, String)> = g
            .iter()
            .map(|p| engine_args(&a, p, "qwen3-30b-a3b", Path::new("p.json")).unwrap().hw)
            .map(|hw| (hw.load_balance_method, hw.router))
            .collect();
        let pair = |m: &str, r: &str| (m.to_string(), r.to_string());
        assert_eq!(
            hw,
            [
                pair("total_tokens", "round-robin"),
                pair("total_requests", "round-robin"),
                pair("auto:total_tokens", "least-loaded"),
                pair("total_requests", "power_of_two"),
                pair("total_tokens", "power_of_two"),
            ]
        );
        // Without ranks to pick, a method no router has is refused, before
        // any server starts, naming what it would pick.
        let one = grid(&[&[("scheduler", "sglang"), ("dp", "1"), ("load_balance_method", "total_tokens")]]);
        let e = engine_args(&a, &one[0], "qwen3-30b-a3b", Path::new("p.json")).unwrap_err().to_string();
        assert!(e.contains("load_balance_method=total_tokens") && e.contains("has neither"), "{e}");
        // Under vLLM's scheduler it is the replicas' router.
        let vllm = grid(&[&[("dp", "2"), ("load_balance_method", "total_requests")]]);
        let hw = engine_args(&a, &vllm[0], "qwen3-30b-a3b", Path::new("p.json")).unwrap().hw;
        assert_eq!((hw.load_balance_method.as_str(), hw.router.as_str()), ("auto", "total_requests"));
        let e = check_grid(&grid(&[&[("load_balance_method", "fastest")]])).unwrap_err().to_string();
        assert!(e.contains("load_balance_method=fastest"), "{e}");
    }

    /// vLLM's own balancing of its replicas (`internal_lb`, which plan names
    /// where it predicted it) is a switch of the grid: taken where there
    /// are replicas, dropped with the router where there is one, and a
    /// value not a switch refused before any server starts.
    #[test]
    fn vllms_internal_balancing_is_a_switch_of_the_grid() {
        let g = grid(&[
            &[("dp", "2"), ("router", "least-loaded"), ("internal_lb", "true")],
            &[("dp", "1"), ("internal_lb", "true")],
            &[("dp", "2"), ("internal_lb", "false")],
        ]);
        assert!(check_grid(&g).is_ok());
        let a = sweep_args(&[]);
        let hw: Vec<bool> =
            g.iter().map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw.internal_lb).collect();
        assert_eq!(hw, [true, false, false]);
        let e = check_grid(&grid(&[&[("dp", "2"), ("internal_lb", "sometimes")]])).unwrap_err().to_string();
        assert!(e.contains("internal_lb=sometimes") && e.contains("not true or false"), "{e}");
    }

    /// A scheduler a step ahead (`async_scheduling`, which plan names where
    /// it predicted none) is a switch of the grid; its absence is the
    /// servers' default, and a value not a switch is refused before any
    /// server starts.
    #[test]
    fn a_step_ahead_is_a_switch_of_the_grid() {
        let g = grid(&[&[("async_scheduling", "true")], &[("async_scheduling", "off")], &[("tp", "1")]]);
        assert!(check_grid(&g).is_ok());
        let a = sweep_args(&[]);
        let hw: Vec<(bool, bool)> = g
            .iter()
            .map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw)
            .map(|hw| (hw.async_scheduling, hw.no_async_scheduling))
            .collect();
        assert_eq!(hw, [(true, false), (false, true), (false, false)]);
        let ahead = |p| {
            let hw = engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw;
            let engine = crate::cli::EngineArgs { engine_model: "llama-3.1-8b".into(), hw };
            goodput_sim::engine::EngineConfig::try_from(&engine).unwrap().async_scheduling
        };
        let runs: Vec<bool> = g.iter().map(ahead).collect();
        assert_eq!(runs, [true, false, true], "absent: the servers' default");
        let e = check_grid(&grid(&[&[("async_scheduling", "soon")]])).unwrap_err().to_string();
        assert!(e.contains("async_scheduling=soon") && e.contains("not true or false"), "{e}");
    }

    /// SGLang's scheduler and its conservativeness are knobs of the grid:
    /// each configuration's, a value out of [0, 100] refused before any
    /// server starts.
    #[test]
    fn sglangs_scheduler_and_its_conservativeness_are_knobs() {
        let g = grid(&[&[("scheduler", "sglang"), ("schedule_conservativeness", "0.3")], &[("scheduler", "sglang")]]);
        assert!(check_grid(&g).is_ok());
        let a = sweep_args(&[]);
        let hw: Vec<(String, f64)> = g
            .iter()
            .map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw)
            .map(|hw| (hw.scheduler, hw.schedule_conservativeness))
            .collect();
        assert_eq!(hw, [("sglang".to_string(), 0.3), ("sglang".to_string(), 1.0)]);
        for bad in ["-1", "101", "lots"] {
            let e = check_grid(&grid(&[&[("schedule_conservativeness", bad)]])).unwrap_err().to_string();
            assert!(e.contains(&format!("schedule_conservativeness={bad}")) && e.contains("from 0 to 100"), "{e}");
        }
        // Its receive interval too, by its name or the short one.
        let g = grid(&[&[("scheduler", "sglang"), ("recv_interval", "30")], &[("scheduler", "sglang")]]);
        assert!(check_grid(&g).is_ok());
        let hw: Vec<u32> = g
            .iter()
            .map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw.scheduler_recv_interval)
            .collect();
        assert_eq!(hw, [30, 1]);
        let e = check_grid(&grid(&[&[("scheduler_recv_interval", "0")]])).unwrap_err().to_string();
        assert!(e.contains("scheduler_recv_interval=0") && e.contains("not a positive whole number"), "{e}");
        // TensorRT-LLM's batch waiting, 0 a value of its own.
        let g = grid(&[
            &[("scheduler", "trtllm"), ("batch_wait_timeout_iters", "20"), ("batch_wait_max_tokens_ratio", "0.9")],
            &[("scheduler", "trtllm"), ("batch_wait_timeout_iters", "0")],
        ]);
        assert!(check_grid(&g).is_ok());
        let hw: Vec<(u32, f64)> = g
            .iter()
            .map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw)
            .map(|h| (h.batch_wait_timeout_iters, h.batch_wait_max_tokens_ratio))
            .collect();
        assert_eq!(hw, [(20, 0.9), (0, 0.0)]);
        let e = check_grid(&grid(&[&[("batch_wait_max_tokens_ratio", "2")]])).unwrap_err().to_string();
        assert!(e.contains("batch_wait_max_tokens_ratio=2") && e.contains("not a share from 0 to 1"), "{e}");
        // What MXFP4 experts multiply against, by its name or the short one.
        let g = grid(&[&[("mxfp4_activations", "bf16")], &[("moe-activations", "fp8")], &[]]);
        assert!(check_grid(&g).is_ok());
        let hw: Vec<Option<String>> = g
            .iter()
            .map(|p| engine_args(&a, p, "gpt-oss-120b", Path::new("p.json")).unwrap().hw.mxfp4_activations)
            .collect();
        assert_eq!(hw, [Some("bf16".into()), Some("fp8".into()), None]);
        let e = check_grid(&grid(&[&[("mxfp4_activations", "int4")]])).unwrap_err().to_string();
        assert!(e.contains("mxfp4_activations=int4") && e.contains("use fp8 (W4A8"), "{e}");
        // And its cap on a step's prompt tokens.
        let g = grid(&[&[("scheduler", "sglang"), ("max-prefill-tokens", "196608")], &[("scheduler", "sglang")]]);
        assert!(check_grid(&g).is_ok());
        let hw: Vec<u32> = g
            .iter()
            .map(|p| engine_args(&a, p, "llama-3.1-8b", Path::new("p.json")).unwrap().hw.max_prefill_tokens)
            .collect();
        assert_eq!(hw, [196_608, goodput_sim::engine::SGLANG_MAX_PREFILL_TOKENS]);
    }

    #[test]
    fn the_predicted_frontier_and_the_comparison_go_beside_the_measured_one() {
        let out = Path::new("/r/frontier.json");
        assert_eq!(beside(out, "predicted", "json"), Path::new("/r/frontier.predicted.json"));
        assert_eq!(beside(Path::new("f.html"), "compare", "html"), Path::new("f.compare.html"));
    }
}
