//! GuideLLM's `benchmarks.json`: its settings (`config.spec`) and, per
//! benchmark, every request's stats under `requests.successful`,
//! `errored` and `incomplete`, each with `info.timings` on the wall clock
//! (`request_start`, `first_token_iteration`, `last_token_iteration`,
//! `token_iterations`, `request_end`) and its token counts. Read from
//! GuideLLM 0.8's `schemas/base/request_stats.py` and
//! `backends/openai/http.py`: an iteration is a streamed line that added
//! text; only the first and the last are timed, and its ITL is one mean gap
//! per request, (last − first)/(n − 1).

use super::{common_not_recomputed, common_notes, secs, typed, ImportError, ImportInfo, Parsed};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{
    spread_evenly, Channel, ChunkTokenSource, CountSource, FailureKind, Outcome, OutputChunk, RequestRecord, Target,
};
use serde::Deserialize;
use serde_json::{json, Value};

const TOOL: &str = "guidellm";

/// GuideLLM's benchmarks report.
pub(super) fn is(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
        && (v.pointer("/metadata/guidellm_version").is_some()
            || v.pointer("/benchmarks/0/type_").and_then(Value::as_str) == Some("generative_benchmark"))
}

/// What goodput reads of GuideLLM's report: its version, the settings it
/// ran with, and its benchmarks (counted here: one is all goodput takes,
/// read as a [`Benchmark`]).
#[derive(Deserialize)]
struct Report {
    metadata: Option<Metadata>,
    config: Option<Config>,
    /// Counted here; the one benchmark is read apart ([`Benchmark`]).
    benchmarks: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Metadata {
    guidellm_version: Option<String>,
}

#[derive(Deserialize)]
struct Config {
    spec: Option<Spec>,
}

/// The run's settings: where it sent, the load's profile and what ended it.
#[derive(Deserialize)]
struct Spec {
    backend: Option<Backend>,
    profile: Option<Profile>,
    constraints: Option<Vec<Constraint>>,
}

#[derive(Deserialize)]
struct Backend {
    /// The server's URL.
    target: Option<String>,
    model: Option<String>,
    /// The route's request body: `/v1/chat/completions`, `/v1/completions`, ….
    request_format: Option<String>,
}

#[derive(Deserialize)]
struct Profile {
    /// `concurrent`, `synchronous`, `constant`, `poisson`, `sweep`, ….
    kind: Option<String>,
    /// A concurrent profile's streams, one per benchmark.
    streams: Option<Vec<u64>>,
    /// A rate profile's requests per second, one or one per benchmark.
    rate: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(f64),
    Many(Vec<f64>),
}

/// A limit that ends a benchmark: `max_requests` with its `count`, ….
#[derive(Deserialize)]
struct Constraint {
    kind: Option<String>,
    count: Option<u64>,
}

/// One benchmark: its requests, by how they ended.
#[derive(Deserialize)]
struct Benchmark {
    requests: Option<Groups>,
}

#[derive(Deserialize)]
struct Groups {
    successful: Option<Vec<Request>>,
    errored: Option<Vec<Request>>,
    incomplete: Option<Vec<Request>>,
}

/// One request's stats.
#[derive(Deserialize)]
struct Request {
    prompt_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Present with `total_tokens` when the server sent usage.
    output_metrics: Option<OutputMetrics>,
    info: Option<Info>,
}

#[derive(Deserialize)]
struct OutputMetrics {
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Info {
    timings: Option<Timings>,
    error: Option<String>,
}

/// A request's times, wall-clock seconds; only the first and the last
/// iteration (a streamed line that added text) are timed.
#[derive(Deserialize, Default, Clone, Copy)]
struct Timings {
    targeted_start: Option<f64>,
    resolve_start: Option<f64>,
    request_start: Option<f64>,
    first_token_iteration: Option<f64>,
    last_token_iteration: Option<f64>,
    token_iterations: Option<u64>,
    request_end: Option<f64>,
    resolve_end: Option<f64>,
}

impl Request {
    fn timings(&self) -> Timings {
        self.info.as_ref().and_then(|i| i.timings).unwrap_or_default()
    }

