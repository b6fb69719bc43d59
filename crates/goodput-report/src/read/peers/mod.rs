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
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(v) if v.get("schema").is_some() => return Ok(None),
        Ok(v) if vllm::is(&v) => vllm::parse(&name, &v)?,
        Ok(v) if guidellm::is(&v) => guidellm::parse(&name, &v)?,
        Ok(v) if aiperf::is_summary(&v) => {
            let records = path.with_file_name("profile_export.jsonl");
            let cap = goodput_core::util::input::DOCUMENT_CAP;
            let text = goodput_core::util::input::read_text(&records, "AIPerf's records", cap)
                .and_then(|t| goodput_core::util::input::check_parse(&records, "AIPerf's records", &t).map(|()| t))
                .map_err(|e| ImportError::AiperfNoRecords {
                    file: name.clone(),
                    records: records.display().to_string(),
                    error: e.to_string(),
                })?;
            aiperf::parse(&records.display().to_string(), &text, Some((&name, &v)))?
        }
        Ok(_) => return Ok(None),
        Err(_) if aiperf::is_records(text) => {
            let beside = path.with_file_name("profile_export_aiperf.json");
            let summary = goodput_core::util::input::read_text(
                &beside,
                "AIPerf's summary",
                goodput_core::util::input::DOCUMENT_CAP,
            )
            .ok()
            .filter(|t| goodput_core::util::input::check_parse(&beside, "AIPerf's summary", t).is_ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(aiperf::is_summary);
            let beside = beside.display().to_string();
            aiperf::parse(&name, text, summary.as_ref().map(|v| (beside.as_str(), v)))?
        }
        Err(_) => return Ok(None),
    };
    Ok(Some(build(parsed)))
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
    serde_path_to_error::deserialize(v).map_err(|e| {
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
    })
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

/// Nanoseconds (possibly fractional) as a duration.
fn nanos<E>(x: f64, what: impl FnOnce() -> E) -> Result<Duration, E> {
    if x.is_finite() && x > -1.0 {
        Ok(Duration::from_nanos(x.max(0.0).round() as u64))
    } else {
        Err(what())
    }
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
    }
}
