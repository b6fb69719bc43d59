//! `goodput sweep`: a series of loads against a server (or, with
//! `--estimate`, the simulated engine in virtual time). Each point is a full
//! run; the document is rewritten after every point so an interrupted sweep
//! keeps what it measured; the analysis names saturation, the best goodput,
//! the highest load that meets the SLO (found by bisection) and the point
//! to pick.

use crate::cli::{EngineArgs, SweepArgs, DEFAULT_ENGINE_MODEL};
use crate::common;
use crate::interrupt::Interrupt;
use crate::point::{run_point, Point};
use crate::target::HttpTarget;
use crate::virtual_point;
use crate::{output, setup};
use anyhow::{bail, Result};
use goodput_core::doc::config::{EngineSettings, WorkloadConfig};
use goodput_core::doc::sweep::{analyze_sweep, intensity, meets_slo, steady, Load, SweepPoint, SweepResult};
use goodput_core::{AnalysisOptions, RunConfig, SweepConfig, Target, SCHEMA};
use goodput_load::{LoadPlan, Workload};
use goodput_report::read::records::RecordFile;
use goodput_report::series::{Cdf, Latency, SweepSeries};
use goodput_report::terminal::sweep as sweep_table;
use goodput_sim::engine::{EngineConfig, PromptKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use steady::{expected_duration, needs_longer, sustained, why_longer, POINT_CAP, POINT_DURATION, POINT_WARMUP};

mod repeat;
pub(crate) mod servers;
mod stages;
mod steady;

/// The most rates `--auto` spreads between its baseline and ceiling.
pub const MAX_AUTO_POINTS: u32 = 100;

/// Where a run's records are kept: written to `records` when given, and
/// in the result with `include_requests`.
struct Keep {
    records: Option<PathBuf>,
    include_requests: bool,
}

impl Keep {
    /// Written to `records` when given, not in the result.
    fn records(records: &Option<PathBuf>) -> Keep {
        Keep { records: records.clone(), include_requests: false }
    }
}

/// Where the points run.
enum Runner {
    Http { target: Box<HttpTarget>, interrupt: Interrupt },
    Virtual { cfg: Box<EngineConfig>, prompts: PromptKind },
}

/// `--trace`: the trace every point replays, at the speed its load asks.
struct SweepTrace {
    /// Its requests on the run's clock at speed 1.
    entries: Arc<Vec<goodput_load::trace::TraceEntry>>,
    file: String,
    /// The requests per second it offers at speed 1: a point's load is
    /// this times its speed.
    rate: f64,
}

struct Sweep {
    runner: Runner,
    /// `--trace`: each point a replay of it.
    trace: Option<SweepTrace>,
    workload: Arc<Workload>,
    workload_config: WorkloadConfig,
    opts: AnalysisOptions,
    args: SweepArgs,
    points: Vec<SweepPoint>,
    started_unix_s: f64,
    config: SweepConfig,
    target: Target,
    /// The points run for a steady state (no --requests or --duration
    /// given): each is run again for twice as long while it is not one,
    /// up to [`POINT_CAP`].
    steady_bounds: bool,
    /// Runs made so far: the `k`-th draws its prompts and arrivals from
    /// the `k`-th seed of the sweep's (`Seed::of_run`).
    runs: u64,
    /// What the HTML page draws of the points' records, kept as each point
    /// ends: the records themselves are not (a sweep's can run to GBs), and
    /// the document holds them only with --include-requests.
    held: SweepSeries,
    /// A path to POST on the server before each point (`--serve-reset`).
    reset: Option<String>,
    /// The stopping rules a point's first run ends by (`--until`,
    /// `--stop-on-slo`), beside its steady-state rule.
    until: Option<crate::until::Spec>,
    /// A point whose every request failed has said why (the first failure,
    /// and bench's hint for a status all answered alike): once a sweep.
    told_failure: std::sync::atomic::AtomicBool,
    /// The loads a failure storm stopped a run of (a closed loop's every
    /// request failing for seconds), in order.
    storms: Vec<Load>,
    /// What the sweep did not run for a storm: each with the load whose
    /// storm it was (see [`Sweep::storm_below`]).
    not_run: Vec<(Load, String)>,
}

impl Sweep {
    /// The loads `--concurrency` or `--rate` list, in order.
    async fn run_grid(&mut self) -> Result<()> {
        let grid: Vec<Load> = if let Some(c) = &self.args.concurrency {
            c.0.iter().map(|&c| Load::Concurrency(c)).collect()
        } else if let Some(r) = &self.args.rate {
            r.0.iter().map(|&r| Load::Rate(r)).collect()
        } else {
            Vec::new()
        };
        for load in grid {
            if self.stopped() {
                break;
            }
            if let Some(at) = self.storm_below(load) {
                self.skip_for_storm(at, load.label());
                continue;
            }
            self.run(load, "grid").await?;
        }
        Ok(())
    }

    /// `--trace`: a point at each `--trace-speed` (1 where none is given),
    /// its load the rate the trace offers at that speed.
    async fn run_trace(&mut self) -> Result<()> {
        let Some(rate) = self.trace.as_ref().map(|t| t.rate) else { return Ok(()) };
        let speeds = self.args.trace_speed.clone().unwrap_or_else(|| vec![1.0]);
        for speed in speeds {
            if self.stopped() {
                break;
            }
            self.run(Load::Rate(rate * speed), &format!("trace {speed}×")).await?;
        }
        Ok(())
    }

    /// The load a failure storm stopped a run at, if it was a closed loop of
    /// as many users as `load` or fewer: a server that failed every request
    /// for seconds at fewer users fails at more, and each such load would
    /// take its seconds to tell so again. Fewer users, and rates (an open
    /// loop keeps to its schedule and is never stopped so), are still run:
    /// a storm at many users can be timeouts of an overloaded server.
    fn storm_below(&self, load: Load) -> Option<Load> {
        // The fewest users it failed at: the most telling.
        let users = |l: Load| match l {
            Load::Concurrency(c) => Some(c),
            Load::Rate(_) => None,
        };
        let most = users(load)?;
        self.storms.iter().copied().filter(|&s| users(s).is_some_and(|c| c <= most)).min_by_key(|&s| users(s))
    }

    /// Notes a failure storm at `load` (once a load), for [`Sweep::storm_below`].
    fn stormed_at(&mut self, load: Load) {
        if !self.storms.contains(&load) {
            self.storms.push(load);
        }
    }

    /// Notes `what` as not run for the storm at `at`, and says so.
    fn skip_for_storm(&mut self, at: Load, what: String) {
        goodput_core::tell!(
            "not running {what}: a failure storm stopped {} (every request failed for seconds), so the server \
             fails at as many users or more; mend it (the point's stop gives its first failure) and sweep again",
            at.label()
        );
        self.not_run.push((at, what));
    }

    /// `--auto`: a baseline of one user, the ceiling at `--max-concurrency`,
    /// and `--points` rates spread between their throughputs.
    async fn run_auto(&mut self) -> Result<()> {
        if !self.args.auto || self.stopped() {
            return Ok(());
        }
        let base = sustained(&self.run(Load::Concurrency(1), "baseline").await?.result);
        let top = Load::Concurrency(self.args.max_concurrency);
        let ceiling = if self.stopped() {
            None
        } else if let Some(at) = self.storm_below(top) {
            self.skip_for_storm(at, format!("--auto's ceiling ({}) and the rates spread below it", top.label()));
            None
        } else {
            Some(sustained(&self.run(top, "ceiling").await?.result))
        };
        let k = self.args.points;
        match ceiling {
            Some(ceil) if ceil > base => {
                for i in 1..=k {
                    if self.stopped() {
                        break;
                    }
                    let r = base + (ceil - base) * i as f64 / (k + 1) as f64;
                    self.run(Load::Rate(round_rate(r)), "spread").await?;
                }
            }
            Some(_) if k > 0 && self.storms.contains(&top) => {
                self.skip_for_storm(top, format!("--auto's {k} spread rate(s), which its ceiling would have set"));
            }
            _ => {}
        }
        Ok(())
    }

    /// Says where the document went, and writes the renderings asked for.
    fn export(&self, doc: &SweepResult) -> Result<()> {
        if let Some(p) = &self.args.output.output {
            if !self.args.output.quiet {
                goodput_core::tell!("sweep written to {}", p.display());
            }
        }
        for (format, dest) in self.args.output.exports.targets() {
            for f in goodput_report::export_sweep_with(format, doc, &self.held, &dest)? {
                if !self.args.output.quiet {
                    goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
                }
            }
        }
        Ok(())
    }

    fn plan(&self, load: Load, duration: Option<Duration>, seed: u64) -> Result<LoadPlan> {
        let a = &self.args;
        let seed = crate::cli::Seed { value: seed, drawn: a.shape.seed.drawn };
        let shape = crate::cli::ShapeArgs { duration: duration.or(a.shape.duration), seed, ..a.shape.clone() };
        // A trace at the speed that offers the load's rate (a grid's, or a
        // search's between two), on its own clock: capped in flight only
        // where --max-concurrency is given, as bench --trace sends it.
        if let (Some(t), Load::Rate(r)) = (&self.trace, load) {
            let speed = r / t.rate;
            let entries: Vec<goodput_load::trace::TraceEntry> = t
                .entries
                .iter()
                .map(|e| goodput_load::trace::TraceEntry { at: e.at.div_f64(speed), ..e.clone() })
                .collect();
            let cap = a.given.has("max_concurrency").then_some(a.max_concurrency as usize);
            let mut plan = setup::shaped_plan(&shape, cap, None, Some(&entries), a.target.grace)?;
            plan.trace_source = Some(goodput_load::runner::TraceSource { file: t.file.clone(), speed });
            return Ok(plan);
        }
        match load {
            Load::Concurrency(c) => setup::shaped_plan(&shape, Some(c as usize), None, None, a.target.grace),
            Load::Rate(r) => {
                setup::shaped_plan(&shape, Some(a.max_concurrency as usize), Some(r), None, a.target.grace)
            }
        }
    }

    /// The share of good requests a point must reach to meet the SLO.
    fn attainment(&self) -> f64 {
        self.config.attainment_target
    }

    /// POSTs `--serve-reset`'s path on the server (vLLM's
    /// /reset_prefix_cache), so that the point starts with empty caches; a
    /// server that refuses it fails the sweep.
    async fn reset_server(&self) -> Result<()> {
        let (Some(path), Runner::Http { target, .. }) = (&self.reset, &self.runner) else { return Ok(()) };
        let url = goodput_load::client::join_url(&target.root, path);
        let r = target
            .client
            .http()
            .post(&url)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("POST {path} (--serve-reset) failed: {e}"))?;
        if !r.status().is_success() {
            bail!(
                "the server answered POST {path} (--serve-reset) with HTTP {}: does it have that route (vLLM's \
                 /reset_prefix_cache needs VLLM_SERVER_DEV_MODE=1)?",
                r.status()
            );
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        matches!(&self.runner, Runner::Http { interrupt, .. } if interrupt.stopped())
    }

    /// Runs one point and writes the document. With steady bounds, a point
    /// that is not yet a steady state (and not beyond the server: a longer
    /// run only grows its backlog) or whose throughput has not converged
    /// runs again for twice as long, up to [`POINT_CAP`].
    async fn run(&mut self, load: Load, origin: &str) -> Result<&SweepPoint> {
        let mut duration = self.args.shape.duration;
        // The stopping rules end a point's first run; one run again for a
        // steady state runs its whole length.
        let mut rules = self.until.is_some();
        let (result, ttft) = loop {
            let (result, ttft) = self.run_once(load, duration, rules).await?;
            rules = false;
            // The ceiling only finds the rate the spread climbs to (its
            // steady stretch's), and is never recommended: not extended.
            let extend = self.steady_bounds && origin != "ceiling";
            let next = duration.map(|d| d * 2).filter(|&d| extend && d <= POINT_CAP);
            match next {
                Some(d) if !self.stopped() && needs_longer(&result, self.attainment()) => {
                    if !self.args.output.quiet {
                        goodput_core::tell!(
                            "{}: {}; running it again for {}",
                            load.label(),
                            why_longer(&result),
                            goodput_core::util::duration_text(d)
                        );
                    }
                    duration = Some(d);
                }
                _ => break (result, ttft),
            }
        };
        let result = self.repeat_point(load, duration, result).await?;
        self.record(load, origin, result, Some(ttft))
    }

    /// Prints a point's row, keeps it (and its TTFT distribution, from its
    /// records) and writes the document (to a file: standard output takes
    /// it once, at the end).
    fn record(
        &mut self,
        load: Load,
        origin: &str,
        mut result: goodput_core::RunResult,
        ttft: Option<Cdf>,
    ) -> Result<&SweepPoint> {
        mark_no_completions(&mut result);
        if self.points.is_empty() {
            crate::output::say(&format!(
                "{}\n",
                sweep_table::row_header_for(self.args.shape.turns.is_some(), self.args.target.api.pools())
            ));
        }
        crate::output::say(&format!(
            "{}\n",
            sweep_table::row(load, origin, &result, self.opts.slo.is_some(), self.attainment())
        ));
        if crate::bench::stormed(&result) {
            self.stormed_at(load);
        }
        self.points.push(SweepPoint { load, origin: origin.into(), result });
        self.held.ttft.push(ttft);
        // A document on standard output is written once, at the end: one
        // after each point would have put several there.
        if !output::stdout_taken() {
            self.write(false)?;
        }
        Ok(self.points.last().expect("just pushed"))
    }

    /// Runs one point for `duration` (or the shape's bounds) and gives its
    /// result and the TTFT distribution of its records.
    async fn run_once(
        &mut self,
        load: Load,
        duration: Option<Duration>,
        rules: bool,
    ) -> Result<(goodput_core::RunResult, Cdf)> {
        let seed = self.args.shape.seed.of_run(self.runs);
        self.runs += 1;
        self.reset_server().await?;
        let plan = self.plan(load, duration, seed)?;
        let workload = Arc::new(self.workload.with_seed(seed));
        // A point's load as bench writes it, so that it is judged (and
        // warned about) as the same load run alone would be.
        let rules = self.until.as_ref().filter(|_| rules);
        let point_config = RunConfig {
            load: Some((&plan).into()),
            workload: Some(self.workload_config.clone()),
            stopping: rules.map(|u| u.config()),
            ..RunConfig::default()
        };
        let records = self.args.output.records.as_ref().map(|p| point_path(p, self.points.len()));
        let title = format!("point {} · {}", self.points.len() + 1, load.label());
        let include = self.args.output.include_requests;
        let keep = Keep { records, include_requests: include };
        let (result, recs) = self.execute(&plan, &workload, title, point_config, keep, rules).await?;
        Ok((result, goodput_report::series::cdf_of_records(&recs, Latency::Ttft)))
    }

    /// Runs `plan` once on the sweep's server, live or in virtual time,
    /// and gives its result, under `config`, and its records, kept as
    /// `keep` says. `title` names it in the live view; `until`'s rules may
    /// end a live run early.
    async fn execute(
        &self,
        plan: &LoadPlan,
        workload: &Arc<Workload>,
        title: String,
        config: RunConfig,
        keep: Keep,
        until: Option<&crate::until::Spec>,
    ) -> Result<(goodput_core::RunResult, Vec<goodput_core::RequestRecord>)> {
        let Keep { records, include_requests } = keep;
        match &self.runner {
            Runner::Http { target, interrupt } => {
                crate::limits::check_plan(plan, self.args.target.url.is_none())?;
                crate::limits::check_memory(plan, false)?;
                let run_id = goodput_report::read::records::new_run_id();
                let records = records.map(|p| RecordFile::create(&p, &run_id)).transpose()?;
                let point = Point {
                    title: format!(" goodput sweep → {} · {title} ", target.base),
                    plan,
                    workload: workload.clone(),
                    config,
                    run_id,
                    records,
                    live: None,
                    start_at: None,
                    control: interrupt.control(),
                    until: until.cloned(),
                };
                let _busy = interrupt.busy();
                let out = run_point(target, point, &self.args.metrics, &self.args.output, &self.opts).await?;
                // A point whose every request failed says why, as bench
                // does (the sweep's note had only counted the failures).
                let q = &out.0.summary.requests;
                if q.completed == 0 && q.failed > 0 && !self.told_failure.swap(true, Ordering::Relaxed) {
                    // The commonest kind's sample (its earliest failure):
                    // the records are not always kept.
                    let commonest = q.errors_by_kind.iter().max_by_key(|(_, n)| **n).map(|(k, _)| k);
                    if let Some((kind, sample)) = commonest.and_then(|k| Some((k, q.error_samples.get(k)?))) {
                        let first = goodput_report::escape::terminal(&format!("{kind}: {sample}"));
                        goodput_core::tell!("first failure: {first}");
                    }
                    if let Some(hint) = target.all_failed_hint(&out.0).await {
                        goodput_core::tell!("hint: {hint}");
                    }
                }
                Ok(out)
            }
            Runner::Virtual { cfg, prompts } => {
                let server = virtual_point::VirtualServer::new(cfg, *prompts);
                // Judged (and warned about) as the load the plan describes,
                // though the engine ends a closed loop by its count.
                let bounded = virtual_bounds(server, plan.clone(), workload)?;
                let (mut r, recs) = virtual_point::estimate_result_until(
                    server,
                    &bounded,
                    workload,
                    self.workload_config.clone(),
                    &self.opts,
                    include_requests,
                    until,
                )?;
                if let Some(p) = records {
                    let mut f = RecordFile::create(&p, &r.run_id)?;
                    for rec in &recs {
                        f.write(rec);
                    }
                }
                r.config = config;
                Ok((r, recs))
            }
        }
    }

    fn document(&self, interrupted: bool) -> SweepResult {
        SweepResult {
            schema: SCHEMA.into(),
            tool: common::tool(),
            kind: "sweep".into(),
            started_unix_s: self.started_unix_s,
            interrupted,
            config: self.config.clone(),
            target: self.target.clone(),
            points: self.points.clone(),
            analysis: self.analysis(),
        }
    }

    /// The sweep's analysis, with a note of what a failure storm left unrun
    /// first: the loads named only on standard error, the document had read
    /// as a finished sweep of fewer points.
    fn analysis(&self) -> goodput_core::doc::sweep::SweepAnalysis {
        let mut a = analyze_sweep(&self.points, self.attainment());
        // Predicted points under load: their TTFT is the engine's least
        // certain figure, said beside them as `estimate` says it.
        // A sweep's closed loops start their users together; its rates
        // send on a schedule.
        let loaded = |p: &SweepPoint| p.result.summary.in_flight.mean >= crate::estimate::LOADED_IN_FLIGHT;
        let engine = self.points.iter().find_map(|p| p.result.engine.as_ref()).map(|e| &e.config);
        if self.config.estimate && self.points.iter().any(loaded) {
            use goodput_sim::engine::accuracy::{ttft_note, Start};
            let closed = self.points.iter().any(|p| loaded(p) && matches!(p.load, Load::Concurrency(_)));
            a.notes.push(ttft_note(if closed { Start::Together } else { Start::Schedule }));
            // The scheduler as the engine block names it (vLLM's where a
            // document predates the name).
            let served = engine.and_then(|c| {
                let scheduler = c.scheduler.parse().unwrap_or(goodput_sim::engine::SchedulerPolicy::Vllm);
                let gpu = goodput_sim::engine::GpuSpec::lookup(&c.gpu).ok()?;
                goodput_sim::engine::accuracy::served_load_note(scheduler, &gpu)
            });
            a.notes.extend(served);
        }
        // An uncalibrated GPU family, said as `estimate` says it.
        if let Some(c) = engine.filter(|_| self.config.estimate) {
            a.notes.extend(crate::serve::family_warning(&c.gpu));
            a.notes.extend(crate::serve::moe_warning(&c.model));
        }
        // Predicted energy: how far the power model was from a GPU's steps.
        if self.config.estimate && self.points.iter().any(|p| p.result.energy.is_some()) {
            // On the power model's shares the engine ran, --calibration's
            // where it set them.
            let ran = engine.and_then(|c| {
                let family = goodput_sim::engine::GpuSpec::lookup(&c.gpu).ok()?.family;
                let constants = serde_json::to_value(&c.calibration).ok()?;
                Some((family, goodput_sim::engine::Calibration::for_family(family).overlay(&constants).ok()?))
            });
            a.notes.push(match &ran {
                Some((family, c)) => goodput_sim::engine::accuracy::energy_note_on([(*family, c)]),
                None => goodput_sim::engine::accuracy::energy_note(),
            });
        }
        if let Some((at, _)) = self.not_run.first() {
            let what: Vec<&str> = self.not_run.iter().map(|(_, w)| w.as_str()).collect();
            a.notes.insert(
                0,
                format!(
                    "a failure storm stopped {} (every request failed for seconds), so the sweep did not run: {}",
                    at.label(),
                    what.join("; ")
                ),
            );
        }
        a
    }

    /// Writes the document of a sweep a point's error ended: the points
    /// measured, marked interrupted, with a note of the error.
    fn write_failed(&self, e: &anyhow::Error) -> Result<()> {
        let Some(p) = &self.args.output.output else { return Ok(()) };
        let mut doc = self.document(true);
        doc.analysis.notes.insert(
            0,
            format!(
                "the sweep stopped at its point {} on an error, after {} point(s) measured: {e:#}",
                self.points.len() + 1,
                self.points.len()
            ),
        );
        output::write_document(p, &doc, "sweep")
    }

    fn write(&self, interrupted: bool) -> Result<()> {
        if let Some(p) = &self.args.output.output {
            output::write_document(p, &self.document(interrupted), "sweep")?;
        }
        Ok(())
    }

    /// Requests per second a point achieved: the common scale of closed- and
    /// open-loop points when bisecting.
    fn rps(&self, i: usize) -> f64 {
        sustained(&self.points[i].result)
    }

    /// Bisects between the highest point meeting the SLO and the next one
    /// that does not, a few times, so the boundary is not only read off the grid.
    async fn search(&mut self) -> Result<()> {
        if self.opts.slo.is_none() {
            return Ok(());
        }
        for _ in 0..self.args.search_steps {
            if self.stopped() {
                break;
            }
            let mut order: Vec<usize> = (0..self.points.len()).collect();
            order.sort_by(|&x, &y| intensity(&self.points[x]).total_cmp(&intensity(&self.points[y])));
            // Only a steady point meets the SLO: one that is not measured a
            // backlog or a ramp, not the load.
            let meets = |i: usize| {
                let r = &self.points[i].result;
                meets_slo(r, self.attainment()) == Some(true) && steady(r)
            };
            let Some(pos) = order.iter().rposition(|&i| meets(i)) else { break };
            let Some(&fail) = order.get(pos + 1) else { break };
            let pass = order[pos];
            let next = match (self.points[pass].load, self.points[fail].load) {
                (Load::Concurrency(a), Load::Concurrency(b)) => {
                    if b <= a + 1 {
                        break;
                    }
                    Load::Concurrency((a + b) / 2)
                }
                _ => {
                    let (a, b) = (self.load_rate(pass), self.load_rate(fail));
                    if b <= a * 1.02 {
                        break;
                    }
                    Load::Rate(round_rate((a + b) / 2.0))
                }
            };
            if self.points.iter().any(|p| p.load == next) {
                break;
            }
            if let Some(at) = self.storm_below(next) {
                self.skip_for_storm(at, format!("the search for the SLO's boundary ({} next)", next.label()));
                break;
            }
            self.run(next, "search").await?;
        }
        Ok(())
    }

    /// The rate a point offered (its own rate, or what a closed loop achieved).
    fn load_rate(&self, i: usize) -> f64 {
        match self.points[i].load {
            Load::Rate(r) => r,
            Load::Concurrency(_) => self.rps(i),
        }
    }
}

/// A closed loop's duration as a request count, for the simulated engine,
/// which ends a closed loop by its count: the throughput of a short pilot
/// (10 requests a user, at least 100) times the duration. Users that change
/// over the run keep the duration, which ends their sending, and are given
/// twice the count the most of them would send (piloted at that many).
fn virtual_bounds(server: virtual_point::VirtualServer, mut plan: LoadPlan, workload: &Workload) -> Result<LoadPlan> {
    let (Some(d), None, None, None) = (plan.duration, plan.requests, plan.rate, &plan.trace) else { return Ok(plan) };
    let most = plan.user_steps.iter().map(|s| s.1).chain(plan.concurrency).max();
    let c = most.unwrap_or(1) as u64;
    let pilot_requests = goodput_core::analysis::assemble::REQUESTS_PER_USER.saturating_mul(c).max(100);
    if pilot_requests > virtual_point::MAX_VIRTUAL_UNITS {
        bail!(
            "a closed loop of {c} users in virtual time is piloted with {pilot_requests} requests (10 a user), and \
             a virtual run holds at most {}: give fewer users",
            virtual_point::MAX_VIRTUAL_UNITS
        );
    }
    let pilot = LoadPlan {
        requests: Some(pilot_requests),
        duration: None,
        warmup: 0,
        warmup_time: Duration::ZERO,
        concurrency: most,
        user_steps: Vec::new(),
        cancel: None,
        ..plan.clone()
    };
    let run = virtual_point::run_virtual(server, &pilot, workload)?;
    let end = run.records.iter().map(|r| r.end).max().unwrap_or_default().as_secs_f64();
    let done = run.records.iter().filter(|r| r.outcome.is_success()).count() as f64;
    let rps = if end > 0.0 { done / end } else { 0.0 };
    let count = ((rps * d.as_secs_f64()).ceil() as u64).max(c);
    if plan.user_steps.is_empty() {
        (plan.requests, plan.duration) = (Some(count), None);
    } else {
        plan.requests = Some(count * 2);
    }
    Ok(plan)
}

fn round_rate(r: f64) -> f64 {
    (r * 1000.0).round() / 1000.0
}

/// `--estimate` alone runs no server: a flag that only a live client or
/// server acts on would be dropped in silence, and some change what the
/// figures mean (`--no-stream`'s TTFT is the whole answer's), so each is
/// refused with its fix, as `estimate`, which has none of them, refuses it.
/// (`--api-key` is let be: it comes from OPENAI_API_KEY as well, and a
/// key set for other work changes nothing here.)
fn refuse_live_flags(a: &SweepArgs) -> Result<()> {
    if let Some(flag) = a.given.first(LIVE_FLAGS) {
        bail!(
            "{flag} is for a live server, and --estimate runs none (its requests stream, and nothing times \
             out or is scraped): drop {flag}, or drop --estimate to sweep a server (or add --serve-cmd to \
             set the prediction beside one)"
        );
    }
    Ok(())
}

/// The flags only a live client or server acts on: the flag, and its clap id.
pub(crate) const LIVE_FLAGS: &[(&str, &str)] = &[
    ("--no-stream", "no_stream"),
    ("--no-usage", "no_usage"),
    ("--header", "header"),
    ("--extra-body", "extra_body"),
    ("--timeout", "timeout"),
    ("--max-buffer", "max_buffer"),
    ("--wait-ready", "wait_ready"),
    ("--transport", "transport"),
    ("--stamp", "stamp"),
    ("--key-header", "key_header"),
    ("--metrics-url", "metrics_url"),
    ("--no-metrics", "no_metrics"),
    ("--metrics-interval", "metrics_interval"),
    ("--prometheus-listen", "prometheus_listen"),
];

fn point_path(p: &std::path::Path, i: usize) -> PathBuf {
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "records".into());
    let ext = p.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| "jsonl".into());
    p.with_file_name(format!("{stem}.point{i:02}.{ext}"))
}

