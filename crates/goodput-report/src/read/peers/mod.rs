//! Results of other tools read as `goodput/v1` runs: vLLM `bench serve`'s
//! `--save-result --save-detailed` JSON, AIPerf's `profile_export.jsonl`
//! (or its `profile_export_aiperf.json` beside it) and GuideLLM's
//! `benchmarks.json`. Each file's per-request data is rebuilt into
//! [`RequestRecord`]s as far as the file allows, and every figure is then
//! computed from those records by [`goodput_core::analyze`], goodput's own
//! definitions, never copied from the tool's summary. What a file cannot
//! give is left empty and said in `warnings` (and in `config.import`, so
//! that `goodput report` re-analysing the records says and leaves out the
//! same).

mod aiperf;
mod error;
mod guidellm;
mod vllm;

pub use error::ImportError;

use goodput_core::analysis::assemble::{assemble, Assembly};
use goodput_core::doc::config::LoadConfig;
use goodput_core::RunConfig;
use goodput_core::{AnalysisOptions, Distribution, FailureKind, RequestRecord, RunResult, Target, Tool, Window};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The `kind` of an imported run.
pub const KIND: &str = "import";

/// What an import says about itself, kept as `config.import`.
pub use goodput_core::doc::config::ImportInfo;

/// The import block of a run that was imported.
pub fn import_info(run: &RunResult) -> Option<&ImportInfo> {
    if run.kind != KIND {
        return None;
    }
    run.config.import.as_ref()
}

/// The files beside `path` that reading it read too, when it was another
/// tool's result (`run`, as [`import`] gave it): AIPerf's records
/// (`profile_export.jsonl`) and its summary (`profile_export_aiperf.json`)
/// are each read with the other. They are inputs of the command as much as
/// `path` is, and no output may write over them (`report
/// profile_export_aiperf.json -o profile_export.jsonl` had replaced AIPerf's
/// records with goodput's result).
pub fn companions(path: &Path, run: &RunResult) -> Vec<std::path::PathBuf> {
    match import_info(run) {
        Some(i) if i.tool == aiperf::TOOL => [aiperf::RECORDS, aiperf::SUMMARY]
            .into_iter()
            .map(|n| path.with_file_name(n))
            .filter(|p| p.as_path() != path)
            .collect(),
        _ => Vec::new(),
    }
}

/// Refuses an SLO that judges a figure `import`'s file cannot give: the
/// records would answer it with times they do not hold.
pub fn check_slo(import: &ImportInfo, slo: &goodput_core::Slo) -> Result<(), ImportError> {
    let metrics = slo.limits.iter().map(|l| l.metric).chain(slo.objectives.iter().map(|o| o.metric));
    for m in metrics {
        let field = match m {
            goodput_core::analysis::slo::SloMetric::Ttfb => "summary.ttfb_ms",
            goodput_core::analysis::slo::SloMetric::ItlMax => "summary.itl_max_ms",
            _ => continue,
        };
        if import.not_recomputed.iter().any(|n| n == field) {
            return Err(ImportError::SloNotInFile { metric: m.as_str().to_owned(), tool: import.tool.clone() });
        }
    }
    Ok(())
}

/// Makes a result analysed from imported records say where it came from
/// and leave out what the file cannot give: the tool, the run length, the
/// empty figures and the notes.
pub fn apply(import: &ImportInfo, r: &mut RunResult) {
    r.tool = Tool { name: import.tool.clone(), version: import.version.clone(), commit: None };
    if let Some(d) = import.duration_s.filter(|d| *d > 0.0) {
        over_duration(r, d);
    }
    let s = &mut r.summary;
    for name in &import.not_recomputed {
        match name.as_str() {
            "summary.ttft_content_ms" => blank(&mut s.ttft_content_ms),
            "summary.ttfb_ms" => blank(&mut s.ttfb_ms),
            "summary.itl_ms" => blank(&mut s.itl_ms),
            "summary.chunk_gap_ms" => blank(&mut s.chunk_gap_ms),
            "summary.itl_max_ms" => blank(&mut s.itl_max_ms),
            "summary.client_queue_ms" => blank(&mut s.client_queue_ms),
            "summary.throughput.peak_output_tokens_per_s" => s.throughput.peak_output_tokens_per_s = 0.0,
            "summary.in_flight" => s.in_flight = Default::default(),
            "compat.vllm.itl" => {
                let v = &mut r.compat.vllm;
                (v.mean_itl_ms, v.median_itl_ms, v.std_itl_ms, v.p99_itl_ms) = (None, None, None, None);
                for (k, x) in v.other_percentiles.iter_mut() {
                    if k.ends_with("_itl_ms") {
                        *x = None;
                    }
                }
            }
            _ => {}
        }
    }
    let mut w = import.notes.clone();
    w.append(&mut r.warnings);
    r.warnings = w;
}

