//! Files read in rather than rendered: result documents (goodput's own, run,
//! sweep or frontier, and other tools' results through [`peers`]: vLLM `bench
//! serve`, AIPerf, GuideLLM) and the per-request records file
//! ([`records`], which a run also writes through it).

pub mod peers;
pub mod records;

use goodput_core::doc::frontier::FrontierResult;
use goodput_core::doc::sweep::SweepResult;
use goodput_core::RunResult;
use std::path::{Path, PathBuf};

/// A saved result: one run, one sweep, or a frontier of configurations
/// (`plan`, `sweep --serve-grid`).
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    Run(Box<RunResult>),
    Sweep(Box<SweepResult>),
    Frontier(Box<FrontierResult>),
}

/// Why a result document cannot be read: each message names the file and
/// what goodput reads instead.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not to be read: not a regular file, or larger than a result may be.
    #[error(transparent)]
    Input(#[from] goodput_core::util::input::InputError),
    #[error("{} is a comparison (goodput compare), not a run or a sweep", path.display())]
    Comparison { path: PathBuf },
    #[error("{} does not match the goodput/v1 sweep schema: {error}", path.display())]
    SweepSchema { path: PathBuf, error: serde_json::Error },
    #[error("{} does not match the goodput/v1 frontier schema: {error}", path.display())]
    FrontierSchema { path: PathBuf, error: serde_json::Error },
    /// A frontier where one run was asked for.
    #[error("{} is a frontier of configurations (goodput plan, sweep --serve-grid), not a single run", path.display())]
    Frontier { path: PathBuf },
    #[error("{} does not match the goodput/v1 schema: {error}", path.display())]
    RunSchema { path: PathBuf, error: serde_json::Error },
    /// A sweep where one run was asked for.
    #[error(
        "{} is a sweep, not a single run: give single runs' results (bench -o); a sweep's points are judged in the \
         sweep itself (goodput report FILE shows them)",
        path.display()
    )]
    Sweep { path: PathBuf },
    #[error(
        "{} is not JSON ({error}): goodput reads its own results and vLLM bench serve's, AIPerf's and GuideLLM's",
        path.display()
    )]
    NotJson { path: PathBuf, error: serde_json::Error },
    /// `NaN` or `Infinity` where JSON has a number: Python's `json.dump`
    /// writes them unless told not to.
    #[error(
        "{} is not JSON: line {line} column {column} holds {token}, which JSON does not allow (Python's json.dump \
         writes it by default): write the file with allow_nan=False, or replace them with null",
        path.display()
    )]
    NanNotJson { path: PathBuf, token: &'static str, line: usize, column: usize },
    #[error("{} has schema '{schema}', this goodput reads '{}'", path.display(), goodput_core::SCHEMA)]
    OtherSchema { path: PathBuf, schema: String },
    #[error(
        "{} is not a goodput result (no \"schema\" field), nor a result of vLLM bench serve (--save-result \
         --save-detailed), AIPerf (profile_export.jsonl) or GuideLLM (benchmarks.json)",
        path.display()
    )]
    NotAResult { path: PathBuf },
    /// Figures no run can have: a document edited or damaged.
    #[error(
        "{} holds figures no run can have ({what}): it was edited or damaged; restore it from its source, or measure \
         again",
        path.display()
    )]
    Impossible { path: PathBuf, what: String },
    /// Another tool's result whose figures no run can have.
    #[error(
        "{} is a result of {tool} with figures no run can have ({what}): it was edited or damaged; pass the file \
         {tool} wrote, or measure again",
        path.display()
    )]
    ImportImpossible { path: PathBuf, tool: String, what: String },
    /// A compressed file, where goodput reads plain text.
    #[error(
        "{} is {kind}-compressed, and goodput reads {what} as plain text: decompress it first (e.g. {tool} {} > \
         result.json), and give goodput the plain file",
        path.display(),
        path.display()
    )]
    Compressed { path: PathBuf, what: &'static str, kind: &'static str, tool: &'static str },
    /// Another tool's result that cannot be read.
    #[error(transparent)]
    Import(#[from] peers::ImportError),
}

/// The text of the result at `path` (`what` names it in messages), read
/// as [`goodput_core::util::input::read_text`] reads it, and refused where
/// its parse would not fit in the memory left
/// ([`goodput_core::util::input::check_parse`]); a compressed file is
/// named as such (a gzipped result had been called "not UTF-8 text").
fn read_text(path: &Path, what: &'static str) -> Result<String, ReadError> {
    let text = read_unchecked(path, what)?;
    goodput_core::util::input::check_parse(path, what, &text)?;
    Ok(text)
}

/// [`read_text`] without the check of its parse's memory, for a caller
/// that checks it once it knows what the text will be parsed into.
fn read_unchecked(path: &Path, what: &'static str) -> Result<String, ReadError> {
    use goodput_core::util::input;
    let bytes = input::read_file(path, what, input::DOCUMENT_CAP)?;
    if let Some((kind, tool)) = compression(&bytes) {
        return Err(ReadError::Compressed { path: path.to_owned(), what, kind, tool });
    }
    Ok(String::from_utf8(bytes).map_err(|_| input::InputError::NotUtf8 { path: path.to_owned(), what })?)
}

/// The compression a file's first bytes announce, and the command that
/// writes it out decompressed.
fn compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const MAGIC: [(&[u8], &str, &str); 4] = [
        (b"\x1f\x8b", "gzip", "gzip -dc"),
        (b"\x28\xb5\x2f\xfd", "zstd", "zstd -dc"),
        (b"BZh", "bzip2", "bzip2 -dc"),
        (b"\xfd7zXZ\x00", "xz", "xz -dc"),
    ];
    MAGIC.iter().find(|(magic, _, _)| head.starts_with(magic)).map(|&(_, kind, tool)| (kind, tool))
}