/// The embedded simulator's flags where the sweep starts none: `--estimate`
/// runs the engine from its own flags, `--serve-cmd` starts the servers it
/// loads. Each had been dropped in silence (`sweep --estimate --sim-tp 2`
/// ran TP 1), or refused once per configuration as if `--url` were given.
fn refuse_sim_flags(a: &SweepArgs) -> Result<()> {
    let Some(flag) = crate::target::sim_flag_typed(&a.sim.given) else { return Ok(()) };
    if a.serve.serve_cmd.is_some() {
        bail!(
            "{flag} sets up the embedded simulator, and --serve-cmd starts the servers this sweep loads: drop \
             {flag} (a simulated server takes its settings in --serve-cmd, `goodput serve --profile engine …`)"
        );
    }
    if a.estimate {
        let instead = match flag {
            "--sim-engine" => "give the flags in it as they are".to_owned(),
            f if crate::target::SIM_ENGINE_FLAGS.iter().any(|(e, _)| *e == f) => {
                format!("give {} instead", f.replacen("--sim-", "--", 1))
            }
            _ => "the estimate times the engine, not fixed timings".to_owned(),
        };
        bail!(
            "{flag} sets up the embedded simulator, and --estimate runs the engine from its own flags (--gpu, \
             --tp, --pp, …; goodput sweep --help, \"Simulated engine\"): drop {flag}; {instead}"
        );
    }
    Ok(())
}

