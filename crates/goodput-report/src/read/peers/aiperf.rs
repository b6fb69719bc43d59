//! AIPerf's `profile_export.jsonl`: one line per request, its `metadata`
//! (`request_start_ns` on the wall clock, `request_end_ns` at its last
//! content response, `credit_issued_ns` when the load released it, its
//! phase) and its `metrics` (`time_to_first_token`, `inter_chunk_latency`:
//! the gaps between content responses, `request_latency`,
//! `output_sequence_length`, `input_sequence_length`, the usage counts),
//! each with its unit, and `error` on a failure. Its summary,
//! `profile_export_aiperf.json`, names the version, the server and the
//! load. Read from AIPerf 0.13's `metrics/types/` and
//! `common/models/record_models.py`: a content response is one with
//! output, role-only, empty and usage-only chunks left out.

use super::{common_not_recomputed, common_notes, failure_kind, nanos, typed, ImportError, ImportInfo, Parsed};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{
    spread_evenly, Channel, ChunkTokenSource, CountSource, Outcome, OutputChunk, RequestRecord, Target,
};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

pub(super) const TOOL: &str = "aiperf";

/// The names AIPerf gives its records and its summary, each read with the other.
pub(super) const RECORDS: &str = "profile_export.jsonl";
pub(super) const SUMMARY: &str = "profile_export_aiperf.json";

/// The first line of AIPerf's per-request export.
pub(super) fn is_records(text: &str) -> bool {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else { return false };
    serde_json::from_str::<Value>(first).is_ok_and(|v| {
        v.get("metadata").is_some_and(Value::is_object) && v.get("metrics").is_some_and(Value::is_object)
    })
}

/// AIPerf's summary JSON.
pub(super) fn is_summary(v: &Value) -> bool {
    v.get("aiperf_version").is_some()
        || (v.get("benchmark_duration").is_some()
            && v.get("time_to_first_token").is_some()
            && v.get("input_config").is_some())
}

/// One line of AIPerf's records: what goodput reads of it (AIPerf 0.13's
/// `common/models/record_models.py`).
#[derive(Deserialize)]
struct Line {
    metadata: Metadata,
    metrics: Metrics,
    /// Set on a failed request.
    error: Option<LineError>,
}

/// A request's times on the wall clock, nanoseconds, and its phase.
#[derive(Deserialize)]
struct Metadata {
    /// AIPerf's id of the request: each once in a file.
    x_request_id: Option<String>,
    /// Sent.
    request_start_ns: Option<u64>,
    /// Its last content response.
    request_end_ns: Option<u64>,
    /// When the load released it (its schedule).
    credit_issued_ns: Option<u64>,
    /// `warmup` or `profiling`.
    benchmark_phase: Option<String>,
    was_cancelled: Option<bool>,
}

/// The request's metrics goodput reads, each with its unit.
#[derive(Deserialize)]
struct Metrics {
    time_to_first_token: Option<Metric<f64>>,
    /// The gaps between content responses after the first.
    inter_chunk_latency: Option<Metric<Vec<f64>>>,
    /// Send to last response: a request that was not streamed has this alone.
    request_latency: Option<Metric<f64>>,
    /// Counts, by AIPerf's tokenizer or the server's usage.
    output_sequence_length: Option<Metric<f64>>,
    input_sequence_length: Option<Metric<f64>>,
    usage_prompt_tokens: Option<Metric<f64>>,
    usage_completion_tokens: Option<Metric<f64>>,
}

#[derive(Deserialize)]
struct Metric<T> {
    value: T,
    /// `ns`, `us`, `ms`, `s` for times; `tokens` for counts.
    unit: Option<String>,
}

impl Metric<f64> {
    /// A count, rounded; `None` below 0 (−1e30 had been taken as 0).
    fn count(&self) -> Option<u64> {
        (self.value > -0.5).then(|| self.value.round().max(0.0) as u64)
    }
}

