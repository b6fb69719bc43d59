//! From symptoms to causes: the server's signals set beside the client's
//! measurements. A cross-check of the figures both sides count, and
//! diagnosis lines, each citing the numbers behind it.

use super::signals::{CounterSignal, GaugeSignal, HistogramSignal};
use super::window::{HistogramSummary, WindowSummary};
use crate::analysis::metrics::{ms, RequestMetrics};
use crate::{Diagnosis, DiagnosisKind, Distribution, Outcome, RequestRecord, Summary};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Server-side and client-side figures side by side.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CrossCheck {
    pub client_ttft_p50_ms: Option<f64>,
    pub server_ttft_p50_ms: Option<f64>,
    /// client − server TTFT: network, HTTP and client overhead when small
    /// and positive. The difference of the means where both sides counted
    /// the same requests (`ttft_gap_basis` "mean", exact: the server's mean is
    /// its histogram's sum over its count), else of the p50s ("p50", the
    /// server's interpolated inside a bucket).
    pub ttft_gap_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_gap_basis: Option<String>,
    /// Mean TTFT over every request of the run that had a first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ttft_mean_ms: Option<f64>,
    /// The server's TTFT histogram over the run: its sum over its count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ttft_mean_ms: Option<f64>,
    /// The server's queue-time histogram over the run, its sum over its
    /// count, where it counted the same requests: the part of TTFT spent
    /// waiting to be scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue_mean_ms: Option<f64>,
    /// Output tokens the client received over the whole run (every request).
    pub client_output_tokens: u64,
    /// Generation tokens the server counted over the whole run.
    pub server_generation_tokens: Option<f64>,
    pub client_completed: u64,
    pub server_requests_succeeded: Option<f64>,
    /// Requests the client cancelled (Ctrl-C, `--cancel-rate`) or saw fail,
    /// and those the server ended as aborted or failed, over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_not_completed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_requests_failed: Option<f64>,
    /// Share of prompt tokens served from the prefix cache, by the client's
    /// usage blocks (`cached_tokens`) over every request that reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cached_prompt_share: Option<f64>,
    /// The same by the server's counters (hits / queries) over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prefix_cache_hit_rate: Option<f64>,
    /// Tokens per output chunk the client received, on average (over
    /// chunks whose counts were measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tokens_per_chunk: Option<f64>,
    /// Tokens a speculative step yields per sequence, by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tokens_per_step: Option<f64>,
    /// What the gaps mean, in words.
    pub notes: Vec<String>,
}

/// How many times the run's scrapes saw `signal`'s counter go down.
fn went_back(counts: Option<&WindowSummary>, signal: CounterSignal) -> u32 {
    counts.and_then(|run| run.counters.get(&signal)).map_or(0, |c| c.resets)
}

/// Why a counter that went down `n` times does not count the run: its
/// mismatch had been blamed on other clients.
fn went_back_words(n: u32) -> String {
    format!(
        "the server's counter went down {n} time(s) during the run (a restart, or more than one process behind one \
         /metrics), so its count is not the run's: check that the server stayed up and that --metrics-url names one \
         server"
    )
}

/// Cross-checks a run. `run` summarises every scrape of the run (the first
/// before any request, the last after the final one); `window` only the
/// measurement window. `run` is `None` when the records are a stretch of
/// the run (`report --window`): the server's counters cannot be split by
/// request, so the client's counts are not set against them. `load` says
/// how the client asked: a run not streamed (`--no-stream`, a pooling API)
/// had its first byte with the whole answer, so its TTFT is its E2E, and
/// its E2E, not its TTFT, is set against the server's; a pooling run's
/// fan-out sets the engine requests and prompt tokens the server counts.
pub fn cross_check(
    records: &[RequestRecord],
    summary: &Summary,
    window: &WindowSummary,
    run: Option<&WindowSummary>,
    load: ClientLoad,
) -> CrossCheck {
    let streamed = !load.unstreamed;
    let counts = run;
    let run = run.unwrap_or(window);
    let mut c = CrossCheck {
        client_ttft_p50_ms: summary.ttft_ms.p(50.0).filter(|_| streamed),
        server_ttft_p50_ms: window.histograms.get(&HistogramSignal::Ttft).and_then(|h| h.p50).map(|s| s * 1e3),
        client_output_tokens: crate::analysis::stats::total(records.iter().map(|r| r.output_tokens)),
        server_generation_tokens: counts
            .and_then(|run| run.counters.get(&CounterSignal::GenerationTokens))
            .map(|c| c.delta),
        client_completed: records.iter().filter(|r| r.outcome.is_success()).count() as u64,
        server_requests_succeeded: counts
            .and_then(|run| run.counters.get(&CounterSignal::RequestsSucceeded))
            .map(|c| c.delta),
        client_cached_prompt_share: {
            let (cached, prompt) = records
                .iter()
                .filter_map(|r| Some((r.counts.usage_cached_prompt?, r.counts.usage_prompt?)))
                .fold((0u64, 0u64), |(c, p), (rc, rp)| (c.saturating_add(rc), p.saturating_add(rp)));
            (prompt > 0).then(|| cached as f64 / prompt as f64)
        },
        server_prefix_cache_hit_rate: run.prefix_cache_hit_rate,
        client_tokens_per_chunk: summary.tokens.per_chunk.as_ref().map(|c| c.mean),
        server_tokens_per_step: window.spec_decode.as_ref().and_then(|s| s.mean_accepted_length),
        ..Default::default()
    };
    if streamed {
        ttft_gap(
            &mut c,
            records,
            window.histograms.get(&HistogramSignal::Ttft),
            run.histograms.get(&HistogramSignal::Ttft),
            run.histograms.get(&HistogramSignal::Queue),
        );
        // goodput's engine server at --speed S: the overhead is the wall
        // clock's, S times as much of the engine's time.
        let speed = window.gauges.get(&GaugeSignal::SimSpeed).and_then(|d| d.max).filter(|s| s.is_finite());
        if let (Some(speed), Some(gap)) = (speed.filter(|&s| s > 1.0), c.ttft_gap_ms.filter(|&g| g > 0.0)) {
            c.notes.push(format!(
                "at --speed {speed} the server runs the engine {speed} times faster, the network and the client do \
                 not: the {gap:.1} ms between the two TTFTs is {:.1} ms of the engine's time in the client's TTFT \
                 multiplied by {speed}",
                gap * speed
            ));
        }
    } else {
        c.server_ttft_mean_ms = run.histograms.get(&HistogramSignal::Ttft).and_then(|h| h.mean).map(|s| s * 1e3);
        e2e_gap(&mut c, records, run.histograms.get(&HistogramSignal::E2e));
    }
    // A pooling run (embeddings, rerank) asks for no output: its tokens are
    // the prompts', set against the server's prompt counter.
    let pooling = c.client_completed > 0
        && c.client_output_tokens == 0
        && records.iter().filter(|r| r.outcome.is_success()).all(|r| r.chunks.is_empty());
    if pooling {
        let prompt = counts.and_then(|run| run.counters.get(&CounterSignal::PromptTokens)).map(|c| c.delta);
        if let Some(sv) = prompt {
            let cl = crate::analysis::stats::total(records.iter().map(|r| r.input_tokens)) as f64;
            let rel = relative(sv, cl);
            c.notes.push(if let Some(f) = load.fan_out.filter(|_| rel > 0.02) {
                format!(
                    "the server counted {sv:.0} prompt tokens during the run, the client sent {cl:.0}{}: {}",
                    share(rel),
                    f.prompt_words()
                )
            } else if rel.abs() > 0.02 {
                format!(
                    "counting mismatch: the server counted {sv:.0} prompt tokens during the run, the client sent \
                     {cl:.0}{}: {}",
                    share(rel),
                    match went_back(counts, CounterSignal::PromptTokens) {
                        0 => "other clients, or a client count from another tokenizer".to_string(),
                        n => went_back_words(n),
                    }
                )
            } else {
                format!("prompt tokens agree: server {sv:.0}, client {cl:.0}")
            });
        }
    }
    if let Some(sv) = c.server_generation_tokens.filter(|_| !pooling) {
        let cl = c.client_output_tokens as f64;
        let rel = relative(sv, cl);
        // A disaggregated server (it reports KV-cache transfers): its prefill
        // pool generates one token for each request it prefills, and its
        // decode pool then generates every token the client receives, so a
        // scrape of both pools counts one token a request more than the
        // client received (a scrape of the decode pool alone, none more).
        let disaggregated = counts.is_some_and(|run| {
            run.histograms.contains_key(&HistogramSignal::KvTransfer)
                || run.counters.contains_key(&CounterSignal::KvTransferRequests)
        });
        let prefilled = records.iter().filter(|r| r.ttft().is_some()).count() as f64;
        if disaggregated && rel.abs() > 0.02 && prefilled > 0.0 && relative(sv, cl + prefilled).abs() <= 0.02 {
            c.notes.push(format!(
                "tokens agree: server {sv:.0}, client {cl:.0} and one token for each of the {prefilled:.0} requests \
                 it prefilled (a disaggregated server's prefill pool counts the first token, which its decode pool \
                 counts again)"
            ));
        } else if rel.abs() > 0.02 {
            let pools = if disaggregated {
                format!(
                    "; a disaggregated server's prefill pool counts one token a request more ({:.0} here), which \
                     does not account for it either",
                    cl + prefilled
                )
            } else {
                String::new()
            };
            let why = match went_back(counts, CounterSignal::GenerationTokens) {
                0 => format!(
                    "other clients on the server, or tokens generated for requests the client gave up on{pools}"
                ),
                n => went_back_words(n),
            };
            c.notes.push(format!(
                "counting mismatch: the server generated {sv:.0} tokens during the run, the client received {cl:.0}{}: \
                 {why}",
                share(rel)
            ));
        } else {
            c.notes.push(format!("tokens agree: server {sv:.0}, client {cl:.0}"));
        }
    }
    if let Some(sv) = c.server_requests_succeeded {
        let cl = c.client_completed as f64;
        match load.fan_out.filter(|_| pooling) {
            Some(f) => {
                let each = f.each();
                let (what, one) = match f {
                    FanOut::Inputs(_) => ("inputs", "input"),
                    FanOut::Documents(_) => ("documents", "query–document pair"),
                };
                let expected = cl * f64::from(each);
                c.notes.push(if (sv - expected).abs() <= 0.5 {
                    format!(
                        "requests agree: the server finished {sv:.0} engine requests during the run, one for each of \
                         the {each} {what} of the client's {cl:.0} (each {one} is an engine request of its own)"
                    )
                } else {
                    format!(
                        "the server finished {sv:.0} engine requests during the run, the client completed {cl:.0} \
                         of {each} {what} each, {expected:.0} engine requests (each {one} is one): other clients, or \
                         requests the client gave up on"
                    )
                });
            }
            None if (sv - cl).abs() > 0.5 => c
                .notes
                .push(format!("the server finished {sv:.0} requests during the run, the client completed {cl:.0}")),
            None => {}
        }
    }
    // Disconnects the server noticed: what it aborted against what the
    // client cancelled or saw fail.
    let cancelled = records.iter().filter(|r| matches!(r.outcome, Outcome::Cancelled)).count() as u64;
    let failed = records.iter().filter(|r| r.outcome.failure_kind().is_some()).count() as u64;
    if counts.is_none() {
        c.notes.push(
            "counts are not compared over --window or a sweep's stage: the server's counters over a stretch of the \
             run include requests sent before it and still running, and cannot be split by request"
                .into(),
        );
    }
    if let Some(sv) = counts.and_then(|run| run.counters.get(&CounterSignal::RequestsFailed)).map(|c| c.delta) {
        if sv > 0.5 || cancelled + failed > 0 {
            (c.client_not_completed, c.server_requests_failed) = (Some(cancelled + failed), Some(sv));
            let client = format!("the client cancelled {cancelled} and saw {failed} fail");
            let short = (cancelled + failed) as f64 - sv;
            // Cancels before any byte of the answer: a server's front end may
            // drop such a request before its engine takes it, and count no
            // abort (vLLM's does; so does goodput's engine server).
            let early =
                records.iter().filter(|r| matches!(r.outcome, Outcome::Cancelled) && r.first_byte.is_none()).count();
            c.notes.push(if short.abs() < 0.5 {
                format!("aborts agree: the server ended {sv:.0} requests as aborted or failed; {client}")
            } else if short > 0.0 && early as f64 >= short - 0.5 {
                format!(
                    "the server ended {sv:.0} requests as aborted or failed; {client}, {early} of those cancels \
                     before any byte of the answer: a server counts no abort for a request its engine had not yet \
                     taken (vLLM's front end drops it), nor for one it ends after the run's last scrape{}",
                    if failed > 0 { ", nor a failure it does not count" } else { "" }
                )
            } else if short > 0.0 {
                format!(
                    "the server ended {sv:.0} requests as aborted or failed; {client}: a disconnect the server did \
                     not notice, a failure it does not count, or an abort it counted after the run's last scrape"
                )
            } else {
                format!("the server ended {sv:.0} requests as aborted or failed; {client}: other clients on the server")
            });
        }
    }
    if let (Some(cl), Some(sv)) = (c.client_tokens_per_chunk, c.server_tokens_per_step) {
        c.notes.push(if (cl - sv).abs() <= 0.1 * sv {
            format!(
                "speculation reaches the client: {cl:.2} tokens a chunk, the server's steps yield {sv:.2} a \
                 sequence: one chunk a step, so a chunk's gap is a step and the ITL per token divides it"
            )
        } else if cl < 1.2 && sv >= 1.5 {
            format!(
                "the server's steps yield {sv:.2} tokens a sequence, yet the client received {cl:.2} a chunk: the \
                 server splits a step's tokens into separate events, so gaps between chunks inside a step are near \
                 zero and ITL's tail is the step time"
            )
        } else {
            format!(
                "the client received {cl:.2} tokens a chunk, the server's steps yield {sv:.2} a sequence: chunks \
                 do not follow the steps one for one (a proxy that buffers, or several steps a chunk)"
            )
        });
    }
    if let (Some(cl), Some(sv)) = (c.client_cached_prompt_share, c.server_prefix_cache_hit_rate) {
        let (cl, sv) = (cl * 100.0, sv * 100.0);
        c.notes.push(if (cl - sv).abs() <= 2.0 {
            format!("prefix cache agrees: the server hit {sv:.1}% of the prompt tokens it looked up, usage reported {cl:.1}% cached")
        } else {
            format!(
                "prefix cache: the server hit {sv:.1}% of the prompt tokens it looked up, usage reported {cl:.1}% of \
                 prompt tokens cached: other clients, lookups again after preemption, or a server that does not fill \
                 cached_tokens (vLLM needs --enable-prompt-tokens-details)"
            )
        });
    }
    c
}