/// `text` without the byte-order mark some editors write first, which JSON
/// does not allow (it had been "not JSON (expected value at line 1 column
/// 1)").
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Reads a result document written by `write_json`, run, sweep or frontier, or
/// another tool's result ([`peers`]: vLLM `bench serve`, AIPerf,
/// GuideLLM) as a run.
/// The file must be a regular one, of at most
/// [`goodput_core::util::input::DOCUMENT_CAP`], whose parsed form fits in
/// the memory the process has left
/// ([`goodput_core::util::input::check_parse`]). A goodput document is
/// parsed from its text straight into its types: through a
/// `serde_json::Value` first, it had taken several times its size.
pub fn read_document(path: &Path) -> Result<Document, ReadError> {
    use goodput_core::util::input;
    const WHAT: &str = "the result";
    let text = read_unchecked(path, WHAT)?;
    let text = without_bom(&text);
    // The head alone: its other fields are skipped, not kept.
    let head = serde_json::from_str::<Head>(text);
    let schema = match &head {
        Ok(h) => h.schema.as_ref(),
        Err(_) => None,
    };
    match schema {
        // Parsed into its types: its records at what they take.
        Some(Field::Text(s)) if s == goodput_core::SCHEMA => input::check_typed_parse(path, WHAT, text, "requests")?,
        Some(Field::Text(other)) => {
            return Err(ReadError::OtherSchema { path: path.to_owned(), schema: other.clone() });
        }
        Some(Field::Other(_)) => return Err(ReadError::NotAResult { path: path.to_owned() }),
        None => {
            // Another tool's result is read through `serde_json::Value`s, but
            // for vLLM's, read into its types, its gaps (`itls`) at what
            // those take (the `Value` count had refused files the typed
            // read fits).
            if peers::is_vllm_text(text) {
                input::check_typed_parse(path, WHAT, text, "itls")?;
            } else {
                input::check_parse(path, WHAT, text)?;
            }
            if let Some(run) = peers::import(path, text)? {
                // As a saved copy of it will be, when read back.
                if let Some(what) = impossible(&run) {
                    return Err(ReadError::ImportImpossible { path: path.to_owned(), tool: run.tool.name, what });
                }
                return Ok(Document::Run(Box::new(run)));
            }
            return Err(match head {
                // JSON, but not an object with a schema.
                Err(e) if !e.is_data() => match not_a_json_number(text, &e) {
                    Some(token) => {
                        ReadError::NanNotJson { path: path.to_owned(), token, line: e.line(), column: e.column() }
                    }
                    None => ReadError::NotJson { path: path.to_owned(), error: e },
                },
                _ => ReadError::NotAResult { path: path.to_owned() },
            });
        }
    }
    let head = head.expect("a head with a schema was read");
    let kind = match &head.kind {
        Some(Field::Text(k)) => k.as_str(),
        _ => "",
    };
    if kind == "compare" {
        return Err(ReadError::Comparison { path: path.to_owned() });
    }
    if kind == "frontier" {
        let frontier: FrontierResult =
            serde_json::from_str(text).map_err(|error| ReadError::FrontierSchema { path: path.to_owned(), error })?;
        if let Some(what) = impossible_frontier(&frontier) {
            return Err(ReadError::Impossible { path: path.to_owned(), what });
        }
        return Ok(Document::Frontier(Box::new(frontier)));
    }
    // A kind goodput does not write was taken for a run and shown as
    // "goodput bogus".
    let known: &[&str] = if head.points.is_some() { &["sweep"] } else { &["bench", "estimate", "import"] };
    if !known.contains(&kind) {
        return Err(ReadError::Impossible {
            path: path.to_owned(),
            what: format!("kind {kind:?}, where goodput writes {}", known.join(", ")),
        });
    }
    if head.points.is_some() {
        let sweep: SweepResult =
            serde_json::from_str(text).map_err(|error| ReadError::SweepSchema { path: path.to_owned(), error })?;
        if let Some(what) = impossible_sweep(&sweep) {
            return Err(ReadError::Impossible { path: path.to_owned(), what });
        }
        return Ok(Document::Sweep(Box::new(sweep)));
    }
    let run: RunResult =
        serde_json::from_str(text).map_err(|error| ReadError::RunSchema { path: path.to_owned(), error })?;
    if let Some(what) = impossible(&run) {
        return Err(ReadError::Impossible { path: path.to_owned(), what });
    }
    Ok(Document::Run(Box::new(run)))
}

