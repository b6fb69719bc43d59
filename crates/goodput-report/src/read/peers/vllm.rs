//! vLLM `bench serve --save-result --save-detailed`: one JSON object with
//! the run's settings, vLLM's own summary and, per request, `start_times`
//! (its `time.perf_counter()` at send), `ttfts`, `itls` (the gaps between
//! the payloads it counted as output, seconds), `latencies`, `input_lens`,
//! `output_lens`, `queue_times` and `errors`. Read from vLLM 0.33's
//! `vllm/benchmarks/serve.py` and `lib/endpoint_request_func.py`: a payload
//! counts when its first choice's delta has text, reasoning or a tool call,
//! or an empty `content` with no `role` (a token that decodes to nothing,
//! or a keep-alive); `output_lens` is the usage block's `completion_tokens`,
//! else its tokenizer on the text; `input_lens` the usage's
//! `prompt_tokens`, else the dataset's count. Older versions save no
//! `start_times`.

use super::{
    common_not_recomputed, common_notes, failure_kind, secs, typed, typed_text, ImportError, ImportInfo, Parsed,
};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{
    spread_evenly, Channel, ChunkTokenSource, CountSource, Outcome, OutputChunk, RequestRecord, Target,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

const TOOL: &str = "vllm bench serve";

/// A vLLM `bench serve` result: its summary fields beside its settings.
pub(super) fn is(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    (o.contains_key("backend") || o.contains_key("endpoint_type"))
        && o.contains_key("duration")
        && o.contains_key("completed")
        && (o.contains_key("ttfts") || o.keys().any(|k| k.ends_with("_ttft_ms") || k.ends_with("_e2el_ms")))
}

/// What goodput reads of a vLLM result, as vLLM's `benchmarks/serve.py`
/// writes it: the settings, then one list per field with an entry per
/// request, in the order the requests were issued.
#[derive(Deserialize)]
struct VllmResult {
    /// The model served.
    model_id: Option<String>,
    /// The client's backend (`openai-chat`, `vllm`, …); `endpoint_type` in
    /// newer versions.
    backend: Option<String>,
    endpoint_type: Option<String>,
    /// The local date of the run, with no time zone.
    date: Option<String>,
    /// The run's length in seconds, by vLLM's clock.
    duration: Option<f64>,
    num_prompts: Option<u64>,
    max_concurrency: Option<u64>,
    /// Requests per second, or `"inf"`.
    request_rate: Option<RequestRate>,
    /// Gamma arrivals' shape; 1 is Poisson.
    burstiness: Option<f64>,
    /// Seconds from send to the first output payload.
    ttfts: Vec<f64>,
    /// Seconds between the output payloads after the first.
    itls: Vec<Vec<f64>>,
    /// The usage block's `completion_tokens`, else vLLM's tokenizer's count.
    output_lens: Vec<u64>,
    /// The usage block's `prompt_tokens`, else the dataset's count.
    input_lens: Vec<u64>,
    /// A failed request's error text; empty for a success.
    errors: Option<Vec<Option<String>>>,
    /// `time.perf_counter()` at each send (older versions save none).
    start_times: Option<Vec<f64>>,
    /// Seconds each request waited in the client before it was sent.
    queue_times: Option<Vec<f64>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RequestRate {
    PerSecond(f64),
    Named(String),
}

impl VllmResult {
    fn requests(&self) -> usize {
        self.ttfts.len()
    }

    /// The per-request lists, all of one length.
    fn check_lengths(&self, name: &str) -> Result<(), ImportError> {
        let n = self.requests();
        let lens = [
            ("itls", Some(self.itls.len())),
            ("output_lens", Some(self.output_lens.len())),
            ("input_lens", Some(self.input_lens.len())),
            ("errors", self.errors.as_ref().map(Vec::len)),
            ("start_times", self.start_times.as_ref().map(Vec::len)),
            ("queue_times", self.queue_times.as_ref().map(Vec::len)),
        ];
        match lens.into_iter().find(|(_, l)| l.is_some_and(|l| l != n)) {
            Some((k, Some(l))) => Err(bad(name, &format!("\"{k}\" has {l} entries for {n} requests"))),
            _ => Ok(()),
        }
    }
}

/// Says that `name`'s `what` is not as vLLM writes it, and how to save it again.
fn bad(name: &str, what: &str) -> ImportError {
    ImportError::Vllm { file: name.to_owned(), what: what.to_owned() }
}

/// Reads the vLLM file `v`, parsed whole (where its top level could not be
/// read alone: [`parse_text`] is the way a file is read).
pub(super) fn parse(name: &str, v: &Value) -> Result<Parsed, ImportError> {
    let o = v.as_object().expect("is() saw an object");
    if !o.contains_key("ttfts") {
        return Err(ImportError::VllmNotDetailed { file: name.to_owned() });
    }
    let file: VllmResult = typed(v).map_err(|what| bad(name, &what))?;
    from_file(name, file, o)
}

/// Reads the vLLM file whose text is `text` straight into its types, `top`
/// its top level ([`super::top_level`]: its settings, its lists passed
/// over): the per-request lists are never held as `serde_json::Value`s.
pub(super) fn parse_text(name: &str, text: &str, top: &Value) -> Result<Parsed, ImportError> {
    let o = top.as_object().expect("is() saw an object");
    if !o.contains_key("ttfts") {
        return Err(ImportError::VllmNotDetailed { file: name.to_owned() });
    }
    let file: VllmResult = typed_text(text).map_err(|what| bad(name, &what))?;
    from_file(name, file, o)
}

/// The records and settings of a vLLM file read into its types; `o` its
/// top level, for the settings.
fn from_file(name: &str, file: VllmResult, o: &Map<String, Value>) -> Result<Parsed, ImportError> {
    file.check_lengths(name)?;
    let chunks = file.itls.iter().fold(file.requests() as u64, |n, l| n.saturating_add(l.len() as u64));
    super::check_memory(name, "vLLM bench serve", file.requests() as u64, chunks, 0)?;
    if let Some(s) = file.start_times.as_deref().and_then(super::stray) {
        return Err(bad(name, &format!("\"start_times\"[{}] {}", s.index, s.text())));
    }
    let (records, more_payloads_than_tokens) = records(name, &file)?;
    check_duration(name, &file, &records)?;
    let (notes, not_recomputed, duration_s) = notes(&file, more_payloads_than_tokens);
    let (api, load) = api_and_load(name, &file)?;
    Ok(Parsed {
        records,
        started_unix_s: 0.0,
        target: Target {
            url: String::new(),
            model: file.model_id.clone().unwrap_or_default(),
            api,
            embedded: false,
            server: None,
        },
        settings: Value::Object(settings(o)),
        load,
        info: ImportInfo {
            tool: TOOL.into(),
            version: "unknown".into(),
            format: "vLLM bench serve --save-result --save-detailed JSON".into(),
            source: name.to_string(),
            not_recomputed,
            duration_s,
            notes,
        },
    })
}

/// A record per request, on a clock whose zero is the first send, and how
/// many requests had more payloads than output tokens.
fn records(name: &str, f: &VllmResult) -> Result<(Vec<RequestRecord>, usize), ImportError> {
    let origin = f.start_times.as_ref().map_or(0.0, |s| s.iter().copied().fold(f64::INFINITY, f64::min));
    let mut records = Vec::with_capacity(f.requests());
    let mut more_payloads_than_tokens = 0;
    for i in 0..f.requests() {
        let at = |k: &'static str| move || bad(name, &format!("\"{k}\"[{i}] is not a time ≥ 0"));
        let start = f.start_times.as_ref().map_or(0.0, |s| s[i] - origin);
        let sent = secs(start, at("start_times"))?;
        let queue = match &f.queue_times {
            Some(q) => secs(q[i], at("queue_times"))?,
            None => Duration::ZERO,
        };
        let mut r = RequestRecord::new(i as u64, sent.saturating_sub(queue), sent);
        r.input_tokens = f.input_lens[i];
        r.input_tokens_source = CountSource::Usage;
        r.output_tokens = f.output_lens[i];
        r.output_tokens_source = CountSource::Usage;
        let error = f.errors.as_ref().and_then(|e| e[i].as_deref()).unwrap_or("");
        if !error.is_empty() {
            let kind = failure_kind(None, error);
            r.outcome = Outcome::Failed { kind, message: error.trim().to_string() };
            records.push(r);
            continue;
        }
        // A TTFT below zero puts the first payload before the send, even
        // where the sum stays a time (a send late in the run).
        if !(f.ttfts[i].is_finite() && f.ttfts[i] >= 0.0) {
            return Err(at("ttfts")());
        }
        let mut t = start + f.ttfts[i];
        let mut times = vec![secs(t, at("ttfts"))?];
        for g in &f.itls[i] {
            // A gap below zero puts a payload before the one before it.
            if !(g.is_finite() && *g >= 0.0) {
                return Err(at("itls")());
            }
            t += g;
            times.push(secs(t, at("itls"))?);
        }
        if times.len() as u64 > r.output_tokens {
            more_payloads_than_tokens += 1;
        }
        let ks = spread_evenly(r.output_tokens, times.len());
        r.chunks =
            times.iter().zip(ks).map(|(&t, k)| OutputChunk { t, tokens: k, channel: Channel::Content }).collect();
        r.chunk_tokens_source = ChunkTokenSource::Even;
        r.counts.chunks = times.len() as u64;
        r.end = *times.last().expect("one chunk at least");
        r.outcome = Outcome::Success;
        records.push(r);
    }
    Ok((records, more_payloads_than_tokens))
}

/// Refuses a `duration` no run of these requests can have: not a time
/// within the horizon, or shorter than the requests took (vLLM times its
/// duration from before the first send to after the last request's end, on
/// the clock of the send times). `1e-300` had been taken as the run's length,
/// 4e301 requests a second; a TTFT of 1e9 s in a run of 1.6 s, as 31 years.
fn check_duration(name: &str, f: &VllmResult, records: &[RequestRecord]) -> Result<(), ImportError> {
    let Some(d) = f.duration else { return Ok(()) };
    let longest = goodput_core::HORIZON.as_secs_f64();
    if !(d > 0.0 && d <= longest) {
        return Err(bad(
            name,
            &format!("\"duration\" is {}, not a time above 0 of at most 100 years", goodput_core::util::number_text(d)),
        ));
    }
    let Some((i, end)) =
        records.iter().enumerate().map(|(i, r)| (i, r.end.as_secs_f64())).max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return Ok(());
    };
    // Float sums of the gaps, and the stamps' own rounding.
    if end > d * 1.01 + 1e-3 {
        let from = if f.start_times.is_some() { "the first send" } else { "its send" };
        return Err(bad(
            name,
            &format!(
                "\"duration\" is {} s, shorter than its requests took: request {i}'s last payload came {} s after \
                 {from} (its \"ttfts\" and \"itls\")",
                if d >= 1e-3 { super::seconds_text(d) } else { goodput_core::util::number_text(d) },
                super::seconds_text(end)
            ),
        ));
    }
    Ok(())
}

/// What the file cannot give, in words and by the result's field names, and
/// the run's length where it has no send times.
fn notes(f: &VllmResult, more_payloads_than_tokens: usize) -> (Vec<String>, Vec<String>, Option<f64>) {
    let n = f.requests();
    let mut not_recomputed = common_not_recomputed();
    let mut notes = common_notes("vLLM");
    notes.push(
        "vLLM's file keeps, per request, the send time, the times of the payloads it counted as output and \
         the token counts (the server's usage, or vLLM's tokenizer where the server sent none: the file does \
         not say which); each request's tokens are spread evenly over its payloads, and its end is its last \
         payload (the stream's close is not kept)"
            .into(),
    );
    if more_payloads_than_tokens > 0 {
        notes.push(format!(
            "on {more_payloads_than_tokens} of {n} requests vLLM counted more payloads than output tokens: at \
             least one carried no token (vLLM counts an empty \"content\" as output, so a keep-alive sent before \
             the first token sets its TTFT), and the file does not say which; TTFT, TPOT and ITL here are on \
             vLLM's payload times, and goodput's own TTFT, timed on the first token, would be later"
        ));
    }
    let mut duration_s = None;
    if f.start_times.is_none() {
        // Checked in check_duration: a time above 0, of at most 100 years.
        let d = f.duration;
        duration_s = d;
        not_recomputed.extend(
            ["summary.client_queue_ms", "summary.in_flight", "summary.throughput.peak_output_tokens_per_s"]
                .map(String::from),
        );
        notes.push(format!(
            "this vLLM saved no send times (start_times): the window and every rate are over vLLM's own duration \
             ({}), and requests in flight, the peak output rate and the client queue are not recomputed",
            d.map(|d| format!("{d:.3} s")).unwrap_or("not in the file either".into())
        ));
    } else if f.queue_times.is_none() {
        not_recomputed.push("summary.client_queue_ms".into());
    }
    notes.push(format!(
        "vLLM's file gives no vLLM version, no server URL and no wall-clock start (only its local date, {}, with no time zone)",
        f.date.as_deref().unwrap_or("none")
    ));

    (notes, not_recomputed, duration_s)
}

/// The API, and the load the settings name; a rate no load has is refused
/// (`-3` had been shown as "open loop -3 req/s").
fn api_and_load(name: &str, f: &VllmResult) -> Result<(String, LoadConfig), ImportError> {
    let backend = f.backend.as_deref().or(f.endpoint_type.as_deref()).unwrap_or("");
    let api = match backend {
        "openai-chat" | "openai-audio" | "vllm-chat" => "chat",
        "openai" | "vllm" | "tgi" | "lmdeploy" | "deepspeed-mii" | "scalellm" | "sglang" => "completions",
        other => other,
    };
    let mut load = LoadConfig { requests: f.num_prompts, concurrency: f.max_concurrency, ..LoadConfig::default() };
    match &f.request_rate {
        Some(RequestRate::Named(s)) if s == "inf" => load.rate = Some(Rate(f64::INFINITY)),
        Some(RequestRate::PerSecond(r)) if !(r.is_finite() && *r > 0.0) => {
            return Err(bad(
                name,
                &format!(
                    "\"request_rate\" is {}, not requests per second above 0 or \"inf\"",
                    goodput_core::util::number_text(*r)
                ),
            ));
        }
        Some(RequestRate::PerSecond(r)) => {
            load.rate = Some(Rate(*r));
            let bursty = f.burstiness.unwrap_or(1.0);
            load.arrival = Some(if bursty == 1.0 { "poisson" } else { "gamma" }.into());
        }
        _ => {}
    }
    Ok((api.to_string(), load))
}

/// vLLM's own settings, as the file holds them.
fn settings(o: &Map<String, Value>) -> Map<String, Value> {
    [
        "date",
        "backend",
        "endpoint_type",
        "label",
        "model_id",
        "tokenizer_id",
        "num_prompts",
        "request_rate",
        "burstiness",
        "max_concurrency",
        "ramp_up_strategy",
        "ramp_up_start_rps",
        "ramp_up_end_rps",
        "duration",
    ]
    .into_iter()
    .filter_map(|k| Some((k.to_string(), o.get(k)?.clone())))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A vLLM file of two requests sent 5 s apart, each of two payloads.
    fn file() -> Value {
        json!({
            "backend": "openai-chat", "duration": 6.0, "completed": 2, "request_rate": "inf",
            "ttfts": [0.1, 0.2], "itls": [[0.05], [0.05]], "output_lens": [2, 2], "input_lens": [8, 8],
            "errors": ["", ""], "start_times": [1000.0, 1005.0],
        })
    }

    fn refusal(v: &Value) -> String {
        match parse("v.json", v) {
            Ok(_) => panic!("read: {v}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_file_is_read() {
        let p = parse("v.json", &file()).unwrap();
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[1].end, Duration::from_secs_f64(5.25));
    }

    /// Read straight from its text (the lists never held as `Value`s), a
    /// file gives what it gives parsed whole; its top level keeps the
    /// settings and passes over the lists.
    #[test]
    fn the_text_is_read_as_the_parsed_file_is() {
        let text = file().to_string();
        let top = Value::Object(super::super::top_level(&text).unwrap());
        assert_eq!(top["ttfts"], Value::Null, "a list is passed over");
        assert_eq!(top["backend"], "openai-chat");
        let (a, b) = (parse("v.json", &file()).unwrap(), parse_text("v.json", &text, &top).unwrap());
        assert_eq!(a.records, b.records);
        assert_eq!(a.settings, b.settings);
        assert_eq!(a.info, b.info);
        assert!(super::super::top_level("[1, 2]").is_none(), "not an object");
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(500), "]".repeat(500));
        assert!(super::super::top_level(&deep).is_none(), "nested past serde_json's limit");
    }

    /// A TTFT below zero is refused, even where the send's lateness keeps
    /// the payload after the run's first send (-4 s on a send 5 s in had
    /// been read as a payload at 1 s).
    #[test]
    fn a_negative_ttft_is_refused_wherever_the_send() {
        let mut v = file();
        v["ttfts"][1] = json!(-4.0);
        let e = refusal(&v);
        assert!(e.starts_with("v.json is a vLLM bench serve result whose \"ttfts\"[1] is not a time ≥ 0:"), "{e}");
        let mut v = file();
        v["itls"][0][0] = json!(-0.01);
        assert!(refusal(&v).contains("\"itls\"[0] is not a time ≥ 0"));
    }

    /// A duration the requests cannot have had: 1e-300 s had been the window
    /// of a file without send times (4e301 requests a second), 1e308 s too
    /// long for any, and a TTFT of 1e9 s in a run of 6 s had been read as a
    /// window of 31 years.
    #[test]
    fn a_duration_the_requests_cannot_have_had_is_refused() {
        let mut v = file();
        v.as_object_mut().unwrap().remove("start_times");
        v["duration"] = json!(1e-300);
        let e = refusal(&v);
        assert!(
            e.contains(
                "whose \"duration\" is 1e-300 s, shorter than its requests took: request 1's last payload came \
                 0.250 s after its send (its \"ttfts\" and \"itls\")"
            ),
            "{e}"
        );
        v["duration"] = json!(1e308);
        let e = refusal(&v);
        assert!(e.contains("whose \"duration\" is 1e308, not a time above 0 of at most 100 years"), "{e}");
        v["duration"] = json!(-5.0);
        assert!(refusal(&v).contains("\"duration\" is -5, not a time above 0"));
        let mut v = file();
        v["ttfts"][0] = json!(1e9);
        let e = refusal(&v);
        assert!(
            e.contains(
                "\"duration\" is 6.000 s, shorter than its requests took: request 0's last payload came 1.000e9 s \
                 after the first send"
            ),
            "{e}"
        );
        // Within the file's own rounding, read.
        let mut v = file();
        v["duration"] = json!(5.25);
        assert!(parse("v.json", &v).is_ok());
    }

    #[test]
    fn a_rate_no_load_has_is_refused() {
        let mut v = file();
        v["request_rate"] = json!(-3);
        let e = refusal(&v);
        assert!(e.contains("whose \"request_rate\" is -3, not requests per second above 0 or \"inf\""), "{e}");
        v["request_rate"] = json!(2.5);
        assert_eq!(parse("v.json", &v).unwrap().load.rate.map(|r| r.0), Some(2.5));
    }

    /// A send of another clock among the run's: named, not read as a run
    /// of 3e10 years.
    #[test]
    fn a_send_apart_from_the_others_is_refused() {
        let mut v = file();
        v["start_times"][0] = json!(1e18);
        let e = refusal(&v);
        assert!(
            e.contains(
                "whose \"start_times\"[0] is 1.000e18 s after the send before it, where the run's other sends span \
                 0.000 s (not a send of the same run)"
            ),
            "{e}"
        );
    }
}
