//! Trace replay (README, "Use"): a file with one request per line, when it
//! came and how long it was, replayed on its own clock. goodput's own
//! format is JSONL:
//!
//! ```text
//! {"timestamp": 0.0, "input_tokens": 512, "output_tokens": 128}
//! {"timestamp": 0.35, "input_tokens": 2048, "output_tokens": 64, "prefix_id": 7, "prefix_tokens": 1024}
//! ```
//!
//! `timestamp` is in seconds; the first request goes at once and the others
//! keep their offsets from it, divided by the replay speed. Requests with
//! the same `prefix_id` open with the same `prefix_tokens` of text (counted
//! in `input_tokens`), for servers with prefix caching.
//!
//! The public production traces are read too ([`TraceFormat`], told from
//! the first line or named): Mooncake's JSONL, whose `hash_ids` become
//! shared prompt blocks, Azure's LLM inference CSV and BurstGPT's CSV
//! (`public`; docs/workloads.md maps their fields).

mod public;

pub use crate::error::{TraceError, TraceFault, TraceLine};
use crate::lengths::Lengths;
use goodput_core::util::input::{InputError, LineReader};
pub use public::MOONCAKE_BLOCK_TOKENS;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    /// When it is sent, from the run's start (already divided by the speed).
    pub at: Duration,
    pub lengths: Lengths,
    /// Mooncake's prefix blocks: the prompt is these blocks of
    /// [`MOONCAKE_BLOCK_TOKENS`] in order (the last one cut to the input
    /// length), the same id the same text in every request.
    pub blocks: Option<Arc<[u64]>>,
}

/// Which trace format a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceFormat {
    /// Told from the first line: a JSON object with hash_ids is Mooncake's, one with input_tokens goodput's; a CSV header with ContextTokens is Azure's, one with Request tokens BurstGPT's.
    #[default]
    Auto,
    /// goodput's JSONL: timestamp (s), input_tokens, output_tokens, optional prefix_id and prefix_tokens.
    Goodput,
    /// Mooncake's JSONL: timestamp (ms), input_length, output_length, hash_ids (512-token prefix blocks).
    Mooncake,
    /// Azure's LLM inference CSV: TIMESTAMP (date and time), ContextTokens, GeneratedTokens.
    Azure,
    /// BurstGPT's CSV: Timestamp (s), Request tokens, Response tokens (rows of 0 response tokens, failures, skipped).
    Burstgpt,
}

impl TraceFormat {
    /// The name on the command line and in the result's config.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Auto => "auto",
            TraceFormat::Goodput => "goodput",
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Azure => "azure",
            TraceFormat::Burstgpt => "burstgpt",
        }
    }

    /// The name in messages.
    pub fn label(self) -> &'static str {
        match self {
            TraceFormat::Auto => "trace",
            TraceFormat::Goodput => "goodput",
            TraceFormat::Mooncake => "Mooncake",
            TraceFormat::Azure => "Azure LLM inference",
            TraceFormat::Burstgpt => "BurstGPT",
        }
    }
}

/// The most requests goodput replays of a trace: 20 million (BurstGPT's
/// whole trace is 5.3 million rows), about 2.4 GB held: about 120 bytes a
/// request (`/usr/bin/time -f %M goodput estimate --trace` of 2 million
/// lines of goodput's format took 243 MB more than of 10). Past it the trace is
/// refused, with the fix: a part of it.
pub const MAX_REQUESTS: usize = 20_000_000;

/// A trace read and placed on the run's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Its requests in time order.
    pub entries: Vec<TraceEntry>,
    /// The format it was read as (never `Auto`).
    pub format: TraceFormat,
    /// Lines the format marks as no request (BurstGPT's failures).
    pub skipped: u64,
}