/// Whether `field` (a place in the result, as `ImportInfo::not_recomputed`
/// names it: `summary.itl_ms`) holds a recomputed figure: always, but in a
/// run imported from a file that cannot give it.
pub fn recomputed(r: &RunResult, field: &str) -> bool {
    import_info(r).is_none_or(|i| !i.not_recomputed.iter().any(|n| n == field))
}

/// The run's peak output rate over 1 s, unless it was imported from a file
/// that cannot give it (the figure is then 0, and not a measurement).
pub fn peak_output_tokens_per_s(r: &RunResult) -> Option<f64> {
    recomputed(r, "summary.throughput.peak_output_tokens_per_s")
        .then_some(r.summary.throughput.peak_output_tokens_per_s)
}

/// A tool's version as the result keeps it, in words where the file gave none.
pub fn version_text(v: &str) -> String {
    if v == "unknown" {
        "(version unknown)".into()
    } else {
        v.to_string()
    }
}

/// Empties a distribution, keeping the percentiles it was asked for.
fn blank(d: &mut Distribution) {
    *d = Distribution { percentiles: d.percentiles.iter().map(|(p, _)| (*p, None)).collect(), ..Default::default() };
}

/// Puts the window and every rate over `d` seconds: for a file with no
/// send times, whose records all start at 0.
fn over_duration(r: &mut RunResult, d: f64) {
    r.window = Window { start_s: 0.0, end_s: d, duration_s: d };
    let s = &mut r.summary;
    let (done, input, output) = (s.requests.completed as f64, s.tokens.input as f64, s.tokens.output as f64);
    let th = &mut s.throughput;
    th.requests_per_s = done / d;
    th.input_tokens_per_s = input / d;
    th.output_tokens_per_s = output / d;
    th.total_tokens_per_s = (input + output) / d;
    let v = &mut r.compat.vllm;
    v.duration = d;
    v.request_throughput = done / d;
    v.output_throughput = output / d;
    v.total_token_throughput = (input + output) / d;
}

/// One file read: the records and what is known around them.
struct Parsed {
    records: Vec<RequestRecord>,
    started_unix_s: f64,
    target: Target,
    /// The tool's own settings, as the file gives them.
    settings: Value,
    /// `config.load` in goodput's terms, where the file says it.
    load: LoadConfig,
    info: ImportInfo,
}

/// Reads `text` (the contents of `path`) as one of the tools' results:
/// `Ok(None)` when it is none of them, an error naming the problem and
/// its fix when it is one but cannot be read.
pub fn import(path: &Path, text: &str) -> Result<Option<RunResult>, ImportError> {
    let name = path.display().to_string();
    // A vLLM file, told by its top level alone, is read straight into its
    // types: through a `serde_json::Value` first, 6,000 requests of 2,500
    // gaps each (105 MB) had taken 1.13 GB.
    if let Some(top) = top_level(text) {
        if top.contains_key("schema") {
            return Ok(None);
        }
        let top = Value::Object(top);
        if vllm::is(&top) {
            return Ok(Some(build(vllm::parse_text(&name, text, &top)?)));
        }
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(v) if v.get("schema").is_some() => return Ok(None),
        Ok(v) if vllm::is(&v) => vllm::parse(&name, &v)?,
        Ok(v) if guidellm::is(&v) => guidellm::parse(&name, &v)?,
        Ok(v) if aiperf::is_summary(&v) => {
            let records = path.with_file_name(aiperf::RECORDS);
            let text = super::read_text(&records, "AIPerf's records").map_err(|e| ImportError::AiperfNoRecords {
                file: name.clone(),
                records: records.display().to_string(),
                error: e.to_string(),
            })?;
            aiperf::parse(&records.display().to_string(), super::without_bom(&text), Some((&name, &v)))?
        }
        Ok(_) => return Ok(None),
        Err(_) if aiperf::is_records(text) => {
            let beside = path.with_file_name(aiperf::SUMMARY);
            let summary = super::read_text(&beside, "AIPerf's summary")
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(super::without_bom(&t)).ok())
                .filter(aiperf::is_summary);
            let beside = beside.display().to_string();
            aiperf::parse(&name, text, summary.as_ref().map(|v| (beside.as_str(), v)))?
        }
        // Past serde_json's 128 levels: no tool's result nests so deep, and
        // it had been called none of them.
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            return Err(ImportError::TooDeep { file: name, error: e.to_string() });
        }
        Err(_) => return Ok(None),
    };
    Ok(Some(build(parsed)))
}

