//! GuideLLM's `benchmarks.json`: its settings (`config.spec`) and, per
//! benchmark, every request's stats under `requests.successful`,
//! `errored` and `incomplete`, each with `info.timings` on the wall clock
//! (`request_start`, `first_token_iteration`, `last_token_iteration`,
//! `token_iterations`, `request_end`) and its token counts. Read from
//! GuideLLM 0.8's `schemas/base/request_stats.py` and
//! `backends/openai/http.py`: an iteration is a streamed line that added
//! text; only the first and the last are timed, and its ITL is one mean gap
//! per request, (last − first)/(n − 1).

use super::{common_not_recomputed, common_notes, secs, ImportError, ImportInfo, Parsed};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{
    spread_evenly, Channel, ChunkTokenSource, CountSource, FailureKind, Outcome, OutputChunk, RequestRecord, Target,
};
use serde_json::{json, Value};

const TOOL: &str = "guidellm";

/// GuideLLM's benchmarks report.
pub(super) fn is(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
        && (v.pointer("/metadata/guidellm_version").is_some()
            || v.pointer("/benchmarks/0/type_").and_then(Value::as_str) == Some("generative_benchmark"))
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

/// A request of the file, with the group it was in (`successful`, `errored`, `incomplete`).
type Request<'a> = (&'static str, &'a Value);

/// A request's time `k` from GuideLLM's timings, in its seconds.
fn time(r: &Value, k: &str) -> Option<f64> {
    r["info"]["timings"][k].as_f64()
}

pub(super) fn parse(name: &str, v: &Value) -> Result<Parsed, ImportError> {
    let b = benchmark(name, v)?;
    let (all, origin) = requests_in_order(name, b)?;
    let (records, counts) = records(name, &all, origin)?;
    let (notes, not_recomputed) = notes(&counts);
    let (settings, load) = settings_and_load(v, b);
    let backend = &v["config"]["spec"]["backend"];
    let api = match backend["request_format"].as_str().unwrap_or("") {
        f if f.contains("chat") => "chat",
        f if f.contains("completions") => "completions",
        f => f,
    };
    Ok(Parsed {
        records,
        started_unix_s: if origin.is_finite() { origin } else { 0.0 },
        target: Target {
            url: backend["target"].as_str().unwrap_or("").to_string(),
            model: backend["model"].as_str().unwrap_or("").to_string(),
            api: api.to_string(),
            embedded: false,
            server: None,
        },
        settings,
        load,
        info: ImportInfo {
            tool: TOOL.into(),
            version: v.pointer("/metadata/guidellm_version").and_then(Value::as_str).unwrap_or("unknown").to_string(),
            format: "GuideLLM benchmarks JSON".into(),
            source: name.to_string(),
            not_recomputed,
            duration_s: None,
            notes,
        },
    })
}

/// The file's one benchmark: several (a sweep) are refused.
fn benchmark<'a>(name: &str, v: &'a Value) -> Result<&'a Value, ImportError> {
    let benchmarks = v["benchmarks"].as_array().expect("is() saw a list");
    match &benchmarks[..] {
        [b] => Ok(b),
        [] => Err(ImportError::GuideLlmEmpty { file: name.to_owned() }),
        many => Err(ImportError::GuideLlmSeveral { file: name.to_owned(), count: many.len() }),
    }
}

/// Every request (successful, errored, incomplete) in the order sent, and
/// the first send: the records' clock zero.
fn requests_in_order<'a>(name: &str, b: &'a Value) -> Result<(Vec<Request<'a>>, f64), ImportError> {
    let groups = b.get("requests").ok_or_else(|| bad(name, "benchmark has no \"requests\""))?;
    let mut all: Vec<Request> = Vec::new();
    for status in ["successful", "errored", "incomplete"] {
        if let Some(l) = groups[status].as_array() {
            all.extend(l.iter().map(|r| (status, r)));
        }
    }
    let mut origin = f64::INFINITY;
    for (i, (_, r)) in all.iter().enumerate() {
        let start = time(r, "request_start").or_else(|| time(r, "resolve_start"));
        origin = origin.min(start.ok_or_else(|| bad(name, &format!("request {i} has no request_start time")))?);
    }
    // Requests sent in the order they were sent.
    all.sort_by(|a, b| {
        let t = |r: &Value| time(r, "request_start").or_else(|| time(r, "resolve_start")).unwrap_or(0.0);
        t(a.1).total_cmp(&t(b.1))
    });

    Ok((all, origin))
}