impl Trace {
    /// Prompt tokens that repeat blocks an earlier request of the trace
    /// opened with: the prefix reuse the trace implies (Mooncake), as a
    /// server with an unbounded prefix cache and blocks of
    /// [`MOONCAKE_BLOCK_TOKENS`] would find it; `prefix_id`s count the same
    /// way, their prefix's tokens after its first request.
    ///
    /// Only what was sent before is reused: a block (or a prefix) counts at
    /// most the longest part of it an earlier request sent (a partial block
    /// seen, then the full one, reuses the partial one's tokens; a prefix
    /// id seen with 100 tokens, then with 300, reuses 100).
    pub fn reused_prefix_tokens(&self) -> u64 {
        use std::collections::HashMap;
        // The longest length sent so far of each chain of blocks (the chain
        // up to a block is what makes its text a prefix) and of each prefix id.
        let mut seen: HashMap<u64, u32> = HashMap::new();
        let mut prefixes: HashMap<u64, u32> = HashMap::new();
        let mut reused = 0u64;
        let mut reuse = |longest: &mut HashMap<u64, u32>, key: u64, len: u32| {
            let before = longest.entry(key).or_insert(0);
            reused += u64::from(len.min(*before));
            *before = (*before).max(len);
        };
        for e in &self.entries {
            if let Some(blocks) = &e.blocks {
                let mut chain = 0u64;
                for (j, &id) in blocks.iter().enumerate() {
                    chain = goodput_core::util::hash::draw(chain, id);
                    reuse(&mut seen, chain, block_len(e.lengths.input, j));
                }
            }
            if let Some((id, n)) = e.lengths.prefix {
                reuse(&mut prefixes, id, n);
            }
        }
        reused
    }
}

/// A Mooncake prompt of `input` tokens as its `blocks`, each with its
/// tokens ([`block_len`]): what the prefix cache is given.
pub fn sized_blocks(blocks: &[u64], input: u32) -> impl Iterator<Item = (u64, u32)> + '_ {
    blocks.iter().enumerate().map(move |(j, &id)| (id, block_len(input, j)))
}

/// Tokens of block `j` of a Mooncake prompt of `input` tokens: 512, the
/// last one what is left.
pub fn block_len(input: u32, j: usize) -> u32 {
    let start = (j as u64) * u64::from(MOONCAKE_BLOCK_TOKENS);
    (u64::from(input).saturating_sub(start)).min(u64::from(MOONCAKE_BLOCK_TOKENS)) as u32
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    timestamp: f64,
    input_tokens: u32,
    output_tokens: u32,
    prefix_id: Option<u64>,
    prefix_tokens: Option<u32>,
}

/// Reads a trace in goodput's format or any other told from its first
/// line: [`read_trace`] with [`TraceFormat::Auto`], its requests alone.
pub fn load_trace(path: &Path, speed: f64) -> Result<Vec<TraceEntry>, TraceError> {
    Ok(read_trace(path, speed, TraceFormat::Auto)?.entries)
}

/// Reads a trace in `format` (or the one its first line shows), a line at a
/// time (each at most [`goodput_core::util::input::LINE_CAP`]), and places
/// its requests on the run's clock, `speed` times faster than recorded.
/// Lines come out in time order (a stable sort).
pub fn read_trace(path: &Path, speed: f64, format: TraceFormat) -> Result<Trace, TraceError> {
    if !(speed.is_finite() && speed > 0.0) {
        return Err(TraceError::Speed(speed));
    }
    let mut lines = LineReader::open(path, "the trace")?;
    let parsed = parse_trace(&mut lines, speed, format, MAX_REQUESTS).map_err(|e| match e {
        Fault::Input(e) => TraceError::Read(e),
        Fault::Content(fault) => TraceError::Content { path: path.to_owned(), fault },
    })?;
    Ok(Trace {
        entries: parsed
            .rows
            .into_iter()
            .map(|r| TraceEntry { at: Duration::from_secs_f64(r.t), lengths: r.lengths, blocks: r.blocks })
            .collect(),
        format: parsed.format,
        skipped: parsed.skipped,
    })
}

enum Fault {
    Input(InputError),
    Content(TraceFault),
}