/// Whether `text` is a vLLM result, told by its top level alone: such a
/// file is read straight into its types ([`import`]), its `itls` lists at
/// what a `Vec<f64>` takes, so its memory check is the typed one.
pub fn is_vllm_text(text: &str) -> bool {
    top_level(text).is_some_and(|top| !top.contains_key("schema") && vllm::is(&Value::Object(top)))
}

/// The top level of a JSON object: each key, with its value where that is
/// not a list (a list, however long, is passed over and kept as `null`).
/// `None` when `text` is not one JSON object.
fn top_level(text: &str) -> Option<serde_json::Map<String, Value>> {
    use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

    /// A value kept whole, unless it is a list.
    struct Small(Value);
    impl<'de> serde::Deserialize<'de> for Small {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Small;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_bool<E>(self, b: bool) -> Result<Small, E> {
                    Ok(Small(Value::Bool(b)))
                }
                fn visit_i64<E>(self, n: i64) -> Result<Small, E> {
                    Ok(Small(Value::from(n)))
                }
                fn visit_u64<E>(self, n: u64) -> Result<Small, E> {
                    Ok(Small(Value::from(n)))
                }
                fn visit_f64<E>(self, n: f64) -> Result<Small, E> {
                    Ok(Small(Value::from(n)))
                }
                fn visit_str<E>(self, s: &str) -> Result<Small, E> {
                    Ok(Small(Value::from(s)))
                }
                fn visit_string<E>(self, s: String) -> Result<Small, E> {
                    Ok(Small(Value::String(s)))
                }
                fn visit_unit<E>(self) -> Result<Small, E> {
                    Ok(Small(Value::Null))
                }
                fn visit_none<E>(self) -> Result<Small, E> {
                    Ok(Small(Value::Null))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Small, A::Error> {
                    // Each item read and dropped (not skipped as
                    // `IgnoredAny`, which nests past serde_json's depth
                    // limit, so a file nested too deep is still named so).
                    while seq.next_element::<Small>()?.is_some() {}
                    Ok(Small(Value::Null))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Small, A::Error> {
                    let mut out = serde_json::Map::new();
                    while let Some((k, v)) = map.next_entry::<String, Value>()? {
                        out.insert(k, v);
                    }
                    Ok(Small(Value::Object(out)))
                }
            }
            d.deserialize_any(V)
        }
    }

    struct Top;
    impl<'de> Visitor<'de> for Top {
        type Value = serde_json::Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = serde_json::Map::new();
            while let Some((k, Small(v))) = map.next_entry::<String, Small>()? {
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let top = de.deserialize_map(Top).ok()?;
    de.end().ok()?;
    Some(top)
}

/// The run from its records, analysed by goodput's definitions (the same
/// assembly as a run goodput measured).
fn build(p: Parsed) -> RunResult {
    let opts = AnalysisOptions::default();
    let config = RunConfig {
        import: Some(p.info.clone()),
        tool_settings: Some(p.settings),
        load: Some(p.load),
        percentiles: Some(opts.percentiles.clone()),
        ..RunConfig::default()
    };
    let assembly = Assembly {
        tool: Tool { name: String::new(), version: String::new(), commit: None },
        kind: KIND,
        run_id: String::new(),
        started_unix_s: p.started_unix_s,
        interrupted: false,
        config,
        target: p.target,
        include_requests: true,
    };
    let mut r = assemble(assembly, &p.records, &opts);
    apply(&p.info, &mut r);
    r
}

/// `v` read as a `T`, or where in it and how it is not one: `ttfts[3]
/// does not read (invalid type: string "x", expected f64)`.
fn typed<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(path_error)
}

/// `text` read as a `T`, straight from the text, or where in it and how it
/// is not one, as [`typed`] says it.
fn typed_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let t = serde_path_to_error::deserialize(&mut de).map_err(path_error)?;
    de.end().map_err(|e| format!("content does not read ({e})"))?;
    Ok(t)
}

