//! The public production traces (docs/workloads.md): Mooncake's JSONL with
//! `hash_ids`, Azure's LLM inference CSV, and BurstGPT's CSV, each line read
//! into a time in seconds, the request's lengths and, for Mooncake, the
//! prefix blocks it shares with other requests.

use super::TraceFormat;
use crate::lengths::Lengths;
use serde::Deserialize;
use std::sync::Arc;

/// Tokens of one Mooncake prefix block (the FAST'25 release's README: "The
/// block size is 512 tokens").
pub const MOONCAKE_BLOCK_TOKENS: u32 = 512;

/// One request read from a trace line: its time in the trace's own seconds,
/// its lengths, and its prefix blocks (Mooncake).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub t: f64,
    pub lengths: Lengths,
    pub blocks: Option<Arc<[u64]>>,
}

/// What a line gave: a request, or a line the format marks as no request
/// (BurstGPT's failed requests, of 0 response tokens).
pub(super) enum Read {
    Row(Row),
    Skip,
}

/// The format of a trace, told from its first line: a JSON object with
/// `hash_ids` is Mooncake's, any other goodput's own; a CSV header with `ContextTokens` and `GeneratedTokens`
/// is Azure's, one with `Request tokens` and `Response tokens` BurstGPT's.
pub(super) fn detect(first: &[u8]) -> Option<TraceFormat> {
    let text = String::from_utf8_lossy(first);
    let text = text.trim();
    if text.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        // Any other object is read as goodput's, whose reader names what is wrong.
        return Some(if v.get("hash_ids").is_some() { TraceFormat::Mooncake } else { TraceFormat::Goodput });
    }
    let cols: Vec<String> = split_csv(text).iter().map(|c| c.to_ascii_lowercase()).collect();
    let has = |name: &str| cols.iter().any(|c| c == name);
    if has("contexttokens") && has("generatedtokens") {
        Some(TraceFormat::Azure)
    } else if has("request tokens") && has("response tokens") {
        Some(TraceFormat::Burstgpt)
    } else {
        None
    }
}

#[derive(Deserialize)]
struct MooncakeLine {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// A Mooncake line: `timestamp` in milliseconds, `input_length`,
/// `output_length`, and `hash_ids`, the prompt's 512-token blocks (the last
/// one partial), the same id the same tokens.
pub(super) fn mooncake(line: &[u8]) -> Result<Read, String> {
    let l: MooncakeLine = serde_json::from_slice(line).map_err(|e| format!("is not a Mooncake entry ({e})"))?;
    if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
        return Err(format!("has a timestamp of {}: it must be a number of milliseconds ≥ 0", l.timestamp));
    }
    tokens(l.input_length.into(), l.output_length.into(), "input_length and output_length")?;
    let fills = (l.input_length as u64).div_ceil(MOONCAKE_BLOCK_TOKENS as u64);
    if l.hash_ids.len() as u64 > fills {
        return Err(format!(
            "has {} hash_ids, but its input_length of {} fills only {fills} block{} of {MOONCAKE_BLOCK_TOKENS} tokens",
            l.hash_ids.len(),
            l.input_length,
            if fills == 1 { "" } else { "s" }
        ));
    }
    let lengths = Lengths { input: l.input_length, output: l.output_length, prefix: None };
    let blocks = (!l.hash_ids.is_empty()).then(|| Arc::from(l.hash_ids));
    Ok(Read::Row(Row { t: l.timestamp / 1000.0, lengths, blocks }))
}

/// The columns a CSV trace is read from, found by name in its header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns {
    time: usize,
    input: usize,
    output: usize,
    count: usize,
}

/// The columns of `header` in `format` (Azure or BurstGPT), or the names
/// missing.
pub(super) fn columns(format: TraceFormat, header: &[u8]) -> Result<Columns, String> {
    let text = String::from_utf8_lossy(header);
    let cols = split_csv(text.trim());
    let (names, expected) = match format {
        TraceFormat::Azure => {
            (["timestamp", "contexttokens", "generatedtokens"], "TIMESTAMP,ContextTokens,GeneratedTokens")
        }
        _ => (
            ["timestamp", "request tokens", "response tokens"],
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
        ),
    };
    let find = |name: &str| cols.iter().position(|c| c.eq_ignore_ascii_case(name));
    match (find(names[0]), find(names[1]), find(names[2])) {
        (Some(time), Some(input), Some(output)) => Ok(Columns { time, input, output, count: cols.len() }),
        _ => Err(format!(
            "is its header, '{}', and {} {} trace's header names the columns {expected}",
            text.trim(),
            if format == TraceFormat::Azure { "an" } else { "a" },
            format.label()
        )),
    }
}

