//! The per-request records file (`--records`): one JSON line per request,
//! written the moment it completes, or (`--records FILE.parquet`) one
//! Parquet row per request; read back by `report` and `merge` (and by
//! anything that recomputes a run from its records), whichever the form.

use goodput_core::RequestRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

#[cfg(feature = "parquet")]
mod parquet;

/// What can go wrong with a records file, each naming the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("cannot create the records file {}: {err}", path.display())]
    Create { path: PathBuf, err: std::io::Error },
    #[error("cannot start the records writer thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot write the records file {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("cannot read {}: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    /// Not a file to read records from, or a line past the cap.
    #[error(transparent)]
    Input(#[from] goodput_core::util::input::InputError),
    #[error(
        "{} holds request {id} twice ({unit}s {first} and {again}): a records file names each request once; is it \
         two files put together? Pass the records file the run wrote",
        path.display()
    )]
    Duplicate { path: PathBuf, id: u64, unit: &'static str, first: usize, again: usize },
    /// A records file that holds another number of records than its run sent.
    #[error(
        "{} holds {held} records, where {} says {expected} requests were sent ({sent} measured, {warmup} warm-up): \
         the records are cut short, or not that run's; pass the records file the run wrote, whole",
        path.display(),
        result.display()
    )]
    Count { path: PathBuf, result: PathBuf, held: u64, expected: u64, sent: u64, warmup: u64 },
    #[error("{} line {line} is not a goodput record: {err}", path.display())]
    NotARecord { path: PathBuf, line: usize, err: serde_json::Error },
    /// Times in an order no request has: edited or damaged.
    #[error("{} line {line} holds request {id}, whose {what}: the file was edited or damaged", path.display())]
    OutOfOrder { path: PathBuf, line: usize, id: u64, what: String },
    #[error(
        "{} holds records of run {other}, not of this result's run {run_id}: pass the records file written \
         with this result (--records of the same run)",
        path.display()
    )]
    OtherRun { path: PathBuf, other: String, run_id: String },
    #[error("{} is not a readable Parquet records file: {why}", path.display())]
    Parquet { path: PathBuf, why: String },
    #[error("{} row {row} is not a goodput record: {why}", path.display())]
    ParquetRow { path: PathBuf, row: usize, why: String },
    #[error(
        "{} is a Parquet file, and this goodput was built without Parquet: build it with its default features \
         (the `parquet` feature), or give a JSON Lines records file (--records FILE.jsonl)",
        path.display()
    )]
    NoParquet { path: PathBuf },
}

/// Whether records written to `path` are Parquet: its extension is
/// `.parquet`, in any case. Any other is JSON Lines.
pub fn is_parquet_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Whether the file at `path` is Parquet to read: by its extension, or, a
/// regular file, by the magic bytes every Parquet file begins with (a FIFO
/// is not opened to look: that would wait for its writer and take what it
/// wrote).
fn reads_as_parquet(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    is_parquet_path(path)
        || goodput_core::util::input::is_regular(path)
            && std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
            && &magic == b"PAR1"
}

/// A file written to, and how many bytes went to it.
struct Counted {
    file: std::fs::File,
    written: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Where the writer thread puts records.
enum Sink {
    Jsonl(std::io::BufWriter<Counted>),
    #[cfg(feature = "parquet")]
    Parquet(Box<parquet::ParquetSink<std::io::BufWriter<Counted>>>),
}

/// The regular file a records file was made as: its device and inode, to
/// tell at the end whether it is still the file written.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Made {
    dev: u64,
    ino: u64,
}

impl Made {
    fn of(meta: &std::fs::Metadata) -> Option<Made> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            meta.is_file().then(|| Made { dev: meta.dev(), ino: meta.ino() })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }
}

impl Sink {
    /// A new records file at `path`, its form chosen by its extension; and,
    /// where it is a regular file, what it was made as.
    ///
    /// Opened to append (and emptied first): should the file be cut short
    /// while the run writes (a `> file` of a shell, a log rotation), what
    /// follows goes after what is left rather than at the old offset, past
    /// a hole of NUL bytes.
    fn create(path: &Path) -> Result<(Sink, Option<Made>), RecordsError> {
        #[cfg(not(feature = "parquet"))]
        if is_parquet_path(path) {
            return Err(RecordsError::NoParquet { path: path.to_owned() });
        }
        let err = |err| RecordsError::Create { path: path.to_owned(), err };
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
        let made = f.metadata().ok().as_ref().and_then(Made::of);
        // A FIFO or a device (written in place) has nothing to empty.
        if made.is_some() {
            f.set_len(0).map_err(err)?;
        }
        let out = std::io::BufWriter::new(Counted { file: f, written: 0 });
        #[cfg(feature = "parquet")]
        if is_parquet_path(path) {
            let p = parquet::ParquetSink::new(out)
                .map_err(|e| RecordsError::Create { path: path.to_owned(), err: std::io::Error::other(e) })?;
            return Ok((Sink::Parquet(Box::new(p)), made));
        }
        Ok((Sink::Jsonl(out), made))
    }

