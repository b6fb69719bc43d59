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
                            serde_json::to_writer(&mut out, &r)
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

/// Reads records written by [`RecordFile`].
/// A last line cut short (a full disk, a killed writer leave exactly that)
/// is left out with a warning, and the complete lines are read; a bad line
/// anywhere else is an error.
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, RecordsError> {
    let text = std::fs::read_to_string(path).map_err(|err| RecordsError::Read { path: path.to_owned(), err })?;
    let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
    let mut out = Vec::with_capacity(lines.len());
    for (k, &(i, l)) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(r) => out.push(r),
            // Cut: the last line, with no newline after it.
            Err(e) if k + 1 == lines.len() && !text.ends_with('\n') && e.is_eof() => eprintln!(
                "warning: {} line {} was cut short (the writer stopped mid-line); read the {} complete records \
                 before it",
                path.display(),
                i + 1,
                out.len()
            ),
            Err(err) => return Err(RecordsError::NotARecord { path: path.to_owned(), line: i + 1, err }),
        }
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
}
