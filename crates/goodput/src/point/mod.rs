//! One live load point: what `bench` runs once and `sweep` runs per point.
//! The server's metrics are scraped beside it, progress is shown, the
//! client's CPU is metered, records stream to their file, and the result is
//! assembled with the client's cost and the server's signals. The first
//! scrape comes first, then a shard's wait for its `--start-at`
//! ([`start_at`]), and only then does the load's clock start.

mod client_cost;
mod start_at;

use crate::cli::{MetricsArgs, OutputArgs};
use crate::common;
use crate::target::HttpTarget;
use anyhow::Result;
use goodput_core::analysis::assemble::{assemble, Assembly};
use goodput_core::{AnalysisOptions, RequestRecord, RunResult};
use goodput_load::{Control, LoadPlan, Workload};
use goodput_report::read::records::RecordFile;
use std::sync::Arc;

/// What one point is, beside the target and the analysis options.
pub struct Point<'a> {
    /// The line the live view titles itself with.
    pub title: String,
    pub plan: &'a LoadPlan,
    pub workload: Arc<Workload>,
    /// The result's `config`.
    pub config: goodput_core::RunConfig,
    pub run_id: String,
    /// The file records stream to, when asked for.
    pub records: Option<RecordFile>,
    /// goodput's own live metrics (`--prometheus-listen`), when served.
    pub live: Option<Arc<goodput_core::prometheus::live::LiveMetrics>>,
    pub control: Control,
    /// Wait for this wall-clock instant (Unix seconds) before the clock
    /// starts and the first request goes (`--start-at`).
    pub start_at: Option<f64>,
    /// Stopping rules (`--until`, `--stop-on-slo`) that may end it early:
    /// each run of a point starts them afresh.
    pub until: Option<crate::until::Spec>,
}

/// Runs one point against `target` and gives its result and records.
pub async fn run_point(
    target: &HttpTarget,
    p: Point<'_>,
    metrics: &MetricsArgs,
    output: &OutputArgs,
    opts: &AnalysisOptions,
) -> Result<(RunResult, Vec<RequestRecord>)> {
    // The first scrape, before the wait for --start-at and before the
    // load's clock starts: however long it takes, it shifts no request.
    let first_scrape = crate::signals::start(metrics, target.client.http(), &target.root, target.max_buffer).await?;
    if let Some(t) = p.start_at {
        start_at::wait_until(t, &p.control, output.quiet).await;
    }
    if let Some(wait) = crate::setup::long_wait(p.plan) {
        goodput_core::tell!("note: {wait}");
    }
    // The wall-clock time of the records' zero, so that `t_ns` lines up with
    // server logs (taken after the connect, the probes, the first scrape and
    // the wait for --start-at).
    let started_unix_s = common::unix_now();
    let origin = tokio::time::Instant::now();
    // After a wait for --start-at, the scrape before it is no baseline: one
    // is taken as the load starts (its energy had counted the wait's).
    let scraping = first_scrape.map(|f| f.begin(origin, p.start_at.is_some()));
    let progress = crate::progress::Progress::new(p.title, p.plan, &p.control);
    let view = crate::progress::LiveView::start(output.progress, output.quiet, progress.clone(), p.control.clone());
    let rules = p.until.as_ref().map(|s| s.rules(p.plan));
    let until = rules.clone().map(|u| (u, p.control.stop.clone()));
    let sinks = Sinks { records: p.records, live: p.live, progress: Some(progress), until };
    let meter = crate::cpu::Meter::start();
    let res = run_http(target, p.plan, p.workload, p.control, sinks, origin).await;
    if let Some(v) = view {
        v.finish();
    }
    let goodput_load::RunOutput { records: recs, interrupted, stalls, storm, retry_waits, .. } = res?;
    // A stop the rules decided is the run's own end, not an interruption.
    let interrupted = interrupted && !rules.as_ref().is_some_and(|u| u.decided());
    let client_cost = meter.and_then(|m| m.finish(&recs));
    let mut result = assemble(
        Assembly {
            tool: common::tool(),
            kind: "bench",
            run_id: p.run_id,
            started_unix_s,
            interrupted,
            config: p.config,
            target: target.target(),
            include_requests: output.include_requests,
        },
        &recs,
        opts,
    );
    result.stop = Some(crate::until::stop_of(rules.as_deref(), interrupted, p.plan, &recs));
    if let Some(why) = storm {
        // The run's own end, told and kept in the document (bench exits 1).
        goodput_core::tell!("error: {why}");
        result.warnings.push(format!("the run stopped early: {why}"));
        result.stop = Some(goodput_core::analysis::until::Stop {
            reason: goodput_core::analysis::until::StopReason::FailureStorm,
            detail: why,
            at_requests: None,
            looks: None,
        });
    }
    if retry_waits > 0 {
        result.warnings.push(format!(
            "{retry_waits} request(s) were refused with a Retry-After (429 or 503, in seconds or as a date): each one's \
             user waited as asked (a minute at most, and not past the end of sending) before its next send, so the \
             load was lighter than asked"
        ));
    }
    if p.plan.rate.is_none() && p.plan.trace.is_none() {
        result.warnings.extend(unread_retry_after(&recs));
    }
    client_cost::with_client_cost(&mut result, client_cost);
    client_cost::with_client_stalls(&mut result, &stalls, &recs);
    crate::signals::finish(scraping, &mut result, &recs, p.plan.client_load()).await;
    result.warnings.extend(fewer_gpus_than_engines(&result));
    Ok((result, recs))
}

