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

use super::{common_not_recomputed, common_notes, failure_kind, secs, ImportError, ImportInfo, Parsed};
use goodput_core::doc::config::{LoadConfig, Rate};
use goodput_core::{
    spread_evenly, Channel, ChunkTokenSource, CountSource, Outcome, OutputChunk, RequestRecord, Target,
};
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

/// The per-request lists of a detailed file, checked to be of one length.
struct Lists<'a> {
    n: usize,
    ttfts: &'a [Value],
    itls: &'a [Value],
    output_lens: &'a [Value],
    input_lens: &'a [Value],
    errors: Option<&'a Vec<Value>>,
    starts: Option<&'a Vec<Value>>,
    queues: Option<&'a Vec<Value>>,
}

/// Says that `name`'s `what` is not as vLLM writes it, and how to save it again.
fn bad(name: &str, what: &str) -> ImportError {
    ImportError::Vllm { file: name.to_owned(), what: what.to_owned() }
}

pub(super) fn parse(name: &str, v: &Value) -> Result<Parsed, ImportError> {
    let o = v.as_object().expect("is() saw an object");
    if !o.contains_key("ttfts") {
        return Err(ImportError::VllmNotDetailed { file: name.to_owned() });
    }
    let l = lists(name, o)?;
    let (records, more_payloads_than_tokens) = records(name, &l)?;
    let (notes, not_recomputed, duration_s) = notes(o, &l, more_payloads_than_tokens);
    let (api, settings, load) = settings_and_load(o);
    Ok(Parsed {
        records,
        started_unix_s: 0.0,
        target: Target {
            url: String::new(),
            model: o.get("model_id").and_then(Value::as_str).unwrap_or("").to_string(),
            api,
            embedded: false,
            server: None,
        },
        settings: Value::Object(settings),
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

/// The per-request lists, each a list and all of one length.
fn lists<'a>(name: &str, o: &'a Map<String, Value>) -> Result<Lists<'a>, ImportError> {
    let list = |k: &str| -> Result<&'a Vec<Value>, ImportError> {
        o.get(k).and_then(Value::as_array).ok_or_else(|| bad(name, &format!("\"{k}\" is not a list")))
    };
    let (ttfts, itls, output_lens, input_lens) =
        (list("ttfts")?, list("itls")?, list("output_lens")?, list("input_lens")?);
    let n = ttfts.len();
    let errors = o.get("errors").and_then(Value::as_array);
    let starts = o.get("start_times").and_then(Value::as_array);
    let queues = o.get("queue_times").and_then(Value::as_array);
    for (k, l) in [("itls", Some(itls)), ("output_lens", Some(output_lens)), ("input_lens", Some(input_lens))]
        .into_iter()
        .chain([("errors", errors), ("start_times", starts), ("queue_times", queues)])
    {
        if let Some(l) = l.filter(|l| l.len() != n) {
            return Err(bad(name, &format!("\"{k}\" has {} entries for {n} requests", l.len())));
        }
    }
    Ok(Lists { n, ttfts, itls, output_lens, input_lens, errors, starts, queues })
}