/// `NaN`, `Infinity` or `-Infinity` where `e`, a syntax error in `text`,
/// was met: the numbers Python's `json.dump` writes and JSON does not have.
fn not_a_json_number(text: &str, e: &serde_json::Error) -> Option<&'static str> {
    let line = text.lines().nth(e.line().checked_sub(1)?)?;
    // The column is of the character where the error was seen, from 1.
    let at = line.char_indices().nth(e.column().saturating_sub(1)).map_or(line.len(), |(i, _)| i);
    let from = line[..at].char_indices().rev().take(2).last().map_or(at, |(i, _)| i);
    let near = &line[from..];
    ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| {
        near.starts_with(t)
            || near.get(1..).is_some_and(|n| n.starts_with(t))
            || near.get(2..).is_some_and(|n| n.starts_with(t))
    })
}

/// The fields of a document that say what it is, read past everything
/// else without keeping it.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    schema: Option<Field>,
    #[serde(default)]
    kind: Option<Field>,
    #[serde(default)]
    points: Option<serde::de::IgnoredAny>,
}

/// A field that should be text, and may be anything.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Field {
    Text(String),
    Other(#[allow(dead_code)] serde::de::IgnoredAny),
}

/// What in a frontier no search can give: a frontier or best point that
/// names a configuration or a point the document does not hold (an edited
/// one had panicked `report`), a point's figure below zero or not finite,
/// or a percentile outside (0, 100].
pub fn impossible_frontier(f: &goodput_core::doc::frontier::FrontierResult) -> Option<String> {
    if !(f.percentile > 0.0 && f.percentile <= 100.0) {
        return Some(format!("latencies at p{}", f.percentile));
    }
    let named = f.frontier.iter().map(|id| ("frontier", id)).chain(f.best.as_ref().map(|b| ("best", &b.at)));
    for (what, id) in named {
        if f.point(*id).is_none() {
            return Some(format!(
                "{what} names point {} of configuration {}, and it holds {} configurations{}",
                id.point,
                id.config,
                f.configs.len(),
                f.configs.get(id.config).map(|c| format!(" (that one {} points)", c.points.len())).unwrap_or_default()
            ));
        }
    }
    for (id, p) in f.points() {
        let figures = [Some(p.output_tokens_per_s), Some(p.output_tokens_per_s_per_gpu)].into_iter().chain([
            p.tokens_per_s_per_user,
            p.ttft_ms,
            p.tpot_ms,
            p.goodput_tokens_per_s,
            p.usd_per_million_output_tokens,
            p.joules_per_output_token,
            p.output_tokens_per_s_per_mw,
        ]);
        if let Some(v) = figures.flatten().find(|v| !(v.is_finite() && *v >= 0.0)) {
            let v = goodput_core::util::number_text(v);
            return Some(format!("configuration {} point {}: a figure of {v}", id.config, id.point));
        }
    }
    None
}