/// A record per request, its first and last iterations as its chunks.
fn records(name: &str, all: &[Request], origin: f64) -> Result<(Vec<RequestRecord>, Counts), ImportError> {
    let mut c = Counts::default();
    let mut records = Vec::with_capacity(all.len());
    for (id, (status, r)) in all.iter().enumerate() {
        let at = |k: &'static str| move || bad(name, &format!("request {id}'s {k} is before its start"));
        let rel = |k: &'static str| -> Result<Option<std::time::Duration>, ImportError> {
            time(r, k).map(|t| secs(t - origin, at(k))).transpose()
        };
        let sent = match rel("request_start")? {
            Some(t) => t,
            None => rel("resolve_start")?.expect("checked above"),
        };
        let scheduled = rel("targeted_start").ok().flatten().map_or(sent, |t| t.min(sent));
        let mut rec = RequestRecord::new(id as u64, scheduled, sent);
        rec.end = match rel("request_end")? {
            Some(t) => t,
            None => rel("resolve_end")?.unwrap_or(sent),
        }
        .max(sent);
        rec.input_tokens = r["prompt_tokens"].as_u64().unwrap_or(0);
        rec.input_tokens_source = CountSource::Usage;
        let iterations = r["info"]["timings"]["token_iterations"].as_u64().unwrap_or(0);
        rec.output_tokens = r["output_tokens"].as_u64().unwrap_or(0);
        rec.output_tokens_source = if r["output_metrics"]["total_tokens"].is_u64() {
            CountSource::Usage
        } else {
            c.by_iterations += 1;
            CountSource::Chunks
        };
        rec.counts.chunks = iterations;
        // Only the first and the last iteration are timed: one chunk at the
        // first with its share of the tokens, one at the last with the rest.
        if let (Some(first), Some(last)) = (rel("first_token_iteration")?, rel("last_token_iteration")?) {
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
        let error = r["info"]["error"].as_str().unwrap_or("");
        rec.outcome = match *status {
            "successful" => Outcome::Success,
            "incomplete" => Outcome::Cancelled,
            _ => Outcome::Failed {
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

/// GuideLLM's own settings as the file holds them, and the load they name.
fn settings_and_load(v: &Value, b: &Value) -> (Value, LoadConfig) {
    let spec = &v["config"]["spec"];
    let backend = &spec["backend"];
    let mut load = LoadConfig::default();
    let profile = &spec["profile"];
    match profile["kind"].as_str() {
        Some("concurrent") => {
            load.concurrency = profile["streams"].as_array().and_then(|s| s.first()).and_then(Value::as_u64)
        }
        Some("synchronous") => load.concurrency = Some(1),
        Some("constant" | "poisson") => {
            if let Some(r) = profile["rate"].as_array().and_then(|s| s.first()).or(profile.get("rate")) {
                load.rate = r.as_f64().map(Rate);
                load.arrival = Some(if profile["kind"] == "poisson" { "poisson" } else { "constant" }.into());
            }
        }
        _ => {}
    }
    if let Some(c) = spec["constraints"].as_array().and_then(|c| c.iter().find(|c| c["kind"] == "max_requests")) {
        load.requests = c["count"].as_u64();
    }
    let settings = json!({
        "backend": { "kind": backend["kind"], "target": backend["target"], "model": backend["model"],
                     "request_format": backend["request_format"], "stream": backend["stream"] },
        "profile": profile,
        "constraints": spec["constraints"],
        "data": spec["data"],
        "start_time": b["start_time"],
        "end_time": b["end_time"],
        "duration": b["duration"],
    });
    (settings, load)
}