/// Where in a document a typed read failed, and how.
fn path_error<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> String {
    let mut at = String::new();
    for s in e.path().iter() {
        match s {
            serde_path_to_error::Segment::Seq { index } => at.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key } => at.push_str(&format!(".{key}")),
            serde_path_to_error::Segment::Enum { variant } => at.push_str(&format!(".{variant}")),
            serde_path_to_error::Segment::Unknown => at.push_str(".?"),
        }
    }
    let at = at.strip_prefix('.').unwrap_or(&at);
    if at.is_empty() {
        format!("content does not read ({})", e.inner())
    } else {
        format!("{at} does not read ({})", e.inner())
    }
}

/// Seconds as a duration, refusing what no time can be (not a number, below
/// zero, or more than a run lasts: `1e300` once panicked here).
fn secs<E>(x: f64, what: impl FnOnce() -> E) -> Result<Duration, E> {
    // A float difference of equal stamps can come out a hair below zero.
    match Duration::try_from_secs_f64(x.max(0.0)) {
        Ok(d) if x > -1e-9 && d <= goodput_core::HORIZON => Ok(d),
        _ => Err(what()),
    }
}

/// Nanoseconds (possibly fractional) as a duration, refusing what [`secs`]
/// refuses (`1e300` ms had been taken as 584 years, `u64::MAX` ns).
fn nanos<E>(x: f64, what: impl FnOnce() -> E) -> Result<Duration, E> {
    if x.is_finite() && x > -1.0 && x <= goodput_core::HORIZON.as_nanos() as f64 {
        Ok(Duration::from_nanos(x.max(0.0).round() as u64))
    } else {
        Err(what())
    }
}

/// The longest two sends of a run are apart, where every other send of it is
/// far closer together ([`stray`]).
const STRAY_GAP_S: f64 = 24.0 * 3600.0;

/// A send apart from all the others of its run: a stamp of 0, or of another
/// clock, among a run's.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stray {
    /// Its index in the sends given.
    index: usize,
    /// Whether it is after the others (else before them).
    after: bool,
    /// Seconds between it and the send nearest it.
    gap: f64,
    /// Seconds the run's other sends span.
    rest: f64,
}

impl Stray {
    /// What is wrong with the send, after the field that names it.
    fn text(&self) -> String {
        let side = if self.after { "after the send before it" } else { "before the send after it" };
        format!(
            "is {} s {side}, where the run's other sends span {} s (not a send of the same run)",
            seconds_text(self.gap),
            seconds_text(self.rest)
        )
    }
}

/// Of the sends `starts` (seconds, in any order), one apart from the rest:
/// where the widest gap between two sends in time is over a day
/// ([`STRAY_GAP_S`]) and over a thousand times what the other sends span,
/// the send next to that gap on its side with fewer sends. A file with a
/// send at 0 among wall-clock ones had been read as a run of 57 years.
fn stray(starts: &[f64]) -> Option<Stray> {
    if starts.len() < 2 {
        return None;
    }
    let mut order: Vec<usize> = (0..starts.len()).collect();
    order.sort_by(|&a, &b| starts[a].total_cmp(&starts[b]));
    let at = |i: usize| starts[order[i]];
    let n = order.len();
    let i = (0..n - 1).max_by(|&a, &b| (at(a + 1) - at(a)).total_cmp(&(at(b + 1) - at(b))))?;
    let gap = at(i + 1) - at(i);
    // The spans on either side, apart: their difference with the whole
    // would be lost beside a gap of 1e300.
    let rest = (at(i) - at(0)) + (at(n - 1) - at(i + 1));
    if !(gap > STRAY_GAP_S && gap > 1000.0 * rest) {
        return None;
    }
    // The side with fewer sends is the stray one; of two sends, the later.
    let after = n - 1 - i <= i + 1;
    let index = if after { order[i + 1] } else { order[i] };
    Some(Stray { index, after, gap, rest })
}

/// Seconds as a message gives them: to the millisecond, in exponent form
/// from a million on.
fn seconds_text(s: f64) -> String {
    if s.abs() >= 1e6 {
        format!("{s:.3e}")
    } else {
        format!("{s:.3}")
    }
}