/// How far the server's count `sv` is from the client's `cl`, relative to
/// the client's: infinite where the client counted none and the server some.
fn relative(sv: f64, cl: f64) -> f64 {
    if cl > 0.0 {
        (sv - cl) / cl
    } else if sv > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// A relative difference as ` (+4.2%)`, or nothing when the client's count
/// was zero.
fn share(rel: f64) -> String {
    if rel.is_finite() {
        format!(" ({:+.1}%)", rel * 100.0)
    } else {
        String::new()
    }
}

/// Sets the TTFT gap and its note. Where the server's histogram over the
/// run counted exactly the requests the client saw a first token of, the
/// means compare exactly: the server's is its sum over its count, with no
/// bucket in between. Otherwise the p50s compare, and the server's is known
/// only to its bucket: a client p50 inside that bucket tells nothing of the
/// overhead, one above it tells at least how much.
fn ttft_gap(
    c: &mut CrossCheck,
    records: &[RequestRecord],
    window: Option<&HistogramSummary>,
    run: Option<&HistogramSummary>,
    queue: Option<&HistogramSummary>,
) {
    // Summed in whole nanoseconds: exact, so the mean is the same whatever
    // the records' order (a live run's is completion order, a records
    // file's may differ).
    let (n, total_ns) =
        records.iter().filter_map(|r| r.ttft()).fold((0usize, 0u128), |(n, sum), t| (n + 1, sum + t.as_nanos()));
    if n > 0 {
        c.client_ttft_mean_ms = Some(total_ns as f64 / 1e6 / n as f64);
    }
    c.server_ttft_mean_ms = run.and_then(|h| h.mean).map(|s| s * 1e3);
    let same_requests = run.is_some_and(|h| (h.count - n as f64).abs() < 0.5);
    if let (Some(cl), Some(sv), true) = (c.client_ttft_mean_ms, c.server_ttft_mean_ms, same_requests) {
        let gap = cl - sv;
        (c.ttft_gap_ms, c.ttft_gap_basis) = (Some(gap), Some("mean".into()));
        c.notes.push(if gap >= 0.0 {
            format!(
                "client TTFT mean {cl:.1} ms vs the server's {sv:.1} ms over the same {n} requests (its histogram's \
                 sum over its count, exact): {gap:.1} ms of network, HTTP and client overhead per request"
            )
        } else {
            format!(
                "client TTFT mean {cl:.1} ms is {:.2} ms below the server's {sv:.1} ms over the same {n} requests: \
                 the two sides time different instants (the server may stop its clock after the first token left)",
                -gap
            )
        });
        // The server's queue time over the same requests splits its TTFT.
        let q = queue.filter(|h| (h.count - n as f64).abs() < 0.5).and_then(|h| h.mean).map(|s| s * 1e3);
        if let Some(q) = q.filter(|&q| q <= sv && gap >= 0.0) {
            c.server_queue_mean_ms = Some(q);
            c.notes.push(format!(
                "where TTFT went, means over the same {n} requests: {gap:.1} ms network, HTTP and client · {q:.1} ms \
                 waiting in the server's queue · {:.1} ms from leaving the queue to the first token (prefill and the \
                 first step)",
                sv - q
            ));
        }
        return;
    }
    let (Some(cl), Some(sv)) = (c.client_ttft_p50_ms, c.server_ttft_p50_ms) else {
        return;
    };
    (c.ttft_gap_ms, c.ttft_gap_basis) = (Some(cl - sv), Some("p50".into()));
    let why_not_mean = match run {
        Some(h) if h.mean.is_some() => format!(
            " (the means cannot be compared: the server counted {:.0} first tokens over the run, the client {n})",
            h.count
        ),
        _ => String::new(),
    };
    let bucket = window.and_then(|h| h.p50_bucket).map(|[lo, hi]| (lo * 1e3, hi * 1e3));
    c.notes.push(match bucket {
        Some((lo, hi)) if (lo..=hi).contains(&cl) => format!(
            "client TTFT p50 {cl:.1} ms lies inside the server's {lo:.0}–{hi:.0} ms histogram bucket that holds its \
             p50 ({sv:.1} ms, interpolated): the buckets are too coarse to tell the overhead{why_not_mean}"
        ),
        Some((lo, hi)) if cl > hi => format!(
            "client TTFT p50 {cl:.1} ms is above the server's {lo:.0}–{hi:.0} ms bucket that holds its p50: at least \
             {:.1} ms of network, HTTP and client overhead{why_not_mean}",
            cl - hi
        ),
        Some((lo, hi)) => format!(
            "client TTFT p50 {cl:.1} ms is below the server's {lo:.0}–{hi:.0} ms bucket that holds its p50: the server \
             counts from an earlier instant, or other clients' requests fill its histogram{why_not_mean}"
        ),
        None => format!(
            "client TTFT p50 {cl:.1} ms vs server {sv:.1} ms (interpolated in its histogram; its bucket is not known)\
             {why_not_mean}"
        ),
    });
}

/// The note of a run not asked to stream: its client TTFT is each whole
/// answer's time (`bench --no-stream` against goodput's engine server had
/// set a TTFT of 1089.5 ms against the server's 36.5 ms, and called the
/// 1053.0 ms between network and HTTP overhead), so its E2E is set against
/// the server's end-to-end histogram instead, where that counted exactly
/// the requests the client completed (its sum over its count, exact).
fn e2e_gap(c: &mut CrossCheck, records: &[RequestRecord], run: Option<&HistogramSummary>) {
    let (n, total_ns) = records
        .iter()
        .filter(|r| r.outcome.is_success())
        .filter_map(|r| r.e2e())
        .fold((0usize, 0u128), |(n, sum), t| (n + 1, sum + t.as_nanos()));
    let unstreamed = "not streamed: each answer came whole, so the client's TTFT is its E2E and is not set against \
                      the server's time to first token";
    let sv = run.filter(|h| n > 0 && (h.count - n as f64).abs() < 0.5).and_then(|h| h.mean).map(|s| s * 1e3);
    let Some(sv) = sv else {
        c.notes.push(unstreamed.to_string());
        return;
    };
    let cl = total_ns as f64 / 1e6 / n as f64;
    let gap = cl - sv;
    c.notes.push(if gap >= 0.0 {
        format!(
            "{unstreamed}; client E2E mean {cl:.1} ms vs the server's {sv:.1} ms over the same {n} requests (its \
             histogram's sum over its count, exact): {gap:.1} ms of network, HTTP and client overhead per request"
        )
    } else {
        format!(
            "{unstreamed}; client E2E mean {cl:.1} ms is {:.2} ms below the server's {sv:.1} ms over the same {n} \
             requests: the two sides time different instants",
            -gap
        )
    });
}

/// TTFT against the prompt tokens each request had to prefill (its prompt
/// less what the prefix cache served, where usage says), fitted by least
/// squares over the successful measured requests. Told only where the
/// prompts differ enough to fit (coefficient of variation ≥ 0.25, 20
/// requests) and the line explains most of TTFT (R² ≥ 0.5): a queue that
/// sets TTFT instead leaves no such line.
///
/// A few requests far off the line (a host that stalled, a retransmitted
/// packet) would tilt a least-squares fit: a 100 ms stall at one end of 30
/// prompts moves the slope by a fifth. So the fit is made twice: requests
/// whose residual from the first is over 3.5 robust standard deviations
/// (1.4826 × the residuals' median absolute deviation, and at least 1 ms,
/// below which a client's clock and loopback tell nothing apart) are left
/// out of the second, where they are at most one in ten; more than that is
/// not a few stalls, and all are kept. The line says how many were left out.
fn prefill_scaling(ok: &[&RequestRecord]) -> Option<String> {
    let points: Vec<(f64, f64)> = ok
        .iter()
        .filter_map(|r| {
            let cached = r.counts.usage_cached_prompt.unwrap_or(0);
            Some((r.input_tokens.saturating_sub(cached) as f64, ms(r.ttft()?)))
        })
        .collect();
    if points.len() < 20 {
        return None;
    }
    let first = LineFit::of(&points)?;
    let mut deviations: Vec<f64> = points.iter().map(|&p| first.residual(p).abs()).collect();
    deviations.sort_unstable_by(f64::total_cmp);
    let mad = deviations[deviations.len() / 2];
    let bound = (3.5 * 1.4826 * mad).max(1.0);
    let kept: Vec<(f64, f64)> = points.iter().copied().filter(|&p| first.residual(p).abs() <= bound).collect();
    let left_out = points.len() - kept.len();
    let (fit, used) = if left_out > 0 && left_out * 10 <= points.len() {
        (LineFit::of(&kept)?, kept.len())
    } else {
        (first, points.len())
    };
    let LineFit { slope, intercept, r2 } = fit;
    if slope <= 0.0 || r2 < 0.5 {
        return None;
    }
    let over = match points.len() - used {
        0 => format!("least squares over {used} requests"),
        out => format!(
            "least squares over {used} of {} requests, {out} left out far off the line (by over {bound:.1} ms, 3.5 \
             robust σ)",
            points.len()
        ),
    };
    Some(format!(
        "TTFT follows the prompt: {:.1} ms more per 1,000 prompt tokens to prefill ({over}, R² {r2:.2}, \
         {intercept:.1} ms at none): about {:.0} prompt tokens/s of prefill as the client sees it",
        slope * 1e3,
        1e3 / slope
    ))
}

/// A least-squares line through (x, y) points.
#[derive(Clone, Copy)]
struct LineFit {
    slope: f64,
    intercept: f64,
    /// The share of y's variance the line explains.
    r2: f64,
}

impl LineFit {
    /// None where the xs vary too little to fit (coefficient of variation
    /// under 0.25) or the ys not at all.
    fn of(points: &[(f64, f64)]) -> Option<LineFit> {
        let n = points.len() as f64;
        let (mx, my) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
        let (sxx, sxy, syy) = points.iter().fold((0.0, 0.0, 0.0), |(xx, xy, yy), (x, y)| {
            (xx + (x - mx) * (x - mx), xy + (x - mx) * (y - my), yy + (y - my) * (y - my))
        });
        if mx <= 0.0 || (sxx / n).sqrt() < 0.25 * mx || syy <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        Some(LineFit { slope, intercept: my - slope * mx, r2: sxy * sxy / (sxx * syy) })
    }

    fn residual(&self, (x, y): (f64, f64)) -> f64 {
        y - self.intercept - self.slope * x
    }
}

/// Long gaps in streams that come with other requests' prefills: a gap
/// between two chunks of more than three times the median one is a stall,
/// and it is set beside the other requests that were between their send and
/// their first token (queued or prefilling) during it, or within half a
/// median gap after it. Told when most stalls had one and ordinary gaps
/// seldom did: prefills, scheduled with the decoding batch or in steps of
/// their own, hold it up. A
/// server whose queue is never empty has such a request beside every gap,
/// and is told nothing.
/// `gaps`: the summary's distribution of the chunk gaps; its median serves
/// when it was taken over these same gaps (as many), else it is found here.
fn prefill_stalls(ok: &[&RequestRecord], gaps: &Distribution) -> Option<String> {
    // Each request's wait for its first token, by start, with the latest
    // end among those started so far: some wait overlaps (from, to] when the
    // latest end among those started by `to` is after `from`. A request's
    // own wait ends before its first gap begins.
    let mut waits: Vec<(Duration, Duration)> = ok.iter().filter_map(|r| Some((r.sent, r.chunks.first()?.t))).collect();
    waits.sort_unstable();
    let latest_end: Vec<Duration> = waits
        .iter()
        .scan(Duration::ZERO, |m, &(_, end)| {
            *m = (*m).max(end);
            Some(*m)
        })
        .collect();
    let count: usize = ok.iter().map(|r| r.chunks.len().saturating_sub(1)).sum();
    if count < 100 {
        return None;
    }
    let median = match gaps.p(50.0).filter(|_| gaps.count == count as u64) {
        Some(m) => m,
        None => {
            let mut gaps: Vec<f64> =
                ok.iter().flat_map(|r| r.chunks.pairs().map(|(a, b)| ms(b.t.saturating_sub(a.t)))).collect();
            crate::analysis::stats::percentile_of(&mut gaps, 50.0)?
        }
    };
    if median <= 0.0 {
        return None;
    }
    let slack = Duration::from_secs_f64(median / 2e3);
    // The waits started by `to`: found by search for a request's first gap,
    // then by stepping on, as its gaps come in time order (a request's life
    // sees few others start; a search a gap was most of `report`'s time on a
    // long run).
    let started_by = |to: Duration, from: Option<(Duration, usize)>| match from {
        Some((before, mut i)) if before <= to => {
            while i < waits.len() && waits[i].0 <= to {
                i += 1;
            }
            i
        }
        _ => waits.partition_point(|&(start, _)| start <= to),
    };
    let (mut stalls, mut stalls_with, mut others, mut others_with, mut stalled_ms) = (0u64, 0u64, 0u64, 0u64, 0.0);
    for r in ok {
        let mut cursor = None;
        for (a, b) in r.chunks.pairs() {
            let gap = ms(b.t.saturating_sub(a.t));
            let to = b.t + slack;
            let started = started_by(to, cursor);
            cursor = Some((to, started));
            let with = started > 0 && latest_end[started - 1] > a.t;
            if gap > 3.0 * median {
                stalls += 1;
                stalls_with += u64::from(with);
                stalled_ms += gap;
            } else {
                others += 1;
                others_with += u64::from(with);
            }
        }
    }
    let share = |with: u64, of: u64| if of == 0 { 0.0 } else { with as f64 / of as f64 };
    let (s, o) = (share(stalls_with, stalls), share(others_with, others));
    if stalls < 20 || s < 0.5 || s < 3.0 * o {
        return None;
    }
    Some(format!(
        "prefills stall the streams: {:.0}% of the {stalls} gaps over {:.1} ms (three times the median gap; they \
         average {:.1} ms) had another request waiting for its first token beside them, against {:.0}% of the other \
         gaps. Prefills \
         scheduled with the decoding batch, or in steps of their own (SGLang's default), hold it up; a smaller \
         prefill chunk mixed with the decodes (vLLM's --max-num-batched-tokens; SGLang's --chunked-prefill-size \
         with --enable-mixed-chunk) or separate prefill instances bound the stall",
        s * 100.0,
        3.0 * median,
        stalled_ms / stalls as f64,
        o * 100.0
    ))
}

fn thirds(v: &[Option<f64>]) -> Option<(f64, f64)> {
    let vals: Vec<f64> = v.iter().flatten().copied().collect();
    if vals.len() < 3 {
        return None;
    }
    let k = vals.len() / 3;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    Some((mean(&vals[..k.max(1)]), mean(&vals[vals.len() - k.max(1)..])))
}

/// The client's load as the diagnosis reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientLoad {
    /// The plan's cap on requests in flight: a closed loop's users, or an
    /// open loop's `-c`. Waits for it are the plan's own doing.
    pub concurrency_cap: Option<usize>,
    /// An open loop's schedule, whose sends go at their times unless the
    /// cap holds them back. `None` for a closed loop and for `--rate inf`.
    pub schedule: Option<Schedule>,
    /// The client asked for whole answers, not streams (`--no-stream`, a
    /// pooling API): a request's first output came with all of it, so its
    /// TTFT is its E2E and says nothing of a first token. The TTFT-based
    /// cross-check and diagnoses then leave the client's TTFT out.
    pub unstreamed: bool,
    /// A pooling run whose requests the server runs as several engine
    /// requests each: its counts of requests and prompt tokens are then
    /// not the client's.
    pub fan_out: Option<FanOut>,
    /// The simulated engine served the run in virtual time (`estimate`,
    /// `sweep --estimate`, `plan`): step by step deterministic, it repeats
    /// a closed loop's waves run after run, so `--runs N` cannot give
    /// their spread (the lockstep line had advised it there too).
    pub virtual_time: bool,
}

/// How a pooling request reaches the engine: as one engine request for
/// each of its inputs or documents (vLLM's and goodput's engine server's
/// way, and TEI's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FanOut {
    /// Embeddings: each of a request's inputs (`--embed-batch`) is one.
    Inputs(u32),
    /// Rerank: each of a query's documents (`--rerank-docs`), paired with
    /// the query, is one: the query is counted once for each.
    Documents(u32),
}

impl FanOut {
    /// Engine requests a client request makes.
    pub fn each(self) -> u32 {
        match self {
            FanOut::Inputs(n) | FanOut::Documents(n) => n,
        }
    }

    /// Why the server counts more prompt tokens than the client sent.
    fn prompt_words(self) -> String {
        match self {
            FanOut::Inputs(n) => {
                format!("each of a request's {n} inputs is an engine request of its own, with its own special tokens")
            }
            FanOut::Documents(n) => format!(
                "each of a query's {n} documents is an engine request of its own, paired with the query, so the \
                 server counts the query {n} times, and each pair's special tokens"
            ),
        }
    }

    /// A pooling run's fan-out from its client settings (`api`, its
    /// `--embed-batch` or `--rerank-docs`); `None` for one engine request
    /// a request.
    pub fn of(client: &crate::doc::config::ClientSettings) -> Option<FanOut> {
        match client.api.as_str() {
            "embeddings" => client.embed_batch.filter(|&n| n > 1).map(FanOut::Inputs),
            "rerank" | "tei-rerank" => client.rerank_docs.filter(|&n| n > 1).map(FanOut::Documents),
            _ => None,
        }
    }
}

/// What set an open loop's send times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    /// `--rate`, requests (or sessions) a second.
    Rate(f64),
    /// `--trace`: a trace's clock.
    Trace,
}

impl ClientLoad {
    /// A load of at most `concurrency_cap` in flight, sent on a trace's
    /// clock, or at `rate` a second (an infinite one: all at once, no
    /// schedule), or else as a closed loop.
    pub fn new(concurrency_cap: Option<usize>, rate: Option<f64>, trace: bool) -> ClientLoad {
        let schedule = if trace { Some(Schedule::Trace) } else { rate.filter(|r| r.is_finite()).map(Schedule::Rate) };
        ClientLoad { concurrency_cap, schedule, ..ClientLoad::default() }
    }