#[derive(Deserialize)]
struct LineError {
    /// The HTTP status, where there was one.
    code: Option<u64>,
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

/// What goodput reads of AIPerf's summary (`profile_export_aiperf.json`).
#[derive(Deserialize)]
struct Summary {
    aiperf_version: Option<String>,
    input_config: Option<InputConfig>,
}

#[derive(Deserialize)]
struct InputConfig {
    endpoint: Option<Endpoint>,
    models: Option<Models>,
    /// The warm-up and profiling phases, each with its load.
    phases: Option<Vec<Phase>>,
}

#[derive(Deserialize)]
struct Endpoint {
    urls: Option<Vec<String>>,
    /// `chat`, `completions`, ….
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct Models {
    items: Option<Vec<Model>>,
}

#[derive(Deserialize)]
struct Model {
    name: Option<String>,
}

#[derive(Deserialize)]
struct Phase {
    kind: Option<String>,
    concurrency: Option<u64>,
    requests: Option<u64>,
    rate: Option<f64>,
}

/// A time in nanoseconds, by its unit.
fn ns(x: f64, unit: &str) -> Option<f64> {
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        _ => return None,
    };
    Some(x * scale)
}

/// Says that line `line` of `name` is not as AIPerf writes it, and what to pass.
fn bad(name: &str, line: usize, what: &str) -> ImportError {
    ImportError::Aiperf { file: name.to_owned(), line, what: what.to_owned() }
}

/// The send time in nanoseconds, or an error naming it.
fn start(name: &str, line: usize, l: &Line) -> Result<u64, ImportError> {
    l.metadata.request_start_ns.ok_or_else(|| bad(name, line, "metadata.request_start_ns is not a time in nanoseconds"))
}

/// Requests whose counts or queue the file does not give, as the notes tell.
#[derive(Default)]
struct Counts {
    by_tokenizer: usize,
    no_queue: usize,
}

/// Reads AIPerf's records in `text` (the file `name`), with its summary
/// where there is one (`(file, JSON)`).
pub(super) fn parse(name: &str, text: &str, summary: Option<(&str, &Value)>) -> Result<Parsed, ImportError> {
    let lines = read_lines(name, text)?;
    let summary = match summary {
        Some((file, v)) => {
            Some((typed::<Summary>(v).map_err(|what| ImportError::AiperfSummary { file: file.to_owned(), what })?, v))
        }
        None => None,
    };
    let mut origin = u64::MAX;
    let mut starts = Vec::with_capacity(lines.len());
    for (line, l) in &lines {
        let s = start(name, *line, l)?;
        origin = origin.min(s);
        starts.push(s as f64 / 1e9);
    }
    if let Some(s) = super::stray(&starts) {
        let what = format!("metadata.request_start_ns {}", s.text());
        return Err(bad(name, lines[s.index].0, &what));
    }
    drop(starts);
    let mut c = Counts::default();
    let mut records = Vec::with_capacity(lines.len());
    for (id, (line, l)) in lines.iter().enumerate() {
        records.push(record(name, id, *line, l, origin, &mut c)?);
    }
    let (mut notes, not_recomputed) = notes(&c);
    let (version, settings, target, load) = from_summary(summary, &mut notes);
    Ok(Parsed {
        records,
        started_unix_s: if origin == u64::MAX { 0.0 } else { origin as f64 / 1e9 },
        target,
        settings,
        load,
        info: ImportInfo {
            tool: TOOL.into(),
            version,
            format: "AIPerf profile_export.jsonl".into(),
            source: name.to_string(),
            not_recomputed,
            duration_s: None,
            notes,
        },
    })
}

/// The file's records, each a JSON object with `metadata` and `metrics`,
/// once it is known that they, and the records built of them, fit in the
/// memory left (6 million lines of a few bytes had aborted the process).
fn read_lines(name: &str, text: &str) -> Result<Vec<(usize, Line)>, ImportError> {
    let count = text.lines().filter(|l| !l.trim().is_empty()).count();
    // A line read, and its send time while the records are built.
    let more = (std::mem::size_of::<(usize, Line)>() + 16) as u64;
    // The chunks are not known before the lines are read: two a request
    // at least (the first, and more in a stream).
    super::check_memory(name, "AIPerf", count as u64, 2 * count as u64, more)?;
    let mut lines = Vec::with_capacity(count);
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).map_err(|e| bad(name, i + 1, &format!("not JSON ({e})")))?;
        if !v.get("metadata").is_some_and(Value::is_object) || !v.get("metrics").is_some_and(Value::is_object) {
            return Err(bad(name, i + 1, "not a record (no \"metadata\" and \"metrics\")"));
        }
        lines.push((i + 1, typed::<Line>(&v).map_err(|what| bad(name, i + 1, &what))?));
    }
    // A line repeated had been read as one more request sent.
    let mut seen = std::collections::HashMap::new();
    for (line, l) in &lines {
        if let Some(id) = l.metadata.x_request_id.as_deref().filter(|id| !id.is_empty()) {
            if let Some(first) = seen.insert(id, *line) {
                let what = format!(
                    "metadata.x_request_id {id:?} is line {first}'s too: a request is recorded once, so the file \
                     holds lines repeated or two files put together"
                );
                return Err(bad(name, *line, &what));
            }
        }
    }
    Ok(lines)
}