/// Said where the run was priced for fewer GPUs than the engines its
/// server's metrics name (vLLM's `engine` label, a data-parallel rank
/// each): the GPU count is `--gpus`, else 1, and an endpoint of four
/// engines priced as one GPU had read four times too cheap, unsaid.
fn fewer_gpus_than_engines(result: &RunResult) -> Option<String> {
    let gpus = result.cost.as_ref()?.gpus;
    let last = result.server_signals.as_ref()?.samples.last()?;
    let engines = last.signals.engine_labels().len();
    (engines > gpus as usize).then(|| {
        format!(
            "the server's metrics name {engines} engines (vLLM's engine label, one a data-parallel rank), and the \
             cost counts {gpus} GPU{}: give --gpus with the GPUs behind the endpoint (at least {engines}) for a \
             true cost per token",
            if gpus == 1 { "" } else { "s" }
        )
    })
}

/// Where completed records go besides the run's own list.
#[derive(Default)]
struct Sinks {
    pub records: Option<RecordFile>,
    pub live: Option<Arc<goodput_core::prometheus::live::LiveMetrics>>,
    pub progress: Option<Arc<crate::progress::Progress>>,
    /// The run's stopping rules, and the token they stop it with.
    pub until: Option<(Arc<crate::until::Rules>, tokio_util::sync::CancellationToken)>,
}

/// Runs one load over HTTP on a clock starting at `origin`.
async fn run_http(
    target: &HttpTarget,
    plan: &LoadPlan,
    workload: Arc<Workload>,
    control: Control,
    sinks: Sinks,
    origin: tokio::time::Instant,
) -> Result<goodput_load::RunOutput> {
    let Sinks { mut records, live, progress, until } = sinks;
    let sink = move |r: &RequestRecord| {
        if let Some(f) = records.as_mut() {
            f.write(r);
        }
        if let Some(l) = &live {
            l.observe(r);
        }
        if let Some(p) = &progress {
            p.observe(r);
        }
        if let Some((u, stop)) = &until {
            u.observe(r, stop);
        }
    };
    Ok(goodput_load::run_at(plan, target.client.clone(), workload, control, sink, origin).await?)
}

/// Refusals (429 or 503) whose `Retry-After` is neither seconds nor an HTTP
/// date: a closed loop's user sent again at once, as though none had been
/// given. Said with the first such value, which had been passed over
/// without a word.
fn unread_retry_after(recs: &[goodput_core::RequestRecord]) -> Option<String> {
    use goodput_load::runner::{refusal_retry_after, RetryAfter};
    let now = std::time::SystemTime::now();
    let unread: Vec<&str> = recs
        .iter()
        .filter(|r| refusal_retry_after(r, now) == Some(RetryAfter::Unreadable))
        .filter_map(|r| r.retry_after.as_deref())
        .collect();
    let first = unread.first()?;
    Some(format!(
        "{} refusal(s) carried a Retry-After that is neither a number of seconds nor an HTTP date (the first: \
         '{}'), so their users sent again at once: the server's rate limiter may read its own header otherwise",
        unread.len(),
        first.chars().take(60).collect::<String>()
    ))
}