/// What one request takes in memory once imported, beyond its chunks: its
/// record (about 1 KB) twice over, the records and the result's copy of them
/// (an import keeps them), and what the analysis and the report make of it,
/// as much again. Measured: a million vLLM requests of one payload each
/// took 2.8 KB a request at the peak of `goodput report`, 0.3 KB of it the
/// file's parse, before this is checked.
const RECORD_BYTES: u64 = 3 * std::mem::size_of::<RequestRecord>() as u64;

/// What each chunk of a record takes: its packed bytes in both copies, and
/// its gap in the analysis.
const CHUNK_BYTES: u64 = 48;

/// Refuses an import whose `requests` records, with `chunks` chunks in all
/// and `more` bytes each of the file's own reading, would not fit in the
/// memory the process has left: an allocation that fails aborts the process
/// (10 million vLLM requests had, under `ulimit -v 6000000`).
fn check_memory(file: &str, tool: &str, requests: u64, chunks: u64, more: u64) -> Result<(), ImportError> {
    match goodput_core::util::input::memory_left() {
        Some(left) => records_fit(file, tool, requests, chunks, more, left),
        None => Ok(()),
    }
}

/// [`check_memory`] with `left` bytes of memory left.
fn records_fit(file: &str, tool: &str, requests: u64, chunks: u64, more: u64, left: u64) -> Result<(), ImportError> {
    let need =
        requests.saturating_mul(RECORD_BYTES.saturating_add(more)).saturating_add(chunks.saturating_mul(CHUNK_BYTES));
    if need <= left {
        return Ok(());
    }
    Err(ImportError::OverMemory {
        file: file.to_owned(),
        tool: tool.to_owned(),
        requests,
        need: goodput_core::util::input::approx(need),
        left: goodput_core::util::input::approx(left),
    })
}

/// A failure's kind from what a tool wrote of it: an HTTP status where it
/// kept one, else words of its error text.
fn failure_kind(status: Option<u64>, text: &str) -> FailureKind {
    let t = text.to_ascii_lowercase();
    match status {
        Some(429) => FailureKind::RateLimited,
        Some(s) if s >= 300 => FailureKind::HttpStatus,
        _ if t.contains("too many requests") => FailureKind::RateLimited,
        _ if t.contains("timeout") || t.contains("timed out") => FailureKind::Timeout,
        _ if t.contains("connect") || t.contains("refused") => FailureKind::Connect,
        _ if t.contains("payload") || t.contains("incomplete") || t.contains("closed") => FailureKind::TruncatedStream,
        _ if t.contains("never received") || t.contains("no content") || t.contains("empty") => {
            FailureKind::EmptyOutput
        }
        _ if is_reason_phrase(&t) => FailureKind::HttpStatus,
        _ => FailureKind::InvalidResponse,
    }
}

/// An HTTP reason phrase alone ("Not Found", "Internal Server Error"), as
/// vLLM keeps for a refused request.
fn is_reason_phrase(t: &str) -> bool {
    const PHRASES: [&str; 8] = [
        "bad request",
        "unauthorized",
        "forbidden",
        "not found",
        "internal server error",
        "bad gateway",
        "service unavailable",
        "gateway timeout",
    ];
    PHRASES.iter().any(|p| t.trim() == *p)
}

/// The note every import carries: the channels and the first byte are not
/// in any of these files.
fn common_notes(tool: &str) -> Vec<String> {
    vec![format!(
        "{tool}'s file does not say which output was reasoning and which visible content, nor when the \
         response's first byte came: TTFT content and TTFB are not recomputed (TTFT counts any output)"
    )]
}

