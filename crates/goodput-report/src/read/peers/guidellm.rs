//! GuideLLM's `benchmarks.json`: its settings (`config.spec`) and, per
//! benchmark, every request's stats under `requests.successful`,
//! `errored` and `incomplete`, each with `info.timings` on the wall clock
//! (`request_start`, `first_token_iteration`, `last_token_iteration`,
//! `token_iterations`, `request_end`) and its token counts. Read from
//! GuideLLM 0.8's `schemas/base/request_stats.py` and
//! `backends/openai/http.py`: an iteration is a streamed line that added
//! text; only the first and the last are timed, and its ITL is one mean gap
//! per request, (last − first)/(n − 1).

use super::{common_not_recomputed, common_notes, seconds_text, secs, typed, ImportError, ImportInfo, Parsed};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{Channel, ChunkTokenSource, CountSource, FailureKind, Outcome, OutputChunk, RequestRecord, Target};
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
    /// GuideLLM's id of the request: each once in a report.
    request_id: Option<String>,
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

impl Ended {
    /// The group's name in the file.
    fn group(self) -> &'static str {
        match self {
            Ended::Successful => "successful",
            Ended::Errored => "errored",
            Ended::Incomplete => "incomplete",
        }
    }
}

/// A request of the file: how it ended, and its place in its group.
type Sent<'a> = (Ended, usize, &'a Request);

/// A request as messages name it: `request successful[3]`.
fn which(ended: Ended, index: usize) -> String {
    format!("request {}[{index}]", ended.group())
}

pub(super) fn parse(name: &str, v: &Value) -> Result<Parsed, ImportError> {
    let report: Report = typed(v).map_err(|w| bad(name, &w))?;
    benchmark(name, &report)?;
    let raw = &v["benchmarks"][0];
    let b: Benchmark = typed(raw).map_err(|w| bad(name, &format!("benchmark's {w}")))?;
    let (all, origin) = requests_in_order(name, &b)?;
    super::check_memory(name, "GuideLLM", all.len() as u64, 2 * all.len() as u64, 0)?;
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
        all.extend(l.iter().flatten().enumerate().map(|(i, r)| (ended, i, r)));
    }
    // A request repeated had been read as one more request sent.
    let mut seen = std::collections::HashMap::new();
    for &(ended, i, r) in &all {
        if let Some(first) =
            r.request_id.as_deref().filter(|id| !id.is_empty()).and_then(|id| seen.insert(id, (ended, i)))
        {
            let id = r.request_id.as_deref().unwrap_or_default();
            return Err(bad(
                name,
                &format!(
                    "{} has request_id {id:?}, as {} has: a request is reported once, so the report holds a request \
                     repeated or two reports put together",
                    which(ended, i),
                    which(first.0, first.1)
                ),
            ));
        }
    }
    let mut starts = Vec::with_capacity(all.len());
    for &(ended, i, r) in &all {
        let start = r.start().ok_or_else(|| bad(name, &format!("{} has no request_start time", which(ended, i))))?;
        starts.push(start);
    }
    if let Some(s) = super::stray(&starts) {
        let (ended, i, r) = all[s.index];
        let field = if r.timings().request_start.is_some() { "request_start" } else { "resolve_start" };
        return Err(bad(name, &format!("{}'s {field} {}", which(ended, i), s.text())));
    }
    let origin = starts.iter().copied().fold(f64::INFINITY, f64::min);
    // Requests sent in the order they were sent.
    all.sort_by(|a, b| a.2.start().unwrap_or(0.0).total_cmp(&b.2.start().unwrap_or(0.0)));
    Ok((all, origin))
}