    /// When it was sent: its request's start, else its resolve's.
    fn start(&self) -> Option<f64> {
        let t = self.timings();
        t.request_start.or(t.resolve_start)
    }
}

/// Says that `name`'s `what` is not as GuideLLM writes it, and what to pass.
fn bad(name: &str, what: &str) -> ImportError {
    ImportError::GuideLlm { file: name.to_owned(), what: what.to_owned() }
}

/// Requests whose iterations did not match their tokens, as the notes tell.
#[derive(Default)]
struct Counts {
    several_per_iteration: usize,
    by_iterations: usize,
    bundled: usize,
}

/// How a request ended: the group it was in.
#[derive(Clone, Copy, PartialEq)]
enum Ended {
    Successful,
    Errored,
    Incomplete,
}

/// A request of the file, with how it ended.
type Sent<'a> = (Ended, &'a Request);

pub(super) fn parse(name: &str, v: &Value) -> Result<Parsed, ImportError> {
    let report: Report = typed(v).map_err(|w| bad(name, &w))?;
    benchmark(name, &report)?;
    let raw = &v["benchmarks"][0];
    let b: Benchmark = typed(raw).map_err(|w| bad(name, &format!("benchmark's {w}")))?;
    let (all, origin) = requests_in_order(name, &b)?;
    let (records, counts) = records(name, &all, origin)?;
    let (notes, not_recomputed) = notes(&counts);
    let spec = report.config.as_ref().and_then(|c| c.spec.as_ref());
    let backend = spec.and_then(|s| s.backend.as_ref());
    let api = match backend.and_then(|b| b.request_format.as_deref()).unwrap_or("") {
        f if f.contains("chat") => "chat",
        f if f.contains("completions") => "completions",
        f => f,
    };
    Ok(Parsed {
        records,
        started_unix_s: if origin.is_finite() { origin } else { 0.0 },
        target: Target {
            url: backend.and_then(|b| b.target.clone()).unwrap_or_default(),
            model: backend.and_then(|b| b.model.clone()).unwrap_or_default(),
            api: api.to_string(),
            embedded: false,
            server: None,
        },
        settings: settings(v, raw),
        load: spec.map_or_else(LoadConfig::default, load),
        info: ImportInfo {
            tool: TOOL.into(),
            version: report.metadata.and_then(|m| m.guidellm_version).unwrap_or_else(|| "unknown".into()),
            format: "GuideLLM benchmarks JSON".into(),
            source: name.to_string(),
            not_recomputed,
            duration_s: None,
            notes,
        },
    })
}

/// The file has one benchmark: several (a sweep) are refused.
fn benchmark(name: &str, r: &Report) -> Result<(), ImportError> {
    match &r.benchmarks[..] {
        [_] => Ok(()),
        [] => Err(ImportError::GuideLlmEmpty { file: name.to_owned() }),
        many => Err(ImportError::GuideLlmSeveral { file: name.to_owned(), count: many.len() }),
    }
}

/// Every request (successful, errored, incomplete) in the order sent, and
/// the first send: the records' clock zero.
fn requests_in_order<'a>(name: &str, b: &'a Benchmark) -> Result<(Vec<Sent<'a>>, f64), ImportError> {
    let groups = b.requests.as_ref().ok_or_else(|| bad(name, "benchmark has no \"requests\""))?;
    let mut all = Vec::new();
    for (ended, l) in [
        (Ended::Successful, &groups.successful),
        (Ended::Errored, &groups.errored),
        (Ended::Incomplete, &groups.incomplete),
    ] {
        all.extend(l.iter().flatten().map(|r| (ended, r)));
    }
    let mut origin = f64::INFINITY;
    for (i, (_, r)) in all.iter().enumerate() {
        origin = origin.min(r.start().ok_or_else(|| bad(name, &format!("request {i} has no request_start time")))?);
    }
    // Requests sent in the order they were sent.
    all.sort_by(|a, b| a.1.start().unwrap_or(0.0).total_cmp(&b.1.start().unwrap_or(0.0)));
    Ok((all, origin))
}