/// One request's record: its times on a clock whose zero is the first
/// send, its counts, its content responses as chunks, and its outcome.
fn record(
    name: &str,
    id: usize,
    line: usize,
    l: &Line,
    origin: u64,
    c: &mut Counts,
) -> Result<RequestRecord, ImportError> {
    let (md, m) = (&l.metadata, &l.metrics);
    // A metric's value in nanoseconds, or its absence.
    let time = |k: &str, x: &Option<Metric<f64>>| -> Result<Option<Duration>, ImportError> {
        match x {
            None => Ok(None),
            Some(x) => {
                let unit = x.unit.as_deref().unwrap_or("");
                let ns = ns(x.value, unit)
                    .ok_or_else(|| bad(name, line, &format!("metrics.{k} is not a time ({unit:?})")))?;
                let what = || {
                    let v = goodput_core::util::number_text(x.value);
                    bad(name, line, &format!("metrics.{k} is {v} {unit}, not a time from 0 to 100 years"))
                };
                nanos(ns, what).map(Some)
            }
        }
    };
    // A count, or its absence; below 0, no count.
    let count = |k: &str, x: &Option<Metric<f64>>| -> Result<Option<u64>, ImportError> {
        match x {
            None => Ok(None),
            Some(x) => x.count().map(Some).ok_or_else(|| {
                let v = goodput_core::util::number_text(x.value);
                bad(name, line, &format!("metrics.{k} is {v}, not a count ≥ 0"))
            }),
        }
    };
    // Within 100 years of the first send (its start and end).
    let after_origin = |k: &str, ns: u64| -> Result<Duration, ImportError> {
        let d = Duration::from_nanos(ns.saturating_sub(origin));
        if d > goodput_core::HORIZON {
            return Err(bad(name, line, &format!("metadata.{k} is over 100 years after the first send")));
        }
        Ok(d)
    };
    let sent = after_origin("request_start_ns", start(name, line, l)?)?;
    let scheduled = match md.credit_issued_ns {
        Some(c) => Duration::from_nanos(c.saturating_sub(origin)).min(sent),
        None => {
            c.no_queue += 1;
            sent
        }
    };
    let mut r = RequestRecord::new(id as u64, scheduled, sent);
    r.warmup = md.benchmark_phase.as_deref() == Some("warmup");
    r.end = match md.request_end_ns {
        Some(e) => after_origin("request_end_ns", e)?.max(sent),
        None => sent,
    };
    r.counts.usage_prompt = count("usage_prompt_tokens", &m.usage_prompt_tokens)?;
    r.counts.usage_completion = count("usage_completion_tokens", &m.usage_completion_tokens)?;
    r.input_tokens = count("input_sequence_length", &m.input_sequence_length)?.or(r.counts.usage_prompt).unwrap_or(0);
    r.input_tokens_source =
        if r.counts.usage_prompt == Some(r.input_tokens) { CountSource::Usage } else { CountSource::Tokenizer };
    r.output_tokens =
        count("output_sequence_length", &m.output_sequence_length)?.or(r.counts.usage_completion).unwrap_or(0);
    r.output_tokens_source = if r.counts.usage_completion == Some(r.output_tokens) {
        CountSource::Usage
    } else {
        c.by_tokenizer += 1;
        CountSource::Tokenizer
    };

    // The content responses' times: the first at TTFT, the rest a gap
    // apart; a response that was not streamed is one at its latency.
    let mut times = Vec::new();
    if let Some(ttft) = time("time_to_first_token", &m.time_to_first_token)? {
        let mut t = sent + ttft;
        times.push(t);
        if let Some(x) = &m.inter_chunk_latency {
            let unit = x.unit.as_deref().unwrap_or("");
            for &g in &x.value {
                let g = ns(g, unit).ok_or_else(|| bad(name, line, "metrics.inter_chunk_latency holds a non-time"))?;
                t += nanos(g, || bad(name, line, "metrics.inter_chunk_latency holds a gap below 0 or over 100 years"))?;
                // Gaps each within the horizon, and their sum past it.
                if t - sent > goodput_core::HORIZON {
                    let what = "metrics.time_to_first_token and inter_chunk_latency put a response over 100 years \
                                after its send";
                    return Err(bad(name, line, what));
                }
                times.push(t);
            }
        }
    } else if let Some(lat) = time("request_latency", &m.request_latency)? {
        times.push(sent + lat);
    }
    let ks = spread_evenly(r.output_tokens, times.len());
    r.chunks = times.iter().zip(ks).map(|(&t, k)| OutputChunk { t, tokens: k, channel: Channel::Content }).collect();
    r.chunk_tokens_source = ChunkTokenSource::Even;
    r.counts.chunks = times.len() as u64;
    if let Some(&last) = times.last() {
        r.end = r.end.max(last);
    }
    r.outcome = match &l.error {
        Some(e) => {
            let message = [e.kind.as_deref(), e.message.as_deref()].into_iter().flatten().collect::<Vec<_>>();
            let message = message.join(": ");
            r.http_status = e.code.and_then(|c| u16::try_from(c).ok()).filter(|c| *c >= 100);
            Outcome::Failed { kind: failure_kind(e.code, &message), message }
        }
        None if md.was_cancelled == Some(true) => Outcome::Cancelled,
        None if times.is_empty() => Outcome::Failed {
            kind: goodput_core::FailureKind::EmptyOutput,
            message: "AIPerf recorded no content response".into(),
        },
        None => Outcome::Success,
    };
    Ok(r)
}

