//! Trace replay (README, "Use"): a JSONL file with one request per line, when it
//! came and how long it was, replayed on its own clock:
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

pub use crate::error::{TraceError, TraceFault, TraceLine};
use crate::lengths::Lengths;
use goodput_core::util::input::{InputError, LineReader};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEntry {
    /// When it is sent, from the run's start (already divided by the speed).
    pub at: Duration,
    pub lengths: Lengths,
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

/// Reads a trace, a line at a time (each at most
/// [`goodput_core::util::input::LINE_CAP`]), and places its requests on the
/// run's clock, `speed` times faster than recorded. Lines come out in time
/// order (a stable sort).
pub fn load_trace(path: &Path, speed: f64) -> Result<Vec<TraceEntry>, TraceError> {
    if !(speed.is_finite() && speed > 0.0) {
        return Err(TraceError::Speed(speed));
    }
    let mut lines = LineReader::open(path, "the trace")?;
    let entries = parse_trace(&mut lines, speed).map_err(|e| match e {
        Fault::Input(e) => TraceError::Read(e),
        Fault::Content(fault) => TraceError::Content { path: path.to_owned(), fault },
    })?;
    Ok(entries.into_iter().map(|(t, lengths)| TraceEntry { at: Duration::from_secs_f64(t), lengths }).collect())
}

enum Fault {
    Input(InputError),
    Content(TraceFault),
}

/// The trace's requests, each at its offset from the first in seconds,
/// `speed` times faster than recorded.
fn parse_trace<R: std::io::BufRead>(lines: &mut LineReader<R>, speed: f64) -> Result<Vec<(f64, Lengths)>, Fault> {
    let mut out = Vec::new();
    while let Some(raw) = lines.next_line() {
        let raw = raw.map_err(Fault::Input)?;
        if raw.bytes.trim_ascii().is_empty() {
            continue;
        }
        let at_line = |reason: TraceLine| Fault::Content(TraceFault::Line { line: raw.number, reason });
        let l: Line = serde_json::from_slice(raw.bytes).map_err(|e| at_line(TraceLine::NotEntry(e.to_string())))?;
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
        out.push((l.timestamp / speed, Lengths { input: l.input_tokens, output: l.output_tokens, prefix }));
    }
    if out.is_empty() {
        return Err(Fault::Content(TraceFault::Empty));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    let t0 = out[0].0;
    // Every offset becomes a time on the run's clock.
    let span = out[out.len() - 1].0 - t0;
    if span.is_nan() || span > goodput_core::HORIZON.as_secs_f64() {
        return Err(Fault::Content(TraceFault::Span(span)));
    }
    Ok(out.into_iter().map(|(t, l)| (t - t0, l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` read as a trace, `speed` times faster.
    fn parse_text(text: &str, speed: f64) -> Result<Vec<(f64, Lengths)>, TraceFault> {
        let mut lines = LineReader::new(text.as_bytes(), Path::new("t.jsonl"), "the trace", 1 << 10);
        match parse_trace(&mut lines, speed) {
            Ok(e) => Ok(e),
            Err(Fault::Content(f)) => Err(f),
            Err(Fault::Input(e)) => panic!("{e}"),
        }
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
            ("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5}", "line 1 is not a trace entry"),
            ("{\"timestamp\": -1, \"input_tokens\": 5, \"output_tokens\": 5}", "must be a number of seconds"),
            ("{\"timestamp\": 0, \"input_tokens\": 0, \"output_tokens\": 5}", "at least 1"),
            ("{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5, \"prefix_id\": 1}", "give both or neither"),
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
}
