//! Datasets read from a local file: ShareGPT conversations, or entries of
//! JSONL, a JSON array or Parquet (docs/workloads.md), whose prompt is a
//! column named (`--dataset-column`) or found: a string, OpenAI-style
//! `messages`, ShareGPT `conversations` or LMSYS-Chat/WildChat
//! `conversation` turns.

use crate::error::{EntryError, ShareGptError, WorkloadError};
use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use goodput_core::util::input::LineReader;
use serde_json::Value;
use std::path::Path;

/// One entry of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetEntry {
    pub prompt: PromptBody,
    /// What a conversation's system turns say (a `"messages"` entry that
    /// ends with a question keeps its own in `prompt`). One rule for both:
    /// a chat API gets it as a system message, an API that takes one
    /// prompt gets it before the prompt, a blank line between; a session
    /// (`--turns`) gets it before its first question.
    pub system: Option<String>,
    pub max_tokens: Option<u32>,
    /// A ShareGPT conversation's later questions, each with the length of
    /// the answer it got: the turns of a session (`--turns`).
    pub follow_ups: Vec<(String, Option<u32>)>,
    /// Each later question's tokens, counted as `prompt_tokens` is: what
    /// `estimate` sends as a session's later turns.
    pub follow_up_tokens: Vec<u32>,
    /// What a right answer is (`"reference"`, a string or a list of them;
    /// `"answer"` is read the same way): the quality scorers compare the
    /// output with it. Empty when the entry has none.
    pub reference: Vec<String>,
    /// The prompt's tokens: counted by the tokenizer when one is given,
    /// else as the simulated engine counts them ([`count_prompt`]). What
    /// `estimate` sends.
    pub prompt_tokens: u32,
    /// Images sent with the prompt (an `image` or `images` column): data
    /// URLs as given, or image files, read when the request is built.
    pub images: Vec<super::images::DatasetImage>,
}

/// Tokens of an answer's `text` (the output length it gives): the
/// tokenizer's count, or about 4 bytes a token (English) without one; at
/// least 1.
pub(super) fn count_tokens(text: &str, tokenizer: Option<&TokenCounter>) -> u32 {
    let n = match tokenizer {
        Some(t) => t.count(text),
        None => text.len().div_ceil(4),
    };
    n.clamp(1, u32::MAX as usize) as u32
}

/// Tokens of a prompt's `text`: the tokenizer's count, or without one the
/// simulated engine's ([`goodput_core::util::words`]: a word a token, and
/// a token for each character of a script written without spaces), which
/// `estimate` predicts; at least 1. Bytes over 4 had counted an English
/// prompt 1.4 times and a Chinese one a twelfth of what bench sent that
/// engine.
pub(super) fn count_prompt(text: &str, tokenizer: Option<&TokenCounter>) -> u32 {
    let n = match tokenizer {
        Some(t) => t.count(text),
        None => goodput_core::util::words::count(text),
    };
    n.clamp(1, u32::MAX as usize) as u32
}

/// The most entries goodput holds of a dataset: 10 million, ten times the
/// largest public prompt sets (LMSYS-Chat's and WildChat's million
/// conversations; ShareGPT's 94,000), in about 2.5 GB at the least (about
/// 250 bytes an entry besides its text, measured below). Past it a
/// run is refused, with the fix: a sample of the file (each request draws
/// from all the entries read, in a seeded order, so reading only the first
/// `-n` would change the prompts a seed picks).
pub const MAX_ENTRIES: usize = 10_000_000;

/// The most bytes of JSON Lines goodput reads as a dataset: 4 GiB, as for a
/// JSON array read whole ([`goodput_core::util::input::DOCUMENT_CAP`]); the
/// entries read hold their text and about 250 bytes each besides
/// (`/usr/bin/time -f %M goodput estimate --dataset`: a 300 MB file of
/// 356,000 prompts of about 800 bytes took 410 MB, 100 MB of 1.3 million
/// prompts of about 45 bytes 450 MB, a 300 MB JSON array of conversations,
/// read whole, 520 MB).
pub const MAX_DATASET_BYTES: u64 = goodput_core::util::input::DOCUMENT_CAP;

/// A dataset as read: its entries, and what was left out or mended on the
/// way, for the warnings a run gives before it starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dataset {
    pub entries: Vec<DatasetEntry>,
    /// Entries read and left out, by reason: how many, and where the first
    /// was (`line 3`, `entry 3`, `row 3`).
    pub skipped: Vec<(super::columns::Skip, u64, String)>,
    /// Entries whose strings held an unpaired UTF-16 surrogate escape
    /// (`\ud83d` alone, half an emoji, as Python's `json.dumps` writes a
    /// broken one), read with U+FFFD in its place: how many, and the first.
    pub mended: Option<(u64, String)>,
}

