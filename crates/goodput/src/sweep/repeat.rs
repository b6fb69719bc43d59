//! `sweep --runs N`: each point repeated N times at the load and length its
//! first run settled on (docs/metrics.md, "Spread across runs"). Each point
//! is repeated rather than the whole sweep: an `--auto` sweep and its
//! search pick their next load from the points before, so whole sweeps
//! repeated would not measure the same loads, and their spreads could not
//! be set side by side. The point's result is its first run, with the
//! `repeats` block of all N; the sweep's analysis (saturation, the
//! recommended point, the search) reads the first runs, as it would
//! without `--runs`.

use super::Sweep;
use crate::cli::SweepArgs;
use anyhow::{bail, Result};
use goodput_core::doc::sweep::Load;
use goodput_core::RunResult;
use std::time::Duration;

/// Refuses `--runs` where no point is run by [`Sweep::run`]: stages are
/// one continuous run.
pub(super) fn check(a: &SweepArgs) -> Result<()> {
    if a.runs.runs > 1 && a.stages.is_some() {
        bail!(
            "--runs {} repeats each point of a sweep, and --stages is one run in stages: repeat the whole sweep \
             instead, or leave --runs out",
            a.runs.runs
        );
    }
    Ok(())
}

impl Sweep {
    /// `first`, the point's first run (made with the sweep's run `k`,
    /// `duration` long), with the `repeats` block of it and `--runs` − 1
    /// runs more, each with the next of the sweep's seeds (or run `k`'s,
    /// with `--same-seed`). Only the first run writes `--records`, and only
    /// its requests stay in the document.
    pub(super) async fn repeat_point(
        &mut self,
        load: Load,
        duration: Option<Duration>,
        first: RunResult,
    ) -> Result<RunResult> {
        let n = self.args.runs.runs;
        // A run a failure storm stopped is not made again: each would meet
        // the same failing server, and take its seconds to say so.
        if n <= 1 || crate::bench::stormed(&first) {
            return Ok(first);
        }
        let same = self.args.runs.same_seed;
        let k = self.runs - 1;
        let mut seeds = vec![self.args.shape.seed.of_run(k)];
        let mut results = vec![first];
        let records = self.args.output.records.take();
        let include = std::mem::replace(&mut self.args.output.include_requests, false);
        let mut made = Ok(());
        for _ in 1..n {
            if self.stopped() {
                break;
            }
            if same {
                self.runs = k;
            }
            seeds.push(self.args.shape.seed.of_run(self.runs));
            match self.run_once(load, duration, true).await {
                Ok((r, _)) if crate::bench::stormed(&r) => {
                    goodput_core::tell!(
                        "{}: a failure storm stopped run {} of {n}, so the runs after it were not made",
                        load.label(),
                        results.len() + 1
                    );
                    self.stormed_at(load);
                    results.push(r);
                    break;
                }
                Ok((r, _)) => results.push(r),
                Err(e) => {
                    made = Err(e);
                    break;
                }
            }
        }
        if same {
            self.runs = self.runs.max(k + 1);
        }
        self.args.output.records = records;
        self.args.output.include_requests = include;
        made?;
        let seeds = &seeds[..results.len()];
        let mut rep = goodput_report::repeats::build(&results, n, seeds, same, self.args.judge.confidence);
        if let Some(k) = results.iter().position(crate::bench::stormed) {
            rep.notes.push(format!("a failure storm stopped run {} of {n}: the runs after it were not made", k + 1));
        } else if results.len() < n as usize {
            rep.notes.push("the sweep was stopped".into());
        }
        if !self.args.output.quiet {
            goodput_core::tell!("{}: {}", load.label(), goodput_report::repeats::line(&rep));
        }
        let mut top = results.into_iter().next().expect("the first run");
        top.repeats = Some(rep);
        Ok(top)
    }
}