pub async fn sweep(a: SweepArgs) -> Result<ExitCode> {
    refuse_sim_flags(&a)?;
    if a.estimate && a.serve.serve_cmd.is_none() {
        refuse_live_flags(&a)?;
    }
    if a.serve.serve_cmd.is_some() {
        return servers::sweep(a).await;
    }
    let mut sw = start(a, Shared::default()).await?;
    if let Err(e) = sw.measure().await {
        // The points measured are kept, marked cut short and why: the
        // document had read as a finished sweep that "did not reach
        // saturation".
        sw.write_failed(&e)?;
        return Err(e);
    }

    let interrupted = sw.stopped();
    let doc = sw.document(interrupted);
    sw.write(interrupted)?;
    crate::output::say(&sweep_table::analysis_lines(&doc));
    sw.export(&doc)?;
    if interrupted {
        goodput_core::tell!("error: the sweep was interrupted; its document holds the points measured until then");
        return Ok(ExitCode::from(crate::output::EXIT_INTERRUPTED));
    }
    Ok(storm_exit(&doc, exit_code(&doc, &sw.args.judge)))
}

/// A live sweep some of whose points a failure storm stopped early failed
/// (1), as such a bench run does, whatever else it would have exited with
/// but an error: those loads were not measured (every request failed), and
/// the points before them stand in the document. A re-judged document
/// (`report`) keeps [`exit_code`]'s verdict alone.
fn storm_exit(doc: &SweepResult, code: ExitCode) -> ExitCode {
    if code != ExitCode::SUCCESS {
        return code;
    }
    // A point's top level is its first run; a storm in a later one of its
    // `--runs` is in its repeats block, and fails the sweep as well.
    let stormed: Vec<String> = doc
        .points
        .iter()
        .filter_map(|p| {
            let later = p.result.repeats.as_ref().and_then(|rep| rep.runs.iter().find(|r| r.index > 1 && r.stormed));
            match later {
                _ if crate::bench::stormed(&p.result) => Some(p.load.label()),
                Some(r) => Some(format!("{}'s run {}", p.load.label(), r.index)),
                None => None,
            }
        })
        .collect();
    if stormed.is_empty() {
        return code;
    }
    goodput_core::tell!(
        "error: a failure storm stopped {} of {} point{} early ({}): every request failed there, so {} measured \
         nothing; what was measured before is in the document (see each point's stop, and its repeats)",
        stormed.len(),
        doc.points.len(),
        if doc.points.len() == 1 { "" } else { "s" },
        stormed.join(", "),
        if stormed.len() == 1 { "that run" } else { "those runs" }
    );
    ExitCode::from(1)
}

