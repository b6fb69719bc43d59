//! The per-request records file (`--records`): one JSON line per request,
//! written the moment it completes, and read back by `report` (and by
//! anything that recomputes a run from its records).

use goodput_core::RequestRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What can go wrong with a records file, each naming the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("cannot create the records file {}: {err}", path.display())]
    Create { path: PathBuf, err: std::io::Error },
    #[error("cannot start the records writer thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot read {}: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error("{} line {line} is not a goodput record: {err}", path.display())]
    NotARecord { path: PathBuf, line: usize, err: serde_json::Error },
    #[error(
        "{} holds records of run {other}, not of this result's run {run_id}: pass the records file written \
         with this result (--records of the same run)",
        path.display()
    )]
    OtherRun { path: PathBuf, other: String, run_id: String },
}

/// Writes each record as one JSON line, flushed, the moment it completes.
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
    pub fn create(path: &Path, run_id: &str) -> Result<Self, RecordsError> {
        let f = std::fs::File::create(path).map_err(|err| RecordsError::Create { path: path.to_owned(), err })?;
        let (tx, rx) = std::sync::mpsc::channel::<RequestRecord>();
        let path = path.to_owned();
        let writer = std::thread::Builder::new()
            .name("goodput-records".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(f);
                while let Ok(first) = rx.recv() {
                    // Whatever else is waiting goes out with it, then one flush.
                    let res = std::iter::once(first)
                        .chain(rx.try_iter())
                        .try_for_each(|r| {
                            // The chunks packed (see goodput_core::chunks): a few bytes each.
                            goodput_core::chunks::packed(|| serde_json::to_writer(&mut out, &r))
                                .map_err(std::io::Error::other)
                                .and_then(|_| out.write_all(b"\n"))
                        })
                        .and_then(|_| out.flush());
                    if let Err(e) = res {
                        eprintln!(
                            "warning: writing records to {} failed ({e}); the run goes on without it",
                            path.display()
                        );
                        return;
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

/// A new run's name: its start in nanoseconds and the process, in hex.
pub fn new_run_id() -> String {
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{ns:x}-{:x}", std::process::id())
}

/// Reads a records file one record at a time, in the order written, holding
/// one line at a time: `report` and `merge` of a long run never hold the
/// file's text, nor more than a record's worth of it. Reads both forms of
/// the chunks (see [`goodput_core::Chunks`]): the packed one written now,
/// and the array of chunk objects of older files.
///
/// A last line cut short (a full disk, a killed writer leave exactly that)
/// is left out with a warning, and the complete lines are read; a bad line
/// anywhere else is an error.
pub struct RecordsReader {
    path: PathBuf,
    input: std::io::BufReader<std::fs::File>,
    line: String,
    /// 1-based number of the line last read.
    line_no: usize,
    /// Records read so far.
    read: usize,
    done: bool,
}

impl RecordsReader {
    pub fn open(path: &Path) -> Result<Self, RecordsError> {
        let f = std::fs::File::open(path).map_err(|err| RecordsError::Read { path: path.to_owned(), err })?;
        Ok(RecordsReader {
            path: path.to_owned(),
            input: std::io::BufReader::with_capacity(1 << 16, f),
            line: String::new(),
            line_no: 0,
            read: 0,
            done: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Iterator for RecordsReader {
    type Item = Result<RequestRecord, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        use std::io::BufRead;
        while !self.done {
            self.line.clear();
            match self.input.read_line(&mut self.line) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    self.line_no += 1;
                    let l = self.line.trim();
                    if l.is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<RequestRecord>(l) {
                        Ok(r) => {
                            self.read += 1;
                            return Some(Ok(r));
                        }
                        // Cut: the last line, with no newline after it.
                        Err(e) if !self.line.ends_with('\n') && e.is_eof() => {
                            eprintln!(
                                "warning: {} line {} was cut short (the writer stopped mid-line); read the {} \
                                 complete records before it",
                                self.path.display(),
                                self.line_no,
                                self.read
                            );
                            self.done = true;
                        }
                        Err(err) => {
                            self.done = true;
                            let path = self.path.clone();
                            return Some(Err(RecordsError::NotARecord { path, line: self.line_no, err }));
                        }
                    }
                }
                Err(err) => {
                    self.done = true;
                    return Some(Err(RecordsError::Read { path: self.path.clone(), err }));
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
/// first record of another run (see [`check_records_belong`]).
pub fn read_run_records(path: &Path, run_id: &str) -> Result<Vec<RequestRecord>, RecordsError> {
    let mut out = Vec::new();
    for r in RecordsReader::open(path)? {
        let r = r?;
        check_records_belong(std::slice::from_ref(&r), run_id, path)?;
        out.push(r);
    }
    Ok(out)
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
        std::fs::write(&path, format!("{OLD_LINE}\n\n{OLD_LINE}\n{}", &OLD_LINE[..OLD_LINE.len() / 2])).unwrap();
        assert_eq!(read_run_records(&path, "18eb4dcacdad46d5-2a8c").unwrap().len(), 2);
        let e = read_run_records(&path, "another").unwrap_err().to_string();
        assert!(e.contains("holds records of run 18eb4dcacdad46d5-2a8c, not of this result's run another"), "{e}");
        // Cut in the middle of the file, a line is an error naming it.
        std::fs::write(&path, format!("{}\n{OLD_LINE}\n", &OLD_LINE[..100])).unwrap();
        let e = read_records(&path).unwrap_err().to_string();
        assert!(e.contains("line 1 is not a goodput record"), "{e}");
    }
}
