//! `goodput report`: re-analyse a saved run from its records with other
//! SLOs, percentiles or prices. The same `analyze` as the live run, on the
//! same records (times saved as integer nanoseconds), gives the same numbers.

use crate::cli::ReportArgs;
use crate::common;
use anyhow::{anyhow, bail, Result};
use std::process::ExitCode;

pub fn report(a: ReportArgs) -> Result<ExitCode> {
    let run = goodput_report::read_json(&a.run).map_err(|e| anyhow!(e))?;
    let records = match (&a.records, &run.requests) {
        (Some(p), _) => common::read_records(p)?,
        (None, Some(r)) => r.clone(),
        (None, None) => bail!(
            "{} holds no per-request records: pass --records FILE (written by --records), or save runs with --include-requests",
            a.run.display()
        ),
    };
    let percentiles = match &a.percentiles {
        Some(p) => p.0.clone(),
        None => run.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect(),
    };
    let mut opts = common::analysis_options(&percentiles, &a.judge)?;
    if a.judge.slo.is_none() {
        // Keep the run's own SLO when no other is given.
        if let Some(spec) = run.config.pointer("/judge/slo").and_then(|v| v.as_str()) {
            opts.slo = Some(spec.parse().map_err(|e: String| anyhow!("the saved SLO '{spec}': {e}"))?);
        }
    }
    let mut config = run.config.clone();
    config["percentiles"] = serde_json::json!(percentiles);
    config["judge"] = common::judge_config(&a.judge);
    if a.judge.slo.is_none() {
        config["judge"]["slo"] = serde_json::json!(opts.slo.as_ref().map(|s| s.to_string()));
    }
    let mut result = common::assemble(
        common::Assembly {
            kind: &run.kind,
            started_unix_s: run.started_unix_s,
            interrupted: run.interrupted,
            config,
            target: run.target.clone(),
            include_requests: run.requests.is_some(),
        },
        &records,
        &opts,
    );
    result.engine = run.engine.clone();
    result.server_signals = run.server_signals.clone();
    let out = crate::cli::OutputArgs {
        percentiles: crate::cli::PercentileList(percentiles),
        records: None,
        output: a.output.clone(),
        include_requests: false,
        quiet: false,
    };
    common::finish(&result, &out, &a.judge, &records)
}