/// A CSV row of `format` under `cols`.
pub(super) fn csv_row(format: TraceFormat, cols: Columns, line: &[u8]) -> Result<Read, String> {
    let text = std::str::from_utf8(line).map_err(|_| "is not UTF-8 text".to_string())?;
    let fields = split_csv(text.trim_end_matches(['\r', '\n']));
    if fields.len() != cols.count {
        // More fields than names: a comma in an unquoted field, or a shifted row.
        return Err(format!(
            "has {} fields where the header names {}: give each row the header's columns (a field holding a comma \
             in double quotes)",
            fields.len(),
            cols.count
        ));
    }
    let count = |i: usize, name: &str| {
        let f = fields[i].trim();
        // Some exports write counts as floats ("472.0").
        match f.parse::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => match f.parse::<f64>() {
                Ok(x) if x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64 => Ok(x as u64),
                _ => Err(format!("has {name} '{f}': it must be a whole number of tokens")),
            },
        }
    };
    let (input_name, output_name) = match format {
        TraceFormat::Azure => ("ContextTokens", "GeneratedTokens"),
        _ => ("Request tokens", "Response tokens"),
    };
    let (input, output) = (count(cols.input, input_name)?, count(cols.output, output_name)?);
    let time = fields[cols.time].trim();
    let t = match format {
        TraceFormat::Azure => datetime_seconds(time).ok_or_else(|| {
            format!("has TIMESTAMP '{time}': expected a date and time such as 2023-11-16 18:17:03.9799600")
        })?,
        _ => match time.parse::<f64>() {
            Ok(t) if t.is_finite() && t >= 0.0 => t,
            _ => return Err(format!("has Timestamp '{time}': it must be a number of seconds ≥ 0")),
        },
    };
    // BurstGPT marks the requests that failed with 0 response tokens; they
    // asked for nothing a replay can send.
    if format == TraceFormat::Burstgpt && output == 0 {
        return Ok(Read::Skip);
    }
    // Checked as read: a count past u32 had been clamped first, and named as 4294967295.
    tokens(input, output, &format!("{input_name} and {output_name}"))?;
    Ok(Read::Row(Row {
        t,
        lengths: Lengths { input: input as u32, output: output as u32, prefix: None },
        blocks: None,
    }))
}

/// Refuses a request of no tokens, or of more than a prompt can be (which
/// a `u32` holds, once refused here).
fn tokens(input: u64, output: u64, names: &str) -> Result<(), String> {
    if input == 0 || output == 0 {
        return Err(format!("asks for 0 tokens: {names} must be at least 1"));
    }
    if let Some(n) = [input, output].into_iter().find(|&n| n > u64::from(crate::workload::MAX_TOKENS)) {
        return Err(format!(
            "asks for {n} tokens: a prompt or answer is at most {} tokens (2 Mi, beyond any model's context)",
            crate::workload::MAX_TOKENS
        ));
    }
    Ok(())
}

/// The fields of one CSV line: split at commas outside double quotes, the
/// quotes taken off (`""` inside quotes is one quote).
fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out.into_iter().map(|f| f.trim().to_owned()).collect()
}

