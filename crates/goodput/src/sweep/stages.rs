//! `sweep --stages`: one continuous open-loop run in stages, each judged as a point.

use super::*;
use goodput_core::assemble::attach_server_side;

impl Sweep {
    /// `--stages`: one continuous open-loop run whose rate steps from stage
    /// to stage (each stage's arrivals drawn as a point's would be, from
    /// the seed and the stage's number), then each stage's requests (by
    /// due time) analysed as a point, those of the stages before it kept
    /// as warm-up: they still load the server, and a backlog they left is
    /// the stage's to clear.
    pub(super) async fn run_stages(&mut self) -> Result<()> {
        let stages = self.args.stages.clone().expect("stages mode").0;
        let arrival = setup::arrival(&self.args.shape)?;
        let (mut times, mut starts, mut from) = (Vec::new(), Vec::new(), Duration::ZERO);
        for (i, &(rate, d)) in stages.iter().enumerate() {
            starts.push(from);
            let sched = goodput_load::schedule::ArrivalSchedule::new(rate, arrival, self.args.shape.seed + i as u64)
                .map_err(|e| anyhow::anyhow!(e))?;
            times.extend(sched.take_while(|&at| at < d).map(|at| from + at));
            from += d;
        }
        let (first, total) = (stages[0].0, from);
        let shape = crate::cli::ShapeArgs { duration: Some(total), requests: None, ..self.args.shape.clone() };
        let mut plan = setup::shaped_plan(
            &shape,
            Some(self.args.max_concurrency as usize),
            Some(first),
            None,
            self.args.target.grace,
        )?;
        (plan.rate, plan.duration, plan.requests) = (None, None, None);
        plan.trace = Some(Arc::new(times));
        let (cap, shape, workload) = (self.args.max_concurrency, self.args.shape.clone(), self.workload_config.clone());
        let config = move |rate: f64, d: Duration| RunConfig {
            load: Some(goodput_core::config::LoadConfig {
                rate: Some(goodput_core::config::Rate(rate)),
                duration: Some(humantime::format_duration(d).to_string()),
                concurrency: Some(cap),
                arrival: Some(format!("{:?}", shape.arrival).to_lowercase()),
                burstiness: shape.burstiness,
                seed: Some(shape.seed),
                ..Default::default()
            }),
            workload: Some(workload.clone()),
            ..RunConfig::default()
        };
        let title = format!("{} stages", stages.len());
        let (whole, recs) =
            self.execute(&plan, title, config(first, total), self.args.output.records.clone(), false).await?;
        for (i, &(rate, d)) in stages.iter().enumerate() {
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
            let mut result = goodput_core::assemble::assemble(
                goodput_core::assemble::Assembly {
                    tool: common::tool(),
                    kind: &whole.kind,
                    run_id: whole.run_id.clone(),
                    started_unix_s: whole.started_unix_s,
                    interrupted: whole.interrupted,
                    config: config(rate, d),
                    target: whole.target.clone(),
                    include_requests: self.args.output.include_requests,
                },
                &stage,
                &self.opts,
            );
            result.engine = whole.engine.clone();
            let cap = Some(self.args.max_concurrency as usize);
            let signals = whole.server_signals.clone().filter(|s| !s.samples.is_empty());
            attach_server_side(&mut result, signals.into(), &stage, cap);
            self.record(Load::Rate(rate), "stage", result)?;
        }
        Ok(())
    }
}
