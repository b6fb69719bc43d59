//! `sweep --stages`: one continuous run in stages (of rates or of users), each judged as a point.

use super::*;
use crate::cli::Stages;
use goodput_core::analysis::assemble::attach_server_side;
use goodput_core::prometheus::scrape::ClientLoad;

/// The most requests a live `--stages` run of rates sends: each one's
/// record is held until the stages are judged (about 1–3 KB each).
const MAX_STAGED_REQUESTS: u64 = 10_000_000;

impl Sweep {
    /// `--stages`: one continuous run whose load steps from stage to
    /// stage, then each stage's requests (by due time) analysed as a
    /// point, those of the stages before it kept as warm-up: they still
    /// load the server, and a backlog they left is the stage's to clear.
    /// Rates step as open-loop arrivals (each stage's drawn as a point's
    /// would be, from the seed and the stage's number); users step as a
    /// closed loop's users join, or leave as their requests end.
    pub(super) async fn run_stages(&mut self) -> Result<()> {
        let Stages { stages, concurrency: by_users } = self.args.stages.clone().expect("stages mode");
        let mut starts = Vec::new();
        let total = stages.iter().fold(Duration::ZERO, |from, s| {
            starts.push(from);
            from + s.1
        });
        let first = stages[0].0;
        // What is due in the warm-up or the ramp-up is warm-up: one as long
        // as the stages leaves none of them measured.
        let ramp = self.args.shape.ramp_up.unwrap_or_default();
        let warm = match self.args.shape.warmup {
            crate::cli::WarmupArg::Time(d) => d,
            crate::cli::WarmupArg::Requests(_) => Duration::ZERO,
        };
        if warm.max(ramp) >= total {
            let (flag, d) = if ramp >= warm { ("--ramp-up", ramp) } else { ("--warmup", warm) };
            bail!(
                "the {flag} of {} is as long as the stages ({} in all), and what is due in it is warm-up, so no stage \
                 would be measured: give a shorter {flag}, or longer stages",
                goodput_core::util::duration_text(d),
                goodput_core::util::duration_text(total)
            );
        }
        let shape = crate::cli::ShapeArgs { duration: Some(total), requests: None, ..self.args.shape.clone() };
        let grace = self.args.target.grace;
        let plan = if by_users {
            let mut plan = setup::shaped_plan(&shape, Some(first as usize), None, None, grace)?;
            plan.requests = None;
            plan.duration = Some(total.saturating_sub(plan.warmup_time));
            plan.user_steps = stages.iter().zip(&starts).skip(1).map(|(s, &at)| (at, s.0 as usize)).collect();
            plan
        } else {
            let arrival = setup::arrival(&self.args.shape)?;
            // The run keeps every request's record (a virtual one its
            // lengths too): checked as the arrivals are drawn, not after.
            let most = if self.args.estimate { crate::virtual_point::MAX_VIRTUAL_UNITS } else { MAX_STAGED_REQUESTS };
            let mut times = Vec::new();
            for (i, (&(rate, d), &from)) in stages.iter().zip(&starts).enumerate() {
                let seed = self.args.shape.seed.value.wrapping_add(i as u64);
                let sched = goodput_load::schedule::ArrivalSchedule::new(rate, arrival, seed)
                    .map_err(|e| anyhow::anyhow!(e))?;
                let room = (most as usize + 1).saturating_sub(times.len());
                times.extend(sched.take_while(|&at| at < d).map(|at| from + at).take(room));
                if times.len() > most as usize {
                    let expected: f64 = stages.iter().map(|&(r, d)| r * d.as_secs_f64()).sum();
                    bail!(
                        "these stages would send about {expected:.0} requests (each stage's rate × its time), \
                         and the run keeps each one's record in memory: it takes at most {most}{}; give lower \
                         rates or shorter stages (a few thousand requests a stage already give its percentiles)",
                        if self.args.estimate { " in virtual time" } else { "" }
                    );
                }
            }
            let mut plan =
                setup::shaped_plan(&shape, Some(self.args.max_concurrency as usize), Some(first), None, grace)?;
            (plan.rate, plan.duration, plan.requests) = (None, None, None);
            plan.trace = Some(Arc::new(times));
            plan
        };
        // Each stage's config block is the one a point of its load and
        // length would write: its plan's, as bench and sweep points write theirs.
        let (cap, shape, workload) = (self.args.max_concurrency, self.args.shape.clone(), self.workload_config.clone());
        let config = move |load: f64, d: Duration| -> Result<RunConfig> {
            let s = crate::cli::ShapeArgs { duration: Some(d), requests: None, ..shape.clone() };
            let point = if by_users {
                setup::shaped_plan(&s, Some(load as usize), None, None, grace)?
            } else {
                setup::shaped_plan(&s, Some(cap as usize), Some(load), None, grace)?
            };
            Ok(RunConfig {
                load: Some(goodput_core::doc::config::LoadConfig::from(&point)),
                workload: Some(workload.clone()),
                ..RunConfig::default()
            })
        };
        let title = format!("{} stages", stages.len());
        let (whole, recs) = self
            .execute(
                &plan,
                &self.workload,
                title,
                config(first, total)?,
                Keep::records(&self.args.output.records),
                None,
            )
            .await?;
        // The whole run over time, for the page's timeline of the stages.
        self.held.timeline = goodput_report::series::time_series_of(&recs, (whole.window.start_s, whole.window.end_s));
        for (i, &(load, d)) in stages.iter().enumerate() {
            let (from, to) = (starts[i], starts[i] + d);
            let stage: Vec<goodput_core::RequestRecord> = recs
                .iter()
                .filter(|r| r.scheduled < to)
                .map(|r| {
                    let mut r = r.clone();
                    r.warmup |= r.scheduled < from;
                    r
                })
                .collect();
            // A stage still clearing the backlog of the one before it names it.
            let mut opts = self.opts.clone();
            opts.stability.before = i.checked_sub(1).map(|before| {
                let (load, d) = (stages[before].0, goodput_core::util::duration_text(stages[before].1));
                let stage = if by_users { format!("{load} users") } else { format!("{load} req/s") };
                format!("the stage before it ({stage} for {d})")
            });
            let mut result = goodput_core::analysis::assemble::assemble(
                goodput_core::analysis::assemble::Assembly {
                    tool: common::tool(),
                    kind: &whole.kind,
                    run_id: whole.run_id.clone(),
                    started_unix_s: whole.started_unix_s,
                    interrupted: whole.interrupted,
                    config: config(load, d)?,
                    target: whole.target.clone(),
                    include_requests: self.args.output.include_requests,
                },
                &stage,
                &opts,
            );
            result.engine = whole.engine.clone();
            let client = if by_users {
                ClientLoad::closed(load as usize)
            } else {
                ClientLoad::new(Some(self.args.max_concurrency as usize), Some(load), false)
            };
            // The scrapes of the stage's window alone: each stage had held
            // and written the whole run's.
            let signals =
                whole.server_signals.as_ref().filter(|s| !s.samples.is_empty()).map(|s| s.cut_to(&result.window));
            attach_server_side(&mut result, signals.into(), &stage, client);
            result.warnings.extend(kept_scrapes_warnings(&whole));
            let point = if by_users { Load::Concurrency(load as u64) } else { Load::Rate(load) };
            let ttft = goodput_report::series::cdf_of_records(&stage, goodput_report::series::Latency::Ttft);
            self.record(point, "stage", result, Some(ttft))?;
        }
        Ok(())
    }
}

/// The whole run's warnings of what it kept of its scrapes (histograms
/// coarsened, signals summed, scrapes thinned), which each stage's server
/// signals are drawn from: its samples do not say them, and a stage had
/// read a summed or thinned signal without a word.
fn kept_scrapes_warnings(whole: &goodput_core::RunResult) -> Vec<String> {
    use goodput_core::prometheus::scrape::is_kept_scrapes_warning;
    whole.warnings.iter().filter(|w| is_kept_scrapes_warning(w)).cloned().collect()
}