    /// The same load, as the run's `client` settings asked it: streamed or
    /// not, and a pooling run's fan-out. A run without them (an
    /// estimate's) streamed.
    pub fn asked(self, client: Option<&crate::doc::config::ClientSettings>) -> ClientLoad {
        ClientLoad { unstreamed: client.is_some_and(|c| !c.stream), fan_out: client.and_then(FanOut::of), ..self }
    }

    /// A closed loop of `users`.
    pub fn closed(users: usize) -> ClientLoad {
        ClientLoad::new(Some(users), None, false)
    }

    /// The load a run's document records.
    pub fn of(load: Option<&crate::doc::config::LoadConfig>) -> ClientLoad {
        let Some(l) = load else { return ClientLoad::default() };
        ClientLoad::new(l.concurrency.map(|c| c as usize), l.rate.as_ref().map(|r| r.0), l.trace.is_some())
    }
}

/// Diagnosis lines for a run. `window` is `None` when no server metrics were
/// scraped.
pub fn diagnose(
    records: &[RequestRecord],
    summary: &Summary,
    window: Option<&WindowSummary>,
    load: ClientLoad,
) -> Vec<Diagnosis> {
    let concurrency_cap = load.concurrency_cap;
    // A run not streamed has no first token of its own: its TTFT is each
    // whole answer's time, so what reads the client's TTFT reads none.
    let firsts: &[RequestRecord] = if load.unstreamed { &[] } else { records };
    let mut out = Vec::new();
    if let Some(w) = window {
        let build_up = queue_build_up(w, concurrency_cap);
        // Waits the build-up told are not told again.
        let queue_told = build_up.is_some();
        out.extend(build_up);
        if !queue_told {
            out.extend(queue_wait(w));
        }
        out.extend(kv_cache_pressure(w, records, load));
        out.extend(prefix_cache(w, firsts));
        out.extend(speculative_decoding(w));
        out.extend(kv_transfer(w, summary.ttft_ms.mean.filter(|_| !load.unstreamed)));
    }

    // What the measured successful requests alone tell.
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup && r.outcome.is_success()).collect();
    let told = |kind: DiagnosisKind| move |message: String| Diagnosis { kind, message };
    let late = window.and_then(simulator_late);
    // A simulator behind its own clock explains stalls by itself: they are
    // not the prefills'.
    let simulator_behind = late.is_some();
    out.extend(late);
    out.extend(window.and_then(|w| simulator_speed(records, summary, w, load)));
    let first_ok: &[&RequestRecord] = if load.unstreamed { &[] } else { &ok };
    out.extend(prefill_scaling(first_ok).map(told(DiagnosisKind::PrefillScaling)));
    if !simulator_behind {
        out.extend(prefill_stalls(&ok, &summary.chunk_gap_ms).map(told(DiagnosisKind::PrefillStalls)));
    }
    out.extend(tail_degrading(first_ok));
    out.extend(lockstep(&ok, summary, load));
    out.extend(start_wave(&ok, load));
    out.extend(client_bottleneck(summary, window, concurrency_cap));
    out
}

/// The requests a closed loop's users sent together at the run's start (no
/// ramp-up, and a warm-up that did not take them) prefill as one wave:
/// where they took their first tokens later than most of the rest, and
/// are more than half the requests above a tail percentile, that
/// percentile is theirs, the start's, not the load's. `-c 16 -n 66` had
/// given a TTFT p90 of 136 ms, [135, 136], and "steady" (the verdict's
/// stretch leaves the start out), where the load's p90 was 35 ms. Told for
/// p90, p95 and p99, with the warm-up or ramp-up that leaves the wave out.
fn start_wave(ok: &[&RequestRecord], load: ClientLoad) -> Option<Diagnosis> {
    let users = load.concurrency_cap.filter(|&c| c >= 2 && load.schedule.is_none() && !load.unstreamed)?;
    let first = ok.iter().map(|r| r.sent).min()?;
    // Sent together: within 10 ms of the first send (a live client's users
    // go out within a few; a virtual run's at one instant).
    let together = |r: &&&RequestRecord| r.sent <= first + Duration::from_millis(10);
    let ttft = |rs: Vec<&&RequestRecord>| {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| r.ttft()).map(|d| d.as_secs_f64() * 1e3).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let wave = ttft(ok.iter().filter(together).collect());
    let rest = ttft(ok.iter().filter(|r| !together(r)).collect());
    if wave.len() < 2 || rest.len() < wave.len() {
        return None;
    }
    let p = |v: &[f64], q: f64| crate::analysis::stats::percentile(v, q);
    let (wave_p50, rest_p50, rest_p90) = (p(&wave, 50.0)?, p(&rest, 50.0)?, p(&rest, 90.0)?);
    let n = (wave.len() + rest.len()) as f64;
    let tail: Vec<&str> = [(90.0, "p90"), (95.0, "p95"), (99.0, "p99")]
        .into_iter()
        .filter(|&(p, _)| wave.len() as f64 > (1.0 - p / 100.0) * n / 2.0)
        .map(|(_, name)| name)
        .collect();
    // Slower than nine in ten of the rest, and by half their median at
    // least: a closed loop in lockstep sends every wave alike, the first's
    // a little slower (88.5 ms against 88.1), which moves no percentile.
    if wave_p50 <= rest_p90 || wave_p50 < 1.5 * rest_p50 || tail.is_empty() {
        return None;
    }
    Some(Diagnosis {
        kind: DiagnosisKind::StartWave,
        message: format!(
            "the {} requests the {users} users sent together at the start took their first token in {wave_p50:.1} \
             ms (median) against {:.1} ms for the rest, and are {:.1}% of the {} requests: the TTFT {} here {} \
             theirs, the start's, not the load's. Leave them out with --warmup {users}, or start the users over a \
             request's time (--ramp-up)",
            wave.len(),
            rest_p50,
            100.0 * wave.len() as f64 / n,
            n,
            tail.join(", "),
            if tail.len() == 1 { "is" } else { "are" }
        ),
    })
}

/// A closed loop's users moving in waves. Alike requests sent together end
/// together when the server runs them in one batch, and their users send
/// again together: each wave's prompts prefill together, wave after wave
/// (a real NIM behind genai-perf did so for a whole run; docs/simulator.md,
/// "A real closed loop stayed in lockstep"). A wave may come in parts a step
/// apart (a request that reached an idle server alone took its first token
/// a step before the rest, and stays a step ahead), so sends, in time order,
/// are joined when each came within one and a half steps (the median chunk
/// gap; 1 % of the mean gap between sends when longer, or when nothing
/// streamed) of the one before. Told when at least 45 % of the sends were
/// joined so, and either three times the share that users sending at
/// independent times would give (1 − e^(−x), x = window / mean gap), or,
/// with so many users that independent sends crowd that close anyway, the
/// gaps longer than the window (between bursts) covered at least half the
/// sending time and three times the e^(−x)(1 + x) that independent sends
/// leave: 256 users sent at once leave nearly all of it empty between their
/// waves (`estimate --model qwen3-235b-a22b --precision fp8 --dp 8 --ep 8 -c
/// 256 -n 2000` had told nothing, its sends 13 ms apart on average against a
/// window of 36 ms, where independent sends put 94% within it).
/// Nothing is told without a cap on requests in flight (an open loop's
/// schedule sets its sends), nor for an open loop with a rate whose sends
/// mostly kept to its schedule (bursts, if any, are the schedule's). An open
/// loop whose cap held most sends back is a closed loop of the cap's size,
/// and told so, with the cap or the rate as the fix.
fn lockstep(ok: &[&RequestRecord], summary: &Summary, load: ClientLoad) -> Option<Diagnosis> {
    let users = load.concurrency_cap.filter(|&c| c >= 2)?;
    if ok.len() < (4 * users).max(20) {
        return None;
    }
    let mut sent: Vec<Duration> = ok.iter().map(|r| r.sent).collect();
    sent.sort_unstable();
    let gaps = sent.len() - 1;
    let mean_gap = (sent[gaps] - sent[0]).as_secs_f64() / gaps as f64;
    if mean_gap <= 0.0 {
        return None;
    }
    let step = summary.chunk_gap_ms.p(50.0).unwrap_or(0.0) / 1e3;
    let window = (1.5 * step).max(0.01 * mean_gap);
    // An open loop's sends the cap held back (sent later than scheduled by
    // more than a timer's lateness: by more than the window).
    let held = ok.iter().filter(|r| (r.sent.saturating_sub(r.scheduled)).as_secs_f64() > window).count() as f64
        / ok.len() as f64;
    if load.schedule.is_some() && held < 0.5 {
        return None;
    }
    // The sends in bursts, each send joined to the one before when it came
    // within the window: their sizes.
    let mut bursts: Vec<f64> = vec![1.0];
    for w in sent.windows(2) {
        match bursts.last_mut() {
            Some(size) if (w[1] - w[0]).as_secs_f64() <= window => *size += 1.0,
            _ => bursts.push(1.0),
        }
    }
    let joined = sent.len() - bursts.len();
    let share = joined as f64 / gaps as f64;
    let independent = 1.0 - (-window / mean_gap).exp();
    // The bursts' size as a send sees it: the mean, over sends, of the
    // burst each came in (Σ size² / Σ size). A wave of 16 that one user
    // leads by a few steps is bursts of 1 and 15: 8 a burst, 14.1 a send
    // (a live bench had been told 8.7 where its waves were 16).
    let wave = bursts.iter().map(|b| b * b).sum::<f64>() / sent.len() as f64;
    // With so many users that independent sends crowd within the window
    // anyway, the time between bursts tells: independent sends leave gaps
    // longer than the window over e^(−x)(1 + x) of the time (x = window /
    // mean gap), a closed loop sent at once leaves nearly all of it empty
    // between its waves.
    let span = (sent[gaps] - sent[0]).as_secs_f64();
    let idle = sent.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).filter(|&g| g > window).sum::<f64>() / span;
    let x = window / mean_gap;
    let idle_independent = (-x).exp() * (1.0 + x);
    let sparse = share >= 3.0 * independent;
    let dense = idle >= 0.5 && idle >= 3.0 * idle_independent;
    // Between the two, the bursts' size tells: independent sends join in
    // runs of geometric length, whose mean as a send sees it is (1 + p) /
    // (1 − p) for p that share; users sent together in runs of their
    // number (`estimate --model llama-3.1-70b --pp 4 -c 64` had told
    // nothing: its 64 users sent in bursts of 64 where independent ones
    // make bursts of 3, yet independent sends would join half the time and
    // leave 85 % of it idle, so neither rule above could pass).
    let independent_wave = (1.0 + independent) / (1.0 - independent).max(f64::MIN_POSITIVE);
    let clustered = wave >= 3.0 * independent_wave;
    if share < 0.45 || !(sparse || dense || clustered) {
        return None;
    }
    // What tells them from users sending at independent times: the share
    // joined, where it is far above theirs; else the bursts' size, and the
    // time left empty between them where that tells too.
    let (joined_by_chance, between) = if sparse {
        (
            format!(" (users sending at independent times would put about {:.0}% there)", 100.0 * independent),
            String::new(),
        )
    } else if dense {
        (
            String::new(),
            format!(
                ", with no send for {} of the time between them (about {:.0}% at independent times)",
                if idle >= 0.995 { "nearly all".to_string() } else { format!("{:.0}%", 100.0 * idle) },
                100.0 * idle_independent
            ),
        )
    } else {
        (String::new(), format!(" (about {independent_wave:.1} at independent times)"))
    };
    let ttft = summary.ttft_ms.p(50.0).map(|t| format!(" (p50 {t:.1} ms here)")).unwrap_or_default();
    let e2e_p50 = summary.e2e_ms.p(50.0);
    let per_s = e2e_p50
        .filter(|&e| e > 0.0)
        .map(|e| {
            format!(" (under about {:.1}/s: {users} / the {:.2}s a request took)", users as f64 / (e / 1e3), e / 1e3)
        })
        .unwrap_or_default();
    let held_back = |what: &str| {
        format!(
            "the {users} requests the cap lets in flight ({:.0}% of the sends waited for a free one, so requests \
             went when others ended, not on {what})",
            100.0 * held
        )
    };
    let (who, fix) = match load.schedule {
        None => (
            format!("the {users} users"),
            format!(
                "start the users over about one request's time (--ramp-up{}) or send on a schedule (--rate)",
                e2e_p50.map(|e| format!(" {:.1}s", e / 1e3)).unwrap_or_default()
            ),
        ),
        Some(Schedule::Rate(rate)) => (
            held_back(&format!("the --rate {rate} schedule")),
            format!("raise -c until it no longer binds, or send at a rate {users} in flight keep up with{per_s}"),
        ),
        Some(Schedule::Trace) => (
            held_back("the trace's clock"),
            format!(
                "raise -c until it no longer binds, or replay the trace slower (--trace-speed) so that {users} in \
                 flight keep up with it{per_s}"
            ),
        ),
    };
    Some(Diagnosis {
        kind: DiagnosisKind::Lockstep,
        message: format!(
            "{who} moved in lockstep: {:.0}% of the sends came within {:.1} ms of the one before\
             {joined_by_chance}, in bursts of {wave:.1} sends, a send's on average{between}. Alike \
             requests sent together end together when the server runs them in one batch, and go again together: \
             each wave's prompts prefill together, so TTFT{ttft} is a wave's, not a lone arrival's. A wave's \
             requests are not independent: the percentile intervals are widened where batch means see it (a tail \
             with few requests beyond it as its median), and {runs}. To measure arrivals apart, {fix}",
            100.0 * share,
            window * 1e3,
            runs = runs_advice(load.virtual_time),
        ),
    })
}

/// What `--runs N` tells of a run whose requests came in waves: on a real
/// server the spread from run to run; on the simulated engine in virtual
/// time nothing, since it repeats the same waves (and its noise, where a
/// calibration sets any, is not the server's).
pub fn runs_advice(virtual_time: bool) -> &'static str {
    if virtual_time {
        "--runs N cannot give their spread here: the simulated engine repeats the same waves run after run"
    } else {
        "--runs N gives the spread from run to run"
    }
}

/// Peak KV-cache use at or above this share is a full cache.
const KV_FULL: f64 = 0.95;
/// Preemptions at least this share of the requests make the KV cache the
/// binding limit: a tenth of the requests recomputed their context.
const KV_PREEMPT_SHARE: f64 = 0.1;

