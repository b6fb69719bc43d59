//! One live load point: what `bench` runs once and `sweep` runs per point.
//! The server's metrics are scraped beside it, progress is shown, the
//! client's CPU is metered, records stream to their file, and the result is
//! assembled with the client's cost and the server's signals.

use crate::cli::{MetricsArgs, OutputArgs};
use crate::common;
use crate::target::HttpTarget;
use anyhow::{Context, Result};
use goodput_core::analysis::assemble::{assemble, Assembly};
use goodput_core::{AnalysisOptions, RequestRecord, RunResult};
use goodput_load::{Control, LoadPlan, Workload};
use goodput_report::read::records::RecordFile;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Ctrl-C or SIGTERM for a whole command: once, stop sending (each run's
/// in-flight requests then get its plan's grace, and a sweep runs no further
/// point); twice, cancel them at once. SIGTERM is how Kubernetes stops a pod
/// (SIGKILL follows its grace period) and how `timeout` stops a command, so
/// a run stopped either way still writes its result.
#[derive(Clone)]
pub struct Interrupt {
    stop: CancellationToken,
    abort: CancellationToken,
}

impl Interrupt {
    /// Listens for Ctrl-C and SIGTERM from now on; `what` names what stops
    /// ("the sweep", "the run").
    pub fn install(what: &'static str, grace: Duration) -> Interrupt {
        let i = Interrupt { stop: CancellationToken::new(), abort: CancellationToken::new() };
        let (stop, abort) = (i.stop.clone(), i.abort.clone());
        // Taken over here, before the command goes on, so that a SIGTERM
        // from the first moment is caught rather than ending the process.
        let mut signals = StopSignals::listen();
        tokio::spawn(async move {
            if let Some(name) = signals.next().await {
                eprintln!(
                    "\nstopping {what} ({name}): no new requests; in-flight ones get {} to finish (Ctrl-C or SIGTERM \
                     again to cancel them now)",
                    humantime::format_duration(grace)
                );
                stop.cancel();
                if signals.next().await.is_some() {
                    abort.cancel();
                }
            }
        });
        i
    }

    /// A run's control, stopped and aborted with the command (and able to
    /// be stopped on its own, as the runner does after its grace).
    pub fn control(&self) -> Control {
        Control { stop: self.stop.child_token(), abort: self.abort.child_token(), ..Control::default() }
    }

    pub fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }
}

/// The signals that stop a command: Ctrl-C (SIGINT) and, on Unix, SIGTERM.
pub struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Takes SIGTERM over from now on (Ctrl-C is taken when first awaited).
    pub fn listen() -> StopSignals {
        StopSignals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// The next stop signal's name; `None` when none can come any more.
    pub async fn next(&mut self) -> Option<&'static str> {
        #[cfg(unix)]
        let term = async {
            match self.term.as_mut() {
                Some(t) => t.recv().await,
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<Option<()>>();
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.ok().map(|_| "Ctrl-C"),
            Some(()) = term => Some("SIGTERM"),
        }
    }
}

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
}

/// Runs one point against `target` and gives its result and records.
pub async fn run_point(
    target: &HttpTarget,
    p: Point<'_>,
    metrics: &MetricsArgs,
    output: &OutputArgs,
    opts: &AnalysisOptions,
) -> Result<(RunResult, Vec<RequestRecord>)> {
    if let Some(t) = p.start_at {
        wait_until(t, &p.control, output.quiet).await;
    }
    if let Some(wait) = crate::setup::long_wait(p.plan) {
        eprintln!("note: {wait}");
    }
    // The wall-clock time of the records' zero, so that `t_ns` lines up with
    // server logs (taken after the connect and probes, and the wait for
    // --start-at).
    let started_unix_s = common::unix_now();
    let origin = tokio::time::Instant::now();
    let scraping =
        crate::signals::start(metrics, target.client.http(), &target.root, origin, target.max_buffer).await?;
    let progress = crate::progress::Progress::new(p.title, p.plan, &p.control);
    let view = crate::progress::LiveView::start(output.progress, output.quiet, progress.clone(), p.control.clone());
    let sinks = Sinks { records: p.records, live: p.live, progress: Some(progress) };
    let meter = crate::cpu::Meter::start();
    let res = run_http(target, p.plan, p.workload, p.control, sinks, origin).await;
    if let Some(v) = view {
        v.finish();
    }
    let (recs, interrupted) = res?;
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
    with_client_cost(&mut result, client_cost);
    crate::signals::finish(scraping, &mut result, &recs, p.plan.concurrency).await;
    Ok((result, recs))
}