/// What in a sweep no sweep can hold: a point's run that [`impossible`]
/// finds, or an analysis that names a point the sweep does not have (one
/// edited to `points: []` had still shown its best points).
pub fn impossible_sweep(s: &SweepResult) -> Option<String> {
    for (i, p) in s.points.iter().enumerate() {
        if let Some(what) = impossible(&p.result) {
            return Some(format!("point {i}: {what}"));
        }
    }
    let a = &s.analysis;
    let refs = [
        ("saturation", &a.saturation),
        ("max_throughput", &a.max_throughput),
        ("max_goodput", &a.max_goodput),
        ("highest_load_meeting_slo", &a.highest_load_meeting_slo),
        ("recommended", &a.recommended),
    ];
    refs.into_iter().find_map(|(name, r)| {
        r.as_ref()
            .filter(|r| r.index >= s.points.len())
            .map(|r| format!("analysis.{name} names point {} of {} points", r.index, s.points.len()))
    })
}

/// What in a run's summary no measurement can give, if anything: a
/// window that ends before it starts, more requests ended than sent, a
/// latency or a rate below zero or not finite, percentiles outside their
/// minimum and maximum. `report` and `compare` render what they read, and
/// a hand-edited document had shown "20 sent · 999999999999 completed" and a
/// negative TTFT compared as an improvement.
pub fn impossible(r: &RunResult) -> Option<String> {
    use goodput_core::doc::result::plausible_start;
    // A start no clock gives (`merge` had panicked on 1e308, and merged -1e12
    // into a window of 1e12 s).
    let starts = [
        ("started_unix_s", Some(r.started_unix_s)),
        ("shard.start_at_unix_s", r.shard.as_ref().and_then(|s| s.start_at_unix_s)),
    ];
    if let Some((name, s)) = starts.into_iter().find_map(|(n, s)| s.filter(|s| !plausible_start(*s)).map(|s| (n, s))) {
        return Some(format!(
            "{name} {}, where a run starts between 0 (1970-01-01) and {} (2200-01-01) seconds since the Unix epoch",
            goodput_core::util::number_text(s),
            goodput_core::doc::result::LATEST_START_UNIX_S
        ));
    }
    if let Some(what) = impossible_records(r.requests.as_deref().unwrap_or_default()) {
        return Some(what);
    }
    let w = &r.window;
    // No run lasts past the horizon of its clock (100 years) either.
    let longest_s = goodput_core::HORIZON.as_secs_f64();
    if ![w.start_s, w.end_s, w.duration_s].iter().all(|x| x.is_finite()) || !(0.0..=longest_s).contains(&w.duration_s) {
        return Some(format!("a window of {} s", w.duration_s));
    }
    let q = &r.summary.requests;
    if q.completed > q.sent || q.failed > q.sent {
        return Some(format!("{} completed and {} failed of {} sent", q.completed, q.failed, q.sent));
    }
    let s = &r.summary;
    // Nor is any of its latencies longer.
    let longest_ms = longest_s * 1e3;
    for (name, d) in [("ttft_ms", &s.ttft_ms), ("tpot_ms", &s.tpot_ms), ("itl_ms", &s.itl_ms), ("e2e_ms", &s.e2e_ms)] {
        let values = [d.mean, d.min, d.max].into_iter().chain(d.percentiles.iter().map(|p| p.1)).flatten();
        if let Some(v) = values.clone().find(|v| !(v.is_finite() && *v >= 0.0 && *v <= longest_ms)) {
            return Some(format!("{name} of {}", goodput_core::util::number_text(v)));
        }
        if let Some(&(p, _)) = d.percentiles.iter().find(|(p, _)| !(*p > 0.0 && *p <= 100.0)) {
            return Some(format!("{name} p{p}, a percentile outside (0, 100]"));
        }
        if let (Some(lo), Some(hi)) = (d.min, d.max) {
            let slack = 1e-9 * hi.abs().max(1.0);
            if let Some((p, v)) = d
                .percentiles
                .iter()
                .find_map(|&(p, v)| v.filter(|v| *v < lo - slack || *v > hi + slack).map(|v| (p, v)))
            {
                return Some(format!("{name} p{p} of {v}, outside its min {lo} and max {hi}"));
            }
        }
    }
    let t = &s.throughput;
    for (name, v) in [
        ("requests_per_s", t.requests_per_s),
        ("output_tokens_per_s", t.output_tokens_per_s),
        ("total_tokens_per_s", t.total_tokens_per_s),
        ("peak_output_tokens_per_s", t.peak_output_tokens_per_s),
    ] {
        // A trillion a second is past any fleet's output.
        if !(v.is_finite() && (0.0..=1e12).contains(&v)) {
            return Some(format!("{name} of {}", goodput_core::util::number_text(v)));
        }
    }
    None
}