/// A record per request, its first and last iterations as its chunks.
fn records(name: &str, all: &[Sent], origin: f64) -> Result<(Vec<RequestRecord>, Counts), ImportError> {
    let mut c = Counts::default();
    let mut records = Vec::with_capacity(all.len());
    for (id, &(ended, index, r)) in all.iter().enumerate() {
        let t = r.timings();
        let who = which(ended, index);
        let who = who.as_str();
        let (start, start_field) = match (t.request_start, t.resolve_start) {
            (Some(s), _) => (s, "request_start"),
            (None, Some(s)) => (s, "resolve_start"),
            (None, None) => unreachable!("requests_in_order refuses a request with no start"),
        };
        // Each time on the run's clock, from the first send; one of the
        // request's own after its own start (against the first send, a
        // token before its request had been taken).
        let far = |k: &'static str| move || bad(name, &format!("{who}'s {k} is over 100 years after the first send"));
        let rel = |time: Option<f64>, k: &'static str| -> Result<Option<std::time::Duration>, ImportError> {
            time.map(|t| {
                if t < start {
                    let early = seconds_text(start - t);
                    return Err(bad(name, &format!("{who}'s {k} is {early} s before its {start_field}")));
                }
                secs(t - origin, far(k))
            })
            .transpose()
        };
        let sent = secs(start - origin, far(start_field))?;
        let scheduled = t.targeted_start.and_then(|s| secs(s - origin, || ()).ok()).map_or(sent, |s| s.min(sent));
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
        // Each iteration added text, a token at least (GuideLLM counts its
        // output by them where the server sent no usage): 2^64 - 1 of them
        // had panicked here, 10^18 aborted.
        let most = r.output_tokens.unwrap_or(u64::from(u32::MAX));
        if iterations > most {
            let than = match r.output_tokens {
                Some(n) => format!("its {n} output tokens (an iteration adds one token at least)"),
                None => format!("{most}, with no output_tokens given"),
            };
            return Err(bad(name, &format!("{who}'s token_iterations is {iterations}, more than {than}")));
        }
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
        if let (Some(f), Some(l)) = (first, last) {
            if l < f {
                let early = seconds_text((f - l).as_secs_f64());
                return Err(bad(
                    name,
                    &format!("{who}'s last_token_iteration is {early} s before its first_token_iteration"),
                ));
            }
        }
        if let (Some(first), Some(last)) = (first, last) {
            let n = rec.output_tokens;
            // The first of spread_evenly(n, iterations), without the list
            // of every iteration's share.
            let k_first = tokens(n / iterations.max(1));
            if iterations > 1 && last > first {
                rec.chunks = vec![
                    OutputChunk { t: first, tokens: k_first, channel: Channel::Content },
                    OutputChunk { t: last, tokens: tokens(n - u64::from(k_first)), channel: Channel::Content },
                ]
                .into();
                if iterations != n {
                    c.several_per_iteration += 1;
                }
            } else {
                rec.chunks = vec![OutputChunk { t: first, tokens: tokens(n), channel: Channel::Content }].into();
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

/// A chunk's tokens: what a chunk holds at most where there are more.
fn tokens(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A request sent at `start` (wall-clock seconds) of 4 tokens in 4
    /// iterations, the first 0.1 s after it, the last 0.4 s, its end 0.5 s.
    fn request(start: f64) -> Value {
        json!({
            "prompt_tokens": 8, "output_tokens": 4, "output_metrics": {"total_tokens": 4},
            "info": {"timings": {
                "request_start": start, "first_token_iteration": start + 0.1, "last_token_iteration": start + 0.4,
                "token_iterations": 4, "request_end": start + 0.5,
            }},
        })
    }

    /// A report of one benchmark with these successful requests.
    fn report(requests: Vec<Value>) -> Value {
        json!({
            "metadata": {"guidellm_version": "0.8.1"},
            "benchmarks": [{"type_": "generative_benchmark", "requests": {"successful": requests}}],
        })
    }

    fn refusal(v: &Value) -> String {
        match parse("b.json", v) {
            Ok(_) => panic!("read: {v}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_first_iteration_gets_an_even_share() {
        let p = parse("b.json", &report(vec![request(1000.0), request(1001.0)])).unwrap();
        let chunks: Vec<_> = p.records[1].chunks.iter().map(|c| (c.t.as_secs_f64(), c.tokens)).collect();
        assert_eq!(chunks.len(), 2);
        assert_eq!((chunks[0].1, chunks[1].1), (1, 3));
        assert!((chunks[1].0 - 1.4).abs() < 1e-9, "{chunks:?}");
    }

    /// A request repeated (the same `request_id`) had been read as one more
    /// request sent.
    #[test]
    fn a_request_twice_is_refused() {
        let with_id = |start: f64, id: &str| {
            let mut r = request(start);
            r["request_id"] = json!(id);
            r
        };
        let p = parse("b.json", &report(vec![with_id(1000.0, "a"), with_id(1001.0, "b")])).unwrap();
        assert_eq!(p.records.len(), 2);
        let e = refusal(&report(vec![with_id(1000.0, "a"), with_id(1001.0, "a")]));
        assert!(e.contains("request successful[1] has request_id \"a\", as request successful[0] has"), "{e}");
    }

    /// 2^64 - 1 iterations had panicked ("capacity overflow"), 10^18
    /// aborted: the share of the first was read off a list of them all.
    #[test]
    fn more_iterations_than_tokens_are_refused() {
        for n in [u64::MAX, 1_000_000_000_000_000_000, 5] {
            let mut r = request(1000.0);
            r["info"]["timings"]["token_iterations"] = json!(n);
            let e = refusal(&report(vec![r]));
            assert!(
                e.contains(&format!(
                    "whose request successful[0]'s token_iterations is {n}, more than its 4 output tokens (an \
                     iteration adds one token at least)"
                )),
                "{e}"
            );
        }
    }

    /// Each request's times against its own start: against the first send
    /// of all, a first token before its request had been read as a TTFT
    /// of 0, and a last iteration before the first dropped.
    #[test]
    fn times_before_the_requests_own_start_are_refused() {
        let mut late = request(1001.0);
        late["info"]["timings"]["first_token_iteration"] = json!(1000.5);
        let e = refusal(&report(vec![request(1000.0), late]));
        assert!(
            e.contains("whose request successful[1]'s first_token_iteration is 0.500 s before its request_start"),
            "{e}"
        );
        let mut r = request(1001.0);
        r["info"]["timings"]["request_end"] = json!(1000.75);
        let e = refusal(&report(vec![request(1000.0), r]));
        assert!(e.contains("request successful[1]'s request_end is 0.250 s before its request_start"), "{e}");
        let mut r = request(1000.0);
        r["info"]["timings"]["last_token_iteration"] = json!(1000.05);
        let e = refusal(&report(vec![r]));
        assert!(
            e.contains("request successful[0]'s last_token_iteration is 0.050 s before its first_token_iteration"),
            "{e}"
        );
    }

    /// A start of 1e300 (or -1e300) among a run's: its own cause, not "before
    /// its start" of another field.
    #[test]
    fn a_start_apart_from_the_others_is_named() {
        for (t, side) in [(1e300, "after the send before it"), (-1e300, "before the send after it")] {
            let e = refusal(&report(vec![request(1000.0), request(1001.0), request(t)]));
            assert!(e.contains(&format!("whose request successful[2]'s request_start is 1.000e300 s {side}")), "{e}");
            assert!(e.contains("where the run's other sends span 1.000 s (not a send of the same run)"), "{e}");
        }
    }
}
