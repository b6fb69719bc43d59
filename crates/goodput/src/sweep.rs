//! `goodput sweep`: a series of loads against a server (or, with
//! `--estimate`, the simulated engine in virtual time). Each point is a full
//! run; the document is rewritten after every point so an interrupted sweep
//! keeps what it measured; the analysis names saturation, the best goodput,
//! the highest load that meets the SLO (found by bisection) and the point
//! to pick.

use crate::cli::{SweepArgs, DEFAULT_ENGINE_MODEL};
use crate::common;
use crate::point::{run_point, Interrupt, Point};
use crate::target::HttpTarget;
use crate::virtual_point;
use crate::{output, setup};
use anyhow::{bail, Result};
use goodput_core::config::WorkloadConfig;
use goodput_core::sweep::{analyze_sweep, intensity, meets_slo, Load, SweepPoint, SweepResult};
use goodput_core::{AnalysisOptions, RunConfig, SweepConfig, Target, SCHEMA};
use goodput_load::{LoadPlan, Workload};
use goodput_report::records::RecordFile;
use goodput_report::terminal::sweep as sweep_table;
use goodput_sim::engine::{EngineConfig, PromptKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Where the points run.
enum Runner {
    Http { target: Box<HttpTarget>, interrupt: Interrupt },
    Virtual { cfg: Box<EngineConfig>, prompts: PromptKind },
}

struct Sweep {
    runner: Runner,
    workload: Arc<Workload>,
    workload_config: WorkloadConfig,
    opts: AnalysisOptions,
    args: SweepArgs,
    points: Vec<SweepPoint>,
    started_unix_s: f64,
    config: SweepConfig,
    target: Target,
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
            self.run(load, "grid").await?;
        }
        Ok(())
    }

    /// `--auto`: a baseline of one user, the ceiling at `--max-concurrency`,
    /// and `--points` rates spread between their throughputs.
    async fn run_auto(&mut self) -> Result<()> {
        if !self.args.auto || self.stopped() {
            return Ok(());
        }
        let base = self.run(Load::Concurrency(1), "baseline").await?.result.summary.throughput.requests_per_s;
        let ceiling = if self.stopped() {
            None
        } else {
            let c = self.args.max_concurrency;
            Some(self.run(Load::Concurrency(c), "ceiling").await?.result.summary.throughput.requests_per_s)
        };
        if let Some(ceil) = ceiling.filter(|&c| c > base) {
            let k = self.args.points;
            for i in 1..=k {
                if self.stopped() {
                    break;
                }
                let r = base + (ceil - base) * i as f64 / (k + 1) as f64;
                self.run(Load::Rate(round_rate(r)), "spread").await?;
            }
        }
        Ok(())
    }

    /// Says where the document went, and writes the renderings asked for.
    fn export(&self, doc: &SweepResult) -> Result<()> {
        if let Some(p) = &self.args.output.output {
            if !self.args.output.quiet {
                eprintln!("sweep written to {}", p.display());
            }
        }
        for (format, dest) in self.args.output.exports.targets() {
            for f in goodput_report::export_sweep(format, doc, &dest)? {
                if !self.args.output.quiet {
                    eprintln!("{} written to {}", format.exporter().name(), f.display());
                }
            }
        }
        Ok(())
    }

    fn plan(&self, load: Load) -> Result<LoadPlan> {
        let a = &self.args;
        match load {
            Load::Concurrency(c) => setup::shaped_plan(&a.shape, Some(c as usize), None, None, a.target.grace),
            Load::Rate(r) => {
                setup::shaped_plan(&a.shape, Some(a.max_concurrency as usize), Some(r), None, a.target.grace)
            }
        }
    }

    fn stopped(&self) -> bool {
        matches!(&self.runner, Runner::Http { interrupt, .. } if interrupt.stopped())
    }

    /// Runs one point and writes the document.
    async fn run(&mut self, load: Load, origin: &str) -> Result<&SweepPoint> {
        let plan = self.plan(load)?;
        // A point's load as bench writes it, so that it is judged (and
        // warned about) as the same load run alone would be.
        let load_args = load_args(&plan, &self.args.shape);
        let point_config = RunConfig {
            load: Some(setup::load_config(&plan, &load_args)),
            workload: Some(self.workload_config.clone()),
            ..RunConfig::default()
        };
        let result = match &self.runner {
            Runner::Http { target, interrupt } => {
                let run_id = goodput_report::records::new_run_id();
                let records = match &self.args.output.records {
                    Some(p) => Some(RecordFile::create(&point_path(p, self.points.len()), &run_id)?),
                    None => None,
                };
                let point = Point {
                    title: format!(
                        " goodput sweep → {} · point {} · {} ",
                        target.base,
                        self.points.len() + 1,
                        load.label()
                    ),
                    plan: &plan,
                    workload: self.workload.clone(),
                    config: point_config,
                    run_id,
                    records,
                    live: None,
                    start_at: None,
                    control: interrupt.control(),
                };
                run_point(target, point, &self.args.metrics, &self.args.output, &self.opts).await?.0
            }
            Runner::Virtual { cfg, prompts } => {
                let (mut r, recs) = virtual_point::estimate_result(
                    virtual_point::VirtualServer { engine: cfg, prompts: *prompts },
                    &plan,
                    &load_args,
                    &self.workload,
                    self.workload_config.clone(),
                    &self.opts,
                    self.args.output.include_requests,
                )?;
                if let Some(p) = &self.args.output.records {
                    let mut f = RecordFile::create(&point_path(p, self.points.len()), &r.run_id)?;
                    for rec in &recs {
                        f.write(rec);
                    }
                }
                r.config = point_config;
                r
            }
        };
        if self.points.is_empty() {
            crate::output::say(&format!("{}\n", sweep_table::row_header(self.args.shape.turns.is_some())));
        }
        crate::output::say(&format!(
            "{}\n",
            sweep_table::row(load, origin, &result, self.opts.slo.is_some(), self.args.attainment)
        ));
        self.points.push(SweepPoint { load, origin: origin.into(), result });
        self.write(false)?;
        Ok(self.points.last().expect("just pushed"))
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
            analysis: analyze_sweep(&self.points, self.args.attainment),
        }
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
        self.points[i].result.summary.throughput.requests_per_s
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
            let meets = |i: usize| meets_slo(&self.points[i].result, self.args.attainment) == Some(true);
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