    fn write(&mut self, r: &RequestRecord) -> std::io::Result<()> {
        match self {
            Sink::Jsonl(out) => {
                // The chunks packed (see goodput_core::doc::chunks): a few bytes each.
                serde_json::to_writer(&mut *out, &goodput_core::doc::chunks::PackedRecord(r))
                    .map_err(std::io::Error::other)
                    .and_then(|_| out.write_all(b"\n"))
            }
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => p.write(r).map_err(std::io::Error::other),
        }
    }

    /// After each batch: JSON lines go to disk at once; Parquet's row
    /// groups go out as they fill.
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Jsonl(out) => out.flush(),
            #[cfg(feature = "parquet")]
            Sink::Parquet(_) => Ok(()),
        }
    }

    /// Writes what is left, and gives how many bytes went to the file.
    fn finish(self) -> std::io::Result<u64> {
        let out = match self {
            Sink::Jsonl(out) => out,
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => p.finish().map_err(std::io::Error::other)?,
        };
        out.into_inner().map(|c| c.written).map_err(|e| e.into_error())
    }
}

/// A warning when the file at `path` is no longer the records file written
/// (`made`, `written` bytes): deleted, replaced, cut short or written to
/// by another hand while the run went on. `None` when it is as written.
fn changed_meanwhile(path: &Path, made: Made, written: u64) -> Option<String> {
    let now = std::fs::metadata(path).ok();
    let what = match now {
        None => "was deleted while the run wrote it: its records are lost".to_string(),
        Some(m) if Made::of(&m) != Some(made) => {
            "was replaced while the run wrote it: the file there now is not the one written, and its records are lost"
                .to_string()
        }
        Some(m) if m.len() != written => format!(
            "holds {} bytes where the run wrote {written}: it was cut short or written to while the run went on, \
             and its records are not all there (a report of it reads the complete lines left)",
            m.len()
        ),
        Some(_) => return None,
    };
    Some(format!(
        "warning: the records file {} {what}; keep records in the result with --include-requests",
        path.display()
    ))
}