/// The simulated engine's KV cache as the run's binding limit (`estimate`,
/// `plan`, `sweep --estimate`): its use peaked at [`KV_FULL`] or more, or
/// too near full for one more request of the run's mean size, and either a tenth of the requests were preempted (their blocks taken back,
/// their context recomputed), or requests waited (a mean of one or more in
/// the engine's waiting count) while the running batch stayed under
/// `--max-num-seqs`: what held them was the cache, not the batch limit. It
/// says how many requests of the run's mean size (prompt and answer) the
/// cache holds, the preemptions, and the time a request spent waiting (the
/// engine's mean waiting count over the makespan per request, by Little's
/// law; waits after a preemption included) beside the mean TTFT, and names
/// the fixes. The engine's figures are the whole run's: nothing is told
/// when `records` cover only part of it (a `--stages` stage, `report
/// --window`). A closed loop's waves are then the cache admitting a batch
/// as another ends, so [`diagnose`]'s lockstep line is not told beside it
/// (see [`attach_server_side`](crate::analysis::assemble::attach_server_side)).
pub fn engine_kv_bound(
    engine: &crate::doc::engine::SimulatedEngine,
    records: &[RequestRecord],
    summary: &Summary,
    load: ClientLoad,
) -> Option<Diagnosis> {
    if records.is_empty() || engine.kv_capacity_tokens == 0 {
        return None;
    }
    // The records must be the engine's whole run.
    let first = records.iter().map(|r| r.sent).min()?.as_secs_f64();
    let last = records.iter().map(|r| r.end.max(r.sent)).max()?.as_secs_f64();
    if engine.makespan_s <= 0.0 || last - first < 0.9 * engine.makespan_s {
        return None;
    }
    let n = records.len() as f64;
    let size = mean_request_tokens(records)?;
    let holds = engine.kv_capacity_tokens as f64 / size;
    // Full, or too full for one more request of the mean size: a cache of
    // 2.6 such requests peaks at 76% with two running and the rest waiting
    // (it had been told nothing, and lockstep blamed).
    if engine.kv_usage_max < KV_FULL && engine.kv_usage_max + 1.0 / holds <= 1.0 {
        return None;
    }
    let preempt_share = engine.preemptions as f64 / n;
    let mean = |v: &[u32]| (!v.is_empty()).then(|| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64);
    let waiting = mean(&engine.series.waiting).unwrap_or(0.0);
    let running = mean(&engine.series.running).unwrap_or(0.0);
    let instances = engine.replicas.len().max(1) as f64;
    let seq_limit = f64::from(engine.max_num_seqs) * instances;
    let held = waiting >= 1.0 && (engine.max_num_seqs == 0 || running < 0.9 * seq_limit);
    if !(preempt_share >= KV_PREEMPT_SHARE || held) {
        return None;
    }
    let users = match (load.concurrency_cap, load.schedule) {
        (Some(c), None) => format!(", against the {c} users' requests in flight"),
        (Some(c), Some(_)) => format!(", against the {c} in flight that -c allows"),
        _ => String::new(),
    };
    // SGLang's scheduler retracts where vLLM's preempts: the same recompute.
    let (noun, done) = if engine.retracts() { ("retraction", "retracted") } else { ("preemption", "preempted") };
    let preempted = if engine.preemptions > 0 {
        format!(
            "; {} {noun}{} ({} a request: a {done} request gives its blocks back and recomputes its prompt and \
             context when let in again)",
            engine.preemptions,
            if engine.preemptions == 1 { "" } else { "s" },
            if preempt_share < 0.1 { format!("{preempt_share:.2}") } else { format!("{preempt_share:.1}") }
        )
    } else {
        String::new()
    };
    // Seconds, or milliseconds below one.
    let time = |s: f64| if s >= 1.0 { format!("{s:.1} s") } else { format!("{:.0} ms", s * 1e3) };
    let wait_s = waiting * engine.makespan_s / n;
    let ttft_s = summary.ttft_ms.mean.filter(|&t| t > 0.0).map(|t| t / 1e3);
    let wait = match ttft_s {
        Some(t) if wait_s > 0.0 => format!(
            "; a request waited about {} for cache room on average (Little's law over the engine's waiting count, \
             {waiting:.1} on average{}), against a mean TTFT of {}",
            time(wait_s),
            if engine.preemptions > 0 { format!("; waits after a {noun} included") } else { String::new() },
            time(t)
        ),
        _ => String::new(),
    };
    // The cache sets TTFT where the wait for it is most of it, or where
    // preemptions recompute a tenth of the requests; else it is a part.
    let whose = if preempt_share >= KV_PREEMPT_SHARE || ttft_s.is_none_or(|t| wait_s >= 0.5 * t) {
        "TTFT and throughput here are the cache's, not the compute's"
    } else {
        "The cache holds requests back, a part of TTFT"
    };
    let c = &engine.config;
    // A TP the model's heads divide is not known here: the larger --tp is
    // left to the refusal that names the ones that are.
    let mut fixes = vec![format!(
        "more GPUs (a larger --tp, or --pp {}: each GPU added takes its share of the weights and leaves the rest \
         of its memory to the cache)",
        c.pp.max(1) * 2
    )];
    if matches!(c.precision.to_ascii_lowercase().as_str(), "bf16" | "fp16" | "auto" | "") {
        fixes.push("FP8 weights (--precision fp8, half the weights' memory)".into());
    }
    if !c.kv_cache_dtype.to_ascii_lowercase().contains("fp8") {
        fixes.push("an FP8 KV cache (--kv-cache-dtype fp8, twice the tokens)".into());
    }
    if c.gpu_memory_utilization > 0.0 && c.gpu_memory_utilization < 0.95 {
        fixes.push(format!("a larger --gpu-memory-utilization (it is {})", c.gpu_memory_utilization));
    }
    let fit = holds.floor().max(1.0);
    let fewer = fewer_in_flight(load, fit);
    Some(Diagnosis {
        kind: DiagnosisKind::KvCachePressure,
        message: format!(
            "the KV cache is the binding limit: its {} tokens hold about {holds:.1} requests of this run's mean \
             size ({size:.0} tokens, prompt and answer){users}, and its use peaked at {:.0}%{preempted}{wait}. \
             {whose}; to fit more requests: {}; or {fewer} or --max-num-seqs {fit:.0}, so that the batch fits the \
             cache",
            engine.kv_capacity_tokens,
            100.0 * engine.kv_usage_max,
            fixes.join(", ")
        ),
    })
}

/// How late goodput's simulated server may run against its own timeline
/// (p99, ms of the engine's time) before its lateness is told: a step or a
/// chunk a few milliseconds late is the ordinary jitter of a shared machine.
const SIM_LATE_P99_MS: f64 = 20.0;

/// The share of the server's mean TTFT its mean lateness may take before it
/// is told, whatever the p99.
const SIM_LATE_TTFT_SHARE: f64 = 0.1;

/// goodput's simulated server fell behind its own timeline over the window
/// (its lateness histogram): the machine was too busy for it, and the
/// latencies measured carry that lateness rather than the engine's. The
/// lateness is wall-clock; at `--speed` S (its `goodput_sim_speed` gauge)
/// each wall millisecond is S of the engine's, so it is judged in the
/// engine's time, and against the server's TTFT: `goodput serve --speed 50`
/// ran its steps 7.7 ms late at p99 (385 ms of the engine's) and 0.45 ms on
/// average, 40% of its 1.1 ms TTFT, and its TTFT came out 122% above
/// `goodput estimate`'s, with nothing told under a fixed 20 ms wall-clock
/// bound.
fn simulator_late(w: &WindowSummary) -> Option<Diagnosis> {
    let h = w.histograms.get(&HistogramSignal::SimLateness)?;
    let speed =
        w.gauges.get(&GaugeSignal::SimSpeed).and_then(|d| d.max).filter(|s| s.is_finite() && *s > 0.0).unwrap_or(1.0);
    let p99 = h.p99? * 1e3;
    let mean = h.mean.unwrap_or(0.0) * 1e3;
    let ttft = mean_ms(w, HistogramSignal::Ttft).filter(|&t| t > 0.0);
    let share = ttft.map(|t| mean / t);
    if !(p99 * speed > SIM_LATE_P99_MS || share.is_some_and(|s| s >= SIM_LATE_TTFT_SHARE)) {
        return None;
    }
    let engine_time = if speed == 1.0 {
        String::new()
    } else {
        format!(
            " on the wall clock, {:.1} ms and {:.0} ms of the engine's time at --speed {speed}",
            mean * speed,
            p99 * speed
        )
    };
    let of_ttft = match (share, ttft) {
        (Some(s), Some(t)) => {
            format!(" (the mean lateness is {:.0}% of the server's mean TTFT of {t:.1} ms)", 100.0 * s)
        }
        _ => String::new(),
    };
    let fix = if speed > 1.0 {
        format!(
            "run the simulator slower (a lower --speed: each millisecond the host is late is {speed} ms of the \
             engine's at --speed {speed}), on cores the client does not share, or under a lighter load"
        )
    } else {
        "give the simulator cores the client does not share (goodput serve on a machine of its own) or a lighter \
         load"
            .to_string()
    };
    Some(Diagnosis {
        kind: DiagnosisKind::SimulatorLate,
        message: format!(
            "the simulated server fell behind its own timeline: its steps ran {mean:.1} ms late on average, {p99:.1} \
             ms at p99 (goodput_sim_*_lateness_seconds){engine_time}, because the machine was busy (the simulator \
             shares its cores with the client or other work): TTFT and ITL carry that lateness, not the \
             engine's{of_ttft}; {fix}"
        ),
    })
}

/// The share of the engine's step (the median chunk gap) a closed loop's
/// turn may take at `--speed` above 1 before it is told.
const SIM_TURN_STEP_SHARE: f64 = 0.1;

/// goodput's engine server at `--speed` S above 1, under a closed loop:
/// the engine's time runs S times faster, the client's and the network's do
/// not. Each turn of the loop, from an answer's last token to the user's
/// next request reaching the server, takes its wall-clock time, S times as
/// much of the engine's, where `goodput estimate` sends the instant an
/// answer ends. A closed loop's users send as answers end, on the engine's
/// steps, so the turn sets where in a step each request reaches the engine:
/// one that reaches it after a step began waits that step out, and its TTFT
/// is a whole step longer. Measured (docs/simulator.md, "At `--speed` S the
/// client is not sped up"): 8 users of 256/64 tokens started over 0.6 s
/// had a TTFT of 26.1 ms in `estimate`, 26.4–28.1 ms at `--speed 1`
/// (mean, converted back) and 33.7–34.9 ms at `--speed 4`, a step more:
/// the turn, about 0.7 ms on the wall clock, was 2.8 ms of the engine's at
/// speed 4, past the 1.7 ms between those requests' arrival and the next
/// step's start. The turn is estimated from the records and the server's
/// TTFT: the client's median from an answer's end to its next send (a
/// session's later turns, which wait a think time, left out), and the
/// client's mean TTFT less the server's (the request's way in and the first
/// token's way out). Told when it is a tenth of a step or more.
fn simulator_speed(
    records: &[RequestRecord],
    summary: &Summary,
    w: &WindowSummary,
    load: ClientLoad,
) -> Option<Diagnosis> {
    let speed = w.gauges.get(&GaugeSignal::SimSpeed).and_then(|d| d.max).filter(|s| s.is_finite() && *s > 1.0)?;
    // A closed loop (sessions too): an open loop's schedule sets its sends.
    let users = load.concurrency_cap.filter(|&c| c >= 1 && load.schedule.is_none())?;
    if load.unstreamed {
        return None;
    }
    let step = summary.chunk_gap_ms.p(50.0).filter(|&s| s > 0.0)?;
    // The client's turn: each send less the latest answer's end before it.
    let mut ends: Vec<Duration> = records.iter().map(|r| r.end).collect();
    ends.sort_unstable();
    let mut turns: Vec<f64> = records
        .iter()
        .filter(|r| !r.warmup && r.session.is_none_or(|t| t.turn <= 1))
        .filter_map(|r| {
            let before = ends.partition_point(|&e| e <= r.sent);
            (before > 0).then(|| (r.sent - ends[before - 1]).as_secs_f64() * 1e3)
        })
        .collect();
    if turns.len() < users.max(10) {
        return None;
    }
    turns.sort_unstable_by(f64::total_cmp);
    let client = turns[turns.len() / 2];
    let http = match (summary.ttft_ms.mean, mean_ms(w, HistogramSignal::Ttft)) {
        (Some(cl), Some(sv)) => (cl - sv).max(0.0),
        _ => 0.0,
    };
    let turn = client + http;
    let share = turn / step;
    if share < SIM_TURN_STEP_SHARE {
        return None;
    }
    let engine_step = step * speed;
    Some(Diagnosis {
        kind: DiagnosisKind::SimulatorSpeed,
        message: format!(
            "at --speed {speed} the engine runs {speed} times faster, the client and the network do not: a turn of \
             the closed loop, from an answer to its user's next request, took about {turn:.2} ms on the wall clock \
             ({client:.2} ms in the client from an answer's end to its next send, {http:.2} ms of network and HTTP \
             a request: the client's mean TTFT less the server's), {:.1} ms of the engine's time, {:.0}% of its \
             step ({engine_step:.1} ms, the median chunk gap) where at --speed 1 it would be {:.0}%. goodput \
             estimate sends the instant an answer ends; here each request reaches the engine that much later \
             against its steps, and one that comes after a step began waits that step out: TTFT multiplied by \
             {speed} can be a step or more above estimate's, with TPOT and throughput less moved. To compare \
             with estimate, serve at --speed 1 (or so low that a turn is a small part of a step)",
            turn * speed,
            100.0 * share,
            100.0 * share / speed,
        ),
    })
}

/// A server histogram's mean over the window in ms, exact: its sum over its count.
fn mean_ms(w: &WindowSummary, s: HistogramSignal) -> Option<f64> {
    w.histograms.get(&s).and_then(|h| h.mean).map(|m| m * 1e3)
}

/// Requests waiting while the running count holds at its peak: the server
/// at its batch limit, unless that peak is the client's own concurrency
/// (`concurrency_cap`): then every request the client had was admitted at
/// once, and the waits were for a step with room for their prefill.
fn queue_build_up(w: &WindowSummary, concurrency_cap: Option<usize>) -> Option<Diagnosis> {
    let wt = w.gauges.get(&GaugeSignal::WaitingRequests)?;
    let rn = w.gauges.get(&GaugeSignal::RunningRequests)?;
    let rising = w.series.gauges.get(&GaugeSignal::WaitingRequests).and_then(|s| thirds(s));
    let (rmax, rp50) = (rn.max.unwrap_or(0.0), rn.p(50.0).unwrap_or(0.0));
    let at_cap = rmax > 0.0 && rp50 >= 0.9 * rmax;
    if !(wt.mean.unwrap_or(0.0) >= 1.0 && at_cap) {
        return None;
    }
    let limit = match concurrency_cap {
        Some(c) if rmax >= c as f64 - 0.5 => format!(
            "the running count is the client's concurrency ({c}), not a batch limit of the server's: requests \
             waited for a step with room for their prefill"
        ),
        // The peak alone cannot tell which limit: a cap on the running
        // requests, or (long prompts, pooling) the tokens a step can take.
        _ => "the server is at its batch limit (a cap on running requests, or the tokens a step can take when \
              prompts are long)"
            .to_string(),
    };
    let trend = match rising {
        Some((a, b)) if b > a + 0.5 => {
            format!(" and rising ({a:.1} in the first third, {b:.1} in the last)")
        }
        _ => String::new(),
    };
    // The queue-time histogram says how much of TTFT the waiting
    // cost: a queue refilled every step and emptied by the next
    // costs little.
    let cost = match (mean_ms(w, HistogramSignal::Queue), mean_ms(w, HistogramSignal::Ttft)) {
        (Some(q), Some(t)) if t > 0.0 && q < 0.05 * t => format!(
            ": {limit}, yet a request waited only {q:.1} ms in the queue on average, {:.1}% of the server's \
             TTFT of {t:.1} ms",
            100.0 * q / t
        ),
        (Some(q), Some(t)) if t > 0.0 => format!(
            ": {limit}, and TTFT includes queueing, {q:.1} ms a request on average ({:.0}% of the server's \
             TTFT of {t:.1} ms)",
            100.0 * q / t
        ),
        _ => format!(": {limit}, and TTFT includes queueing"),
    };
    Some(Diagnosis {
        kind: DiagnosisKind::QueueBuildUp,
        message: format!(
            "queue build-up: {:.1} requests waiting on average (peak {:.0}){trend} while running held at \
             {rp50:.0} of a peak {rmax:.0}{cost}",
            wt.mean.unwrap_or(0.0),
            wt.max.unwrap_or(0.0)
        ),
    })
}

/// Waits the gauges missed (the running count is not at its peak: the batch
/// is bounded by tokens or memory, not requests), told from the queue-time
/// histogram when they are a large part of TTFT.
fn queue_wait(w: &WindowSummary) -> Option<Diagnosis> {
    let (q, t) = (mean_ms(w, HistogramSignal::Queue)?, mean_ms(w, HistogramSignal::Ttft)?);
    if !(q >= 10.0 && t > 0.0 && q >= 0.25 * t) {
        return None;
    }
    Some(Diagnosis {
        kind: DiagnosisKind::QueueWait,
        message: format!(
            "queueing: a request waited {q:.1} ms in the server's queue on average before it was \
             scheduled, {:.0}% of the server's TTFT of {t:.1} ms: requests arrive faster than the server \
             admits them",
            100.0 * q / t
        ),
    })
}

/// KV-cache use near full, or preemptions; with the cache's size where
/// the server gives it (`kv_cache_tokens`), how many requests of the run's
/// mean size it holds, and the load that fits.
fn kv_cache_pressure(w: &WindowSummary, records: &[RequestRecord], load: ClientLoad) -> Option<Diagnosis> {
    let kv = w.gauges.get(&GaugeSignal::KvCacheUsage);
    let preempt = w.counters.get(&CounterSignal::Preemptions).map(|c| c.delta).unwrap_or(0.0);
    let kv_max = kv.and_then(|d| d.max).unwrap_or(0.0);
    if !(kv_max > 0.9 || preempt > 0.0) {
        return None;
    }
    let tokens = w.gauges.get(&GaugeSignal::KvCacheTokens).and_then(|d| d.max).filter(|&t| t > 0.0);
    let holds = match (tokens, mean_request_tokens(records)) {
        (Some(tokens), Some(size)) => {
            let holds = tokens / size;
            let fit = holds.floor().max(1.0);
            let fewer = fewer_in_flight(load, fit);
            format!(
                ". Its {tokens:.0} tokens (the server's own figure) hold about {holds:.1} requests of this run's \
                 mean size ({size:.0} tokens, prompt and answer): {fewer}, or the server's --max-num-seqs \
                 {fit:.0}, keep the batch within it"
            )
        }
        _ => String::new(),
    };
    Some(Diagnosis {
        kind: DiagnosisKind::KvCachePressure,
        message: format!(
            "KV-cache pressure: use peaked at {:.0}% (p95 {:.0}%), {preempt:.0} preemptions in the window \
             (a preempted request recomputes its prompt and context){holds}",
            kv_max * 100.0,
            kv.and_then(|d| d.p(95.0)).unwrap_or(0.0) * 100.0
        ),
    })
}