/// What a sweep of one server among several (`--serve-cmd`) is given by
/// the sweep over them: their common interrupt, the path to POST before
/// each point, and the count of runs made before (each run draws its
/// prompts from the seed's next one).
#[derive(Default)]
struct Shared {
    interrupt: Option<Interrupt>,
    reset: Option<String>,
    first_run: u64,
}

impl Sweep {
    /// Runs its points: the stages, or the grid, --auto's and the search's.
    async fn measure(&mut self) -> Result<()> {
        if self.args.stages.is_some() {
            self.run_stages().await
        } else {
            self.run_grid().await?;
            self.run_trace().await?;
            self.run_auto().await?;
            self.search().await
        }
    }
}

/// Sets a sweep up: checks the arguments, builds the workload, reaches the
/// server, and says what it will run.
async fn start(a: SweepArgs, shared: Shared) -> Result<Sweep> {
    let started_unix_s = common::unix_now();
    check_args(&a)?;
    // With no bounds given, each point runs for a steady state: a timed
    // warm-up (unless one is given) and a duration, extended as needed.
    // A trace's own end bounds its replay.
    let steady_bounds =
        a.shape.requests.is_none() && a.shape.duration.is_none() && a.stages.is_none() && a.trace.is_none();
    let mut a = a;
    if a.estimate {
        a.shape.seed = a.shape.seed.fixed_unless_given();
    }
    if steady_bounds {
        a.shape.duration = Some(POINT_DURATION);
        if matches!(a.shape.warmup, crate::cli::WarmupArg::Requests(0)) {
            a.shape.warmup = crate::cli::WarmupArg::Time(POINT_WARMUP);
        }
    }
    if a.estimate {
        setup::no_images(&a.workload, "sweep --estimate")?;
    }
    let loaded = a.trace.as_deref().map(|p| setup::read_trace(p, 1.0, a.trace_format)).transpose()?;
    let trace = match &loaded {
        Some(t) => {
            for n in &t.notes {
                goodput_core::tell!("{n}");
            }
            let file = a.trace.as_deref().map_or(String::new(), |p| p.display().to_string());
            let Some(rate) = setup::trace_rate(&t.entries, a.shape.requests, setup::warmup_requests(&a.shape)) else {
                bail!(
                    "--trace {file}: every request of it is sent at the same instant, so it has no rate to replay at \
                     speeds: give a trace whose requests come over time, or bench --trace to send it at once"
                );
            };
            Some(SweepTrace { entries: t.entries.clone(), file, rate })
        }
        None => None,
    };
    let (workload, tokenizer, workload_config) = setup::workload(&a.workload, a.shape.seed.value, loaded)?;
    let workload =
        setup::with_images(workload, &a.workload, a.shape.turns.is_some(), a.target.api, a.shape.seed.value)?;
    let mut opts = setup::analysis_options(&a.output.percentiles.0, &a.judge)?;
    setup::check_fail_on_slo(&a.judge, &opts)?;
    setup::check_scored_in(&a.workload, &opts, a.estimate.then_some("sweep --estimate"))?;
    let until = crate::until::spec(&a.until, &opts)?;
    if until.is_some() && a.stages.is_some() {
        bail!(
            "--until and --stop-on-slo end a point when its answer is known, and --stages is one run of changing \
             load, not points: drop them, or --stages"
        );
    }
    let mut inputs = a.workload.inputs();
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    inputs.extend(a.hw.calibration.as_deref().map(|p| ("--calibration", p)));
    inputs.extend(a.target.model.as_deref().and_then(|m| output::named_file("--model", m)));
    inputs.extend(output::named_file("--sim-model", &a.sim.sim_model));
    output::check_outputs(&a.output, &inputs)?;
    let (runner, target, engine_config) = if a.estimate {
        if a.target.url.is_some() {
            bail!("--estimate sweeps the simulated engine; drop --url, or drop --estimate to sweep the server");
        }
        let engine = EngineArgs {
            engine_model: a.target.model.clone().unwrap_or_else(|| DEFAULT_ENGINE_MODEL.into()),
            hw: a.hw.clone(),
        };
        virtual_point::refuse_unused_sizes(&a.hw, a.given.has("tp"), a.given.has("ep"))?;
        let cfg = EngineConfig::try_from(&engine)?;
        crate::estimate::refuse_other_gpus(&a.judge, &cfg)?;
        if !a.output.quiet {
            for note in virtual_point::setup_notes(&a.hw.precision, &cfg) {
                goodput_core::tell!("{note}");
            }
        }
        let prompts = virtual_point::prompt_kind(a.target.api);
        virtual_point::check_context(&cfg, &workload, prompts, "--model picks another")?;
        let tail = virtual_point::context_tail_warning(&cfg, &workload, prompts);
        for w in virtual_point::clamp_warnings(&workload)?.into_iter().chain(tail) {
            goodput_core::tell!("{w}");
        }
        opts = setup::analysis_options_for(&a.output.percentiles.0, &a.judge, cfg.gpus())?;
        let target = virtual_point::target_of(&cfg);
        let ec = EngineSettings::from(&cfg);
        (Runner::Virtual { cfg: Box::new(cfg), prompts }, target, Some(ec))
    } else {
        crate::target::check_embedded_context(&a.target, &a.sim, &workload)?;
        // The length check bench makes: a spec mostly held at 1 token had
        // been swept with no word.
        for w in virtual_point::clamp_warnings(&workload)? {
            goodput_core::tell!("{w}");
        }
        opts = setup::analysis_options_for(
            &a.output.percentiles.0,
            &a.judge,
            crate::target::default_gpus(&a.target, &a.sim, &a.judge)?,
        )?;
        let cancel = setup::cancellation(&a.shape);
        let quality = setup::quality_options(&a.workload);
        let target =
            crate::target::connect(&a.target, &a.sim, tokenizer, a.workload.ignore_eos, cancel, quality).await?;
        let t = target.target();
        let interrupt = match shared.interrupt {
            Some(i) => i,
            None => Interrupt::install("the sweep", a.target.grace),
        };
        (Runner::Http { target: Box::new(target), interrupt }, t, None)
    };
    // Sweep's cap on requests in flight is --max-concurrency (it refuses
    // -c): its points' verdicts name it.
    opts.stability.cap_flag = "--max-concurrency";
    let (label, meta) = setup::tags(&a.output);
    let config = SweepConfig {
        mode: mode(&a).into(),
        estimate: a.estimate,
        engine: engine_config,
        workload: workload_config.clone(),
        requests_per_point: a.shape.requests,
        duration_per_point: a.shape.duration.map(|d| humantime::format_duration(d).to_string()),
        max_concurrency: a.max_concurrency,
        seed: Some(a.shape.seed.value),
        attainment_target: opts
            .slo
            .as_ref()
            .map_or(goodput_core::analysis::slo::DEFAULT_ATTAINMENT, |s| s.attainment_target()),
        percentiles: a.output.percentiles.0.clone(),
        judge: setup::judge_config(&opts),
        label,
        meta,
        extra: Default::default(),
    };
    if !a.output.quiet {
        // The model's name may be the server's: shown as text.
        let esc = goodput_report::escape::terminal;
        goodput_core::tell!(
            "goodput sweep → {} · model {} · seed {}{}",
            esc(&target.url),
            esc(&target.model),
            a.shape.seed.value,
            if a.shape.seed.drawn { " (drawn; each point draws its own from it, and --seed repeats them)" } else { "" }
        );
        if !a.estimate {
            let span = trace.as_ref().and_then(|t| t.entries.iter().map(|e| e.at).max());
            if let Some(t) = expected_duration(&a, steady_bounds, span) {
                goodput_core::tell!("this sweep runs {t}");
            }
        }
    }
    Ok(Sweep {
        runner,
        trace,
        workload: Arc::new(workload),
        workload_config,
        opts,
        args: a,
        points: Vec::new(),
        started_unix_s,
        config,
        target,
        steady_bounds,
        runs: shared.first_run,
        held: SweepSeries::default(),
        reset: shared.reset,
        until,
        told_failure: Default::default(),
        storms: Vec::new(),
        not_run: Vec::new(),
    })
}

