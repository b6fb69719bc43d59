//! Bounded reading of the files a command is given (result documents,
//! records, datasets, traces, configs, tokenizers), shared by every reader
//! so that each has a bound and says which one was passed.
//!
//! A file read whole must be a regular file: a device (`/dev/zero`), a FIFO
//! or a folder is refused before a byte is read, and a file larger than its
//! cap is refused too (checked again while reading: the file may grow).
//! JSON Lines are read one line at a time, from anything but a folder (a
//! FIFO streams well), each line at most [`LINE_CAP`]: an input with no
//! newline ends with an error, not with memory spent.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The longest line of a JSON Lines input (records, datasets, traces): 64
/// MiB. A record of a long answer, its chunks packed, is a few hundred KiB;
/// a dataset's line holds one prompt.
pub const LINE_CAP: usize = 64 << 20;

/// The largest document read whole: a result (with `--include-requests`, a
/// record per request), another tool's result, a ShareGPT dataset (the
/// usual one is 0.7 GB): 4 GiB. Past that the parsed form would not fit in
/// memory anyway.
pub const DOCUMENT_CAP: u64 = 4 << 30;

/// The largest tokenizer.json: 1 GiB (the largest vocabularies' are tens
/// of MiB).
pub const TOKENIZER_CAP: u64 = 1 << 30;

/// The largest settings file (a `--config` TOML, a calibration JSON, a
/// model's config.json, a validation CSV): 16 MiB, a thousand times a real
/// one.
pub const SETTINGS_CAP: u64 = 16 << 20;

/// Why an input could not be read; each names the file, the bound passed
/// and what to do.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read {what} {}: {error}", path.display())]
    Io { path: PathBuf, what: &'static str, error: std::io::Error },
    #[error("{} is {kind}, not a file to read {what} from: give the file itself", path.display())]
    NotAFile { path: PathBuf, what: &'static str, kind: &'static str },
    #[error(
        "{} is larger than {} (the most goodput reads of {what}): is it the right file?",
        path.display(),
        size(*cap)
    )]
    TooLarge { path: PathBuf, what: &'static str, cap: u64 },
    #[error(
        "{}: line {line} is longer than {} (the longest line goodput reads in {what}): is it the right file? \
         Each entry of a JSON Lines file is one line, ended by a newline",
        path.display(),
        size(*cap as u64)
    )]
    LineTooLong { path: PathBuf, what: &'static str, line: usize, cap: usize },
    /// A JSON document whose parsed form would not fit in the memory the
    /// process has left: refused before it is parsed (an allocation that
    /// fails aborts the process, with no message of what it was reading).
    #[error(
        "{} ({what}) is {} of JSON in {values} values, and reading it takes about {}, more than the {} this process \
         has left (the machine's available memory, and ulimit -v where one is set): free memory or raise the limit, \
         or give a smaller file (a run keeps its per-request records out of its result with --records FILE rather \
         than --include-requests)",
        path.display(),
        approx(*size),
        approx(*need),
        approx(*left)
    )]
    OverMemory { path: PathBuf, what: &'static str, size: u64, values: u64, need: u64, left: u64 },
    #[error("{} is not UTF-8 text: {what} is UTF-8", path.display())]
    NotUtf8 { path: PathBuf, what: &'static str },
    #[error(
        "{} is {kind}-compressed, and goodput reads {what} as plain text: decompress it first (e.g. {tool} {})",
        path.display(),
        path.display()
    )]
    Compressed { path: PathBuf, what: &'static str, kind: &'static str, tool: &'static str },
    /// UTF-16 text (a byte-order mark, or ASCII with a zero byte between
    /// characters, as Windows tools write "Unicode"): each line had been
    /// refused as "not JSON".
    #[error(
        "{} is UTF-16 text ({order}), and goodput reads {what} as UTF-8: convert it first (e.g. iconv -f utf-16 -t \
         utf-8 {} > {}.utf8)",
        path.display(),
        path.display(),
        path.display()
    )]
    Utf16 { path: PathBuf, what: &'static str, order: &'static str },
    /// Not UTF-8 from byte `at` (1-based) of the file on.
    #[error(
        "{} is not UTF-8 text (byte {at} of the file is not; Latin-1 or Windows-1252 text reads so): {what} is \
         UTF-8; convert it first (e.g. iconv -f latin1 -t utf-8 {} > {}.utf8)",
        path.display(),
        path.display(),
        path.display()
    )]
    NotUtf8At { path: PathBuf, what: &'static str, at: u64 },
}