/// The mean tokens a served request held, prompt and answer: what a KV
/// cache's size is set against. `None` without a served request, or with
/// no tokens counted.
fn mean_request_tokens(records: &[RequestRecord]) -> Option<f64> {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.outcome.is_success()).collect();
    if ok.is_empty() {
        return None;
    }
    let size = ok.iter().map(|r| (r.input_tokens + r.output_tokens) as f64).sum::<f64>() / ok.len() as f64;
    (size > 0.0).then_some(size)
}

/// The load that keeps `fit` requests in flight, in the words of the run's
/// own flags: fewer users, a lower cap or rate.
fn fewer_in_flight(load: ClientLoad, fit: f64) -> String {
    match (load.concurrency_cap, load.schedule) {
        (Some(_), None) => format!("fewer users (-c {fit:.0} or so)"),
        (Some(_), Some(_)) => format!("a lower -c or --rate (about {fit:.0} in flight fit)"),
        _ => "a lower --rate".to_string(),
    }
}

/// The prefix cache's hit rate, and what it did to TTFT when both cached and
/// cold requests are numerous enough to compare.
fn prefix_cache(w: &WindowSummary, records: &[RequestRecord]) -> Option<Diagnosis> {
    // Only a cache that hit explains anything; unique prompts at 0% say nothing.
    let rate = w.prefix_cache_hit_rate.filter(|&r| r >= 0.01)?;
    let cached: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.outcome.is_success() && r.counts.usage_cached_prompt.is_some_and(|c| c > 0))
        .collect();
    let cold: Vec<&RequestRecord> =
        records.iter().filter(|r| r.outcome.is_success() && r.counts.usage_cached_prompt == Some(0)).collect();
    let p50 = |rs: &[&RequestRecord]| {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| r.ttft()).map(ms).collect();
        Distribution::from_samples(&mut v, &[50.0]).p(50.0)
    };
    // A comparison needs both groups: a lone cold request (the first
    // one, on an idle server) against the rest says nothing.
    let enough = |n: usize| n >= 5 && n * 10 >= cached.len() + cold.len();
    let effect = match (p50(&cached), p50(&cold)) {
        (Some(a), Some(b)) if enough(cached.len()) && enough(cold.len()) => format!(
            "; requests served partly from cache had TTFT p50 {a:.1} ms against {b:.1} ms for the rest \
             ({} vs {} requests)",
            cached.len(),
            cold.len()
        ),
        _ => String::new(),
    };
    Some(Diagnosis {
        kind: DiagnosisKind::PrefixCache,
        message: format!("prefix cache: {:.1}% of prompt tokens hit over the window{effect}", rate * 100.0),
    })
}

/// Speculative decoding's acceptance in words, each figure that is known:
/// the share of draft tokens accepted, the tokens a step per sequence, and
/// the acceptance by draft position. A live run's diagnosis and an
/// estimate's engine line say it alike.
pub fn acceptance_words(rate: Option<f64>, mean_length: Option<f64>, by_position: &[f64]) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(a) = rate {
        parts.push(format!("{:.0}% of draft tokens accepted", a * 100.0));
    }
    if let Some(l) = mean_length {
        parts.push(format!("{l:.2} tokens a step per sequence, the bonus token included"));
    }
    if !by_position.is_empty() {
        let by: Vec<String> = by_position.iter().map(|a| format!("{:.0}%", a * 100.0)).collect();
        parts.push(format!("by draft position {}", by.join(" / ")));
    }
    parts
}

/// A speculating server's acceptance over the window, by position where it
/// says, and its fall as the batch grew (the first third of the window's
/// scrapes against the last).
fn speculative_decoding(w: &WindowSummary) -> Option<Diagnosis> {
    let sd = w.spec_decode.as_ref()?;
    let parts = acceptance_words(sd.acceptance_rate, sd.mean_accepted_length, &sd.acceptance_by_position);
    if parts.is_empty() {
        return None;
    }
    let source = if sd.basis == "gauges" { "the engine's own gauges" } else { "its counters over the window" };
    let mut message = format!("speculative decoding: {} ({source})", parts.join(", "));
    let running = w.series.gauges.get(&GaugeSignal::RunningRequests).and_then(|s| thirds(s));
    if let (Some((a0, a1)), Some((r0, r1))) = (thirds(&sd.acceptance_series), running) {
        if a1 < a0 - 0.05 && r1 > r0 + 0.5 {
            message.push_str(&format!(
                "; acceptance fell from {a0:.2} to {a1:.2} as the batch grew from {r0:.1} to {r1:.1} running: at \
                 larger batches each rejected draft costs more of a step shared by more sequences"
            ));
        } else if a1 < a0 - 0.05 {
            message.push_str(&format!(
                "; acceptance fell from {a0:.2} in the first third of the window to {a1:.2} in the last: the \
                 prompts changed, or the drafter fits them less well"
            ));
        }
    }
    Some(Diagnosis { kind: DiagnosisKind::SpeculativeDecoding, message })
}

/// A disaggregated deployment: the mean KV-cache transfer against the
/// server's (or, without its histogram, the client's) mean TTFT, and the
/// prefill and decode pools' queues where the server reports them.
fn kv_transfer(w: &WindowSummary, client_ttft_mean_ms: Option<f64>) -> Option<Diagnosis> {
    let queue = |g: GaugeSignal| w.gauges.get(&g).and_then(|d| d.mean).filter(|&m| m >= 0.5);
    let mut parts = Vec::new();
    if let Some(kv) = w.kv_transfer_mean_s.map(|s| s * 1e3) {
        let (ttft, whose) = match mean_ms(w, HistogramSignal::Ttft) {
            Some(t) => (Some(t), "the server's"),
            None => (client_ttft_mean_ms, "the client's"),
        };
        parts.push(match ttft.filter(|&t| t > 0.0) {
            Some(t) if kv >= 0.5 * t => format!(
                "TTFT is mostly KV transfer: moving a request's KV cache from the prefill to the decode pool took \
                 {kv:.1} ms on average, {:.0}% of {whose} mean TTFT of {t:.1} ms; a faster interconnect or fewer \
                 hops (prefill and decode on one node) pays off before more prefill GPUs do",
                100.0 * kv / t
            ),
            Some(t) => format!(
                "KV transfer from the prefill to the decode pool took {kv:.1} ms on average, {:.0}% of {whose} mean \
                 TTFT of {t:.1} ms",
                100.0 * kv / t
            ),
            None => format!("KV transfer from the prefill to the decode pool took {kv:.1} ms on average"),
        });
    }
    if let Some(q) = queue(GaugeSignal::PdPrefillWaiting) {
        parts.push(format!("{q:.1} prefilled requests waited on average for a decode instance to take them"));
    }
    if let Some(q) = queue(GaugeSignal::PdDecodeWaiting) {
        parts.push(format!(
            "{q:.1} requests waited on average for KV-cache room on the decode pool: the decode pool is the \
             bottleneck"
        ));
    }
    let moving = [GaugeSignal::PdPrefillTransferring, GaugeSignal::PdDecodeTransferring].map(queue);
    if let Some(q) = moving.iter().flatten().copied().reduce(f64::max) {
        parts.push(format!("{q:.1} requests' KV caches were in flight on average"));
    }
    if parts.is_empty() {
        return None;
    }
    Some(Diagnosis { kind: DiagnosisKind::KvTransfer, message: format!("disaggregated serving: {}", parts.join("; ")) })
}

/// The tail degrading while the median holds, across the run's halves.
fn tail_degrading(ok: &[&RequestRecord]) -> Option<Diagnosis> {
    if ok.len() < 40 {
        return None;
    }
    let mid = {
        let mut t: Vec<Duration> = ok.iter().map(|r| r.sent).collect();
        t.sort();
        t[t.len() / 2]
    };
    let half = |first: bool| {
        let mut v: Vec<f64> = ok.iter().filter(|r| (r.sent < mid) == first).filter_map(|r| r.ttft()).map(ms).collect();
        let d = Distribution::from_samples(&mut v, &[50.0, 99.0]);
        (d.p(50.0), d.p(99.0))
    };
    let ((Some(a50), Some(a99)), (Some(b50), Some(b99))) = (half(true), half(false)) else {
        return None;
    };
    if !(a50 > 0.0 && (b50 - a50).abs() / a50 < 0.15 && b99 > 1.5 * a99) {
        return None;
    }
    Some(Diagnosis {
        kind: DiagnosisKind::TailDegrading,
        message: format!(
            "p99 degrading while p50 holds: TTFT p50 {a50:.1} → {b50:.1} ms but p99 {a99:.1} → {b99:.1} ms \
             from the first half of the run to the second: a queue or cache pressure building in bursts"
        ),
    })
}

/// The client falling behind its own schedule while the server has room:
/// its queue empty when it was scraped, and its completions keeping up with
/// the arrivals. An unknown queue (no scrape) is not an empty one, and a
/// run whose completions fell well short of its arrivals was beyond the
/// server: a send late then is no proof of a slow client.
fn client_bottleneck(
    summary: &Summary,
    window: Option<&WindowSummary>,
    concurrency_cap: Option<usize>,
) -> Option<Diagnosis> {
    let cq99 = summary.client_queue_ms.p(99.0).unwrap_or(0.0);
    let queue = window.and_then(|w| w.gauges.get(&GaugeSignal::WaitingRequests)).and_then(|d| d.mean);
    let server_queued = queue.is_some_and(|q| q >= 0.5);
    let overloaded = summary.stability.as_ref().is_some_and(|s| {
        s.overloaded || s.offered_rps.is_some_and(|offered| s.achieved_rps < OVERLOAD_SHARE * offered)
    });
    let cap_bound = concurrency_cap.is_some_and(|c| summary.in_flight.peak >= c as u64);
    if cq99 <= 10.0 || server_queued || overloaded || cap_bound {
        return None;
    }
    let idle = if queue.is_some() { " while the server's queue was empty" } else { "" };
    Some(Diagnosis {
        kind: DiagnosisKind::ClientBottleneck,
        message: format!(
            "client-side lateness: requests left up to {cq99:.1} ms (p99) after their scheduled time{idle}, and the \
             server completed them as fast as they were due: the load generator, not the server, is behind (give \
             it more CPU or fewer streams per process)"
        ),
    })
}

/// Completions under this share of the arrivals: a load beyond the server.
const OVERLOAD_SHARE: f64 = 0.8;

#[cfg(test)]
mod tests {
    use super::super::window::CounterSummary;
    use super::*;
    use crate::{analyze, AnalysisOptions, CountSource, Outcome, RequestRecord, Window};

    /// A served request with `cached` prompt tokens from the cache and TTFT `ttft_ms`.
    fn served(id: u64, cached: u64, ttft_ms: u64) -> RequestRecord {
        let mut r = RequestRecord::new(id, Duration::from_millis(id * 100), Duration::from_millis(id * 100));
        let first = r.sent + Duration::from_millis(ttft_ms);
        r.chunks = vec![crate::OutputChunk { t: first, tokens: 1, channel: crate::Channel::Content }].into();
        (r.end, r.output_tokens, r.output_tokens_source) = (first, 1, CountSource::Usage);
        r.counts.usage_cached_prompt = Some(cached);
        r.outcome = Outcome::Success;
        r
    }

    fn window(hit_rate: f64) -> WindowSummary {
        WindowSummary {
            window: Window::default(),
            scrapes: 3,
            span_s: 1.0,
            engine: None,
            sources: Vec::new(),
            gauges: Default::default(),
            counters: Default::default(),
            histograms: Default::default(),
            prefix_cache_hit_rate: Some(hit_rate),
            energy_per_output_token_joules: None,
            spec_decode: None,
            kv_transfer_mean_s: None,
            series: Default::default(),
        }
    }

    /// Scrapes of a vLLM server speculating 3 tokens a proposal, one per
    /// second: `(running, accepted per 100 proposals)` over each second.
    fn speculating(steps: &[(f64, f64)]) -> WindowSummary {
        let (mut drafts, mut accepted) = (0.0, 0.0);
        let mut scrapes = Vec::new();
        for (i, &(running, per_100)) in std::iter::once(&(steps[0].0, 0.0)).chain(steps).enumerate() {
            drafts += if i == 0 { 0.0 } else { 100.0 };
            accepted += per_100;
            let text = format!(
                "vllm:num_requests_running {running}\n\
                 vllm:spec_decode_num_drafts_total {drafts}\n\
                 vllm:spec_decode_num_draft_tokens_total {}\n\
                 vllm:spec_decode_num_accepted_tokens_total {accepted}\n",
                3.0 * drafts
            );
            scrapes.push((Duration::from_secs(i as u64), crate::prometheus::scrape::parse(&text)));
        }
        let end = Duration::from_secs(steps.len() as u64);
        crate::prometheus::scrape::summarize(&scrapes, Duration::ZERO, end)
    }

    fn told(w: &WindowSummary, kind: DiagnosisKind) -> Option<String> {
        let summary = analyze(&[], &AnalysisOptions::default()).summary;
        diagnose(&[], &summary, Some(w), ClientLoad::default()).into_iter().find(|d| d.kind == kind).map(|d| d.message)
    }

    /// A cache near full with the server's own size of it: how many of the
    /// run's requests it holds, and the users that fit; without the size,
    /// the use alone.
    #[test]
    fn kv_pressure_says_what_the_server_s_cache_holds() {
        let scrapes = |info: &str| {
            let scrapes: Vec<_> = (0..3u64)
                .map(|i| {
                    let text = format!("vllm:kv_cache_usage_perc 0.97\nvllm:num_preemptions_total {}\n{info}", 5 * i);
                    (Duration::from_secs(i), crate::prometheus::scrape::parse(&text))
                })
                .collect();
            crate::prometheus::scrape::summarize(&scrapes, Duration::ZERO, Duration::from_secs(2))
        };
        let records: Vec<RequestRecord> = (0..4)
            .map(|i| {
                let mut r = served(i, 0, 10);
                (r.input_tokens, r.output_tokens) = (900, 100);
                r
            })
            .collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let load = ClientLoad { concurrency_cap: Some(32), ..ClientLoad::default() };
        let kv = |w: &WindowSummary| {
            diagnose(&records, &summary, Some(w), load)
                .into_iter()
                .find(|d| d.kind == DiagnosisKind::KvCachePressure)
                .map(|d| d.message)
                .unwrap()
        };
        let sized = scrapes("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"625\"} 1\n");
        let m = kv(&sized);
        assert!(m.contains("use peaked at 97%") && m.contains("10 preemptions"), "{m}");
        assert!(
            m.contains(
                "Its 10000 tokens (the server's own figure) hold about 10.0 requests of this run's mean size \
                        (1000 tokens, prompt and answer): fewer users (-c 10 or so), or the server's --max-num-seqs 10"
            ),
            "{m}"
        );
        let m = kv(&scrapes(""));
        assert!(m.contains("use peaked at 97%") && !m.contains("hold about"), "{m}");
    }

    #[test]
    fn speculative_acceptance_falling_as_the_batch_grows_is_told() {
        // 240 accepted of 300 drafted per second at 4 running, 150 at 32.
        let w = speculating(&[(4.0, 240.0), (4.0, 240.0), (16.0, 200.0), (32.0, 150.0), (32.0, 150.0), (32.0, 150.0)]);
        let m = told(&w, DiagnosisKind::SpeculativeDecoding).expect("a speculating server is described");
        assert!(m.contains("63% of draft tokens accepted") && m.contains("2.88 tokens a step"), "{m}");
        assert!(m.contains("acceptance fell from 0.80 to 0.50 as the batch grew from 4.0 to 32.0 running"), "{m}");
        // Steady acceptance at a growing batch: described, no fall told.
        let w = speculating(&[(4.0, 240.0), (4.0, 240.0), (16.0, 240.0), (32.0, 240.0), (32.0, 240.0), (32.0, 240.0)]);
        let m = told(&w, DiagnosisKind::SpeculativeDecoding).unwrap();
        assert!(m.contains("80% of draft tokens accepted") && !m.contains("fell"), "{m}");
        // A server that does not speculate: nothing.
        assert_eq!(told(&window(0.0), DiagnosisKind::SpeculativeDecoding), None);
    }