/// A record per request, on a clock whose zero is the first send, and how
/// many requests had more payloads than output tokens.
fn records(name: &str, l: &Lists) -> Result<(Vec<RequestRecord>, usize), ImportError> {
    let num = |list: &[Value], i: usize, k: &str| -> Result<f64, ImportError> {
        list[i].as_f64().ok_or_else(|| bad(name, &format!("\"{k}\"[{i}] is not a number")))
    };
    let count = |list: &[Value], i: usize, k: &str| -> Result<u64, ImportError> {
        list[i].as_u64().ok_or_else(|| bad(name, &format!("\"{k}\"[{i}] is not a whole number ≥ 0")))
    };
    let origin = match l.starts {
        Some(s) => {
            let mut m = f64::INFINITY;
            for i in 0..l.n {
                m = m.min(num(s, i, "start_times")?);
            }
            m
        }
        None => 0.0,
    };
    let mut records = Vec::with_capacity(l.n);
    let mut more_payloads_than_tokens = 0;
    for i in 0..l.n {
        let at = |k: &'static str| move || bad(name, &format!("\"{k}\"[{i}] is not a time ≥ 0"));
        let start = match l.starts {
            Some(s) => num(s, i, "start_times")? - origin,
            None => 0.0,
        };
        let sent = secs(start, at("start_times"))?;
        let queue = match l.queues {
            Some(q) => secs(num(q, i, "queue_times")?, at("queue_times"))?,
            None => Duration::ZERO,
        };
        let mut r = RequestRecord::new(i as u64, sent.saturating_sub(queue), sent);
        r.input_tokens = count(l.input_lens, i, "input_lens")?;
        r.input_tokens_source = CountSource::Usage;
        r.output_tokens = count(l.output_lens, i, "output_lens")?;
        r.output_tokens_source = CountSource::Usage;
        let error = l.errors.and_then(|e| e[i].as_str()).unwrap_or("");
        if !error.is_empty() {
            let kind = failure_kind(None, error);
            r.outcome = Outcome::Failed { kind, message: error.trim().to_string() };
            records.push(r);
            continue;
        }
        let gaps = l.itls[i].as_array().ok_or_else(|| bad(name, &format!("\"itls\"[{i}] is not a list")))?;
        let mut t = start + num(l.ttfts, i, "ttfts")?;
        let mut times = vec![secs(t, at("ttfts"))?];
        for (j, g) in gaps.iter().enumerate() {
            t += g.as_f64().ok_or_else(|| bad(name, &format!("\"itls\"[{i}][{j}] is not a number")))?;
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

/// What the file cannot give, in words and by the result's field names, and
/// the run's length where it has no send times.
fn notes(
    o: &Map<String, Value>,
    l: &Lists,
    more_payloads_than_tokens: usize,
) -> (Vec<String>, Vec<String>, Option<f64>) {
    let n = l.n;
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
    if l.starts.is_none() {
        let d = o.get("duration").and_then(Value::as_f64).filter(|d| d.is_finite() && *d > 0.0);
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
    } else if l.queues.is_none() {
        not_recomputed.push("summary.client_queue_ms".into());
    }
    notes.push(format!(
        "vLLM's file gives no vLLM version, no server URL and no wall-clock start (only its local date, {}, with no time zone)",
        o.get("date").and_then(Value::as_str).unwrap_or("none")
    ));

    (notes, not_recomputed, duration_s)
}

/// The API, vLLM's own settings as the file holds them, and the load they name.
fn settings_and_load(o: &Map<String, Value>) -> (String, Map<String, Value>, LoadConfig) {
    let backend = o.get("backend").or_else(|| o.get("endpoint_type")).and_then(Value::as_str).unwrap_or("");
    let api = match backend {
        "openai-chat" | "openai-audio" | "vllm-chat" => "chat",
        "openai" | "vllm" | "tgi" | "lmdeploy" | "deepspeed-mii" | "scalellm" | "sglang" => "completions",
        other => other,
    };
    let settings: Map<String, Value> = [
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
    .collect();
    let mut load = LoadConfig {
        requests: o.get("num_prompts").and_then(Value::as_u64),
        concurrency: o.get("max_concurrency").and_then(Value::as_u64),
        ..LoadConfig::default()
    };
    match o.get("request_rate") {
        Some(Value::String(s)) if s == "inf" => load.rate = Some(Rate(f64::INFINITY)),
        Some(r) if r.is_number() => {
            load.rate = r.as_f64().map(Rate);
            let bursty = o.get("burstiness").and_then(Value::as_f64).unwrap_or(1.0);
            load.arrival = Some(if bursty == 1.0 { "poisson" } else { "gamma" }.into());
        }
        _ => {}
    }
    (api.to_string(), settings, load)
}