/// Waits for the wall-clock instant `t` (Unix seconds), or for a stop. An
/// instant already past is warned about and the run starts at once: the
/// shard's late start shows in its `started_unix_s`, and `merge` reports it.
async fn wait_until(t: f64, control: &Control, quiet: bool) {
    let now = common::unix_now();
    if now > t {
        eprintln!(
            "warning: --start-at was {:.3} s ago; starting now (a late shard's start widens the merged run's clock \
             uncertainty)",
            now - t
        );
        return;
    }
    // A wait of hours is said even to a quiet run: it looks like a hang.
    if !quiet || t - now > crate::setup::LONG_WAIT.as_secs_f64() {
        let long = crate::setup::human_wait(goodput_core::clamped_secs(t - now));
        eprintln!("waiting {:.1} s ({long}) for --start-at {}", t - now, common::rfc3339(t));
    }
    tokio::select! {
        _ = tokio::time::sleep(goodput_core::clamped_secs(t - now).min(goodput_core::HORIZON)) => {}
        _ = control.stop.cancelled() => {}
    }
}

/// Serves `live` as Prometheus text at `addr` (`/metrics`) in the background.
pub async fn serve_live(
    addr: std::net::SocketAddr,
    live: Arc<goodput_core::prometheus::live::LiveMetrics>,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind --prometheus-listen {addr} (is the port in use?)"))?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let live = live.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], live.render()) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(())
}

/// Where completed records go besides the run's own list.
#[derive(Default)]
struct Sinks {
    pub records: Option<RecordFile>,
    pub live: Option<Arc<goodput_core::prometheus::live::LiveMetrics>>,
    pub progress: Option<Arc<crate::progress::Progress>>,
}

/// Runs one load over HTTP on a clock starting at `origin`.
async fn run_http(
    target: &HttpTarget,
    plan: &LoadPlan,
    workload: Arc<Workload>,
    control: Control,
    sinks: Sinks,
    origin: tokio::time::Instant,
) -> Result<(Vec<RequestRecord>, bool)> {
    let Sinks { mut records, live, progress } = sinks;
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
    };
    let out = goodput_load::run_at(plan, target.client.clone(), workload, control, sink, origin).await?;
    Ok((out.records, out.interrupted))
}

/// A client busier than this share of the machine's cores is warned about.
const CLIENT_BUSY: f64 = 0.8;

/// Puts the client's own cost on a run's result, with a warning when it
/// kept most of the machine busy.
fn with_client_cost(result: &mut goodput_core::RunResult, cost: Option<goodput_core::ClientCost>) {
    result.warnings.extend(cost.as_ref().and_then(busy_client));
    result.client = cost;
}

/// The warning for a client that kept most of the machine busy.
fn busy_client(c: &goodput_core::ClientCost) -> Option<String> {
    (c.cores > CLIENT_BUSY * c.cpus as f64).then(|| {
        format!(
            "the client kept {:.2} of the {} cores busy: it may be what limits the run. Run it on a machine of its \
             own or with fewer streams per process, and check its read lag",
            c.cores, c.cpus
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_keeps_most_of_the_machine_busy_is_warned_about() {
        let cost = |cores: f64| goodput_core::ClientCost { cores, cpus: 2, ..Default::default() };
        assert_eq!(busy_client(&cost(1.5)), None, "three quarters of two cores");
        let w = busy_client(&cost(1.7)).unwrap();
        assert!(w.starts_with("the client kept 1.70 of the 2 cores busy: it may be what limits the run"), "{w}");
    }
}