/// A record per request, its first and last iterations as its chunks.
fn records(name: &str, all: &[Sent], origin: f64) -> Result<(Vec<RequestRecord>, Counts), ImportError> {
    let mut c = Counts::default();
    let mut records = Vec::with_capacity(all.len());
    for (id, &(ended, r)) in all.iter().enumerate() {
        let t = r.timings();
        let at = |k: &'static str| move || bad(name, &format!("request {id}'s {k} is before its start"));
        let rel = |time: Option<f64>, k: &'static str| -> Result<Option<std::time::Duration>, ImportError> {
            time.map(|t| secs(t - origin, at(k))).transpose()
        };
        let sent = match rel(t.request_start, "request_start")? {
            Some(t) => t,
            None => rel(t.resolve_start, "resolve_start")?.expect("checked above"),
        };
        let scheduled = rel(t.targeted_start, "targeted_start").ok().flatten().map_or(sent, |t| t.min(sent));
        let mut rec = RequestRecord::new(id as u64, scheduled, sent);
        rec.end = match rel(t.request_end, "request_end")? {
            Some(t) => t,
            None => rel(t.resolve_end, "resolve_end")?.unwrap_or(sent),
        }
        .max(sent);
        rec.input_tokens = r.prompt_tokens.unwrap_or(0);
        rec.input_tokens_source = CountSource::Usage;
        let iterations = t.token_iterations.unwrap_or(0);
        rec.output_tokens = r.output_tokens.unwrap_or(0);
        rec.output_tokens_source = if r.output_metrics.as_ref().is_some_and(|m| m.total_tokens.is_some()) {
            CountSource::Usage
        } else {
            c.by_iterations += 1;
            CountSource::Chunks
        };
        rec.counts.chunks = iterations;
        // Only the first and the last iteration are timed: one chunk at the
        // first with its share of the tokens, one at the last with the rest.
        let first = rel(t.first_token_iteration, "first_token_iteration")?;
        let last = rel(t.last_token_iteration, "last_token_iteration")?;
        if let (Some(first), Some(last)) = (first, last) {
            let n = rec.output_tokens;
            let k_first = spread_evenly(n, iterations.max(1) as usize).first().copied().unwrap_or(0);
            if iterations > 1 && last > first {
                rec.chunks = vec![
                    OutputChunk { t: first, tokens: k_first, channel: Channel::Content },
                    OutputChunk { t: last, tokens: (n - k_first as u64) as u32, channel: Channel::Content },
                ]
                .into();
                if iterations != n {
                    c.several_per_iteration += 1;
                }
            } else {
                rec.chunks = vec![OutputChunk { t: first, tokens: n as u32, channel: Channel::Content }].into();
                if n > 1 {
                    c.bundled += 1;
                }
            }
            rec.chunk_tokens_source = ChunkTokenSource::Even;
        }
        let error = r.info.as_ref().and_then(|i| i.error.as_deref()).unwrap_or("");
        rec.outcome = match ended {
            Ended::Successful => Outcome::Success,
            Ended::Incomplete => Outcome::Cancelled,
            Ended::Errored => Outcome::Failed {
                kind: if error.is_empty() { FailureKind::InvalidResponse } else { super::failure_kind(None, error) },
                message: error.trim().to_string(),
            },
        };
        records.push(rec);
    }

    Ok((records, c))
}

/// What the file cannot give, in words and by the result's field names.
fn notes(c: &Counts) -> (Vec<String>, Vec<String>) {
    let Counts { several_per_iteration, by_iterations, bundled } = *c;
    let mut not_recomputed = common_not_recomputed();
    not_recomputed.extend(
        [
            "summary.itl_ms",
            "summary.chunk_gap_ms",
            "summary.itl_max_ms",
            "summary.throughput.peak_output_tokens_per_s",
            "compat.vllm.itl",
        ]
        .map(String::from),
    );
    let mut notes = common_notes("GuideLLM");
    notes.push(
        "GuideLLM times only the first and the last streamed iteration of a request, not each chunk: TTFT, \
         TPOT and E2E are recomputed, but ITL, the chunk gaps, the longest gap and the peak output rate are \
         not (GuideLLM's own ITL is each request's mean gap, (last − first)/(n − 1), which is goodput's TPOT \
         where the first iteration carried one token)"
            .into(),
    );
    if several_per_iteration > 0 {
        notes.push(format!(
            "on {several_per_iteration} requests an iteration carried more than one token, and the first one's \
             count is not kept: it is taken as an even share, so TPOT there is approximate"
        ));
    }
    if bundled > 0 {
        notes.push(format!("{bundled} requests came in one iteration: they have no TPOT"));
    }
    if by_iterations > 0 {
        notes.push(format!(
            "{by_iterations} requests had no usage from the server: GuideLLM counted their output as iterations"
        ));
    }

    (notes, not_recomputed)
}

/// The load the settings name.
fn load(spec: &Spec) -> LoadConfig {
    let mut load = LoadConfig::default();
    if let Some(profile) = &spec.profile {
        match profile.kind.as_deref() {
            Some("concurrent") => load.concurrency = profile.streams.as_ref().and_then(|s| s.first().copied()),
            Some("synchronous") => load.concurrency = Some(1),
            Some(kind @ ("constant" | "poisson")) => {
                if let Some(r) = &profile.rate {
                    load.rate = match r {
                        OneOrMany::One(r) => Some(*r),
                        OneOrMany::Many(rs) => rs.first().copied(),
                    }
                    .map(Rate);
                    load.arrival = Some(kind.into());
                }
            }
            _ => {}
        }
    }
    let max_requests = spec.constraints.iter().flatten().find(|c| c.kind.as_deref() == Some("max_requests"));
    if let Some(c) = max_requests {
        load.requests = c.count;
    }
    load
}

/// GuideLLM's own settings, as the file holds them (`b` its benchmark).
fn settings(v: &Value, b: &Value) -> Value {
    let spec = &v["config"]["spec"];
    let backend = &spec["backend"];
    json!({
        "backend": { "kind": backend["kind"], "target": backend["target"], "model": backend["model"],
                     "request_format": backend["request_format"], "stream": backend["stream"] },
        "profile": spec["profile"],
        "constraints": spec["constraints"],
        "data": spec["data"],
        "start_time": b["start_time"],
        "end_time": b["end_time"],
        "duration": b["duration"],
    })
}