/// What the file cannot give, in words and by the result's field names.
fn notes(c: &Counts) -> (Vec<String>, Vec<String>) {
    let Counts { by_tokenizer, no_queue } = *c;
    let mut not_recomputed = common_not_recomputed();
    let mut notes = common_notes("AIPerf");
    notes.push(
        "AIPerf's records keep, per request, the send time, the times of its content responses (its TTFT and \
         inter-chunk gaps) and the token counts, but not each response's tokens: each request's tokens are \
         spread evenly over its responses"
            .into(),
    );
    if by_tokenizer > 0 {
        notes.push(format!(
            "{by_tokenizer} requests have no usage count that matches AIPerf's output length: AIPerf counted their \
             output with its tokenizer (run it with --use-server-token-count for the server's counts)"
        ));
    }
    if no_queue > 0 {
        not_recomputed.push("summary.client_queue_ms".into());
    }
    (notes, not_recomputed)
}

/// AIPerf's version, its settings, the target and the load, from the summary
/// beside the records (read, and as the file holds it); without it, a note
/// that they are not known.
fn from_summary(summary: Option<(Summary, &Value)>, notes: &mut Vec<String>) -> (String, Value, Target, LoadConfig) {
    match summary {
        Some((sum, s)) => {
            let ic = sum.input_config.as_ref();
            let phases = ic.and_then(|i| i.phases.as_ref());
            let phase = phases.and_then(|p| p.iter().find(|p| p.kind.as_deref() == Some("profiling")));
            let load = phase.map_or_else(LoadConfig::default, |p| LoadConfig {
                concurrency: p.concurrency,
                requests: p.requests,
                rate: p.rate.map(Rate),
                ..LoadConfig::default()
            });
            let endpoint = ic.and_then(|i| i.endpoint.as_ref());
            let model = ic.and_then(|i| i.models.as_ref()?.items.as_ref()?.first()?.name.clone());
            let target = Target {
                url: endpoint.and_then(|e| e.urls.as_ref()?.first().cloned()).unwrap_or_default(),
                model: model.unwrap_or_default(),
                api: endpoint.and_then(|e| e.kind.clone()).unwrap_or_default(),
                embedded: false,
                server: None,
            };
            let raw = &s["input_config"];
            let settings = json!({
                "cli_command": s["run_info"]["cli_command"],
                "benchmark_id": s["benchmark_id"],
                "start_time": s["start_time"],
                "endpoint": raw["endpoint"],
                "phases": raw["phases"],
            });
            (sum.aiperf_version.unwrap_or_else(|| "unknown".into()), settings, target, load)
        }
        None => {
            notes.push(
                "no profile_export_aiperf.json beside the records: AIPerf's version, the server's URL, the model \
                 and the load are not known"
                    .into(),
            );
            ("unknown".into(), json!({}), Target::default(), LoadConfig::default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record line: sent at `start` ns, its first response 10 ms later and
    /// one more 5 ms after, 2 tokens, its end at the last.
    fn line(start: u64) -> Value {
        json!({
            "metadata": {
                "request_start_ns": start,
                "request_end_ns": start.saturating_add(15_000_000),
                "benchmark_phase": "profiling",
            },
            "metrics": {
                "time_to_first_token": {"value": 10.0, "unit": "ms"},
                "inter_chunk_latency": {"value": [5.0], "unit": "ms"},
                "output_sequence_length": {"value": 2, "unit": "tokens"},
                "input_sequence_length": {"value": 8, "unit": "tokens"},
            },
        })
    }

    const T0: u64 = 1_795_605_207_618_671_794;

    fn lines(v: &[Value]) -> String {
        v.iter().map(|l| l.to_string() + "\n").collect()
    }

    fn refusal(v: &[Value]) -> String {
        match parse("p.jsonl", &lines(v), None) {
            Ok(_) => panic!("read: {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_lines_are_read() {
        let p = parse("p.jsonl", &lines(&[line(T0), line(T0 + 1_000_000_000)]), None).unwrap();
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1].end, Duration::from_millis(1015));
    }

    /// A line repeated (the same `x_request_id`) had been read as one more
    /// request sent.
    #[test]
    fn a_request_twice_is_refused() {
        let mut a = line(T0);
        a["metadata"]["x_request_id"] = json!("r-1");
        let mut b = line(T0 + 1_000_000);
        b["metadata"]["x_request_id"] = json!("r-2");
        assert_eq!(parse("p.jsonl", &lines(&[a.clone(), b.clone()]), None).unwrap().records.len(), 2);
        let e = refusal(&[a.clone(), b, a]);
        assert!(e.starts_with("p.jsonl line 3: metadata.x_request_id \"r-1\" is line 1's too"), "{e}");
    }

    /// −1e30 tokens had been taken as 0.
    #[test]
    fn a_negative_count_is_refused() {
        let mut l = line(T0);
        l["metrics"]["output_sequence_length"]["value"] = json!(-1e30);
        let e = refusal(&[l]);
        assert!(e.starts_with("p.jsonl line 1: metrics.output_sequence_length is -1e30, not a count ≥ 0:"), "{e}");
    }

    /// A TTFT of 1e300 ms had been taken as u64::MAX ns (584 years), and
    /// a hundred gaps of 1e9 s, each a time, as 3,170 years.
    #[test]
    fn times_past_the_horizon_are_refused() {
        let mut l = line(T0);
        l["metrics"]["time_to_first_token"]["value"] = json!(1e300);
        let e = refusal(&[line(T0), l]);
        assert!(e.contains("line 2: metrics.time_to_first_token is 1e300 ms, not a time from 0 to 100 years"), "{e}");
        let mut l = line(T0);
        l["metrics"]["inter_chunk_latency"] = json!({"value": vec![1e9; 100], "unit": "s"});
        let e = refusal(&[l]);
        assert!(
            e.contains("line 1: metrics.time_to_first_token and inter_chunk_latency put a response over 100 years"),
            "{e}"
        );
        let mut l = line(T0);
        l["metadata"]["request_end_ns"] = json!(u64::MAX);
        let e = refusal(&[line(T0), l]);
        assert!(e.contains("line 2: metadata.request_end_ns is over 100 years after the first send"), "{e}");
    }

    /// A send at 0, or at 2^64 - 1 ns, among a run's: 57 and 528 years of
    /// window had been shown.
    #[test]
    fn a_send_apart_from_the_others_is_refused() {
        for (stray, side) in [(0, "before the send after it"), (u64::MAX, "after the send before it")] {
            let e = refusal(&[line(T0), line(T0 + 1_000_000_000), line(stray), line(T0 + 2_000_000_000)]);
            assert!(e.contains("line 3: metadata.request_start_ns is "), "{e}");
            assert!(e.contains(&format!(" s {side}, where the run's other sends span 2.000 s (not a send")), "{e}");
        }
    }
}