/// What in a result's own records (`requests`, `--include-requests`) no
/// run can hold: a record's times or counts out of order or past bounds
/// ([`goodput_core::RequestRecord::time_fault`]), or a request met twice (a
/// record repeated had been reported as one more request sent), named by
/// the record's id and place.
pub fn impossible_records(records: &[goodput_core::RequestRecord]) -> Option<String> {
    let mut seen = std::collections::HashMap::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if let Some(what) = r.time_fault() {
            return Some(format!("requests[{i}], request {}: its {what}", r.id));
        }
        if let Some(first) = seen.insert(r.id, i) {
            return Some(format!(
                "request {} twice, at requests[{first}] and requests[{i}]: a run's records name each request once",
                r.id
            ));
        }
    }
    None
}

/// Reads a run written by `write_json`; a sweep is an error that says so.
pub fn read_json(path: &Path) -> Result<RunResult, ReadError> {
    match read_document(path)? {
        Document::Run(r) => Ok(*r),
        Document::Sweep(_) => Err(ReadError::Sweep { path: path.to_owned() }),
        Document::Frontier(_) => Err(ReadError::Frontier { path: path.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers Python's json.dump writes and JSON does not have are
    /// named where they stand ("expected value at line 1 column 142903"
    /// had said nothing of them).
    #[test]
    fn nan_and_infinity_are_named() {
        for (text, token) in [
            ("{\"a\": NaN}", Some("NaN")),
            ("{\"a\": [1, Infinity]}", Some("Infinity")),
            ("{\n \"b\": -Infinity}", Some("-Infinity")),
            ("{\"a\": nope}", None),
        ] {
            let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            assert_eq!(not_a_json_number(text, &e), token, "{text}: {e}");
        }
    }

    /// A document's own records are checked as a records file's are.
    #[test]
    fn a_documents_records_are_checked() {
        use goodput_core::RequestRecord;
        use std::time::Duration;
        let r = |id| RequestRecord::new(id, Duration::ZERO, Duration::from_millis(1));
        assert_eq!(impossible_records(&[r(0), r(1)]), None);
        let twice = impossible_records(&[r(0), r(1), r(0)]).unwrap();
        assert!(twice.starts_with("request 0 twice, at requests[0] and requests[2]"), "{twice}");
        let mut late = r(3);
        late.scheduled = Duration::from_millis(2);
        let e = impossible_records(&[r(0), late]).unwrap();
        assert!(e.starts_with("requests[1], request 3: its sent_ns 1000000 came before its scheduled_ns"), "{e}");
    }
}