    #[test]
    fn ttft_mostly_kv_transfer_is_told_against_the_servers_ttft() {
        let mut w = window(0.0);
        let mean = |s: f64| HistogramSummary {
            count: 100.0,
            sum: Some(100.0 * s),
            mean: Some(s),
            p50: Some(s),
            p90: Some(s),
            p99: Some(s),
            p50_bucket: None,
            p99_bucket: None,
        };
        w.histograms.insert(HistogramSignal::Ttft, mean(0.050));
        w.kv_transfer_mean_s = Some(0.030);
        let m = told(&w, DiagnosisKind::KvTransfer).expect("transfers are described");
        assert!(m.contains("TTFT is mostly KV transfer") && m.contains("30.0 ms") && m.contains("60%"), "{m}");
        w.kv_transfer_mean_s = Some(0.005);
        let m = told(&w, DiagnosisKind::KvTransfer).unwrap();
        assert!(!m.contains("mostly") && m.contains("5.0 ms on average, 10% of the server's mean TTFT"), "{m}");
        // The decode pool's queue names the bottleneck.
        w.gauges.insert(GaugeSignal::PdDecodeWaiting, Distribution { mean: Some(4.0), ..Default::default() });
        let m = told(&w, DiagnosisKind::KvTransfer).unwrap();
        assert!(m.contains("4.0 requests waited on average for KV-cache room on the decode pool"), "{m}");
        assert_eq!(told(&window(0.0), DiagnosisKind::KvTransfer), None);
    }

    #[test]
    fn a_prefix_cache_effect_is_told_only_with_both_groups_large_enough() {
        let prefix_note = |records: &[RequestRecord]| {
            let summary = analyze(records, &AnalysisOptions::default()).summary;
            let d = diagnose(records, &summary, Some(&window(0.2)), ClientLoad::default());
            d.into_iter().find(|d| d.kind == DiagnosisKind::PrefixCache).expect("a hit rate of 20% is told").message
        };
        // Every chat after the first finds its template's block: one cold
        // request (the first, on an idle server) is no comparison.
        let one_cold: Vec<_> = (0..50).map(|i| served(i, if i == 0 { 0 } else { 16 }, 60)).collect();
        let m = prefix_note(&one_cold);
        assert!(m.starts_with("prefix cache: 20.0% of prompt tokens hit") && !m.contains("TTFT p50"), "{m}");
        // Ten of fifty cold: the groups are compared.
        let ten_cold: Vec<_> =
            (0..50).map(|i| served(i, if i < 10 { 0 } else { 512 }, if i < 10 { 90 } else { 30 })).collect();
        let m = prefix_note(&ten_cold);
        assert!(m.contains("TTFT p50 30.0 ms against 90.0 ms for the rest (40 vs 10 requests)"), "{m}");
    }

    /// A TTFT histogram summary of `count` requests with mean `mean_ms` and
    /// its p50 in the `lo_ms..hi_ms` bucket at `p50_ms`.
    fn ttft(count: f64, mean_ms: f64, p50_ms: f64, (lo_ms, hi_ms): (f64, f64)) -> WindowSummary {
        let mut w = window(0.0);
        w.prefix_cache_hit_rate = None;
        w.histograms.insert(
            HistogramSignal::Ttft,
            HistogramSummary {
                count,
                sum: Some(count * mean_ms / 1e3),
                mean: Some(mean_ms / 1e3),
                p50: Some(p50_ms / 1e3),
                p90: None,
                p99: None,
                p50_bucket: Some([lo_ms / 1e3, hi_ms / 1e3]),
                p99_bucket: None,
            },
        );
        w
    }

    #[test]
    fn the_ttft_gap_is_exact_from_the_means_and_bounded_by_the_bucket_otherwise() {
        // Forty requests at TTFT 230..=269 ms: mean 249.5, p50 249.5.
        let records: Vec<_> = (0..40).map(|i| served(i, 0, 230 + i)).collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let check = |w: &WindowSummary| cross_check(&records, &summary, w, Some(w), ClientLoad::default());
        // The server counted the same 40: the means differ by exactly the overhead.
        let c = check(&ttft(40.0, 247.0, 180.0, (100.0, 250.0)));
        assert_eq!(c.ttft_gap_basis.as_deref(), Some("mean"));
        assert!((c.ttft_gap_ms.unwrap() - 2.5).abs() < 1e-9, "{c:?}");
        assert!(c.notes[0].contains("over the same 40 requests") && c.notes[0].contains("2.5 ms of network"), "{c:?}");
        // Other requests on the server: only the p50s compare, and the
        // client's inside the server's bucket tells nothing.
        let c = check(&ttft(55.0, 247.0, 180.0, (100.0, 250.0)));
        assert_eq!(c.ttft_gap_basis.as_deref(), Some("p50"));
        let note = &c.notes[0];
        assert!(
            note.contains("inside the server's 100–250 ms histogram bucket") && note.contains("too coarse"),
            "{note}"
        );
        assert!(note.contains("the server counted 55 first tokens over the run, the client 40"), "{note}");
        assert!(!note.contains("69.5 ms of network"), "no overhead is claimed from the interpolated p50: {note}");
        // A client p50 above the server's bucket bounds the overhead from below.
        let c = check(&ttft(55.0, 200.0, 180.0, (100.0, 200.0)));
        assert!(c.notes[0].contains("at least 49.5 ms of network"), "{:?}", c.notes);
    }

    #[test]
    fn an_unstreamed_run_sets_its_e2e_against_the_server_s_and_not_its_ttft() {
        // Forty whole answers at 1080..=1119 ms (mean 1099.5), each one
        // chunk; the server's first tokens came at 36.5 ms, its answers
        // ended at 1095.0 ms on average.
        let records: Vec<_> = (0..40).map(|i| served(i, 0, 1080 + i)).collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let mut w = ttft(40.0, 36.5, 36.0, (20.0, 40.0));
        let mut e2e = w.histograms[&HistogramSignal::Ttft].clone();
        (e2e.sum, e2e.mean, e2e.p50) = (Some(40.0 * 1.095), Some(1.095), Some(1.0));
        w.histograms.insert(HistogramSignal::E2e, e2e);
        let c = cross_check(&records, &summary, &w, Some(&w), ClientLoad { unstreamed: true, ..ClientLoad::default() });
        let notes = c.notes.join("\n");
        assert_eq!((c.ttft_gap_ms, c.client_ttft_mean_ms, c.client_ttft_p50_ms), (None, None, None), "{c:?}");
        assert!(!notes.contains("TTFT mean") && !notes.contains("where TTFT went"), "{notes}");
        assert!(notes.contains("the client's TTFT is its E2E"), "{notes}");
        assert!(notes.contains("client E2E mean 1099.5 ms vs the server's 1095.0 ms over the same 40"), "{notes}");
        assert!(notes.contains("4.5 ms of network"), "{notes}");
        // Streamed, the same records' TTFT is a first token's, compared.
        let c = cross_check(&records, &summary, &w, Some(&w), ClientLoad::default());
        assert!(c.notes[0].contains("client TTFT mean 1099.5 ms vs the server's 36.5 ms"), "{:?}", c.notes);
        // Nor does a diagnosis read a whole answer's time as a first token:
        // the second half's tail, three times the first's, is not a TTFT tail.
        let records: Vec<_> = (0..80).map(|i| served(i, 0, if i >= 40 && i % 20 == 0 { 3000 } else { 1000 })).collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let kinds = |load: ClientLoad| -> Vec<DiagnosisKind> {
            diagnose(&records, &summary, Some(&w), load).into_iter().map(|d| d.kind).collect()
        };
        assert!(kinds(ClientLoad::default()).contains(&DiagnosisKind::TailDegrading));
        assert!(
            !kinds(ClientLoad { unstreamed: true, ..ClientLoad::default() }).contains(&DiagnosisKind::TailDegrading)
        );
    }

    #[test]
    fn a_pooling_run_s_engine_requests_and_prompt_tokens_are_put_down_to_its_fan_out() {
        // 100 TEI rerank queries of 4 documents, 256 tokens each by the
        // client's count: the server ran 400 engine requests, and counted
        // 41300 prompt tokens (the query once for each document).
        let records: Vec<_> = (0..100)
            .map(|i| {
                let mut r = RequestRecord::new(i, Duration::from_millis(i * 10), Duration::from_millis(i * 10));
                (r.end, r.input_tokens, r.outcome) = (r.sent + Duration::from_millis(5), 256, Outcome::Success);
                r
            })
            .collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let mut w = window(0.0);
        let delta = |delta: f64| CounterSummary { delta, rate_per_s: Some(delta), resets: 0 };
        w.counters.insert(CounterSignal::RequestsSucceeded, delta(400.0));
        w.counters.insert(CounterSignal::PromptTokens, delta(41300.0));
        let notes = |fan_out: Option<FanOut>| {
            let load = ClientLoad { fan_out, unstreamed: true, ..ClientLoad::default() };
            cross_check(&records, &summary, &w, Some(&w), load).notes.join("\n")
        };
        let told = notes(Some(FanOut::Documents(4)));
        assert!(told.contains("requests agree: the server finished 400 engine requests"), "{told}");
        assert!(told.contains("counts the query 4 times") && !told.contains("counting mismatch"), "{told}");
        assert!(!told.contains("another tokenizer"), "{told}");
        // Without the fan-out known, a mismatch (as before).
        let told = notes(None);
        assert!(told.contains("counting mismatch") && told.contains("finished 400 requests"), "{told}");
    }

    /// The measured successful requests of `records`, as `diagnose` hands them on.
    fn measured(records: &[RequestRecord]) -> Vec<&RequestRecord> {
        records.iter().filter(|r| !r.warmup && r.outcome.is_success()).collect()
    }

    #[test]
    fn prefill_scaling_is_told_where_prompts_vary_and_ttft_follows_them() {
        // TTFT = 20 ms + 0.1 ms a token (10,000 tokens/s), ±1 ms.
        let with_prompt = |i: u64, tokens: u64, cached: u64| {
            let mut r = served(i, cached, 20 + tokens / 10 + i % 3);
            r.input_tokens = tokens + cached;
            r
        };
        let varied: Vec<_> = (0..40).map(|i| with_prompt(i, 200 + 100 * i, 0)).collect();
        let m = prefill_scaling(&measured(&varied)).expect("a clear line");
        assert!(m.contains("100.0 ms more per 1,000 prompt tokens") && m.contains("R² 1.00"), "{m}");
        assert!(m.contains("about 9999 prompt tokens/s") || m.contains("about 10000 prompt tokens/s"), "{m}");
        // Cached tokens are not prefilled: the same fit with half of each prompt cached.
        let cached: Vec<_> = (0..40).map(|i| with_prompt(i, 200 + 100 * i, 1000)).collect();
        assert_eq!(prefill_scaling(&measured(&cached)), Some(m));
        // One prompt length: nothing to fit.
        let same: Vec<_> = (0..40).map(|i| with_prompt(i, 1000, 0)).collect();
        assert_eq!(prefill_scaling(&measured(&same)), None);
        // TTFT set by something else (a queue): no line.
        let queued: Vec<_> = (0..40)
            .map(|i| {
                let mut r = served(i, 0, 500 + (i * 7919) % 400);
                r.input_tokens = 200 + 100 * i;
                r
            })
            .collect();
        assert_eq!(prefill_scaling(&measured(&queued)), None);
        // Two requests held up 300 ms by a stalled host, at the long end:
        // left out, the slope is the line's; kept, it would be a fifth steeper.
        let stall = |i: u64| {
            let mut r = served(i, 0, 20 + (200 + 100 * i) / 10 + i % 3 + 300);
            r.input_tokens = 200 + 100 * i;
            r
        };
        let mut stalled = varied.clone();
        for i in [37, 39] {
            stalled[i as usize] = stall(i);
        }
        let slope = |m: &str| m["TTFT follows the prompt: ".len()..].split(' ').next().unwrap().parse::<f64>().unwrap();
        let told = prefill_scaling(&measured(&stalled)).expect("a clear line");
        assert!((slope(&told) - 100.0).abs() < 0.5 && told.contains("over 38 of 40 requests, 2 left out"), "{told}");
        // Five stalls in 40 are more than a few: all are kept, and the fit says so.
        for i in [35, 36, 38] {
            stalled[i as usize] = stall(i);
        }
        let told = prefill_scaling(&measured(&stalled)).expect("still a line");
        assert!(told.contains("least squares over 40 requests") && slope(&told) > 110.0, "{told}");
    }

    /// A request sent at `sent_ms` whose chunks came at `chunks_ms`.
    fn stream(id: u64, sent_ms: u64, chunks_ms: &[u64]) -> RequestRecord {
        let mut r = served(id, 0, 0);
        let at = Duration::from_millis;
        r.sent = at(sent_ms);
        r.chunks = chunks_ms
            .iter()
            .map(|&t| crate::OutputChunk { t: at(t), tokens: 1, channel: crate::Channel::Content })
            .collect();
        r.end = at(*chunks_ms.last().unwrap());
        r
    }

    #[test]
    fn stalls_are_told_as_prefills_only_when_they_come_with_waiting_requests() {
        // Four streams emit every 10 ms from 0 to 2 s, except that the wait
        // of another request (sent at 300, 600, … with its first token 100 ms
        // later) stalls them all for 100 ms.
        let stalls: Vec<u64> = (0..6).map(|k| 300 + 300 * k).collect();
        let times = |stalled: &[u64]| -> Vec<u64> {
            (0..=200).map(|i| i * 10).filter(|t| !stalled.iter().any(|&s| *t > s && *t < s + 100)).collect()
        };
        let mut records: Vec<_> = (0..4).map(|i| stream(i, 0, &times(&stalls))).collect();
        records.extend(stalls.iter().enumerate().map(|(k, &s)| stream(10 + k as u64, s, &[s + 100, s + 110])));
        // The median found here, and the summary's of the same gaps, alike.
        let m = prefill_stalls(&measured(&records), &Distribution::default())
            .expect("every stall had a request waiting beside it");
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let gaps: usize = records.iter().map(|r| r.chunks.len() - 1).sum();
        assert_eq!(summary.chunk_gap_ms.count, gaps as u64, "the summary's median is taken");
        assert_eq!(prefill_stalls(&measured(&records), &summary.chunk_gap_ms).as_ref(), Some(&m));
        assert!(m.starts_with("prefills stall the streams: 100% of the 24 gaps over 30.0 ms"), "{m}");
        assert!(m.contains("they average 100.0 ms") && m.contains("against 4% of the other gaps"), "{m}");
        // The same stalls with nobody waiting (a host pausing the server):
        // nothing is told of prefills.
        let lone: Vec<_> = (0..4).map(|i| stream(i, 0, &times(&stalls))).collect();
        assert_eq!(prefill_stalls(&measured(&lone), &Distribution::default()), None);
        // Nor when requests wait beside every gap alike (a queue never empty).
        let mut busy = lone.clone();
        busy.extend((0..40).map(|k| stream(100 + k, 50 * k, &[50 * k + 60, 50 * k + 70])));
        assert_eq!(prefill_stalls(&measured(&busy), &Distribution::default()), None);
    }

