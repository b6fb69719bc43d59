//! `--until` and `--stop-on-slo`: the options of a run that stops when its
//! answer is known (docs/metrics.md, "Stopping when the answer is known").

use clap::Args;

/// When a run may stop before its --requests or --duration.
#[derive(Debug, Clone, Default, Args)]
pub struct UntilArgs {
    /// Keep sending until each figure's interval (at --confidence) is within this half-width of it, e.g. 'ttft:p99±5%', 'e2e:p50±20ms', 'output_tps±3%' (+- for ±; repeatable or comma-separated), or until --requests/--duration [default cap: 10000 requests or 10 minutes].
    #[arg(long, help_heading = "Stopping")]
    pub until: Vec<String>,
    /// End the run once the --slo verdict is known: every percentile objective's interval (and, with per-request limits, the attainment's; with a mean quality score such as exact>=0.8, its mean's) wholly on one side of its limit, or one wholly on the wrong side. A corpus score (bleu, chrf_corpus) is known only at the run's end: with one, the run never stops as met.
    #[arg(long, help_heading = "Stopping")]
    pub stop_on_slo: bool,
}
