//! The sample-line lexer of the Prometheus text format: a sample's name,
//! labels (with their escapes) and value, `# HELP` text, and the float forms
//! (`+Inf`, `NaN`) as they are written and read back.

use super::Sample;
use crate::prometheus::scrape::values::{parse_float, Labels};

/// Why a sample line does not read (kept as the text of
/// [`super::ParseErrorKind::Malformed`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum LexError {
    #[error("expected a metric name")]
    NoName,
    #[error("expected a label name")]
    NoLabelName,
    #[error("expected = after label {0}")]
    NoEquals(String),
    #[error("expected a quoted value for label {0}")]
    NoQuote(String),
    #[error("label {0} given twice")]
    LabelTwice(String),
    #[error("expected , or }} after a label")]
    NoLabelEnd,
    #[error("expected a space after the metric name")]
    NoSpace,
    #[error("expected a value")]
    NoValue,
    #[error("bad value {0:?}")]
    BadValue(String),
    #[error("bad timestamp {0:?}")]
    BadTimestamp(String),
    #[error("unexpected {0:?} after the timestamp")]
    AfterTimestamp(String),
    #[error("unterminated label value")]
    Unterminated,
}

/// `name{label="value",…} value [timestamp] [# exemplar]`.
pub(super) fn parse_sample(line: &str) -> Result<Sample, LexError> {
    let b = line.as_bytes();
    let end = name_end(b, 0);
    if end == 0 {
        return Err(LexError::NoName);
    }
    let name = line[..end].to_string();
    let mut i = skip_blank(b, end);
    let mut labels = Labels::new();
    if b.get(i) == Some(&b'{') {
        i += 1;
        loop {
            i = skip_blank(b, i);
            if b.get(i) == Some(&b'}') {
                i += 1;
                break;
            }
            let label_end = label_name_end(b, i);
            if label_end == i {
                return Err(LexError::NoLabelName);
            }
            let label = &line[i..label_end];
            i = skip_blank(b, label_end);
            if b.get(i) != Some(&b'=') {
                return Err(LexError::NoEquals(label.to_string()));
            }
            i = skip_blank(b, i + 1);
            if b.get(i) != Some(&b'"') {
                return Err(LexError::NoQuote(label.to_string()));
            }
            let (value, next) = label_value(line, i + 1)?;
            if labels.insert(label.to_string(), value).is_some() {
                return Err(LexError::LabelTwice(label.to_string()));
            }
            i = skip_blank(b, next);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return Err(LexError::NoLabelEnd),
            }
        }
    } else if i == end && i < b.len() {
        return Err(LexError::NoSpace);
    }
    let mut words = line[i..].split_ascii_whitespace();
    let value = words.next().ok_or(LexError::NoValue)?;
    let value = parse_float(value).ok_or_else(|| LexError::BadValue(value.to_string()))?;
    let timestamp = match words.next() {
        None => None,
        Some(w) if w.starts_with('#') => None,
        Some(w) => Some(parse_float(w).ok_or_else(|| LexError::BadTimestamp(w.to_string()))?),
    };
    if timestamp.is_some() {
        if let Some(w) = words.next().filter(|w| !w.starts_with('#')) {
            return Err(LexError::AfterTimestamp(w.to_string()));
        }
    }
    Ok(Sample { name, labels, value, timestamp })
}

/// Reads a label value from just after its opening quote; returns it with
/// the index after the closing quote. `\\`, `\"` and `\n` are the format's
/// escapes; any other backslash is kept as written, as lenient readers do.
pub(super) fn label_value(line: &str, start: usize) -> Result<(String, usize), LexError> {
    let mut out = String::new();
    let mut chars = line[start..].char_indices();
    while let Some((off, c)) = chars.next() {
        match c {
            '"' => return Ok((out, start + off + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(LexError::Unterminated)
}

pub(super) fn unescape_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.trim_start_matches([' ', '\t']).chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The first word and what follows it (leading blanks of the rest kept for
/// HELP text to decide on).
pub(super) fn split_word(s: &str) -> (&str, &str) {
    match s.find([' ', '\t']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

pub(super) fn skip_blank(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// End of a metric name `[a-zA-Z_:][a-zA-Z0-9_:]*` starting at `i` (`i`
/// itself when there is none).
pub(super) fn name_end(b: &[u8], i: usize) -> usize {
    scan(
        b,
        i,
        |c| c.is_ascii_alphabetic() || c == b'_' || c == b':',
        |c| c.is_ascii_alphanumeric() || c == b'_' || c == b':',
    )
}

/// End of a label name `[a-zA-Z_][a-zA-Z0-9_]*`.
pub(super) fn label_name_end(b: &[u8], i: usize) -> usize {
    scan(b, i, |c| c.is_ascii_alphabetic() || c == b'_', |c| c.is_ascii_alphanumeric() || c == b'_')
}

pub(super) fn scan(b: &[u8], i: usize, first: impl Fn(u8) -> bool, rest: impl Fn(u8) -> bool) -> usize {
    match b.get(i) {
        Some(&c) if first(c) => i + 1 + b[i + 1..].iter().take_while(|&&c| rest(c)).count(),
        _ => i,
    }
}