    #[test]
    fn a_simulated_engine_bound_by_its_kv_cache_is_told_so_with_its_figures_and_fixes() {
        use crate::doc::config::EngineSettings;
        use crate::doc::engine::{EngineSeries, SimulatedEngine};
        // 64 users' requests of 384 tokens (256 in, 128 out) sent over 100 s
        // to an engine whose cache holds 4,224 tokens: 11 of them.
        let records: Vec<RequestRecord> = (0..200)
            .map(|i| {
                let mut r = stream(i, i * 500, &[i * 500 + 300, i * 500 + 500]);
                (r.input_tokens, r.output_tokens) = (256, 128);
                r
            })
            .collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let engine = SimulatedEngine {
            config: EngineSettings {
                tp: 1,
                pp: 2,
                precision: "bf16".into(),
                kv_cache_dtype: "auto".into(),
                gpu_memory_utilization: 0.9,
                ..EngineSettings::default()
            },
            preemptions: 80,
            kv_capacity_tokens: 4224,
            max_num_seqs: 1024,
            makespan_s: 100.5,
            kv_usage_max: 1.0,
            series: EngineSeries { running: vec![11; 10], waiting: vec![50; 10], ..EngineSeries::default() },
            ..SimulatedEngine::default()
        };
        let load = ClientLoad::closed(64);
        let m = engine_kv_bound(&engine, &records, &summary, load).expect("a cache that holds 11 of 64").message;
        assert!(m.starts_with("the KV cache is the binding limit: its 4224 tokens hold about 11.0 requests"), "{m}");
        assert!(m.contains("(384 tokens, prompt and answer), against the 64 users' requests in flight"), "{m}");
        assert!(m.contains("peaked at 100%; 80 preemptions (0.4 a request"), "{m}");
        // SGLang's scheduler retracts.
        let mut sglang = engine.clone();
        sglang.config.scheduler = "sglang".into();
        let s = engine_kv_bound(&sglang, &records, &summary, load).unwrap().message;
        assert!(
            s.contains("80 retractions (0.4 a request: a retracted request gives") && !s.contains("preempt"),
            "{s}"
        );
        // 50 waiting over 100.5 s for 200 requests: 25.1 s each.
        assert!(m.contains("waited about 25.1 s for cache room") && m.contains("mean TTFT of 300 ms"), "{m}");
        for fix in [
            "a larger --tp, or --pp 4",
            "--precision fp8",
            "--kv-cache-dtype fp8",
            "--gpu-memory-utilization (it is 0.9)",
        ] {
            assert!(m.contains(fix), "{fix}: {m}");
        }
        assert!(m.ends_with("fewer users (-c 11 or so) or --max-num-seqs 11, so that the batch fits the cache"), "{m}");
        // The fixes already taken are not named.
        let mut fp8 = engine.clone();
        (fp8.config.precision, fp8.config.kv_cache_dtype) = ("fp8".into(), "fp8".into());
        let m = engine_kv_bound(&fp8, &records, &summary, load).unwrap().message;
        assert!(!m.contains("--precision fp8") && !m.contains("--kv-cache-dtype"), "{m}");
        // Waiting for the cache without preemptions is told too; neither,
        // or a cache that never filled, is not.
        let waits = SimulatedEngine { preemptions: 0, ..engine.clone() };
        assert!(engine_kv_bound(&waits, &records, &summary, load).is_some());
        let idle = SimulatedEngine {
            preemptions: 0,
            series: EngineSeries { running: vec![11; 10], waiting: vec![0; 10], ..EngineSeries::default() },
            ..engine.clone()
        };
        assert_eq!(engine_kv_bound(&idle, &records, &summary, load), None);
        let roomy = SimulatedEngine { kv_usage_max: 0.4, kv_capacity_tokens: 400_000, ..engine.clone() };
        assert_eq!(engine_kv_bound(&roomy, &records, &summary, load), None);
        // A cache of 2.6 requests, two running at 76% and the rest waiting:
        // too full for a third, so bound though never full (it had been told
        // nothing). One preemption is one, and a wait short beside the TTFT
        // makes the cache a part of it.
        let small = SimulatedEngine { kv_usage_max: 0.76, kv_capacity_tokens: 1_000, preemptions: 1, ..engine.clone() };
        let m = engine_kv_bound(&small, &records, &summary, load).expect("no room for a third").message;
        assert!(m.contains("hold about 2.6 requests") && m.contains("; 1 preemption (0.01 a request"), "{m}");
        let brief = SimulatedEngine {
            series: EngineSeries { running: vec![2; 10], waiting: vec![1; 10], ..EngineSeries::default() },
            ..small.clone()
        };
        let m = engine_kv_bound(&brief, &records, &summary, load).expect("still no room").message;
        assert!(m.contains("waited about 502 ms for cache room") && m.contains("mean TTFT of 300 ms"), "{m}");
        assert!(m.contains("TTFT and throughput here are the cache's"), "{m}");
        let mut slower = summary.clone();
        slower.ttft_ms.mean = Some(2_000.0);
        let m = engine_kv_bound(&brief, &records, &slower, load).expect("still no room").message;
        assert!(m.contains("mean TTFT of 2.0 s. The cache holds requests back, a part of TTFT"), "{m}");
        let roomier = SimulatedEngine { kv_usage_max: 0.6, ..small };
        assert_eq!(engine_kv_bound(&roomier, &records, &summary, load), None, "room for a third");
        // Waiting at the batch limit (--max-num-seqs 11), not the cache's: not this.
        let capped = SimulatedEngine { preemptions: 0, max_num_seqs: 11, ..engine.clone() };
        assert_eq!(engine_kv_bound(&capped, &records, &summary, load), None);
        // Records that are a stretch of the engine's run (a stage): nothing.
        assert_eq!(engine_kv_bound(&engine, &records[..50], &summary, load), None);
    }

    /// Sixteen users sent together at 0 take their first token at 133 ms,
    /// every later request 25 to 40 ms after its send: in 66 requests the
    /// sixteen are the TTFT p90, p95 and p99, and are told so with the
    /// warm-up that leaves them out; in 2,000 only the p99; a warm-up that
    /// took them, or a start like the rest, tells nothing.
    #[test]
    fn a_start_wave_in_the_tail_is_told() {
        let run = |n: u64, wave_ms: u64| -> Vec<RequestRecord> {
            (0..n)
                .map(|k| {
                    let (sent, ttft) = if k < 16 { (0, wave_ms) } else { (200 + 7 * k, 25 + k % 16) };
                    stream(k, sent, &[sent + ttft, sent + ttft + 10])
                })
                .collect()
        };
        let load = ClientLoad { concurrency_cap: Some(16), ..ClientLoad::default() };
        let told = |records: &[RequestRecord]| start_wave(&measured(records), load).map(|d| d.message);
        let m = told(&run(66, 133)).expect("the wave is the tail");
        assert!(m.starts_with("the 16 requests the 16 users sent together at the start"), "{m}");
        assert!(m.contains("in 133.0 ms (median)") && m.contains("the TTFT p90, p95, p99 here are theirs"), "{m}");
        assert!(m.contains("--warmup 16"), "{m}");
        assert!(told(&run(2000, 133)).unwrap().contains("the TTFT p99 here is theirs"));
        // A wave no slower than the rest, or none measured: nothing.
        assert_eq!(told(&run(66, 35)), None);
        let mut warmed = run(66, 133);
        warmed.iter_mut().take(16).for_each(|r| r.warmup = true);
        assert_eq!(told(&warmed), None);
        // An open loop's sends are its schedule's: nothing.
        let open = ClientLoad { schedule: Some(Schedule::Rate(10.0)), ..load };
        assert_eq!(start_wave(&measured(&run(66, 133)), open), None);
    }