/// serde_json's words for a fault in one line of JSON text, without the
/// "at line 1 column N" it adds (the line is the file's, for the caller to
/// name: "line 5000: ... at line 1 column 33" had named two lines), and
/// the column it names (1-based; 0 when it names none).
pub fn json_fault(e: &serde_json::Error) -> (String, usize) {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&place) {
        Some(words) => (words.to_owned(), e.column()),
        None => (text, 0),
    }
}

/// The UTF-16 byte order that a file's first bytes show: a byte-order mark
/// (FF FE, FE FF), or ASCII text with a zero byte after (or before) each
/// character.
fn utf16(head: &[u8]) -> Option<&'static str> {
    let ascii_then_zero = |a: &[u8]| a.len() >= 4 && a[0] != 0 && a[1] == 0 && a[2] != 0 && a[3] == 0;
    let zero_then_ascii = |a: &[u8]| a.len() >= 4 && a[0] == 0 && a[1] != 0 && a[2] == 0 && a[3] != 0;
    if head.starts_with(b"\xff\xfe") || ascii_then_zero(head) {
        Some("little-endian")
    } else if head.starts_with(b"\xfe\xff") || zero_then_ascii(head) {
        Some("big-endian")
    } else {
        None
    }
}

/// A cap as people write it: 64 MiB, 4 GiB.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A size in memory as people read it, to a tenth: 1.5 GiB, 300.0 MiB.
pub fn approx(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1u32 << 10)),
        b => format!("{b} bytes"),
    }
}

/// What parsing one JSON value takes at most beyond the text, on average
/// over a document: the value's slot (32 bytes as a `serde_json::Value`, 24
/// as a `String` or a `Vec`) twice over, since a list grows by doubling, or
/// an entry of a map with its key's allocation. Measured (peak RSS of
/// `goodput report`, less the text): a result holding a list of 150 million
/// zeros took 64 bytes a value parsed as `Value`s, one of 100 million empty
/// warnings 49 parsed as its types, and one of 400,000 records (43.6
/// million values) under 22 parsed as its types, analysis included.
pub const BYTES_PER_VALUE: u64 = 80;

/// The memory the process has left, where known: the least of the
/// machine's available memory (Linux's `MemAvailable`) and what the
/// process's address-space limit (`ulimit -v`) leaves beyond what it has
/// mapped.
pub fn memory_left() -> Option<u64> {
    let available = available_memory();
    let room = address_space_room(
        &std::fs::read_to_string("/proc/self/limits").unwrap_or_default(),
        &std::fs::read_to_string("/proc/self/status").unwrap_or_default(),
    );
    match (available, room) {
        (Some(a), Some(r)) => Some(a.min(r)),
        (a, r) => a.or(r),
    }
}