/// Gives a point that completed no measured request (every one failed or
/// was cancelled, or the sweep was cut before its window) the verdict
/// "no completed requests", not steady: it had none, and read as neither
/// steady nor not.
fn mark_no_completions(r: &mut goodput_core::RunResult) {
    let q = &r.summary.requests;
    if q.completed == 0 && r.summary.stability.is_none() {
        let open_loop = r.config.load.as_ref().is_some_and(|l| l.rate.is_some() || l.trace.is_some());
        r.summary.stability =
            Some(goodput_core::analysis::stability::no_completions(q.sent, q.failed, q.cancelled, open_loop));
    }
}

/// The exit code a finished sweep's document calls for: 1 when no point
/// completed a request, 3 when none met the SLO (--fail-on-slo), 4 when no
/// steady point was left to recommend or the client itself stalled while a
/// point's requests were due or in flight (--fail-on-unsteady), as bench's
/// gate fails a run.
pub(crate) fn exit_code(doc: &SweepResult, judge: &crate::cli::JudgeArgs) -> ExitCode {
    if doc.points.iter().all(|p| p.result.summary.requests.completed == 0) {
        goodput_core::tell!("error: no point completed a request");
        return ExitCode::from(1);
    }
    if judge.fail_on_slo && doc.analysis.highest_load_meeting_slo.is_none() {
        // Loads that met it but measured no steady state are not counted:
        // said so, with the fix (it had read as if every load missed).
        let met_unsteady = doc
            .points
            .iter()
            .filter(|p| p.result.slo.as_ref().is_some_and(|s| s.pass))
            .filter(|p| !goodput_core::doc::sweep::steady(&p.result))
            .count();
        if met_unsteady > 0 {
            goodput_core::tell!(
                "error: no steady load met the SLO (--fail-on-slo): {met_unsteady} of {} met it, but measured no \
                 steady state, so none counts; give each point more requests (-n) or a longer --duration",
                doc.points.len()
            );
        } else {
            goodput_core::tell!("error: no load met the SLO (--fail-on-slo)");
        }
        return ExitCode::from(3);
    }
    if let Some(why) = judge.fail_on_unsteady.then(|| stalled_points(&doc.points)).flatten() {
        goodput_core::tell!("error: {why} (--fail-on-unsteady)");
        return ExitCode::from(4);
    }
    // The recommended point is steady by construction: what can fail is
    // that no steady point was left to recommend.
    let unsteady = doc.points.iter().filter(|p| !steady(&p.result)).count();
    if judge.fail_on_unsteady && doc.analysis.recommended.is_none() && unsteady > 0 {
        goodput_core::tell!(
            "error: no steady point to recommend ({unsteady} of {} points were not steady) (--fail-on-unsteady)",
            doc.points.len()
        );
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}

/// The points the client itself stalled in while requests were due or in
/// flight, in words (their times are bounds, not the server's), or `None`.
fn stalled_points(points: &[SweepPoint]) -> Option<String> {
    let stalled: Vec<String> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| crate::output::client_stalled(&p.result).map(|why| format!("point {} ({why})", i + 1)))
        .collect();
    (!stalled.is_empty()).then(|| {
        format!(
            "{} of {} points were measured by a client that stalled: {}",
            stalled.len(),
            points.len(),
            stalled.join("; ")
        )
    })
}