impl Dataset {
    /// Entries read and left out, all reasons together.
    pub fn skipped_count(&self) -> u64 {
        self.skipped.iter().map(|s| s.1).sum()
    }

    /// The warnings for what was left out or mended, naming `path`.
    pub fn warnings(&self, path: &Path) -> Vec<String> {
        let mut out = Vec::new();
        if !self.skipped.is_empty() {
            let read = self.entries.len() as u64 + self.skipped_count();
            let reasons: Vec<String> = self
                .skipped
                .iter()
                .map(|(why, n, first)| format!("{n} for {} (the first at {first})", why.reason()))
                .collect();
            out.push(format!(
                "warning: dataset {} holds {read} entries, {} skipped: {}; the run draws from the other {}",
                path.display(),
                self.skipped_count(),
                reasons.join("; "),
                self.entries.len()
            ));
        }
        if let Some((n, first)) = &self.mended {
            out.push(format!(
                "warning: dataset {}: {n} entr{} (the first at {first}) held an unpaired UTF-16 surrogate escape such \
                 as \\ud83d (half of an emoji's pair, as Python's json.dumps writes a cut one), which JSON text \
                 cannot hold as a character: read with U+FFFD (�) in its place",
                path.display(),
                if *n == 1 { "y" } else { "ies" }
            ));
        }
        out
    }
}

/// Collects a dataset's entries as they are read, within [`MAX_ENTRIES`]
/// (and the memory the process can get: the list grows by a fallible
/// reservation, so running out is an error, not an abort).
pub(super) struct Collector<'a> {
    path: &'a Path,
    pub(super) read: Dataset,
    /// What [`MAX_ENTRIES`]'s refusal suggests to take a sample.
    sample: &'static str,
    /// The most entries held: [`MAX_ENTRIES`] (less in tests).
    pub(super) cap: usize,
}

impl<'a> Collector<'a> {
    pub(super) fn new(path: &'a Path, sample: &'static str) -> Self {
        Collector { path, read: Dataset::default(), sample, cap: MAX_ENTRIES }
    }

    /// One record read at `place`: an entry, or one skipped.
    pub(super) fn take(
        &mut self,
        got: Result<DatasetEntry, super::columns::Skip>,
        place: impl FnOnce() -> String,
    ) -> Result<(), WorkloadError> {
        let e = match got {
            Ok(e) => e,
            Err(why) => {
                match self.read.skipped.iter_mut().find(|s| s.0 == why) {
                    Some(s) => s.1 += 1,
                    None => {
                        self.read.skipped.push((why, 1, place()));
                        self.read.skipped.sort_by_key(|s| s.0);
                    }
                }
                return Ok(());
            }
        };
        let entries = &mut self.read.entries;
        if entries.len() >= self.cap {
            return Err(WorkloadError::TooManyEntries {
                path: self.path.to_owned(),
                cap: self.cap,
                sample: self.sample,
            });
        }
        if entries.len() == entries.capacity() {
            // Doubling, as push does, but an allocation that fails is an error.
            let more = entries.len().max(1024).min(self.cap - entries.len());
            entries.try_reserve_exact(more).map_err(|_| WorkloadError::DatasetMemory {
                path: self.path.to_owned(),
                held: entries.len(),
                sample: self.sample,
            })?;
        }
        entries.push(e);
        Ok(())
    }

    /// An entry whose unpaired surrogates were replaced, at `place`.
    pub(super) fn mended(&mut self, place: impl FnOnce() -> String) {
        match &mut self.read.mended {
            Some((n, _)) => *n += 1,
            None => self.read.mended = Some((1, place())),
        }
    }
}

/// `text` parsed as JSON; where it fails for an unpaired UTF-16 surrogate
/// escape, parsed again with U+FFFD in each one's place (`true` then).
pub(super) fn parse_mending(text: &str) -> Result<(Value, bool), serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok((v, false)),
        Err(e) => match mend_surrogates(text) {
            Some(mended) => serde_json::from_str(&mended).map(|v| (v, true)).map_err(|_| e),
            None => Err(e),
        },
    }
}

