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
    #[error("{} is not UTF-8 text: {what} is UTF-8", path.display())]
    NotUtf8 { path: PathBuf, what: &'static str },
    #[error(
        "{} is {kind}-compressed, and goodput reads {what} as plain text: decompress it first (e.g. {tool} {})",
        path.display(),
        path.display()
    )]
    Compressed { path: PathBuf, what: &'static str, kind: &'static str, tool: &'static str },
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
    String::from_utf8(read_file(path, what, cap)?).map_err(|_| InputError::NotUtf8 { path: path.to_owned(), what })
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
}