/// The names of the figures every import leaves out (with [`common_notes`]).
fn common_not_recomputed() -> Vec<String> {
    vec!["summary.ttft_content_ms".into(), "summary.ttfb_ms".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vLLM file is told from its top level (and gets the typed memory
    /// check); goodput's own result, GuideLLM's and AIPerf's summary are not
    /// vLLM's, and neither is what is not a JSON object.
    #[test]
    fn a_vllm_file_is_told_by_its_top_level() {
        let fixture = |f: &str| {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers");
            std::fs::read_to_string(dir.join(f)).unwrap()
        };
        assert!(is_vllm_text(&fixture("vllm/vllm.json")));
        for f in ["goodput/goodput.json", "guidellm/benchmarks.json"] {
            assert!(!is_vllm_text(&fixture(f)), "{f}");
        }
        for text in ["[1, 2]", "{\"ttfts\": [", "", "{\"schema\": \"x\", \"ttfts\": [], \"itls\": []}"] {
            assert!(!is_vllm_text(text), "{text}");
        }
    }

    #[test]
    fn failure_kinds_from_text() {
        assert_eq!(failure_kind(Some(429), ""), FailureKind::RateLimited);
        assert_eq!(failure_kind(Some(500), "boom"), FailureKind::HttpStatus);
        assert_eq!(failure_kind(None, "Not Found"), FailureKind::HttpStatus);
        assert_eq!(failure_kind(None, "aiohttp.ClientConnectorError: Cannot connect"), FailureKind::Connect);
        assert_eq!(failure_kind(None, "asyncio.TimeoutError"), FailureKind::Timeout);
        assert_eq!(failure_kind(None, "Never received a valid chunk to calculate TTFT."), FailureKind::EmptyOutput);
        assert_eq!(failure_kind(None, "KeyError: 'choices'"), FailureKind::InvalidResponse);
    }

    #[test]
    fn times_refuse_what_no_time_can_be() {
        assert_eq!(secs(0.5, String::new), Ok(Duration::from_millis(500)));
        assert_eq!(secs(-1e-12, String::new), Ok(Duration::ZERO));
        assert!(secs(-0.1, || "negative").is_err());
        assert!(secs(f64::NAN, || "nan").is_err());
        assert!(nanos(f64::INFINITY, || "inf").is_err());
        assert_eq!(nanos(1.6, String::new), Ok(Duration::from_nanos(2)));
        // Past the horizon, as secs: 1e300 ms had been u64::MAX ns.
        assert!(nanos(1e306, || "huge").is_err());
        let horizon = goodput_core::HORIZON.as_nanos() as f64;
        assert_eq!(nanos(horizon, String::new), Ok(goodput_core::HORIZON));
        assert!(nanos(horizon * 1.001, || "past").is_err());
    }

    #[test]
    fn a_send_apart_from_the_others_is_found() {
        let run = [1e9 + 0.5, 1e9, 1e9 + 1.0];
        assert_eq!(stray(&run), None);
        // A stamp of 0 among wall-clock ones, on either side.
        let s = stray(&[1e9 + 0.5, 0.0, 1e9, 1e9 + 1.0]).unwrap();
        assert_eq!((s.index, s.after, s.gap, s.rest), (1, false, 1e9, 1.0));
        assert_eq!(
            s.text(),
            "is 1.000e9 s before the send after it, where the run's other sends span 1.000 s (not a send of the same \
             run)"
        );
        let s = stray(&[1e9, 1e9 + 1.0, 1e300]).unwrap();
        assert_eq!((s.index, s.after), (2, true));
        // Two far apart: the later is named.
        assert_eq!(stray(&[5.0, 1e6]).map(|s| (s.index, s.after)), Some((1, true)));
        // Slow, but even: a send every two days is a run's.
        assert_eq!(stray(&[0.0, 172_800.0, 345_600.0]), None);
        // Far, but not over a day: a pause of an hour.
        assert_eq!(stray(&[0.0, 0.1, 3600.0]), None);
        assert_eq!(stray(&[7.0]), None);
        assert_eq!(stray(&[]), None);
    }

    /// An import whose records would not fit in the memory left is refused
    /// before they are built, saying what to do.
    #[test]
    fn records_that_would_not_fit_are_refused() {
        let need = 1000 * RECORD_BYTES + 2000 * CHUNK_BYTES;
        assert!(records_fit("v.json", "vLLM bench serve", 1000, 2000, 0, need).is_ok());
        let e = records_fit("v.json", "vLLM bench serve", 1000, 2000, 0, need - 1).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "v.json is vLLM bench serve's result of 1000 requests, and goodput's records of them take about"
            ) && e.contains("this process has left (the machine's available memory, and ulimit -v where one is set)")
                && e.ends_with("or give a smaller file (a run of fewer requests)"),
            "{e}"
        );
        let e = records_fit("v.json", "vLLM bench serve", 10_000_000, 10_000_000, 0, 5 << 30).unwrap_err().to_string();
        assert!(e.contains("more than the 5.0 GiB this process has left"), "{e}");
        // No count overflows the sum.
        assert!(records_fit("v.json", "AIPerf", u64::MAX, u64::MAX, u64::MAX, u64::MAX - 1).is_err());
        assert_eq!(goodput_core::util::input::approx(1536 << 20), "1.5 GiB");
    }
}