/// `text` (JSON) with every `\uXXXX` escape of a UTF-16 surrogate that is
/// not half of a pair replaced by `\ufffd`; `None` when it holds none. A
/// backslash in JSON text begins an escape, in a string: `\\ud83d` (an
/// escaped backslash, then letters) is left as it is.
pub(super) fn mend_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let s = text.get(at..at + 4)?;
        if s.bytes().all(|c| c.is_ascii_hexdigit()) {
            u16::from_str_radix(s, 16).ok()
        } else {
            None
        }
    };
    // The code unit of a `\u` escape at `at`, where there is one.
    let unit = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u')).then_some(())?;
        hex(at + 2)
    };
    let mut out: Option<String> = None;
    let (mut i, mut copied) = (0, 0);
    while let Some(off) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + off;
        let Some(u) = unit(at) else {
            // Another escape: two bytes (`\\`, `\"`, `\n`, …).
            i = at + 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        if high && unit(at + 6).is_some_and(|v| (0xDC00..0xE000).contains(&v)) {
            i = at + 12;
            continue;
        }
        if high || low {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push_str("\\ufffd");
            copied = at + 6;
        }
        i = at + 6;
    }
    let mut o = out?;
    o.push_str(&text[copied.min(text.len())..]);
    Some(o)
}

/// Reads a dataset: JSONL of `{"prompt": …}` / `{"messages": …}` (or any
/// prompt column of [`super::columns::DETECTED`]) with optional
/// `max_tokens`, or a JSON array of the same entries (ShareGPT's array of
/// `{"conversations": [...]}` among them). JSONL is read a line at a time,
/// each at most [`goodput_core::util::input::LINE_CAP`], at most
/// [`MAX_DATASET_BYTES`] in all; an array whole, at most
/// [`goodput_core::util::input::DOCUMENT_CAP`], an entry at a time, each
/// at most `LINE_CAP` too. Either holds at most [`MAX_ENTRIES`] entries,
/// and may come from a pipe (`<(…)`, a FIFO): the input is opened once.
pub fn load_dataset(path: &Path, tokenizer: Option<&TokenCounter>) -> Result<Vec<DatasetEntry>, WorkloadError> {
    load_dataset_column(path, tokenizer, None)
}

/// [`load_dataset`] with the prompt in `column` (`--dataset-column`), or in
/// the first of [`super::columns::DETECTED`] an entry has; a `.parquet` file
/// (or one that opens with Parquet's magic bytes) is read as Parquet.
pub fn load_dataset_column(
    path: &Path,
    tokenizer: Option<&TokenCounter>,
    column: Option<&str>,
) -> Result<Vec<DatasetEntry>, WorkloadError> {
    read_dataset(path, tokenizer, column).map(|d| d.entries)
}