    #[test]
    fn users_sending_in_waves_are_told_and_users_apart_are_not() {
        // Requests of 50 chunks, 10 ms apart after an 80 ms TTFT: each
        // takes 570 ms. Each user sends 40, one when its last ends.
        let run = |sends: Vec<u64>| -> Vec<RequestRecord> {
            sends
                .into_iter()
                .enumerate()
                .map(|(k, s)| stream(k as u64, s, &(0..50).map(|i| s + 80 + 10 * i).collect::<Vec<_>>()))
                .collect()
        };
        let told = |records: &[RequestRecord], cap: Option<usize>| {
            let summary = analyze(records, &AnalysisOptions::default()).summary;
            lockstep(&measured(records), &summary, ClientLoad { concurrency_cap: cap, ..ClientLoad::default() })
                .map(|d| d.message)
        };
        let loop_of = |users: u64, start: &dyn Fn(u64) -> u64| -> Vec<u64> {
            (0..40 * users).map(|k| start(k % users) + 570 * (k / users)).collect()
        };
        // Waves of 5 sent in the same millisecond, every 570 ms.
        let waves = run(loop_of(5, &|_| 0));
        let m = told(&waves, Some(5)).expect("waves of five");
        assert!(m.starts_with("the 5 users moved in lockstep: 80% of the sends came within"), "{m}");
        assert!(m.contains("in bursts of 5.0 sends"), "{m}");
        assert!(m.contains("TTFT (p50 80.0 ms here)") && m.contains("--ramp-up 0.6s"), "{m}");
        assert!(m.contains("the percentile intervals are widened where batch means see it"), "{m}");
        assert!(m.contains("--runs N gives the spread"), "{m}");
        // The simulated engine in virtual time repeats its waves: --runs N
        // is not advised there (it had been, beside a repeats block whose
        // runs all gave the same figures).
        let summary = analyze(&waves, &AnalysisOptions::default()).summary;
        let load = ClientLoad { concurrency_cap: Some(5), virtual_time: true, ..ClientLoad::default() };
        let sim = lockstep(&measured(&waves), &summary, load).expect("waves of five").message;
        assert!(
            sim.contains("--runs N cannot give their spread here: the simulated engine repeats the same waves")
                && !sim.contains("gives the spread from run to run"),
            "{sim}"
        );
        assert!(
            m.contains("within 15.0 ms of the one before (users sending at independent times would put about 13%"),
            "{m}"
        );
        // A wave in two parts a step apart (one request a step ahead of
        // the rest, as one that reached an idle server alone) is one wave.
        let parts = told(&run(loop_of(5, &|u| if u == 0 { 0 } else { 10 })), Some(5)).expect("a wave in parts");
        assert!(parts.contains("in bursts of 5.0 sends"), "{parts}");
        // One user four steps ahead of the other four: bursts of 1 and 4,
        // which a send sees as 3.4 on average (it had said 2.5, where four
        // of five users move together).
        let ahead = told(&run(loop_of(5, &|u| if u == 0 { 0 } else { 40 })), Some(5)).expect("one user ahead");
        assert!(ahead.contains("in bursts of 3.4 sends, a send's on average"), "{ahead}");
        // Two users in step: waves of 2 are told.
        assert!(told(&run(loop_of(2, &|_| 0)), Some(2)).unwrap().contains("in bursts of 2.0"));
        // The same users a fifth of a request apart: nothing.
        assert_eq!(told(&run(loop_of(5, &|u| 114 * u)), Some(5)), None);
        // Users that joined at independent times (a fixed pseudo-random
        // draw each): nothing either.
        let mut x = 12345u64;
        let mut joins_of = |users: u64| -> Vec<u64> {
            (0..users)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 33) % 570
                })
                .collect()
        };
        let joins = joins_of(5);
        assert_eq!(told(&run(loop_of(5, &|u| joins[u as usize])), Some(5)), None);
        // 256 users in waves, so many that independent sends crowd within
        // the window too (their sends 2 ms apart on average, against a
        // window of 15 ms): told by the time left empty between the waves.
        // Users that joined at independent times are not.
        let dense = |start: &dyn Fn(u64) -> u64| {
            let sends: Vec<u64> = (0..8 * 256).map(|k| start(k % 256) + 570 * (k / 256)).collect();
            sends
                .into_iter()
                .enumerate()
                .map(|(k, s)| stream(k as u64, s, &[s + 80, s + 90, s + 100]))
                .collect::<Vec<_>>()
        };
        let m = told(&dense(&|_| 0), Some(256)).expect("waves of 256");
        assert!(m.starts_with("the 256 users moved in lockstep") && m.contains("in bursts of 256.0 sends"), "{m}");
        assert!(m.contains("with no send for nearly all of the time between them (about 0% at independent"), "{m}");
        let joins = joins_of(256);
        assert_eq!(told(&dense(&|u| joins[u as usize]), Some(256)), None);
        // 26 users in waves, between the two: independent sends would join
        // about half the time (22 ms apart on average against a 15 ms
        // window) and leave most of it empty, so neither rule above tells
        // them; their bursts of 26, against about 2 at independent times,
        // do. Independent joins are not told.
        let mid = |start: &dyn Fn(u64) -> u64| {
            (0..8 * 26)
                .map(|k| start(k % 26) + 570 * (k / 26))
                .enumerate()
                .map(|(k, s)| stream(k as u64, s, &[s + 80, s + 90, s + 100]))
                .collect::<Vec<_>>()
        };
        let m = told(&mid(&|_| 0), Some(26)).expect("waves of 26");
        assert!(m.contains("in bursts of 26.0 sends, a send's on average (about 3.4 at independent times)"), "{m}");
        let joins = joins_of(26);
        assert_eq!(told(&mid(&|u| joins[u as usize]), Some(26)), None);
        // No cap (an open loop's schedule), one user, or too few requests.
        assert_eq!(told(&waves, None), None);
        assert_eq!(told(&waves, Some(1)), None);
        assert_eq!(told(&waves[..19], Some(5)), None);

        // An open loop of 20 requests a second capped at 5 in flight, where
        // 5 in flight keep up with 8.8 a second: the cap holds the sends
        // back (each goes when a request ends, 50 ms to 15 s after its
        // time), and the fix named is the cap or the rate, not --rate.
        let open = |records: &[RequestRecord], scheduled_ms: &dyn Fn(usize) -> u64| {
            let mut records = records.to_vec();
            for (k, r) in records.iter_mut().enumerate() {
                r.scheduled = Duration::from_millis(scheduled_ms(k));
            }
            let summary = analyze(&records, &AnalysisOptions::default()).summary;
            let load =
                ClientLoad { concurrency_cap: Some(5), schedule: Some(Schedule::Rate(20.0)), ..ClientLoad::default() };
            lockstep(&measured(&records), &summary, load).map(|d| d.message)
        };
        let m = open(&waves, &|k| 50 * k as u64).expect("a cap that binds");
        assert!(m.starts_with("the 5 requests the cap lets in flight (98% of the sends waited for a free one"), "{m}");
        assert!(m.contains("not on the --rate 20 schedule"), "{m}");
        assert!(
            m.contains("raise -c until it no longer binds") && m.contains("(under about 8.8/s: 5 / the 0.57s"),
            "{m}"
        );
        assert!(!m.contains("--ramp-up"), "{m}");
        // The same bursts as the schedule's own, sent on time (a bursty
        // arrival process under a cap that never bound): nothing.
        let on_time: Vec<u64> = waves.iter().map(|r| r.sent.as_millis() as u64).collect();
        assert_eq!(open(&waves, &|k| on_time[k]), None);
    }

    #[test]
    fn a_simulator_behind_its_timeline_is_blamed_rather_than_prefills() {
        let stalls: Vec<u64> = (0..6).map(|k| 300 + 300 * k).collect();
        let times = |stalled: &[u64]| -> Vec<u64> {
            (0..=200).map(|i| i * 10).filter(|t| !stalled.iter().any(|&s| *t > s && *t < s + 100)).collect()
        };
        let mut records: Vec<_> = (0..4).map(|i| stream(i, 0, &times(&stalls))).collect();
        records.extend(stalls.iter().enumerate().map(|(k, &s)| stream(10 + k as u64, s, &[s + 100, s + 110])));
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let kinds = |w: &WindowSummary| -> Vec<DiagnosisKind> {
            diagnose(&records, &summary, Some(w), ClientLoad::closed(4)).into_iter().map(|d| d.kind).collect()
        };
        let mut w = ttft(28.0, 50.0, 50.0, (0.0, 1e6));
        assert!(kinds(&w).contains(&DiagnosisKind::PrefillStalls), "no lateness told: prefills");
        let late = |p99_ms: f64| HistogramSummary {
            count: 1000.0,
            sum: Some(1000.0 * 0.004),
            mean: Some(0.004),
            p50: Some(0.001),
            p90: Some(0.002),
            p99: Some(p99_ms / 1e3),
            p50_bucket: None,
            p99_bucket: None,
        };
        // Steps late by 2.7 s at worst, as on a busy machine: the simulator.
        w.histograms.insert(HistogramSignal::SimLateness, late(2700.0));
        let d = diagnose(&records, &summary, Some(&w), ClientLoad::closed(4));
        let told = d.iter().find(|d| d.kind == DiagnosisKind::SimulatorLate).expect("the lateness is told");
        assert!(
            told.message.contains("2700.0 ms at p99") && told.message.contains("machine was busy"),
            "{}",
            told.message
        );
        assert!(!d.iter().any(|d| d.kind == DiagnosisKind::PrefillStalls), "{d:?}");
        // A few milliseconds late is ordinary jitter: nothing told.
        w.histograms.insert(HistogramSignal::SimLateness, late(5.0));
        assert!(!kinds(&w).contains(&DiagnosisKind::SimulatorLate));
    }

    #[test]
    fn a_simulator_s_lateness_is_judged_in_the_engine_s_time() {
        // goodput serve --speed 50, open loop: steps 7.7 ms late at p99 and
        // 0.45 ms on average on the wall clock, its TTFT 1.1 ms.
        let late = |w: &mut WindowSummary, speed: Option<f64>| {
            w.histograms.insert(
                HistogramSignal::SimLateness,
                HistogramSummary {
                    count: 3868.0,
                    sum: Some(3868.0 * 0.00045),
                    mean: Some(0.00045),
                    p50: Some(0.0002),
                    p90: Some(0.001),
                    p99: Some(0.0077),
                    p50_bucket: None,
                    p99_bucket: None,
                },
            );
            if let Some(s) = speed {
                w.gauges
                    .insert(GaugeSignal::SimSpeed, Distribution { mean: Some(s), max: Some(s), ..Default::default() });
            }
        };
        let mut w = ttft(300.0, 1.1, 1.0, (0.0, 5.0));
        late(&mut w, Some(50.0));
        let message = told(&w, DiagnosisKind::SimulatorLate).expect("385 ms of the engine's time is told");
        assert!(message.contains("22.5 ms and 385 ms of the engine's time at --speed 50"), "{message}");
        assert!(message.contains("41% of the server's mean TTFT of 1.1 ms"), "{message}");
        assert!(message.contains("a lower --speed") && !message.contains("goodput serve"), "{message}");
        // The same wall-clock lateness at speed 1, against a TTFT of 27 ms:
        // jitter, nothing told.
        let mut w = ttft(300.0, 27.0, 27.0, (20.0, 40.0));
        late(&mut w, Some(1.0));
        assert_eq!(told(&w, DiagnosisKind::SimulatorLate), None);
        // A mean lateness that is a large share of TTFT is told whatever
        // the p99 (and without a speed, as at speed 1).
        let mut w = ttft(300.0, 3.0, 3.0, (0.0, 5.0));
        late(&mut w, None);
        let message = told(&w, DiagnosisKind::SimulatorLate).expect("15% of TTFT is told");
        assert!(!message.contains("engine's time") && message.contains("goodput serve on a machine"), "{message}");
    }

    /// A closed loop of `users` on a sped-up engine server, every time in
    /// microseconds on the wall clock: each request's first chunk `ttft_us`
    /// after its send, then a chunk every `step_us`, 16 in all; its user
    /// sends again `turn_us` after its last. Users start a step apart.
    fn sped_up_loop(users: u64, ttft_us: u64, step_us: u64, turn_us: u64) -> Vec<RequestRecord> {
        let us = Duration::from_micros;
        let each = ttft_us + 15 * step_us + turn_us;
        (0..users * 12)
            .map(|k| {
                let sent = (k % users) * step_us + (k / users) * each;
                let mut r = served(k, 0, 0);
                r.sent = us(sent);
                r.chunks = (0..16)
                    .map(|i| crate::OutputChunk {
                        t: us(sent + ttft_us + i * step_us),
                        tokens: 1,
                        channel: crate::Channel::Content,
                    })
                    .collect();
                (r.end, r.output_tokens) = (us(sent + ttft_us + 15 * step_us), 16);
                r
            })
            .collect()
    }

    /// The server's TTFT histogram over `count` requests, mean `mean_ms`,
    /// and its `--speed` gauge.
    fn sped_up(count: f64, mean_ms: f64, speed: Option<f64>) -> WindowSummary {
        let mut w = ttft(count, mean_ms, mean_ms, (0.0, 1e6));
        if let Some(s) = speed {
            w.gauges.insert(GaugeSignal::SimSpeed, Distribution { mean: Some(s), max: Some(s), ..Default::default() });
        }
        w
    }

    #[test]
    fn a_closed_loop_s_turn_on_a_sped_up_simulator_is_told_in_the_engine_s_time() {
        // goodput serve --speed 4, 8 users: steps of 2.1 ms on the wall
        // clock (8.4 ms of the engine's), a first token 8.0 ms after the
        // send by the client and 7.6 ms after the request came by the
        // server's histogram, and 0.15 ms in the client from an answer's
        // end to the next send: a turn of 0.55 ms, 2.2 ms of the engine's.
        let records = sped_up_loop(8, 8000, 2100, 150);
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let n = records.len() as f64;
        let told = |w: &WindowSummary, load: ClientLoad| {
            diagnose(&records, &summary, Some(w), load)
                .into_iter()
                .find(|d| d.kind == DiagnosisKind::SimulatorSpeed)
                .map(|d| d.message)
        };
        let m = told(&sped_up(n, 7.6, Some(4.0)), ClientLoad::closed(8)).expect("a turn of 26% of a step is told");
        assert!(m.starts_with("at --speed 4 the engine runs 4 times faster"), "{m}");
        assert!(m.contains("took about 0.55 ms on the wall clock (0.15 ms in the client"), "{m}");
        assert!(m.contains("0.40 ms of network and HTTP a request"), "{m}");
        assert!(m.contains("2.2 ms of the engine's time, 26% of its step (8.4 ms, the median chunk gap)"), "{m}");
        assert!(m.contains("at --speed 1 it would be 7%") && m.contains("serve at --speed 1"), "{m}");
        // At speed 1, or from a server that gives no speed (a real one),
        // the turn is the deployment's own: nothing told.
        assert_eq!(told(&sped_up(n, 7.6, Some(1.0)), ClientLoad::closed(8)), None);
        assert_eq!(told(&sped_up(n, 7.6, None), ClientLoad::closed(8)), None);
        // An open loop's schedule sets its sends, not the answers' ends.
        assert_eq!(told(&sped_up(n, 7.6, Some(4.0)), ClientLoad::new(Some(8), Some(50.0), false)), None);
        // A turn under a tenth of a step (steps of 8.4 ms on the wall
        // clock, 2 ms of the engine's at --speed 4 where a step is 34 ms).
        let slow = sped_up_loop(8, 30000, 8400, 150);
        let slow_summary = analyze(&slow, &AnalysisOptions::default()).summary;
        let w = sped_up(n, 29.6, Some(4.0));
        let d = diagnose(&slow, &slow_summary, Some(&w), ClientLoad::closed(8));
        assert!(!d.iter().any(|d| d.kind == DiagnosisKind::SimulatorSpeed), "{d:?}");
        // The cross-check puts the 0.4 ms between the TTFTs in the
        // engine's time.
        let c = cross_check(&records, &summary, &sped_up(n, 7.6, Some(4.0)), None, ClientLoad::closed(8));
        assert!(
            c.notes.iter().any(|n| n.contains("the 0.4 ms between the two TTFTs is 1.6 ms of the engine's time")),
            "{:?}",
            c.notes
        );
        let c = cross_check(&records, &summary, &sped_up(n, 7.6, Some(1.0)), None, ClientLoad::closed(8));
        assert!(!c.notes.iter().any(|n| n.contains("--speed")), "{:?}", c.notes);
    }

    /// A window whose TTFT and queue-time histograms have the means given,
    /// over `count` requests, and whose gauges held `running` and `waiting`.
    fn queued(count: f64, ttft_ms: f64, queue_ms: f64, gauges: Option<(f64, f64)>) -> WindowSummary {
        let mut w = ttft(count, ttft_ms, ttft_ms, (0.0, 1e6));
        let h = |mean_ms: f64| HistogramSummary {
            count,
            sum: Some(count * mean_ms / 1e3),
            mean: Some(mean_ms / 1e3),
            p50: None,
            p90: None,
            p99: None,
            p50_bucket: None,
            p99_bucket: None,
        };
        w.histograms.insert(HistogramSignal::Queue, h(queue_ms));
        if let Some((running, waiting)) = gauges {
            let d = |v: f64| Distribution::from_samples(&mut [v, v, v], &[50.0, 95.0]);
            w.gauges.insert(GaugeSignal::RunningRequests, d(running));
            w.gauges.insert(GaugeSignal::WaitingRequests, d(waiting));
        }
        w
    }

    #[test]
    fn the_queue_time_histogram_splits_ttft_and_weighs_the_queue() {
        // Forty requests at TTFT 230..=269 ms (mean 249.5).
        let records: Vec<_> = (0..40).map(|i| served(i, 0, 230 + i)).collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        let w = queued(40.0, 247.0, 147.0, None);
        let c = cross_check(&records, &summary, &w, Some(&w), ClientLoad::default());
        assert_eq!(c.server_queue_mean_ms, Some(147.0));
        let split = c.notes.iter().find(|n| n.starts_with("where TTFT went")).expect("a split");
        assert!(split.contains("2.5 ms network, HTTP and client · 147.0 ms waiting in the server's queue · 100.0 ms"));
        // The waits are most of TTFT though the gauges show no batch at its
        // cap: told from the histogram.
        let kinds = |w: &WindowSummary| -> Vec<(DiagnosisKind, String)> {
            diagnose(&records, &summary, Some(w), ClientLoad::default())
                .into_iter()
                .map(|d| (d.kind, d.message))
                .collect()
        };
        let d = kinds(&w);
        assert!(
            d.iter().any(|(k, m)| *k == DiagnosisKind::QueueWait && m.contains("waited 147.0 ms") && m.contains("60%")),
            "{d:?}"
        );
        // A full batch with requests waiting, each for a moment: the queue is
        // named, and so is how little it cost.
        let d = kinds(&queued(40.0, 247.0, 1.0, Some((32.0, 3.0))));
        let (_, m) = d.iter().find(|(k, _)| *k == DiagnosisKind::QueueBuildUp).expect("the gauges show a queue");
        assert!(m.contains("yet a request waited only 1.0 ms in the queue on average, 0.4%"), "{m}");
        assert!(!d.iter().any(|(k, _)| *k == DiagnosisKind::QueueWait), "{d:?}");
        // The same with long waits: queueing is part of TTFT, and by how much.
        let d = kinds(&queued(40.0, 247.0, 100.0, Some((32.0, 3.0))));
        let (_, m) = d.iter().find(|(k, _)| *k == DiagnosisKind::QueueBuildUp).unwrap();
        assert!(m.contains("TTFT includes queueing, 100.0 ms a request on average (40% of"), "{m}");
        assert!(m.contains("the server is at its batch limit"), "{m}");
        // The same gauges under a client of 32 users: the plateau is the
        // client's concurrency, not the server's batch limit.
        let w = queued(40.0, 247.0, 100.0, Some((32.0, 3.0)));
        let d: Vec<Diagnosis> = diagnose(&records, &summary, Some(&w), ClientLoad::closed(32));
        let m = &d.iter().find(|d| d.kind == DiagnosisKind::QueueBuildUp).unwrap().message;
        assert!(
            m.contains("the client's concurrency (32), not a batch limit") && !m.contains("at its batch limit"),
            "{m}"
        );
        // A client allowing more than the server ran: the server's limit.
        let d: Vec<Diagnosis> = diagnose(&records, &summary, Some(&w), ClientLoad::closed(256));
        let m = &d.iter().find(|d| d.kind == DiagnosisKind::QueueBuildUp).unwrap().message;
        assert!(m.contains("the server is at its batch limit"), "{m}");
        // A server that counted other requests too: no split.
        let w = queued(55.0, 247.0, 147.0, None);
        assert_eq!(cross_check(&records, &summary, &w, Some(&w), ClientLoad::default()).server_queue_mean_ms, None);
    }

    /// Thirty served requests of four output tokens each (120 received), and
    /// their summary.
    fn thirty_of_four_tokens() -> (Vec<RequestRecord>, Summary) {
        let records: Vec<_> = (0..30)
            .map(|i| {
                let mut r = served(i, 0, 50);
                r.output_tokens = 4;
                r
            })
            .collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        (records, summary)
    }

    /// A token counter that went down during the run (a restart, two
    /// processes behind one /metrics) is named as the mismatch's cause: it
    /// had been blamed on other clients, eight resets in four seconds and all.
    #[test]
    fn a_counter_that_went_down_is_named_as_the_mismatch_s_cause() {
        let (records, summary) = thirty_of_four_tokens();
        let notes = |resets: u32| {
            let mut w = window(0.0);
            w.counters
                .insert(CounterSignal::GenerationTokens, CounterSummary { delta: 1200.0, rate_per_s: None, resets });
            cross_check(&records, &summary, &w, Some(&w), ClientLoad::default()).notes.join("\n")
        };
        let n = notes(8);
        assert!(n.contains("counting mismatch: the server generated 1200 tokens"), "{n}");
        assert!(
            n.contains("the server's counter went down 8 time(s) during the run") && !n.contains("other clients"),
            "{n}"
        );
        let n = notes(0);
        assert!(n.contains("other clients on the server") && !n.contains("went down"), "{n}");
    }

    #[test]
    fn a_disaggregated_server_s_prefill_token_is_not_a_counting_mismatch() {
        let (records, summary) = thirty_of_four_tokens();
        let notes = |generated: f64, disaggregated: bool| {
            let mut w = window(0.0);
            let delta = CounterSummary { delta: generated, rate_per_s: None, resets: 0 };
            w.counters.insert(CounterSignal::GenerationTokens, delta);
            if disaggregated {
                let h = HistogramSummary {
                    count: 30.0,
                    sum: Some(0.03),
                    mean: Some(0.001),
                    p50: None,
                    p90: None,
                    p99: None,
                    p50_bucket: None,
                    p99_bucket: None,
                };
                w.histograms.insert(HistogramSignal::KvTransfer, h);
            }
            cross_check(&records, &summary, &w, Some(&w), ClientLoad::default()).notes.join("\n")
        };
        // Both pools scraped: the prefill pool's one token a request (30)
        // on top of the 120 the decode pool generated.
        let n = notes(150.0, true);
        assert!(n.contains("tokens agree: server 150, client 120 and one token for each of the 30 requests"), "{n}");
        assert!(!n.contains("mismatch"), "{n}");
        // The decode pool alone: as any server.
        assert!(notes(120.0, true).contains("tokens agree: server 120, client 120"));
        // Neither: a mismatch, which names what was allowed for.
        let n = notes(200.0, true);
        assert!(n.contains("counting mismatch") && n.contains("one token a request more (150 here)"), "{n}");
        // A server that is not disaggregated gets no allowance.
        let n = notes(150.0, false);
        assert!(n.contains("counting mismatch: the server generated 150 tokens") && !n.contains("prefill"), "{n}");
    }

    /// Twenty requests, each sent 50 ms after it was due.
    fn late_sends() -> Summary {
        let records: Vec<RequestRecord> = (0..20)
            .map(|i| {
                let mut r = served(i, 0, 100);
                r.sent += Duration::from_millis(50);
                r
            })
            .collect();
        let summary = analyze(&records, &AnalysisOptions::default()).summary;
        assert!(summary.client_queue_ms.p(99.0).unwrap() > 10.0);
        summary
    }

    fn client_told(summary: &Summary, w: Option<&WindowSummary>) -> Option<String> {
        diagnose(&[], summary, w, ClientLoad::default())
            .into_iter()
            .find(|d| d.kind == DiagnosisKind::ClientBottleneck)
            .map(|d| d.message)
    }

    #[test]
    fn a_late_client_is_blamed_only_when_the_server_kept_up() {
        let summary = late_sends();
        let waiting = |mean: f64| {
            let mut w = window(0.0);
            w.gauges.insert(GaugeSignal::WaitingRequests, Distribution { mean: Some(mean), ..Default::default() });
            w
        };
        // The queue scraped empty: the client's lateness, and the queue said.
        let told = client_told(&summary, Some(&waiting(0.0))).expect("told");
        assert!(told.contains("queue was empty"), "{told}");
        // A server with a queue: not the client.
        assert_eq!(client_told(&summary, Some(&waiting(3.0))), None);
        // No scrape (--no-metrics): nothing said of the queue.
        let told = client_told(&summary, None).expect("told");
        assert!(!told.contains("queue"), "{told}");
        assert!(!client_told(&summary, Some(&window(0.0))).unwrap().contains("queue"), "a window without the gauge");
    }

    #[test]
    fn an_overloaded_run_s_late_sends_are_not_the_client_s() {
        // 23 requests due a second, 9.6 completed: the load was beyond the
        // server, whose queue was not scraped.
        let mut summary = late_sends();
        let stability = crate::analysis::stability::Stability {
            open_loop: true,
            offered_rps: Some(23.0),
            achieved_rps: 9.6,
            ..Default::default()
        };
        summary.stability = Some(stability.clone());
        assert_eq!(client_told(&summary, None), None);
        summary.stability = Some(crate::analysis::stability::Stability { overloaded: true, ..Default::default() });
        assert_eq!(client_told(&summary, None), None);
        // Completions that kept up with the arrivals: the client's.
        summary.stability = Some(crate::analysis::stability::Stability { achieved_rps: 22.5, ..stability });
        assert!(client_told(&summary, None).is_some());
    }
}