/// The sweep's mode, as its config names it.
fn mode(a: &SweepArgs) -> &'static str {
    if a.auto {
        "auto"
    } else if a.stages.is_some() {
        "stages"
    } else if a.rate.is_some() {
        "rate"
    } else if a.trace.is_some() {
        "trace"
    } else {
        "concurrency"
    }
}

/// The arguments' own consistency, before anything is set up.
fn check_args(a: &SweepArgs) -> Result<()> {
    if a.concurrency.is_none() && a.rate.is_none() && !a.auto && a.stages.is_none() && a.trace.is_none() {
        bail!(
            "say which loads to run: --concurrency 1,2,4,8, --rate 1,2,4, --auto, --stages 10/2m,20/2m or --trace \
             FILE --trace-speed 0.5,1,2"
        );
    }
    if a.stages.is_some() && (a.shape.requests.is_some() || a.shape.duration.is_some() || a.shape.turns.is_some()) {
        bail!("--stages gives each stage its time: drop -n, --duration and --turns");
    }
    setup::arrival(&a.shape)?;
    let speeds = a.trace_speed.as_deref().unwrap_or_default();
    if let Some(bad) = speeds.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        bail!("--trace-speed {bad}: each speed must be a positive number (2 replays the trace twice as fast)");
    }
    if let Some(s) = speeds.iter().enumerate().find_map(|(i, s)| speeds[..i].contains(s).then_some(s)) {
        bail!("--trace-speed names {s} twice: give each speed once");
    }
    if a.trace.is_some() && (a.shape.arrival != crate::cli::ArrivalArg::Poisson || a.shape.burstiness.is_some()) {
        bail!(
            "--arrival and --burstiness shape a schedule of their own, and --trace replays the trace's send times: \
             drop --arrival and --burstiness (--trace-speed scales the trace's gaps)"
        );
    }
    repeat::check(a)?;
    if a.max_concurrency == 0 || a.points == 0 {
        bail!("--max-concurrency and --points must be at least 1");
    }
    // 100,000 had run for minutes in gigabytes, most of its points at one rate.
    if a.points > MAX_AUTO_POINTS {
        bail!("--points {}: --auto spreads at most {MAX_AUTO_POINTS} rates between its baseline and ceiling", a.points);
    }
    // Flags another mode reads, given to this one, were dropped in silence.
    let open_loop =
        a.auto || a.rate.is_some() || a.trace.is_some() || a.stages.as_ref().is_some_and(|s| !s.concurrency);
    if a.given.has("points") && !a.auto {
        bail!("--points spreads --auto's rates between its baseline and ceiling: drop it, or sweep with --auto");
    }
    if a.given.has("max_concurrency") && !open_loop {
        bail!(
            "--max-concurrency caps --auto's ceiling and the requests in flight of open-loop points (--rate, rate \
             --stages); a closed loop's users are its own cap: drop it"
        );
    }
    if a.given.has("search_steps") && a.stages.is_some() {
        bail!("--search-steps places points between a sweep's loads, and --stages runs the stages given: drop it");
    }
    if let Some(flag) =
        a.given.first(&[("--arrival", "arrival"), ("--burstiness", "burstiness")]).filter(|_| !open_loop)
    {
        bail!(
            "{flag} shapes open-loop arrivals (--rate, --auto, rate --stages); a closed loop's users send as their \
             requests end: drop it"
        );
    }
    if a.workload.repeat > 1 {
        bail!("--repeat belongs to one run (goodput bench): a sweep's points would each repeat their own prompts");
    }
    // Each point's records go to a file of their own beside the name given
    // (it had made files named `-.point00.jsonl`).
    if a.output.records.as_deref() == Some(std::path::Path::new("-")) {
        bail!(
            "--records - is standard output, and a sweep writes one records file a point (NAME.point00.jsonl, …): \
             give a file name, e.g. --records records.jsonl"
        );
    }
    crate::pooling::check(&a.target, &a.workload, &a.shape, false)?;
    if a.estimate {
        setup::no_answers(&a.workload, "sweep --estimate")?;
        crate::pooling::refuse_virtual(a.target.api, "sweep --estimate")?;
    }
    Ok(())
}
