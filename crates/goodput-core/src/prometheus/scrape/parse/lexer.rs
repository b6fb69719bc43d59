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
    let mut labels = Labels::new();
    let (name, value, timestamp) =
        lex_sample(line, |label, raw| match labels.insert(label.to_string(), unescape_label(raw)) {
            Some(_) => Err(LexError::LabelTwice(label.to_string())),
            None => Ok(()),
        })?;
    Ok(Sample { name: name.to_string(), labels, value, timestamp })
}

/// Checks a sample line as [`parse_sample`] reads it (the same errors),
/// keeping nothing of it: its name, and a hash of its series (its name and
/// its labels, in whatever order they came, hashed by `keys`), which tells
/// a repeated series but for one chance in 2^64 a pair.
pub(super) fn check_sample<'a>(line: &'a str, keys: &std::hash::RandomState) -> Result<(&'a str, u64), LexError> {
    use std::hash::{BuildHasher, Hash, Hasher};
    // The labels, to tell one given twice and to hash them in name order:
    // on the stack for the usual few.
    let mut first: [(&str, &str); 8] = [("", ""); 8];
    let (mut count, mut more): (usize, Vec<(&str, &str)>) = (0, Vec::new());
    let (name, _, _) = lex_sample(line, |label, raw| {
        if first[..count.min(8)].iter().chain(&more).any(|l| l.0 == label) {
            return Err(LexError::LabelTwice(label.to_string()));
        }
        match first.get_mut(count) {
            Some(slot) => *slot = (label, raw),
            None => more.push((label, raw)),
        }
        count += 1;
        Ok(())
    })?;
    let labels = match count <= first.len() {
        true => &mut first[..count],
        false => {
            more.extend_from_slice(&first);
            &mut more[..]
        }
    };
    labels.sort_unstable_by_key(|l| l.0);
    let mut h = keys.build_hasher();
    name.hash(&mut h);
    for (label, raw) in labels.iter() {
        label.hash(&mut h);
        match raw.contains('\\') {
            true => unescape_label(raw).hash(&mut h),
            false => raw.hash(&mut h),
        }
    }
    Ok((name, h.finish()))
}

/// Reads a sample line: its name, value and timestamp, each label handed
/// to `label` (its name, and its value as written, escapes and all), which
/// may refuse it.
fn lex_sample<'a>(
    line: &'a str,
    mut label: impl FnMut(&'a str, &'a str) -> Result<(), LexError>,
) -> Result<(&'a str, f64, Option<f64>), LexError> {
    let b = line.as_bytes();
    let end = name_end(b, 0);
    if end == 0 {
        return Err(LexError::NoName);
    }
    let name = &line[..end];
    let mut i = skip_blank(b, end);
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
            let name = &line[i..label_end];
            i = skip_blank(b, label_end);
            if b.get(i) != Some(&b'=') {
                return Err(LexError::NoEquals(name.to_string()));
            }
            i = skip_blank(b, i + 1);
            if b.get(i) != Some(&b'"') {
                return Err(LexError::NoQuote(name.to_string()));
            }
            let (raw, next) = label_value(line, i + 1)?;
            label(name, raw)?;
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
    Ok((name, value, timestamp))
}

/// Finds a label value from just after its opening quote: the value as
/// written (escapes and all), and the index after the closing quote. A
/// backslash escapes the character after it, whatever it is.
pub(super) fn label_value(line: &str, start: usize) -> Result<(&str, usize), LexError> {
    let b = line.as_bytes();
    let mut i = start;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => return Ok((&line[start..i], i + 1)),
            // The byte after may open a character of several: the bytes
            // that go on with it are never a quote or a backslash.
            b'\\' if i + 1 < b.len() => i += 2,
            b'\\' => break,
            _ => i += 1,
        }
    }
    Err(LexError::Unterminated)
}

/// A label value as written, unescaped: `\\`, `\"` and `\n` are the
/// format's escapes; any other backslash is kept as written, as lenient
/// readers do.
pub(super) fn unescape_label(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
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