struct Parsed {
    rows: Vec<public::Row>,
    format: TraceFormat,
    skipped: u64,
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// The trace's requests, each at its offset from the first in seconds,
/// `speed` times faster than recorded; at most `cap` of them
/// ([`MAX_REQUESTS`]).
fn parse_trace<R: std::io::BufRead>(
    lines: &mut LineReader<R>,
    speed: f64,
    format: TraceFormat,
    cap: usize,
) -> Result<Parsed, Fault> {
    let mut out = Vec::new();
    let (mut format, mut columns, mut skipped) = (format, None, 0u64);
    let mut first = true;
    while let Some(raw) = lines.next_line() {
        let raw = raw.map_err(Fault::Input)?;
        let bytes = if raw.number == 1 { raw.bytes.strip_prefix(BOM).unwrap_or(raw.bytes) } else { raw.bytes };
        if bytes.trim_ascii().is_empty() {
            continue;
        }
        let line = raw.number;
        if std::mem::take(&mut first) {
            if format == TraceFormat::Auto {
                format = public::detect(bytes).ok_or_else(|| {
                    let shown: String = String::from_utf8_lossy(bytes).chars().take(120).collect();
                    Fault::Content(TraceFault::Unknown { first: shown })
                })?;
            }
            if matches!(format, TraceFormat::Azure | TraceFormat::Burstgpt) {
                let cols = public::columns(format, bytes)
                    .map_err(|reason| Fault::Content(TraceFault::Public { line, format: format.label(), reason }))?;
                columns = Some(cols);
                continue;
            }
        }
        let public_line = |reason: String| Fault::Content(TraceFault::Public { line, format: format.label(), reason });
        let read = match (format, columns) {
            (TraceFormat::Mooncake, _) => public::mooncake(bytes).map_err(public_line)?,
            (TraceFormat::Azure | TraceFormat::Burstgpt, Some(cols)) => {
                public::csv_row(format, cols, bytes).map_err(public_line)?
            }
            _ => public::Read::Row(goodput_line(bytes, line)?),
        };
        match read {
            public::Read::Row(mut r) => {
                r.t /= speed;
                if out.len() >= cap {
                    return Err(Fault::Content(TraceFault::TooMany { cap }));
                }
                if out.len() == out.capacity() {
                    // Doubling, as push does, but an allocation that fails is an error, not an abort.
                    let more = out.len().max(1024).min(cap - out.len());
                    out.try_reserve_exact(more)
                        .map_err(|_| Fault::Content(TraceFault::OutOfMemory { held: out.len() }))?;
                }
                out.push(r);
            }
            public::Read::Skip => skipped += 1,
        }
    }
    if out.is_empty() {
        return Err(Fault::Content(TraceFault::Empty { skipped }));
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t));
    let t0 = out[0].t;
    // Every offset becomes a time on the run's clock.
    let span = out[out.len() - 1].t - t0;
    if span.is_nan() || span > goodput_core::HORIZON.as_secs_f64() {
        return Err(Fault::Content(TraceFault::Span(span)));
    }
    for r in &mut out {
        r.t -= t0;
    }
    Ok(Parsed { rows: out, format, skipped })
}