/// [`load_dataset_column`], with what was skipped or mended on the way.
pub fn read_dataset(
    path: &Path,
    tokenizer: Option<&TokenCounter>,
    column: Option<&str>,
) -> Result<Dataset, WorkloadError> {
    let path_buf = || path.to_path_buf();
    let parquet = |path: &Path| {
        let mut c = Collector::new(path, PARQUET_SAMPLE);
        super::parquet::load(path, tokenizer, column, &mut c)?;
        if c.read.entries.is_empty() {
            Err(WorkloadError::Empty { path: path.to_path_buf() })
        } else {
            Ok(c.read)
        }
    };
    // One open, its first bytes looked at and then read again: a pipe is
    // read once (opening it twice had waited for a second writer, or found
    // its first bytes gone).
    let mut opened = LineReader::open(path, "the dataset")?;
    let head =
        head(opened.input()).map_err(|e| WorkloadError::DatasetRead { path: path_buf(), error: e.to_string() })?;
    if super::parquet::has_magic(&head) {
        drop(opened);
        return parquet(path);
    }
    // Editors on Windows begin UTF-8 files with a byte-order mark.
    let body = head.strip_prefix(BOM).unwrap_or(&head);
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if super::parquet::has_extension(path) {
        // Named .parquet, and without Parquet's magic bytes: JSON text is
        // read as such (the parquet crate had said only "Corrupt footer").
        if !matches!(first, Some(b'[' | b'{')) {
            return Err(WorkloadError::Parquet {
                path: path_buf(),
                error: "it is named .parquet but does not begin with Parquet's magic bytes (PAR1): is it the right \
                        file? A JSONL or JSON dataset is read by its content, whatever its name"
                    .into(),
            });
        }
    }
    let array = first == Some(b'[');
    let input =
        std::io::BufReader::with_capacity(1 << 16, std::io::Read::chain(std::io::Cursor::new(head), opened.input()));
    let mut lines = LineReader::new(input, path, "the dataset", goodput_core::util::input::LINE_CAP);
    let read = if array {
        let text = read_whole(lines.input(), path)?;
        let trimmed = text.strip_prefix('\u{feff}').unwrap_or(&text).trim_start();
        let mut c = Collector::new(path, ARRAY_SAMPLE);
        let mut sharegpt = false;
        let mut k = 0usize;
        // Each entry as a JSONL line is read, one at a time: the array is
        // never held parsed whole (that took five times the file's size).
        let mut each = |raw: &serde_json::value::RawValue| -> Result<(), WorkloadError> {
            k += 1;
            let place = || format!("entry {k}");
            let at = |reason| WorkloadError::Item { path: path_buf(), place: place(), reason };
            let text = raw.get();
            if text.len() > goodput_core::util::input::LINE_CAP {
                return Err(WorkloadError::EntryTooLong {
                    path: path_buf(),
                    place: place(),
                    cap: goodput_core::util::input::LINE_CAP,
                });
            }
            let (item, mended) = parse_mending(text)
                .map_err(|e| WorkloadError::DatasetArray { path: path_buf(), error: format!("{}: {e}", place()) })?;
            if mended {
                c.mended(place);
            }
            // ShareGPT's array, read as vLLM's benchmarks read it: a
            // conversation whose question got no answer (and that gives no
            // max_tokens) sets no output length, and is skipped.
            let conversations = column.is_none() && item.get("conversations").is_some();
            sharegpt |= conversations;
            let entry = super::columns::entry_of(&item, column, tokenizer).map_err(at)?;
            let entry = match entry {
                Ok(e) if conversations && e.max_tokens.is_none() => Err(super::columns::Skip::NoAnswer),
                other => other,
            };
            c.take(entry, place)
        };
        each_item(trimmed, &mut each).map_err(|e| match e {
            Each::Entry(e) => e,
            Each::Json(error) => WorkloadError::DatasetArray { path: path_buf(), error: error.to_string() },
        })?;
        if sharegpt && c.read.entries.is_empty() {
            return Err(WorkloadError::ShareGpt { path: path_buf(), reason: ShareGptError::NoConversation });
        }
        c.read
    } else {
        let mut c = Collector::new(path, LINES_SAMPLE);
        let mut bytes_read = 0u64;
        while let Some(line) = lines.next_line() {
            let line = line?;
            bytes_read += line.bytes.len() as u64 + 1;
            if bytes_read > MAX_DATASET_BYTES {
                return Err(WorkloadError::DatasetTooLarge { path: path_buf(), cap: MAX_DATASET_BYTES });
            }
            let bytes = if line.number == 1 { line.bytes.strip_prefix(BOM).unwrap_or(line.bytes) } else { line.bytes };
            if bytes.trim_ascii().is_empty() {
                continue;
            }
            let line_no = line.number;
            let not_json = |e: serde_json::Error| {
                let (error, column) = goodput_core::util::input::json_fault(&e);
                WorkloadError::LineNotJson { path: path_buf(), line: line_no, column, error }
            };
            let (v, mended) = match serde_json::from_slice::<Value>(bytes) {
                Ok(v) => (v, false),
                Err(e) => {
                    // Bytes that are not UTF-8 (a Latin-1 file's é) are
                    // named as an encoding, not as JSON's fault.
                    let text = std::str::from_utf8(bytes).map_err(|u| WorkloadError::LineNotUtf8 {
                        path: path_buf(),
                        line: line_no,
                        at: u.valid_up_to() + 1,
                        byte: bytes[u.valid_up_to()],
                    })?;
                    parse_mending(text).map_err(|_| not_json(e))?
                }
            };
            if mended {
                c.mended(|| format!("line {line_no}"));
            }
            let entry = super::columns::entry_of(&v, column, tokenizer).map_err(|reason| WorkloadError::Entry {
                path: path_buf(),
                line: line_no,
                reason,
            })?;
            c.take(entry, || format!("line {line_no}"))?;
        }
        c.read
    };
    let mut read = read;
    super::images::resolve_dataset_images(&mut read.entries, path)?;
    if read.entries.is_empty() {
        return Err(WorkloadError::Empty { path: path_buf() });
    }
    Ok(read)
}

/// How to take a sample of a JSONL dataset, of an array, of Parquet.
const LINES_SAMPLE: &str = "shuf -n 1000000 FILE > sample.jsonl";
const ARRAY_SAMPLE: &str = "jq -c '.[]' FILE | shuf -n 1000000 > sample.jsonl";
const PARQUET_SAMPLE: &str =
    "python -c \"import pandas as pd; pd.read_parquet('FILE').sample(1000000).to_json('sample.jsonl', orient='records', lines=True)\"";