/// The machine's available memory (Linux's `MemAvailable`), where known.
pub fn available_memory() -> Option<u64> {
    mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemAvailable` of the text of /proc/meminfo, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// What the soft address-space limit leaves beyond the process's mapped
/// size (`VmSize`), from the text of /proc/self/limits and
/// /proc/self/status; `None` without a limit.
fn address_space_room(limits: &str, status: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    let limit: u64 = line.trim_start_matches("Max address space").split_whitespace().next()?.parse().ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(limit.saturating_sub(kb.saturating_mul(1024)))
}

/// The number of JSON values in `text` (a document, or JSON Lines), each
/// element, key and value counted, read without keeping any of them; the
/// count stops where the text stops being JSON.
pub fn json_values(text: &str) -> u64 {
    let mut values = 0;
    for v in serde_json::Deserializer::from_str(text).into_iter::<Values>() {
        match v {
            Ok(Values(n)) => values += n,
            Err(_) => break,
        }
    }
    values
}

/// That the JSON in `text`, read from `path` as `what`, can be parsed
/// within the memory the process has left ([`memory_left`]), the text
/// itself being held already: as many bytes again (what its strings copy),
/// and [`BYTES_PER_VALUE`] for each of its values. Where the memory left is
/// not known, it is not checked.
pub fn check_parse(path: &Path, what: &'static str, text: &str) -> Result<(), InputError> {
    match memory_left() {
        Some(left) => parse_fits(path, what, text, left),
        None => Ok(()),
    }
}

/// [`check_parse`] for a goodput result parsed straight into its types,
/// whose top-level `records` array (a result's `requests`) holds request
/// records, with no `serde_json::Value` in them: that array's values are
/// counted at what those types take ([`TYPED_SCALAR`] a number, a boolean
/// or a null, [`TYPED_SLOT`] a string or an array), every other value at
/// [`BYTES_PER_VALUE`], as the `serde_json::Value`s the documents' open
/// maps (`extra`) may hold. A result of 100,000 requests (1.45 GB, 94
/// million values) had been refused for 8.4 GiB under `ulimit -v 8000000`,
/// where it parses and is analysed in 2.0 GB: this counts it at about 3 GB.
pub fn check_typed_parse(path: &Path, what: &'static str, text: &str, records: &str) -> Result<(), InputError> {
    match memory_left() {
        Some(left) => typed_parse_fits(path, what, text, records, left),
        None => Ok(()),
    }
}

/// What a number, a boolean or a null takes in a request record, at most:
/// an 8-byte field, or an element of a list that grows by doubling (the
/// chunks are packed tighter still).
pub const TYPED_SCALAR: u64 = 16;
/// What a string or an array takes in a request record beyond its text: a
/// 24-byte `String` or `Vec`, twice over in a list that grows by doubling
/// (measured: 100 million empty strings took 49 bytes each).
pub const TYPED_SLOT: u64 = 48;

fn typed_parse_fits(path: &Path, what: &'static str, text: &str, records: &str, left: u64) -> Result<(), InputError> {
    fits_within(path, what, text, left, || document_cost(text, records))
}

/// [`check_parse`] with `left` bytes of memory left.
fn parse_fits(path: &Path, what: &'static str, text: &str, left: u64) -> Result<(), InputError> {
    fits_within(path, what, text, left, || {
        let values = json_values(text);
        (values, values.saturating_mul(BYTES_PER_VALUE))
    })
}

/// Whether `text` and what `cost` says its parse takes beyond it (its
/// values, and their bytes) fit in `left` bytes.
fn fits_within(
    path: &Path,
    what: &'static str,
    text: &str,
    left: u64,
    cost: impl FnOnce() -> (u64, u64),
) -> Result<(), InputError> {
    let size = text.len() as u64;
    // Most documents are far below what is left, and their values need not
    // be counted: a value takes two bytes at least (itself and a comma, a
    // colon or a bracket), but for one, and no more than BYTES_PER_VALUE.
    if size.saturating_mul(1 + BYTES_PER_VALUE / 2).saturating_add(BYTES_PER_VALUE) <= left {
        return Ok(());
    }
    let (values, bytes) = cost();
    let need = size.saturating_add(bytes);
    if need > left {
        return Err(InputError::OverMemory { path: path.to_owned(), what, size, values, need, left });
    }
    Ok(())
}

/// The values of a document and the bytes their parse takes beyond the
/// text: the top-level `records` array's at the typed costs, the rest at
/// [`BYTES_PER_VALUE`] (all of it where the top level is not an object).
fn document_cost(text: &str, records: &str) -> (u64, u64) {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    match (Costed { costs: UNTYPED, typed: Some(records) }).deserialize(&mut de) {
        Ok(c) => (c.values, c.bytes),
        // Not JSON past some point: what is counted up to it is not known
        // here, so every value is counted the untyped way.
        Err(_) => {
            let values = json_values(text);
            (values, values.saturating_mul(BYTES_PER_VALUE))
        }
    }
}

#[derive(Default)]
struct Cost {
    values: u64,
    bytes: u64,
}

impl Cost {
    fn add(&mut self, c: Cost) {
        self.values = self.values.saturating_add(c.values);
        self.bytes = self.bytes.saturating_add(c.bytes);
    }
}

/// What a parsed JSON value of each kind takes beyond its text: a number,
/// a boolean or a null; a string or an array; a map; a map's key.
#[derive(Clone, Copy)]
struct Costs {
    scalar: u64,
    slot: u64,
    map: u64,
    key: u64,
}

/// As `serde_json::Value`s: [`BYTES_PER_VALUE`] each.
const UNTYPED: Costs =
    Costs { scalar: BYTES_PER_VALUE, slot: BYTES_PER_VALUE, map: BYTES_PER_VALUE, key: BYTES_PER_VALUE };

/// As a request record's types: a record or a struct within it has its
/// fields inline, and its keys are its fields' names, kept nowhere
/// (counted as scalars all the same, for a map among its types).
const TYPED: Costs = Costs { scalar: TYPED_SCALAR, slot: TYPED_SLOT, map: TYPED_SCALAR, key: TYPED_SCALAR };

/// A JSON value's count of values (itself and every one within it) and
/// what they take at `costs`, read as the parser passes them (nothing is
/// kept); of a map, the entry named `typed` at [`TYPED`] costs.
#[derive(Clone, Copy)]
struct Costed<'k> {
    costs: Costs,
    typed: Option<&'k str>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Costed<'_> {
    type Value = Cost;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cost, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Costed<'_> {
    type Value = Cost;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.scalar })
    }
    fn visit_i64<E>(self, _: i64) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.scalar })
    }
    fn visit_u64<E>(self, _: u64) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.scalar })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.scalar })
    }
    fn visit_str<E>(self, _: &str) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.slot })
    }
    fn visit_unit<E>(self) -> Result<Cost, E> {
        Ok(Cost { values: 1, bytes: self.costs.scalar })
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Cost, A::Error> {
        let mut c = Cost { values: 1, bytes: self.costs.slot };
        let inner = Costed { typed: None, ..self };
        while let Some(v) = seq.next_element_seed(inner)? {
            c.add(v);
        }
        Ok(c)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Cost, A::Error> {
        let mut c = Cost { values: 1, bytes: self.costs.map };
        let inner = Costed { typed: None, ..self };
        loop {
            // The keys read only where one is looked for (a document's top
            // level), and skipped unread below it.
            let typed = match self.typed {
                Some(name) => match map.next_key::<String>()? {
                    Some(key) => key == name,
                    None => break,
                },
                None => match map.next_key::<serde::de::IgnoredAny>()? {
                    Some(_) => false,
                    None => break,
                },
            };
            c.add(Cost { values: 1, bytes: self.costs.key });
            c.add(map.next_value_seed(if typed { Costed { costs: TYPED, typed: None } } else { inner })?);
        }
        Ok(c)
    }
}

/// A JSON value's count of values, itself and every one within it.
struct Values(u64);

impl<'de> serde::Deserialize<'de> for Values {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::DeserializeSeed;
        Costed { costs: UNTYPED, typed: None }.deserialize(d).map(|c| Values(c.values))
    }
}

/// What `meta` is when it is not a regular file, in words; `None` for a
/// regular file.
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_fifo() {
            return Some("a FIFO (a named pipe, or a <(…) of the shell)");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Opens the regular file at `path`: a device, a FIFO or a folder is
/// refused before it is opened (opening a FIFO would wait for a writer).
/// `what` names the input in messages ("a result document", "--config").
pub fn open_regular(path: &Path, what: &'static str) -> Result<std::fs::File, InputError> {
    let io = |error| InputError::Io { path: path.to_owned(), what, error };
    let meta = std::fs::metadata(path).map_err(io)?;
    if let Some(kind) = not_a_file(&meta) {
        return Err(InputError::NotAFile { path: path.to_owned(), what, kind });
    }
    let f = std::fs::File::open(path).map_err(io)?;
    // The file opened may not be the one looked at (replaced meanwhile).
    if let Some(kind) = f.metadata().ok().as_ref().and_then(not_a_file) {
        return Err(InputError::NotAFile { path: path.to_owned(), what, kind });
    }
    Ok(f)
}

/// Whether `path` is a regular file (following links); false where it
/// cannot be looked at.
pub fn is_regular(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Reads the regular file at `path` ([`open_regular`]) whole, up to `cap`
/// bytes: a file larger than `cap`, or growing past it while read, is
/// refused.
pub fn read_file(path: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>, InputError> {
    let f = open_regular(path, what)?;
    let too_large = || InputError::TooLarge { path: path.to_owned(), what, cap };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > cap {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(len as usize);
    f.take(cap.saturating_add(1)).read_to_end(&mut out).map_err(|error| InputError::Io {
        path: path.to_owned(),
        what,
        error,
    })?;
    if out.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(out)
}

/// [`read_file`] as UTF-8 text.
pub fn read_text(path: &Path, what: &'static str, cap: u64) -> Result<String, InputError> {
    String::from_utf8(read_file(path, what, cap)?).map_err(|e| InputError::NotUtf8At {
        path: path.to_owned(),
        what,
        at: e.utf8_error().valid_up_to() as u64 + 1,
    })
}

/// Opens `path` to be read as a stream (JSON Lines, a line at a time): any
/// file but a folder, whose read would fail with a less clear message.
pub fn open_stream(path: &Path, what: &'static str) -> Result<std::fs::File, InputError> {
    let io = |error| InputError::Io { path: path.to_owned(), what, error };
    if std::fs::metadata(path).map_err(io)?.is_dir() {
        return Err(InputError::NotAFile { path: path.to_owned(), what, kind: "a folder" });
    }
    std::fs::File::open(path).map_err(io)
}

/// One line read by [`LineReader`].
#[derive(Debug)]
pub struct Line<'a> {
    /// 1-based.
    pub number: usize,
    /// Without its line ending (`\n` or `\r\n`).
    pub bytes: &'a [u8],
    /// Whether a newline ended it; only the last line of an input may lack
    /// one (a writer stopped mid-line leaves exactly that).
    pub ended: bool,
}

/// Reads an input a line at a time, never holding more than one line of at
/// most `cap` bytes (and one buffer of the reader): a longer line is an
/// error naming it, read no further.
pub struct LineReader<R> {
    input: R,
    path: PathBuf,
    what: &'static str,
    cap: usize,
    buf: Vec<u8>,
    number: usize,
    done: bool,
}

impl LineReader<std::io::BufReader<std::fs::File>> {
    /// The lines of the file at `path` (see [`open_stream`]), each at most
    /// [`LINE_CAP`]; a compressed file is refused, named as such (its bytes
    /// had been read as a first line of binary, "not JSON").
    pub fn open(path: &Path, what: &'static str) -> Result<Self, InputError> {
        let f = open_stream(path, what)?;
        let mut input = std::io::BufReader::with_capacity(1 << 16, f);
        let head = input.fill_buf().map_err(|error| InputError::Io { path: path.to_owned(), what, error })?;
        if let Some((kind, tool)) = compression(head) {
            return Err(InputError::Compressed { path: path.to_owned(), what, kind, tool });
        }
        if let Some(order) = utf16(head) {
            return Err(InputError::Utf16 { path: path.to_owned(), what, order });
        }
        Ok(LineReader::new(input, path, what, LINE_CAP))
    }
}

/// The compression a file's first bytes announce, and the tool that undoes it.
fn compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const MAGIC: [(&[u8], &str, &str); 5] = [
        (b"\x1f\x8b", "gzip", "gunzip -k"),
        (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d"),
        (b"BZh", "bzip2", "bunzip2 -k"),
        (b"\xfd7zXZ\x00", "xz", "unxz -k"),
        (b"PK\x03\x04", "zip", "unzip"),
    ];
    MAGIC.iter().find(|(magic, _, _)| head.starts_with(magic)).map(|&(_, kind, tool)| (kind, tool))
}

impl<R: BufRead> LineReader<R> {
    pub fn new(input: R, path: &Path, what: &'static str, cap: usize) -> Self {
        LineReader { input, path: path.to_owned(), what, cap, buf: Vec::new(), number: 0, done: false }
    }

    /// The input, to look at what comes next (e.g. its first byte).
    pub fn input(&mut self) -> &mut R {
        &mut self.input
    }

    /// The next line, `None` at the end of the input; after an error, `None`.
    pub fn next_line(&mut self) -> Option<Result<Line<'_>, InputError>> {
        if self.done {
            return None;
        }
        self.buf.clear();
        let ended = match read_capped(&mut self.input, &mut self.buf, self.cap) {
            Ok(Some(ended)) => ended,
            Ok(None) if self.buf.is_empty() => {
                self.done = true;
                return None;
            }
            Ok(None) => unreachable!("read_capped reads a line or nothing"),
            Err(Capped::TooLong) => {
                self.done = true;
                let (path, what, cap) = (self.path.clone(), self.what, self.cap);
                return Some(Err(InputError::LineTooLong { path, what, line: self.number + 1, cap }));
            }
            Err(Capped::Io(error)) => {
                self.done = true;
                return Some(Err(InputError::Io { path: self.path.clone(), what: self.what, error }));
            }
        };
        self.number += 1;
        if !ended {
            self.done = true;
        }
        let mut bytes = &self.buf[..];
        if ended {
            bytes = &bytes[..bytes.len() - 1];
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        }
        Some(Ok(Line { number: self.number, bytes, ended }))
    }
}

enum Capped {
    TooLong,
    Io(std::io::Error),
}

/// Appends one line of `input` to `buf`, its newline included: `Some(true)`
/// when a newline ended it, `Some(false)` for a last line without one,
/// `None` at the end of the input. Stops, having held at most `cap` bytes
/// of it, at a line longer than `cap`.
fn read_capped<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, cap: usize) -> Result<Option<bool>, Capped> {
    loop {
        let avail = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Capped::Io(e)),
        };
        if avail.is_empty() {
            return Ok((!buf.is_empty()).then_some(false));
        }
        let (take, ended) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        let content = buf.len() + take - usize::from(ended);
        if content > cap {
            return Err(Capped::TooLong);
        }
        buf.extend_from_slice(&avail[..take]);
        input.consume(take);
        if ended {
            return Ok(Some(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], cap: usize) -> Vec<Result<(usize, String, bool), String>> {
        let mut r = LineReader::new(std::io::BufReader::with_capacity(4, text), Path::new("f.jsonl"), "a test", cap);
        let mut out = Vec::new();
        while let Some(l) = r.next_line() {
            out.push(
                l.map(|l| (l.number, String::from_utf8_lossy(l.bytes).into_owned(), l.ended))
                    .map_err(|e| e.to_string()),
            );
        }
        out
    }

    #[test]
    fn a_compressed_file_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("goodput-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gz = dir.join("trace.jsonl.gz");
        std::fs::write(&gz, b"\x1f\x8b\x08\x00binary").unwrap();
        let err = LineReader::open(&gz, "the trace").err().unwrap().to_string();
        assert!(err.contains("gzip-compressed") && err.contains("gunzip -k"), "{err}");
        let plain = dir.join("trace.jsonl");
        std::fs::write(&plain, b"{}\n").unwrap();
        assert!(LineReader::open(&plain, "the trace").is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn utf16_text_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let utf16 = |text: &str, big: bool, bom: bool| {
            let mut out: Vec<u8> = if !bom {
                vec![]
            } else if big {
                vec![0xfe, 0xff]
            } else {
                vec![0xff, 0xfe]
            };
            for u in text.encode_utf16() {
                out.extend(if big { u.to_be_bytes() } else { u.to_le_bytes() });
            }
            out
        };
        for (big, bom, order) in
            [(false, true, "little-endian"), (true, true, "big-endian"), (false, false, "little-endian")]
        {
            let p = dir.path().join("d.jsonl");
            std::fs::write(&p, utf16("{\"prompt\": \"hi\"}\n", big, bom)).unwrap();
            let err = LineReader::open(&p, "the dataset").err().unwrap().to_string();
            assert!(err.contains(&format!("is UTF-16 text ({order})")), "{err}");
            assert!(err.contains("iconv -f utf-16 -t utf-8"), "{err}");
        }
        // UTF-8 text, in any script, is read.
        let p = dir.path().join("u.jsonl");
        std::fs::write(&p, "{\"prompt\": \"你好\"}\n").unwrap();
        assert!(LineReader::open(&p, "the dataset").is_ok());
        // Latin-1 read whole: the byte named, and the fix.
        std::fs::write(&p, b"[{\"prompt\": \"caf\xe9\"}]").unwrap();
        let err = read_text(&p, "the dataset", 1 << 20).unwrap_err().to_string();
        assert!(err.contains("byte 17 of the file is not") && err.contains("iconv -f latin1 -t utf-8"), "{err}");
    }

    #[test]
    fn a_json_fault_names_its_column_without_serde_s_line() {
        let e = serde_json::from_str::<serde_json::Value>("{\"prompt\": \"cut").unwrap_err();
        let (words, column) = json_fault(&e);
        assert_eq!((words.as_str(), column), ("EOF while parsing a string", 15));
        assert!(!words.contains("line"), "{words}");
    }

    #[test]
    fn lines_are_read_one_at_a_time_up_to_the_cap() {
        let got = lines(b"ab\r\n\ncdefgh\nij", 6);
        let ok: Vec<_> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            ok,
            [(1, "ab".into(), true), (2, "".into(), true), (3, "cdefgh".into(), true), (4, "ij".into(), false)]
        );
        let got = lines(b"ab\ncdefghi\nj\n", 6);
        assert_eq!(got[0], Ok((1, "ab".into(), true)));
        let e = got[1].clone().unwrap_err();
        assert!(e.contains("f.jsonl: line 2 is longer than 6 bytes"), "{e}");
        assert_eq!(got.len(), 2, "nothing is read after the line too long");
        assert!(lines(b"", 6).is_empty());
    }

    #[test]
    fn a_file_read_whole_is_a_regular_file_within_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_file(dir.path(), "--config", 10).unwrap_err().to_string();
        assert!(e.contains("is a folder, not a file to read --config from: give the file itself"), "{e}");
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_text(&f, "--config", 10).unwrap(), "0123456789");
        let e = read_file(&f, "--config", 9).unwrap_err().to_string();
        assert!(e.contains("is larger than 9 bytes (the most goodput reads of --config)"), "{e}");
        #[cfg(unix)]
        {
            let e = read_file(Path::new("/dev/zero"), "a result document", 1 << 20).unwrap_err().to_string();
            assert!(e.contains("/dev/zero is a character device"), "{e}");
        }
        assert_eq!(size(LINE_CAP as u64), "64 MiB");
        assert_eq!(size(DOCUMENT_CAP), "4 GiB");
    }

    #[test]
    fn json_values_are_counted_without_being_kept() {
        assert_eq!(json_values(r#"{"a": [1, 2, {"b": null}], "c": "x"}"#), 10);
        assert_eq!(json_values("[]"), 1);
        // JSON Lines, and text that stops being JSON: counted up to there.
        assert_eq!(json_values("{\"a\": 1}\n[true, false]\n"), 6);
        assert_eq!(json_values("[1, 2] not json [3]"), 3);
        assert_eq!(json_values(""), 0);
    }

    /// A result's request records are counted at what their types take,
    /// the rest of the document as `serde_json::Value`s: the same values
    /// under `extra` (an open map) cost three times what they do as records.
    #[test]
    fn request_records_are_counted_at_what_their_types_take() {
        let path = Path::new("run.json");
        let record = r#"{"id": 1, "chunks": [[1, 2], [3, 4]], "finish_reason": "stop", "quality": null}"#;
        let records = vec![record; 1000].join(",");
        let typed = format!("{{\"schema\": \"goodput/v1\", \"requests\": [{records}]}}");
        let open = format!("{{\"schema\": \"goodput/v1\", \"extra\": [{records}]}}");
        // A record: its map (16), four keys (4 × 16), the id (16), the chunks'
        // arrays (3 × 48) and numbers (4 × 16), a string (48) and a null (16).
        let per_record = 16 + 4 * 16 + 16 + 3 * 48 + 4 * 16 + 48 + 16;
        let values = json_values(&typed);
        let (n, bytes) = document_cost(&typed, "requests");
        assert_eq!(n, values);
        // The top level (1 map, 2 keys, the schema) and the records' array.
        assert_eq!(bytes, 4 * BYTES_PER_VALUE + 48 + 1000 * per_record);
        let (n, open_bytes) = document_cost(&open, "requests");
        assert_eq!((n, open_bytes), (values, values * BYTES_PER_VALUE));
        assert!(open_bytes > 3 * bytes, "{open_bytes} {bytes}");
        // Memory enough for the typed count and not for the open one: the
        // records pass, the open map is refused.
        let left = typed.len() as u64 + bytes;
        assert!(typed_parse_fits(path, "the result", &typed, "requests", left).is_ok());
        let e = typed_parse_fits(path, "the result", &open, "requests", left).unwrap_err().to_string();
        assert!(e.contains("more than the"), "{e}");
        // Text that stops being JSON is counted the untyped way.
        let broken = &typed[..typed.len() / 2];
        assert_eq!(document_cost(broken, "requests").1, json_values(broken) * BYTES_PER_VALUE);
    }

    /// A document whose parsed form would pass the memory left is refused
    /// before it is parsed, saying so: a result of 300 MB, a list of 150
    /// million zeros, had aborted `goodput report` under `ulimit -v 6000000`
    /// (an allocation of 4 GiB failed in the parse).
    #[test]
    fn a_document_too_large_for_the_memory_left_is_refused_before_parsing() {
        let path = Path::new("big.json");
        let zeros = format!("{{\"schema\": \"goodput/v1\", \"extra\": [{}]}}", vec!["0"; 100_000].join(","));
        let values = 100_000 + 5;
        let need = zeros.len() as u64 + values * BYTES_PER_VALUE;
        assert!(parse_fits(path, "the result", &zeros, need).is_ok());
        let e = parse_fits(path, "the result", &zeros, need / 2).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "big.json (the result) is 195.3 KiB of JSON in 100005 values, and reading it takes about 7.8 MiB, \
                 more than the 3.9 MiB this process has left"
            ) && e.contains("raise the limit"),
            "{e}"
        );
        // Text and little else: a long string is one value.
        let text = format!("{{\"a\": \"{}\"}}", "x".repeat(1 << 20));
        assert!(parse_fits(path, "the result", &text, (1 << 20) + 1000).is_ok());
    }

    #[test]
    fn the_memory_left_is_read_from_proc() {
        assert_eq!(mem_available("MemTotal: 100 kB\nMemAvailable:   2048 kB\n"), Some(2 << 20));
        assert_eq!(mem_available("MemTotal: 100 kB\n"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max address space         6144000000           6144000000           bytes\n";
        let status = "Name:\tgoodput\nVmSize:\t  1000000 kB\n";
        assert_eq!(address_space_room(limits, status), Some(6_144_000_000 - 1_024_000_000));
        let unlimited = "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_room(unlimited, status), None);
        if cfg!(target_os = "linux") {
            assert!(memory_left().is_some_and(|m| m > 0));
        }
    }
}