/// A line of goodput's own format.
fn goodput_line(bytes: &[u8], line: usize) -> Result<public::Row, Fault> {
    let at_line = |reason: TraceLine| Fault::Content(TraceFault::Line { line, reason });
    let l: Line = serde_json::from_slice(bytes).map_err(|e| {
        // Mooncake's fields, without the hash_ids that tell them apart.
        let v: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
        // A prefix_id of another type had been refused as "expected u64".
        let id = v.as_ref().and_then(|v| v.get("prefix_id")).filter(|id| !id.is_u64() && !id.is_null());
        if let Some(id) = id {
            return at_line(TraceLine::PrefixId(id.to_string()));
        }
        let mooncake = ["input_length", "output_length", "hash_ids"]
            .into_iter()
            .filter(|k| v.as_ref().is_some_and(|v| v.get(k).is_some()))
            .collect::<Vec<_>>();
        if mooncake.is_empty() {
            let (error, column) = goodput_core::util::input::json_fault(&e);
            at_line(TraceLine::NotEntry { column, error })
        } else {
            at_line(TraceLine::MooncakeFields(mooncake.join(", ")))
        }
    })?;
    if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
        return Err(at_line(TraceLine::Timestamp(l.timestamp)));
    }
    if l.input_tokens == 0 || l.output_tokens == 0 {
        return Err(at_line(TraceLine::NoTokens));
    }
    if let Some(n) = [l.input_tokens, l.output_tokens].into_iter().find(|&n| n > crate::workload::MAX_TOKENS) {
        return Err(at_line(TraceLine::TooLong(n)));
    }
    let prefix = match (l.prefix_id, l.prefix_tokens) {
        (None, None) => None,
        (Some(id), Some(n)) if n > 0 && n < l.input_tokens => Some((id, n)),
        (Some(_), Some(prefix)) => return Err(at_line(TraceLine::PrefixTokens { prefix, input: l.input_tokens })),
        _ => return Err(at_line(TraceLine::HalfPrefix)),
    };
    Ok(public::Row {
        t: l.timestamp,
        lengths: Lengths { input: l.input_tokens, output: l.output_tokens, prefix },
        blocks: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` read as a trace, `speed` times faster.
    fn parse_text(text: &str, speed: f64) -> Result<Vec<(f64, Lengths)>, TraceFault> {
        parse_capped(text, speed, MAX_REQUESTS)
    }

    fn parse_capped(text: &str, speed: f64, cap: usize) -> Result<Vec<(f64, Lengths)>, TraceFault> {
        let mut lines = LineReader::new(text.as_bytes(), Path::new("t.jsonl"), "the trace", 1 << 10);
        match parse_trace(&mut lines, speed, TraceFormat::Auto, cap) {
            Ok(p) => Ok(p.rows.into_iter().map(|r| (r.t, r.lengths)).collect()),
            Err(Fault::Content(f)) => Err(f),
            Err(Fault::Input(e)) => panic!("{e}"),
        }
    }

    #[test]
    fn a_trace_past_the_cap_is_refused_with_the_fix() {
        let line = "{\"timestamp\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n";
        assert_eq!(parse_capped(&line.repeat(3), 1.0, 3).unwrap().len(), 3);
        let err = parse_capped(&line.repeat(4), 1.0, 3).unwrap_err();
        assert_eq!(err, TraceFault::TooMany { cap: 3 });
        let m = TraceFault::TooMany { cap: MAX_REQUESTS }.to_string();
        assert!(m.contains("more than 20,000,000 requests") && m.contains("head -n 1000001"), "{m}");
    }

    #[test]
    fn lines_are_placed_on_the_run_clock_in_time_order() {
        let text = "{\"timestamp\": 10.5, \"input_tokens\": 100, \"output_tokens\": 20}\n\n\
                    {\"timestamp\": 10.0, \"input_tokens\": 300, \"output_tokens\": 5, \"prefix_id\": 2, \"prefix_tokens\": 128}\n\
                    {\"timestamp\": 12.0, \"input_tokens\": 50, \"output_tokens\": 7}\n";
        let e = parse_text(text, 2.0).unwrap();
        let times: Vec<f64> = e.iter().map(|x| x.0).collect();
        // Offsets from the first request, twice as fast.
        assert_eq!(times, [0.0, 0.25, 1.0]);
        assert_eq!(e[0].1, Lengths { input: 300, output: 5, prefix: Some((2, 128)) });
        assert_eq!(e[1].1, Lengths { input: 100, output: 20, prefix: None });
    }

    #[test]
    fn bad_lines_are_named_with_the_fix() {
        let cases = [
            ("{\"timestamp\": 0, \"input_lengths\": 5, \"output_tokens\": 5}", "line 1 is not a trace entry"),
            (
                "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5}",
                "line 1 has Mooncake's fields (input_length, output_length): give --trace-format mooncake",
            ),
            ("{\"timestamp\": -1, \"input_tokens\": 5, \"output_tokens\": 5}", "must be a number of seconds"),
            ("{\"timestamp\": 0, \"input_tokens\": 0, \"output_tokens\": 5}", "at least 1"),
            ("{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5, \"prefix_id\": 1}", "give both or neither"),
            (
                "{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5, \"prefix_id\": \"sys\", \"prefix_tokens\": 2}",
                "line 1 has prefix_id \"sys\": it must be a whole number",
            ),
            (
                "{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5, \"prefix_id\": 1.5, \"prefix_tokens\": 2}",
                "has prefix_id 1.5: it must be a whole number",
            ),
            (
                "{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5, \"prefix_id\": 1, \"prefix_tokens\": 5}",
                "less than input_tokens",
            ),
            ("", "no requests"),
            (
                "{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5}\n\
                 {\"timestamp\": 1e300, \"input_tokens\": 5, \"output_tokens\": 5}",
                "1e300 s after its first",
            ),
        ];
        for (text, want) in cases {
            let err = parse_text(text, 1.0).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
        let err = load_trace(Path::new("/nonexistent/trace.jsonl"), 1.0).unwrap_err().to_string();
        assert!(err.contains("cannot read the trace /nonexistent/trace.jsonl"), "{err}");
        assert!(load_trace(Path::new("x"), 0.0).unwrap_err().to_string().contains("--trace-speed"));
    }

    #[test]
    fn the_public_excerpts_are_read_in_their_formats() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
        let read = |name: &str, format| read_trace(&dir.join(name), 1.0, format).unwrap();
        for (name, format, n) in [
            ("mooncake_conversation.jsonl", TraceFormat::Mooncake, 100),
            ("azure_code.csv", TraceFormat::Azure, 200),
            ("azure_conv.csv", TraceFormat::Azure, 200),
            ("burstgpt.csv", TraceFormat::Burstgpt, 3),
        ] {
            let t = read(name, TraceFormat::Auto);
            assert_eq!((t.format, t.entries.len(), t.skipped), (format, n, 0), "{name}");
            assert_eq!(read(name, format), t, "{name}: named as told");
        }
        // BurstGPT's seconds; Azure's dates, 52 ms apart; Mooncake's milliseconds.
        let at = |t: &Trace| t.entries.iter().map(|e| e.at.as_secs_f64()).collect::<Vec<_>>();
        assert_eq!(at(&read("burstgpt.csv", TraceFormat::Auto)), [0.0, 40.0, 113.0]);
        let azure = read("azure_code.csv", TraceFormat::Auto);
        assert!((at(&azure)[1] - 0.052).abs() < 1e-6, "{}", at(&azure)[1]);
        assert_eq!(azure.entries[0].lengths, Lengths { input: 4808, output: 10, prefix: None });
        let m = read("mooncake_conversation.jsonl", TraceFormat::Auto);
        assert_eq!(m.entries.last().unwrap().at, Duration::from_secs(33));
        assert_eq!(m.entries[0].blocks.as_deref().map(<[u64]>::len), Some(14));
        // Every request opens with block 0: the 99 after the first reuse it.
        assert!(m.reused_prefix_tokens() >= 99 * 512, "{}", m.reused_prefix_tokens());
        // A format named that the file is not in is refused at its first line.
        let err = read_trace(&dir.join("burstgpt.csv"), 1.0, TraceFormat::Azure).unwrap_err().to_string();
        assert!(err.contains("line 1 of this Azure LLM inference trace") && err.contains("ContextTokens"), "{err}");
    }

    #[test]
    fn reuse_counts_at_most_what_an_earlier_request_sent() {
        let entry = |input: u32, prefix: Option<(u64, u32)>, blocks: Option<&[u64]>| TraceEntry {
            at: Duration::ZERO,
            lengths: Lengths { input, output: 1, prefix },
            blocks: blocks.map(Arc::from),
        };
        let trace = |entries| Trace { entries, format: TraceFormat::Goodput, skipped: 0 };
        // A prefix id sent with 100 tokens, then 300 (100 of them seen), then 200 (all seen).
        let t = trace(vec![
            entry(400, Some((7, 100)), None),
            entry(400, Some((7, 300)), None),
            entry(400, Some((7, 200)), None),
        ]);
        assert_eq!(t.reused_prefix_tokens(), 100 + 200);
        // Block 9 sent partial (100 tokens), then full (100 of it seen), then partial again (all seen).
        let t = trace(vec![entry(100, None, Some(&[9])), entry(512, None, Some(&[9])), entry(300, None, Some(&[9]))]);
        assert_eq!(t.reused_prefix_tokens(), 100 + 300);
        // A block reused only behind the same blocks: [1, 2] then [3, 2] share nothing.
        let t = trace(vec![
            entry(1024, None, Some(&[1, 2])),
            entry(1024, None, Some(&[3, 2])),
            entry(1024, None, Some(&[1, 2])),
        ]);
        assert_eq!(t.reused_prefix_tokens(), 1024);
    }

    #[test]
    fn burstgpt_failures_are_skipped_and_unknown_files_named() {
        let text = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                    5,ChatGPT,472,18,490,Conversation log\n13,GPT-4,84,0,84,API log\n";
        let mut lines = LineReader::new(text.as_bytes(), Path::new("b.csv"), "the trace", 1 << 10);
        let Ok(p) = parse_trace(&mut lines, 1.0, TraceFormat::Auto, MAX_REQUESTS) else { panic!("not read") };
        assert_eq!((p.rows.len(), p.skipped, p.format), (1, 1, TraceFormat::Burstgpt));
        // Every row a failure: the refusal says so, not only that none is left.
        let text = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                    5,ChatGPT,472,0,472,Conversation log\n13,GPT-4,84,0,84,API log\n";
        let mut lines = LineReader::new(text.as_bytes(), Path::new("b.csv"), "the trace", 1 << 10);
        let Err(Fault::Content(f)) = parse_trace(&mut lines, 1.0, TraceFormat::Auto, MAX_REQUESTS) else {
            panic!("read")
        };
        assert!(f.to_string().contains("its 2 row(s) were all skipped, each with 0 Response tokens"), "{f}");
        let mut lines = LineReader::new(&b"when,in,out\n1,2,3\n"[..], Path::new("x.csv"), "the trace", 1 << 10);
        let Err(Fault::Content(f)) = parse_trace(&mut lines, 1.0, TraceFormat::Auto, MAX_REQUESTS) else {
            panic!("read")
        };
        assert!(f.to_string().contains("'when,in,out' is no trace format goodput reads"), "{f}");
    }
}