fn round_rate(r: f64) -> f64 {
    (r * 1000.0).round() / 1000.0
}

fn point_path(p: &std::path::Path, i: usize) -> PathBuf {
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "records".into());
    let ext = p.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| "jsonl".into());
    p.with_file_name(format!("{stem}.point{i:02}.{ext}"))
}

/// The LoadArgs a plan came from, for the estimate's config block.
fn load_args(p: &LoadPlan, shape: &crate::cli::ShapeArgs) -> crate::cli::LoadArgs {
    crate::cli::LoadArgs {
        concurrency: p.concurrency,
        rate: p.rate.map(|r| r.0),
        trace: None,
        trace_speed: 1.0,
        shape: shape.clone(),
    }
}

pub async fn sweep(a: SweepArgs) -> Result<ExitCode> {
    let started_unix_s = common::unix_now();
    if a.concurrency.is_none() && a.rate.is_none() && !a.auto {
        bail!("say which loads to run: --concurrency 1,2,4,8, --rate 1,2,4 or --auto");
    }
    setup::arrival(&a.shape)?;
    if !(0.0..=1.0).contains(&a.attainment) {
        bail!("--attainment is a share between 0 and 1, not {}", a.attainment);
    }
    if a.max_concurrency == 0 || a.points == 0 {
        bail!("--max-concurrency and --points must be at least 1");
    }
    if a.workload.repeat > 1 {
        bail!("--repeat belongs to one run (goodput bench): a sweep's points would each repeat their own prompts");
    }
    if a.estimate {
        setup::no_answers(&a.workload, "sweep --estimate")?;
    }
    let (workload, tokenizer, workload_config) = setup::workload(&a.workload, a.shape.seed, None)?;
    let mut opts = setup::analysis_options(&a.output.percentiles.0, &a.judge)?;
    output::check_outputs(&a.output)?;
    let (runner, target, engine_config) = if a.estimate {
        if a.target.url.is_some() {
            bail!("--estimate sweeps the simulated engine; drop --url, or drop --estimate to sweep the server");
        }
        let cfg = virtual_point::engine_config(a.target.model.as_deref().unwrap_or(DEFAULT_ENGINE_MODEL), &a.hw)?;
        opts = setup::analysis_options_for(&a.output.percentiles.0, &a.judge, cfg.tp)?;
        let target = virtual_point::target_of(&cfg);
        let ec = virtual_point::engine_settings(&cfg);
        let prompts = virtual_point::prompt_kind(a.target.api);
        (Runner::Virtual { cfg: Box::new(cfg), prompts }, target, Some(ec))
    } else {
        let cancel = setup::cancellation(&a.shape);
        let quality = setup::quality_options(&a.workload);
        let target =
            crate::target::connect(&a.target, &a.sim, tokenizer, a.workload.ignore_eos, cancel, quality).await?;
        let t = target.target();
        let interrupt = Interrupt::install("the sweep", a.target.grace);
        (Runner::Http { target: Box::new(target), interrupt }, t, None)
    };
    let (label, meta) = setup::tags(&a.output);
    let config = SweepConfig {
        mode: if a.auto {
            "auto"
        } else if a.rate.is_some() {
            "rate"
        } else {
            "concurrency"
        }
        .into(),
        estimate: a.estimate,
        engine: engine_config,
        workload: workload_config.clone(),
        requests_per_point: a.shape.requests,
        duration_per_point: a.shape.duration.map(|d| humantime::format_duration(d).to_string()),
        max_concurrency: a.max_concurrency,
        attainment_target: a.attainment,
        percentiles: a.output.percentiles.0.clone(),
        judge: setup::judge_config(&opts),
        label,
        meta,
        extra: Default::default(),
    };
    if !a.output.quiet {
        eprintln!("goodput sweep → {} · model {}", target.url, target.model);
    }
    let mut sw = Sweep {
        runner,
        workload: Arc::new(workload),
        workload_config,
        opts,
        args: a,
        points: Vec::new(),
        started_unix_s,
        config,
        target,
    };

    sw.run_grid().await?;
    sw.run_auto().await?;
    sw.search().await?;

    let interrupted = sw.stopped();
    let doc = sw.document(interrupted);
    sw.write(interrupted)?;
    crate::output::say(&sweep_table::analysis_lines(&doc));
    sw.export(&doc)?;
    if doc.points.iter().all(|p| p.result.summary.requests.completed == 0) {
        eprintln!("error: no point completed a request");
        return Ok(ExitCode::from(1));
    }
    if sw.args.judge.fail_on_slo && doc.analysis.highest_load_meeting_slo.is_none() {
        eprintln!("error: no load met the SLO (--fail-on-slo)");
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}