/// Writes each record as one JSON line, flushed, the moment it completes
/// (or, to a `.parquet` path, as a Parquet row: buffered, a row group at a
/// time, and readable once the file is dropped, which writes its footer).
/// The serialising and writing happen on a thread of their own: at 1,000
/// streams in step, a thousand records of hundreds of chunks each complete
/// together, and writing them on the runtime's thread stalls the streams
/// still reading (the largest ITL error measured fell from 40–50 ms to
/// 27–31 ms with the thread). Dropping the file waits until every record
/// sent is on disk.
pub struct RecordFile {
    run_id: String,
    tx: Option<std::sync::mpsc::Sender<RequestRecord>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl RecordFile {
    /// A records file of run `run_id`, which every record written names.
    ///
    /// Should a write fail (a full disk), the run goes on, and the records
    /// that could not be written are counted and said at the end; should
    /// the file be deleted, replaced or cut short meanwhile, the end says
    /// that too.
    pub fn create(path: &Path, run_id: &str) -> Result<Self, RecordsError> {
        let (mut sink, made) = Sink::create(path)?;
        let (tx, rx) = std::sync::mpsc::channel::<RequestRecord>();
        let path = path.to_owned();
        let writer = std::thread::Builder::new()
            .name("goodput-records".into())
            .spawn(move || {
                let (mut written, mut failed) = (0usize, None);
                while let Ok(first) = rx.recv() {
                    // Whatever else is waiting goes out with it, then one flush.
                    let batch: Vec<RequestRecord> = std::iter::once(first).chain(rx.try_iter()).collect();
                    match batch.iter().try_for_each(|r| sink.write(r)).and_then(|_| sink.flush()) {
                        Ok(()) => written += batch.len(),
                        // A batch that failed may have reached the disk in part: a line cut short.
                        Err(e) => {
                            failed = Some((e, batch.len()));
                            break;
                        }
                    }
                }
                if let Some((e, batch)) = failed {
                    // The rest of the run's records have nowhere to go: counted, not held.
                    let lost = batch + rx.iter().count();
                    goodput_core::tell!(
                        "warning: writing records to {} failed ({e}) after {written} records; the {lost} records \
                         from then on were not written (the result holds every record with --include-requests)",
                        path.display()
                    );
                    return;
                }
                match sink.finish() {
                    Err(e) => {
                        goodput_core::tell!("warning: finishing the records file {} failed ({e})", path.display())
                    }
                    Ok(bytes) => {
                        if let Some(w) = made.and_then(|m| changed_meanwhile(&path, m, bytes)) {
                            goodput_core::tell!("{w}");
                        }
                    }
                }
            })
            .map_err(RecordsError::Thread)?;
        Ok(RecordFile { run_id: run_id.to_owned(), tx: Some(tx), writer: Some(writer) })
    }

    pub fn write(&mut self, r: &RequestRecord) {
        if let Some(tx) = &self.tx {
            // A send fails only when the writer gave up (and said why).
            let _ = tx.send(RequestRecord { run_id: Some(self.run_id.clone()), ..r.clone() });
        }
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// Writes `records` as a records file of run `run_id` (JSON Lines, or
/// Parquet by its extension) on this thread, a record at a time: what
/// `merge` writes, without a copy of every record queued for a writer.
pub fn write_records(path: &Path, run_id: &str, records: &[RequestRecord]) -> Result<(), RecordsError> {
    let (mut sink, _) = Sink::create(path)?;
    let err = |err| RecordsError::Write { path: path.to_owned(), err };
    for r in records {
        // One record's copy at a time, to name its run.
        sink.write(&RequestRecord { run_id: Some(run_id.to_owned()), ..r.clone() }).map_err(err)?;
    }
    sink.finish().map(drop).map_err(err)
}

/// A new run's name: its start in nanoseconds and the process, in hex.
pub fn new_run_id() -> String {
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{ns:x}-{:x}", std::process::id())
}

/// Reads a records file one record at a time, in the order written: JSON
/// Lines holding one line at a time, so that `report` and `merge` of a long
/// run never hold the file's text, nor more than a record's worth of it; or
/// Parquet (by its `.parquet` extension or its first bytes), a row group at
/// a time. Reads both forms of the JSON chunks (see
/// [`goodput_core::Chunks`]): the packed one written now, and the array of
/// chunk objects of older files.
///
/// A last JSON line cut short (a full disk, a killed writer leave exactly
/// that) is left out with a warning, and the complete lines are read; a bad
/// line anywhere else is an error. A Parquet file is readable only whole: a
/// killed writer leaves it without its footer, and it is refused, saying so.
pub struct RecordsReader {
    path: PathBuf,
    inner: Inner,
}

enum Inner {
    Jsonl(JsonLines),
    #[cfg(feature = "parquet")]
    Parquet(Box<parquet::ParquetRows>),
}

struct JsonLines {
    /// A line at a time, each at most [`goodput_core::util::input::LINE_CAP`].
    input: goodput_core::util::input::LineReader<std::io::BufReader<std::fs::File>>,
    /// Records read so far.
    read: usize,
    /// The line of the record last read.
    line: usize,
    /// After a bad line nothing more is read.
    done: bool,
    /// The line cut short at the file's end, if it was (the writer stopped
    /// mid-line): the records before it were read.
    cut: Option<usize>,
}

impl RecordsReader {
    pub fn open(path: &Path) -> Result<Self, RecordsError> {
        if reads_as_parquet(path) {
            #[cfg(feature = "parquet")]
            return Ok(RecordsReader {
                path: path.to_owned(),
                inner: Inner::Parquet(Box::new(parquet::ParquetRows::open(path)?)),
            });
            #[cfg(not(feature = "parquet"))]
            return Err(RecordsError::NoParquet { path: path.to_owned() });
        }
        let input = goodput_core::util::input::LineReader::open(path, "the records file")?;
        Ok(RecordsReader {
            path: path.to_owned(),
            inner: Inner::Jsonl(JsonLines { input, read: 0, line: 0, done: false, cut: None }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the file was read only in part, once it has been read: its last
    /// line was cut short (the writer stopped mid-line), and the records
    /// before it were read.
    pub fn cut_short(&self) -> Option<String> {
        match &self.inner {
            Inner::Jsonl(JsonLines { cut: Some(line), read, .. }) => Some(format!(
                "{} line {line} was cut short (the writer stopped mid-line): the {read} complete records before it \
                 were read",
                self.path.display()
            )),
            _ => None,
        }
    }

    /// Where the record last read is: its line (JSON Lines) or row
    /// (Parquet), from 1.
    pub fn position(&self) -> (&'static str, usize) {
        match &self.inner {
            Inner::Jsonl(j) => ("line", j.line),
            #[cfg(feature = "parquet")]
            Inner::Parquet(p) => ("row", p.rows_read()),
        }
    }
}

impl Iterator for RecordsReader {
    type Item = Result<RequestRecord, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Jsonl(j) => j.next(&self.path),
            #[cfg(feature = "parquet")]
            Inner::Parquet(p) => p.next_record(),
        }
    }
}

impl JsonLines {
    fn next(&mut self, path: &Path) -> Option<Result<RequestRecord, RecordsError>> {
        while !self.done {
            let line = match self.input.next_line()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e.into())),
            };
            if line.bytes.trim_ascii().is_empty() {
                continue;
            }
            // A byte-order mark some editors write first, which JSON does
            // not allow (the result reader strips it too).
            let bytes = if line.number == 1 {
                line.bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line.bytes)
            } else {
                line.bytes
            };
            match serde_json::from_slice::<RequestRecord>(bytes) {
                Ok(r) => {
                    if let Some(what) = r.time_fault() {
                        self.done = true;
                        return Some(Err(RecordsError::OutOfOrder {
                            path: path.to_owned(),
                            line: line.number,
                            id: r.id,
                            what,
                        }));
                    }
                    self.read += 1;
                    self.line = line.number;
                    return Some(Ok(r));
                }
                // Cut: the last line, with no newline after it.
                Err(e) if !line.ended && e.is_eof() => {
                    self.done = true;
                    self.cut = Some(line.number);
                    goodput_core::tell!(
                        "warning: {} line {} was cut short (the writer stopped mid-line); read the {} complete \
                         records before it",
                        path.display(),
                        line.number,
                        self.read
                    );
                    return None;
                }
                Err(err) => {
                    let (path, line) = (path.to_owned(), line.number);
                    self.done = true;
                    return Some(Err(RecordsError::NotARecord { path, line, err }));
                }
            }
        }
        None
    }
}

/// Reads every record of a records file (see [`RecordsReader`]).
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, RecordsError> {
    RecordsReader::open(path)?.collect()
}

/// Reads the records of run `run_id` from `path`, refusing the file at the
/// first record of another run (see [`check_records_belong`]), or the
/// second of one request ([`UniqueIds`]).
pub fn read_run_records(path: &Path, run_id: &str) -> Result<Vec<RequestRecord>, RecordsError> {
    Ok(read_belonging(path, run_id, Vec::new())?.0)
}

/// [`read_run_records`]' reading, into `out` (which may have room
/// reserved), and what [`RecordsReader::cut_short`] says of the file.
fn read_belonging(
    path: &Path,
    run_id: &str,
    mut out: Vec<RequestRecord>,
) -> Result<(Vec<RequestRecord>, Option<String>), RecordsError> {
    let mut ids = UniqueIds::default();
    let mut reader = RecordsReader::open(path)?;
    while let Some(r) = reader.next() {
        let r = r?;
        check_records_belong(std::slice::from_ref(&r), run_id, path)?;
        ids.check(r.id, reader.position(), path)?;
        out.push(r);
    }
    Ok((out, reader.cut_short()))
}

/// Places to reserve for the `expected` records a result counts in the
/// records file `path`: no more than the file's bytes could hold (a
/// record's line is longer than 64 bytes; a compressed Parquet record may
/// be shorter, and the vector then grows), so that a damaged count cannot
/// ask for more memory than the file's size. Grown by doubling, a vector
/// of the records had reserved up to twice the run's (300,000 records:
/// 524,288 places), and held the old places beside the new while it
/// moved them.
pub fn room_for(path: &Path, expected: u64) -> usize {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    usize::try_from(expected.min(bytes / 64)).unwrap_or(0)
}

/// The records of `run` (its result, read from `result`) in `path`, read as
/// [`read_run_records`] reads them and counted against the requests the
/// result says were sent, measured and warm-up, as `merge` counts a shard's:
/// a file that holds another number is refused (half a records file had
/// been analysed as a run of half the requests, without a word). A file
/// whose last line was cut short (the writer stopped mid-line) is read as
/// far as it goes, and the warning returned says so, for the result's
/// `warnings`. A result of `report --window` counts only its window's
/// requests, and is not counted against.
pub fn read_counted_records(
    path: &Path,
    run: &goodput_core::RunResult,
    result: &Path,
) -> Result<(Vec<RequestRecord>, Option<String>), RecordsError> {
    let q = &run.summary.requests;
    let expected = q.recorded();
    let counted = run.config.report_window.is_none();
    let mut out = Vec::new();
    if counted {
        // A reservation the allocator refuses is only a lost hint.
        let _ = out.try_reserve_exact(room_for(path, expected));
    }
    let (out, cut) = read_belonging(path, &run.run_id, out)?;
    let held = out.len() as u64;
    match cut {
        Some(cut) if counted && held != expected => Ok((
            out,
            Some(format!(
                "{cut}, where {} says {expected} requests were sent: the figures are over those {held} alone",
                result.display()
            )),
        )),
        None if counted && held != expected => Err(RecordsError::Count {
            path: path.to_owned(),
            result: result.to_owned(),
            held,
            expected,
            sent: q.sent,
            warmup: q.warmup,
        }),
        cut => Ok((out, cut)),
    }
}

/// The request ids met so far in a records file, each with the line (or
/// row) it was on: a run's records name each request once, so a second is
/// a file put together from two (one concatenated with itself reads as a
/// run of twice the requests).
#[derive(Debug, Default)]
pub struct UniqueIds(std::collections::HashMap<u64, usize>);

impl UniqueIds {
    /// Notes request `id`, read at `at` (a line or row, from 1: see
    /// [`RecordsReader::position`]) of `path`; refuses it when it was met
    /// before.
    pub fn check(&mut self, id: u64, (unit, at): (&'static str, usize), path: &Path) -> Result<(), RecordsError> {
        match self.0.insert(id, at) {
            Some(first) => Err(RecordsError::Duplicate { path: path.to_owned(), id, unit, first, again: at }),
            None => Ok(()),
        }
    }
}

/// Refuses records that another run wrote: those of `path` must name the
/// run `run_id` names (records and results from before run ids are taken
/// as they are).
pub fn check_records_belong(records: &[RequestRecord], run_id: &str, path: &Path) -> Result<(), RecordsError> {
    if run_id.is_empty() {
        return Ok(());
    }
    match records.iter().filter_map(|r| r.run_id.as_deref()).find(|id| *id != run_id) {
        Some(other) => {
            Err(RecordsError::OtherRun { path: path.to_owned(), other: other.to_owned(), run_id: run_id.to_owned() })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn records_written_read_back_with_their_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        {
            let mut f = RecordFile::create(&path, "run-a").unwrap();
            for id in 0..3 {
                f.write(&RequestRecord::new(id, Duration::ZERO, Duration::from_millis(id)));
            }
        }
        let back = read_records(&path).unwrap();
        assert_eq!(back.iter().map(|r| r.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(back.iter().all(|r| r.run_id.as_deref() == Some("run-a")));
        assert!(check_records_belong(&back, "run-a", &path).is_ok());
        let e = check_records_belong(&back, "run-b", &path).unwrap_err().to_string();
        assert!(e.contains("holds records of run run-a, not of this result's run run-b"), "{e}");
        // A bad line in the middle is an error naming it.
        std::fs::write(&path, "{}\nnot json\n{}\n").unwrap();
        let e = read_records(&path).unwrap_err().to_string();
        assert!(e.contains("line 1 is not a goodput record") || e.contains("line 2 is not a goodput record"), "{e}");
        let e = RecordFile::create(&dir.path().join("no/such/folder/r.jsonl"), "x").err().unwrap().to_string();
        assert!(e.starts_with("cannot create the records file"), "{e}");
    }

    /// A records file cut short while the run writes it (a `> file`, a log
    /// rotation) goes on at its new end, with no hole of NUL bytes where
    /// the old records were, and what is left reads.
    #[test]
    fn a_records_file_cut_short_mid_run_goes_on_at_its_new_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let mut f = RecordFile::create(&path, "run-a").unwrap();
        f.write(&RequestRecord::new(0, Duration::ZERO, Duration::ZERO));
        let t0 = std::time::Instant::now();
        while std::fs::metadata(&path).unwrap().len() == 0 {
            assert!(t0.elapsed() < Duration::from_secs(30), "the first record was never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        f.write(&RequestRecord::new(1, Duration::ZERO, Duration::ZERO));
        drop(f);
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.contains(&0), "a hole of NUL bytes: {:?}", String::from_utf8_lossy(&bytes));
        assert_eq!(read_records(&path).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [1]);
    }

    /// The end of a run tells a records file deleted, replaced or cut short
    /// from the one it wrote.
    #[test]
    fn a_records_file_changed_meanwhile_is_told_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        std::fs::write(&path, "0123456789").unwrap();
        let made = Made::of(&std::fs::metadata(&path).unwrap()).unwrap();
        assert_eq!(changed_meanwhile(&path, made, 10), None);
        let cut = changed_meanwhile(&path, made, 25).unwrap();
        assert!(cut.contains("holds 10 bytes where the run wrote 25"), "{cut}");
        let other = dir.path().join("other.jsonl");
        std::fs::write(&other, "0123456789").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let replaced = changed_meanwhile(&path, made, 10).unwrap();
        assert!(replaced.contains("was replaced"), "{replaced}");
        std::fs::remove_file(&path).unwrap();
        let deleted = changed_meanwhile(&path, made, 10).unwrap();
        assert!(deleted.contains("was deleted") && deleted.contains("--include-requests"), "{deleted}");
    }

    /// A line of a records file from before the chunks were packed.
    const OLD_LINE: &str = r#"{"id":0,"run_id":"18eb4dcacdad46d5-2a8c","scheduled_ns":1638695,"sent_ns":1782750,"first_byte_ns":17320407,"chunks":[{"t_ns":26464742,"tokens":1,"channel":"content"},{"t_ns":34675985,"tokens":1,"channel":"content"},{"t_ns":42874160,"tokens":1,"channel":"content"}],"stream_end_ns":543909396,"end_ns":543978629,"input_tokens":291,"input_tokens_source":"usage","output_tokens":3,"output_tokens_source":"usage","chunk_tokens_source":"even","counts":{"usage_prompt":291,"usage_completion":3,"usage_cached_prompt":0,"intended_prompt":256,"requested_completion":64,"chunks":3},"http_status":200,"finish_reason":"length","read_lag_max_ns":61182,"outcome":{"status":"success"}}"#;

    #[test]
    fn chunks_are_written_packed_and_older_files_still_read() {
        use goodput_core::{Channel, OutputChunk};
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old.jsonl"), dir.path().join("new.jsonl"));
        std::fs::write(&old, format!("{OLD_LINE}\n")).unwrap();
        let from_old = read_run_records(&old, "18eb4dcacdad46d5-2a8c").unwrap();
        let times: Vec<u64> = from_old[0].chunks.iter().map(|c| c.t.as_nanos() as u64).collect();
        assert_eq!(times, [26_464_742, 34_675_985, 42_874_160]);
        assert!(from_old[0].chunks.iter().all(|c| c.tokens == 1 && c.channel == Channel::Content));
        // Written again, the same record packs its chunks, and reads back the same.
        {
            let mut f = RecordFile::create(&new, "18eb4dcacdad46d5-2a8c").unwrap();
            f.write(&from_old[0]);
            let mut two = from_old[0].clone();
            two.id = 1;
            two.chunks.push(OutputChunk { t: Duration::from_millis(50), tokens: 2, channel: Channel::ToolCalls });
            f.write(&two);
        }
        let text = std::fs::read_to_string(&new).unwrap();
        let first = text.lines().next().unwrap();
        assert!(first.contains(r#""chunks":{"t_ns":""#) && first.contains(r#","tokens":1}"#), "{first}");
        assert!(first.len() < OLD_LINE.len() - 60, "{first}");
        let back: Vec<RequestRecord> = RecordsReader::open(&new).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(back[0], from_old[0]);
        assert_eq!((back[1].chunks.len(), back[1].chunks.last().unwrap().tokens), (4, 2));
        // Both forms in one file (a file appended to by a newer build) read too.
        std::fs::write(&old, format!("{OLD_LINE}\n{text}")).unwrap();
        assert_eq!(read_records(&old).unwrap().len(), 3);
    }

    #[test]
    fn a_streamed_file_is_checked_against_its_run_and_a_cut_last_line_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let second = OLD_LINE.replacen(r#"{"id":0,"#, r#"{"id":1,"#, 1);
        std::fs::write(&path, format!("{OLD_LINE}\n\n{second}\n{}", &OLD_LINE[..OLD_LINE.len() / 2])).unwrap();
        assert_eq!(read_run_records(&path, "18eb4dcacdad46d5-2a8c").unwrap().len(), 2);
        // A request twice: a file put together from two.
        std::fs::write(&path, format!("{OLD_LINE}\n\n{second}\n{OLD_LINE}\n")).unwrap();
        let e = read_run_records(&path, "18eb4dcacdad46d5-2a8c").unwrap_err().to_string();
        assert!(e.contains("r.jsonl holds request 0 twice (lines 1 and 4)"), "{e}");
        let e = read_run_records(&path, "another").unwrap_err().to_string();
        assert!(e.contains("holds records of run 18eb4dcacdad46d5-2a8c, not of this result's run another"), "{e}");
        // Cut in the middle of the file, a line is an error naming it.
        std::fs::write(&path, format!("{}\n{OLD_LINE}\n", &OLD_LINE[..100])).unwrap();
        let e = read_records(&path).unwrap_err().to_string();
        assert!(e.contains("line 1 is not a goodput record"), "{e}");
    }

    /// A record with every field filled, in the ways a run fills them.
    #[cfg(feature = "parquet")]
    fn full_record(id: u64) -> RequestRecord {
        use goodput_core::quality::RequestQuality;
        use goodput_core::{
            Channel, ChunkTokenSource, CountSource, FailureKind, Outcome, OutputChunk, SessionTurn, TokenCounts,
        };
        let ms = Duration::from_millis;
        let mut r = RequestRecord::new(id, ms(id), ms(id) + Duration::from_nanos(123_457));
        r.warmup = id == 0;
        r.first_byte = Some(ms(id + 20));
        for (k, channel) in
            [Channel::Reasoning, Channel::Reasoning, Channel::Content, Channel::ToolCalls].into_iter().enumerate()
        {
            let t = ms(id + 30) + Duration::from_nanos(8_000_123 * k as u64);
            r.chunks.push(OutputChunk { t, tokens: k as u32 + 1, channel });
        }
        r.first_choice = Some(ms(id + 25));
        r.last_choice = Some(ms(id + 70));
        r.stream_end = Some(ms(id + 71));
        r.end = ms(id + 72);
        r.input_tokens = 291;
        r.input_tokens_source = CountSource::Usage;
        r.output_tokens = 10;
        r.output_tokens_source = CountSource::Tokenizer;
        r.chunk_tokens_source = ChunkTokenSource::Apportioned;
        r.counts = TokenCounts {
            usage_prompt: Some(291),
            usage_completion: Some(10),
            usage_cached_prompt: Some(0),
            tokenizer_prompt: Some(290),
            tokenizer_completion: Some(11),
            intended_prompt: Some(256),
            requested_completion: Some(64),
            chunks: 4,
        };
        r.http_status = Some(200);
        r.retry_after = Some("Mon, 01 Dec 2025 12:39:02 GMT".into());
        r.retry_after_date = Some("Mon, 01 Dec 2025 12:38:42 GMT".into());
        r.retries = 1;
        r.finish_reason = Some("length".into());
        r.read_lag_max = Some(Duration::from_nanos(61_182));
        r.shared_reads = 2;
        r.bound_chunks = 1;
        r.ttft_bound = id.is_multiple_of(2);
        r.client_stalled = id % 2 == 1;
        r.session = Some(SessionTurn { id: 7, turn: 2, turns: 3 });
        r.model = Some("m-ü".into());
        r.abandoned = id % 3 == 2;
        r.outcome = match id % 3 {
            0 => Outcome::Success,
            1 => Outcome::Failed { kind: FailureKind::MidStreamError, message: "boom, \"quoted\"\nline".into() },
            _ => Outcome::Cancelled,
        };
        r.quality = Some(Box::new(RequestQuality {
            exact: Some(1.0),
            rouge_l: Some(0.123456789012345),
            bleu_stats: Some([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            ..RequestQuality::default()
        }));
        r.prompt_hash = Some("0123456789abcdef".into());
        r.output_hash = Some("fedcba9876543210".into());
        r.repeat = Some(1);
        r.output_words = Some(vec![0, 1, u32::MAX]);
        r.prompt_text = Some("What is 2+2?".into());
        r.output_text = Some("4".into());
        r.reference = Some(vec!["4".into(), "four".into()]);
        r
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn parquet_records_read_back_equal_to_the_json_lines_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (jsonl, pq) = (dir.path().join("r.jsonl"), dir.path().join("r.Parquet"));
        let mut records: Vec<RequestRecord> = (0..5).map(full_record).collect();
        // As sparse as a record gets: no chunks, no response, nothing optional.
        records.push(RequestRecord::new(5, Duration::ZERO, Duration::from_nanos(1)));
        records[4].output_words = Some(Vec::new());
        records[4].reference = Some(Vec::new());
        // More than one row group.
        records.extend((6..40_000).map(|i| {
            let mut r = full_record(i);
            (r.prompt_text, r.output_text, r.reference) = (None, None, None);
            r
        }));
        for path in [&jsonl, &pq] {
            let mut f = RecordFile::create(path, "run-a").unwrap();
            records.iter().for_each(|r| f.write(r));
        }
        // Written in one go (merge's way), the same file.
        let at_once = dir.path().join("at_once.parquet");
        write_records(&at_once, "run-a", &records).unwrap();
        assert_eq!(std::fs::read(&at_once).unwrap(), std::fs::read(&pq).unwrap());
        assert_eq!(&std::fs::read(&pq).unwrap()[..4], b"PAR1", "the extension chose Parquet, whatever its case");
        let (from_jsonl, from_pq) =
            (read_run_records(&jsonl, "run-a").unwrap(), read_run_records(&pq, "run-a").unwrap());
        assert_eq!(from_pq.len(), records.len());
        assert!(from_pq == from_jsonl, "Parquet and JSON Lines read back the same records");
        let written: Vec<RequestRecord> =
            records.into_iter().map(|r| RequestRecord { run_id: Some("run-a".into()), ..r }).collect();
        assert!(from_pq == written, "as written");
        // Read by its first bytes whatever its name.
        let renamed = dir.path().join("r.records");
        std::fs::rename(&pq, &renamed).unwrap();
        assert_eq!(RecordsReader::open(&renamed).unwrap().count(), from_jsonl.len());
        let e = read_run_records(&renamed, "run-b").unwrap_err().to_string();
        assert!(e.contains("holds records of run run-a, not of this result's run run-b"), "{e}");
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn a_cut_or_foreign_parquet_file_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.parquet");
        {
            let mut f = RecordFile::create(&path, "run-a").unwrap();
            (0..100).for_each(|i| f.write(&full_record(i)));
        }
        let whole = std::fs::read(&path).unwrap();
        // Cut (a killed writer): no footer.
        std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
        let e = read_records(&path).unwrap_err().to_string();
        assert!(e.contains("r.parquet is not a readable Parquet records file"), "{e}");
        assert!(e.contains("without its footer") && e.contains("--records FILE.jsonl"), "{e}");
        // JSON lines named .parquet; an empty file.
        for text in [format!("{OLD_LINE}\n"), String::new()] {
            std::fs::write(&path, text).unwrap();
            let e = read_records(&path).unwrap_err().to_string();
            assert!(e.contains("is not a readable Parquet records file"), "{e}");
        }
        // Damaged inside: an error or records, never a panic.
        let mut refused = 0;
        for at in (4..whole.len() - 8).step_by(97) {
            let mut bad = whole.clone();
            bad[at] ^= 0x5a;
            std::fs::write(&path, &bad).unwrap();
            match RecordsReader::open(&path).and_then(|r| r.collect::<Result<Vec<_>, _>>()) {
                Ok(back) => assert!(back.len() <= 100),
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.contains("r.parquet is not a readable Parquet records file") || e.contains("r.parquet row "),
                        "{e}"
                    );
                    refused += 1;
                }
            }
        }
        assert!(refused > 0, "some damage is seen");
        // Another program's Parquet file.
        let schema = std::sync::Arc::new(
            ::parquet::schema::parser::parse_message_type("message other { required int64 x; }").unwrap(),
        );
        let out = std::fs::File::create(&path).unwrap();
        ::parquet::file::writer::SerializedFileWriter::new(out, schema, Default::default()).unwrap().close().unwrap();
        let e = read_records(&path).unwrap_err().to_string();
        assert!(e.contains("has no column `id`, so it is not a goodput records file"), "{e}");
    }
}