/// Seconds since 1970 of `YYYY-MM-DD HH:MM:SS[.fraction]` (or with a `T`),
/// optionally followed by `Z` or an offset `±HH:MM` (Azure's 2023 trace
/// writes none, its 2024 trace `+00:00`); without an offset the time is
/// taken as UTC, which only the differences between lines matter for.
pub(super) fn datetime_seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let num = |t: &str| -> Option<i64> { t.bytes().all(|b| b.is_ascii_digit()).then(|| t.parse().ok()).flatten() };
    let (date, rest) = (s.get(..10)?, s.get(10..)?);
    let mut d = date.split('-');
    let (y, m, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    // A day the month has (2023-02-31 had been taken as 3 March).
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=month_days).contains(&day) {
        return None;
    }
    let rest = rest.strip_prefix([' ', 'T'])?;
    // The offset: the last '+' or '-' after the time, or a 'Z'.
    let (time, offset_s) = if let Some(t) = rest.strip_suffix('Z') {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, off) = rest.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':').unwrap_or((&off[1..], "0"));
        let (oh, om) = (num(oh)?, num(om)?);
        // An offset of a clock on Earth (`+99:99` had moved a line by four days).
        if oh > 23 || om > 59 {
            return None;
        }
        (t, sign * (oh * 3600 + om * 60))
    } else {
        (rest, 0)
    };
    let mut hms = time.split(':');
    let (h, mi, sec) = (num(hms.next()?)?, num(hms.next()?)?, hms.next()?);
    if hms.next().is_some() || h > 23 || mi > 59 {
        return None;
    }
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let whole = num(whole)?;
    if whole > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: f64 = if frac.is_empty() { 0.0 } else { format!("0.{frac}").parse().ok()? };
    let days = days_from_civil(y, m, day);
    Some((days * 86_400 + h * 3600 + mi * 60 + whole - offset_s) as f64 + frac)
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_times_read_with_and_without_an_offset() {
        let a = datetime_seconds("2023-11-16 18:17:03.9799600").unwrap();
        let b = datetime_seconds("2023-11-16 18:17:04.0319600").unwrap();
        assert!((b - a - 0.052).abs() < 1e-6, "{}", b - a);
        // 2023-11-16 is 19677 days after 1970-01-01.
        assert_eq!(datetime_seconds("2023-11-16 00:00:00").unwrap(), 19_677.0 * 86_400.0);
        let utc = datetime_seconds("2024-05-10 00:00:00.009930+00:00").unwrap();
        assert!((utc - (19_853.0 * 86_400.0 + 0.00993)).abs() < 1e-5, "{utc}");
        assert_eq!(datetime_seconds("2024-05-10T02:00:00+02:00"), datetime_seconds("2024-05-10 00:00:00Z"));
        for bad in ["", "2023-11-16", "16/11/2023 18:17:03", "2023-13-01 00:00:00", "2023-11-16 25:00:00", "x"] {
            assert_eq!(datetime_seconds(bad), None, "{bad}");
        }
        // Days a month has not, and offsets no clock has.
        for bad in ["2023-02-31 00:00:00", "2023-02-29 00:00:00", "2023-04-31 00:00:00", "2023-11-16 18:17:04+99:99"] {
            assert_eq!(datetime_seconds(bad), None, "{bad}");
        }
        assert!(datetime_seconds("2024-02-29 00:00:00").is_some(), "a leap day");
    }

    #[test]
    fn formats_are_told_from_the_first_line() {
        let cases = [
            (
                &b"{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [0]}"[..],
                Some(TraceFormat::Mooncake),
            ),
            (b"{\"timestamp\": 0, \"input_tokens\": 10, \"output_tokens\": 2}", Some(TraceFormat::Goodput)),
            (b"TIMESTAMP,ContextTokens,GeneratedTokens", Some(TraceFormat::Azure)),
            (b"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type", Some(TraceFormat::Burstgpt)),
            (
                b"Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type",
                Some(TraceFormat::Burstgpt),
            ),
            (b"a,b,c", None),
            (b"{\"prompt\": \"hi\"}", Some(TraceFormat::Goodput)),
            (b"{\"prompt\": ", None),
        ];
        for (line, want) in cases {
            assert_eq!(detect(line), want, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn csv_rows_are_read_by_their_header() {
        let cols = columns(
            TraceFormat::Burstgpt,
            b"Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type",
        )
        .unwrap();
        let Read::Row(r) =
            csv_row(TraceFormat::Burstgpt, cols, b"5,\"a,b\",1.5,ChatGPT,472,18,490,Conversation log").unwrap()
        else {
            panic!("skipped")
        };
        assert_eq!((r.t, r.lengths.input, r.lengths.output), (5.0, 472, 18));
        assert!(matches!(csv_row(TraceFormat::Burstgpt, cols, b"7,,,GPT-4,84,0,84,API log"), Ok(Read::Skip)));
        let err = csv_row(TraceFormat::Burstgpt, cols, b"7,,,GPT-4,x,3,84,API log").err().unwrap();
        assert!(err.contains("Request tokens 'x'"), "{err}");
        let err = columns(TraceFormat::Azure, b"time,in,out").unwrap_err();
        assert!(
            err.contains(
                "an Azure LLM inference trace's header names the columns TIMESTAMP,ContextTokens,GeneratedTokens"
            ),
            "{err}"
        );
        // A row of more fields than the header names (a comma unquoted) is refused, not read shifted.
        let err = csv_row(TraceFormat::Burstgpt, cols, b"7,a,b,1.5,ChatGPT,472,18,490,Conversation log").err().unwrap();
        assert!(err.contains("has 9 fields where the header names 8") && err.contains("double quotes"), "{err}");
        // A count past u32 is named as written, not as 4294967295.
        let azure = columns(TraceFormat::Azure, b"TIMESTAMP,ContextTokens,GeneratedTokens").unwrap();
        for (row, shown) in [
            (&b"2023-11-16 18:17:03.97,1000000000000,10"[..], "asks for 1000000000000 tokens"),
            (b"2023-11-16 18:17:03.97,10,1e12", "asks for 1000000000000 tokens"),
            (b"2023-11-16 18:17:03.97,2097153,10", "asks for 2097153 tokens"),
        ] {
            let err = csv_row(TraceFormat::Azure, azure, row).err().unwrap();
            assert!(err.contains(shown) && err.contains("at most 2097152"), "{err}");
        }
    }

    #[test]
    fn mooncake_blocks_must_fit_the_input() {
        let Ok(Read::Row(r)) =
            mooncake(b"{\"timestamp\": 27482, \"input_length\": 1030, \"output_length\": 52, \"hash_ids\": [4, 5, 6]}")
        else {
            panic!("not read")
        };
        assert_eq!(r.t, 27.482);
        assert_eq!(r.blocks.as_deref(), Some(&[4, 5, 6][..]));
        let err =
            mooncake(b"{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 5, \"hash_ids\": [1, 2, 3]}")
                .err()
                .unwrap();
        assert!(err.contains("fills only 2 blocks of 512 tokens"), "{err}");
    }
}