/// Why walking an array's items stopped.
enum Each {
    Json(serde_json::Error),
    Entry(WorkloadError),
}

/// Calls `f` on each item of the JSON array `text`, as raw text, in order.
fn each_item<'t>(
    text: &'t str,
    f: &mut dyn FnMut(&'t serde_json::value::RawValue) -> Result<(), WorkloadError>,
) -> Result<(), Each> {
    use serde::de::{DeserializeSeed, Error as _, SeqAccess, Visitor};
    struct Items<'f, 't> {
        f: &'f mut dyn FnMut(&'t serde_json::value::RawValue) -> Result<(), WorkloadError>,
        failed: &'f mut Option<WorkloadError>,
    }
    impl<'t> Visitor<'t> for Items<'_, 't> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'t>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(raw) = seq.next_element::<&'t serde_json::value::RawValue>()? {
                if let Err(e) = (self.f)(raw) {
                    *self.failed = Some(e);
                    return Err(A::Error::custom("stopped"));
                }
            }
            Ok(())
        }
    }
    impl<'t> DeserializeSeed<'t> for Items<'_, 't> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'t>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let walked = Items { f, failed: &mut failed }.deserialize(&mut de).and_then(|()| de.end());
    match (walked, failed) {
        (_, Some(e)) => Err(Each::Entry(e)),
        (Err(e), None) => Err(Each::Json(e)),
        (Ok(()), None) => Ok(()),
    }
}

/// The first bytes of `input`: at least 4 and one not white space, where it
/// holds them (a pipe may give a few bytes at a time), at most about 64 KiB.
fn head<R: std::io::BufRead>(input: &mut R) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let got = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if got.is_empty() {
            return Ok(head);
        }
        let n = got.len();
        head.extend_from_slice(got);
        input.consume(n);
        let body = head.strip_prefix(BOM).unwrap_or(&head);
        if (head.len() >= 4 && body.iter().any(|b| !b.is_ascii_whitespace())) || head.len() >= 1 << 16 {
            return Ok(head);
        }
    }
}

/// The rest of `input` as text, at most [`goodput_core::util::input::DOCUMENT_CAP`].
fn read_whole<R: std::io::Read>(input: &mut R, path: &Path) -> Result<String, WorkloadError> {
    use goodput_core::util::input::{InputError, DOCUMENT_CAP};
    let what = "the dataset";
    let too_large = || InputError::TooLarge { path: path.to_owned(), what, cap: DOCUMENT_CAP };
    // A file's size is known before it is read (a pipe's is not).
    let size = std::fs::metadata(path).ok().filter(|m| m.is_file()).map_or(0, |m| m.len());
    if size > DOCUMENT_CAP {
        return Err(too_large().into());
    }
    // A file's size at once, and an allocation that fails is an error (a
    // pipe's grows as read_to_end grows it).
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size as usize).map_err(|_| WorkloadError::DatasetMemory {
        path: path.to_owned(),
        held: 0,
        sample: ARRAY_SAMPLE,
    })?;
    std::io::Read::read_to_end(&mut std::io::Read::take(input, DOCUMENT_CAP + 1), &mut bytes)
        .map_err(|error| InputError::Io { path: path.to_owned(), what, error })?;
    if bytes.len() as u64 > DOCUMENT_CAP {
        return Err(too_large().into());
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::NotUtf8At { path: path.to_owned(), what, at: e.utf8_error().valid_up_to() as u64 + 1 }.into()
    })
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// An entry's `"reference"` (or `"answer"`): a string, or a list of strings
/// (any of which is a right answer).
pub(super) fn reference_of(v: &Value) -> Result<Vec<String>, EntryError> {
    let (key, value) = match (v.get("reference"), v.get("answer")) {
        (Some(r), _) if !r.is_null() => ("reference", r),
        (_, Some(a)) if !a.is_null() => ("answer", a),
        _ => return Ok(Vec::new()),
    };
    let bad = || EntryError::ReferenceType { key };
    // A blank reference scores 0 against every answer (exact, ROUGE-L and
    // chrF alike), as an empty list would: refused the same way.
    let blank =
        |s: &str, list| if s.trim().is_empty() { Err(EntryError::BlankReference { key, list }) } else { Ok(()) };
    match value {
        Value::String(s) => blank(s, "").map(|()| vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| {
                let s = i.as_str().ok_or_else(bad)?;
                blank(s, " in its list").map(|()| s.to_owned())
            })
            .collect(),
        Value::Array(_) => Err(EntryError::NoReference { key }),
        _ => Err(bad()),
    }
}
