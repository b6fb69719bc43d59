//! The exporter interface: one `Exporter` per format (JSON, CSV, Markdown,
//! HTML), each rendering a run, a sweep or a comparison from the result
//! documents alone, and the atomic writing of what they render.

pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;

pub use csv::FILE_NAMES as CSV_FILES;

use crate::compare::Comparison;
use goodput_core::doc::sweep::SweepResult;
use goodput_core::RunResult;
use std::path::{Path, PathBuf};

/// What an exporter produced: one file, or a folder of named files (CSV).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendered {
    File(Vec<u8>),
    /// (file name, contents), in a stable order.
    Folder(Vec<(String, Vec<u8>)>),
}

impl Rendered {
    /// Writes to `dest`: the file itself, or a folder created as needed;
    /// a folder's files to a `dest` named like one of them (`r.csv`) are
    /// its first, main table alone (a run's summary, a sweep's points), as
    /// someone who names a file expects a file. Every file goes through a
    /// temporary file and a rename, so a reader never sees half a report.
    /// Returns the paths written.
    pub fn write_to(&self, dest: &Path) -> Result<Vec<PathBuf>, ExportError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ExportError::Write { path, source }
        };
        match self {
            Rendered::File(bytes) => {
                crate::write_file_atomic(dest, bytes).map_err(err(dest))?;
                Ok(vec![dest.to_path_buf()])
            }
            Rendered::Folder(files) if names_a_file_of(dest, files) => {
                let (_, main) = &files[0];
                crate::write_file_atomic(dest, main).map_err(err(dest))?;
                Ok(vec![dest.to_path_buf()])
            }
            Rendered::Folder(files) => {
                std::fs::create_dir_all(dest).map_err(err(dest))?;
                let mut out = Vec::with_capacity(files.len());
                for (name, bytes) in files {
                    let path = dest.join(name);
                    crate::write_file_atomic(&path, bytes).map_err(err(&path))?;
                    out.push(path);
                }
                Ok(out)
            }
        }
    }

    /// The contents of one file: the file itself, or the named one of a folder.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        match self {
            Rendered::File(b) => Some(b),
            Rendered::Folder(files) => files.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice()),
        }
    }
}

/// Whether `dest` names a file of the folder's kind (`r.csv` for CSV
/// files) rather than a folder: by its extension, in any case.
fn names_a_file_of(dest: &Path, files: &[(String, Vec<u8>)]) -> bool {
    let ext = |p: &Path| p.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match (files.first(), ext(dest)) {
        (Some((name, _)), Some(e)) => ext(Path::new(name)).as_deref() == Some(e.as_str()) && !dest.is_dir(),
        _ => false,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot serialise the result")]
    Json(#[from] serde_json::Error),
    #[error("cannot write {}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{what} is not rendered as {format}")]
    Unsupported { what: &'static str, format: &'static str },
}

/// One output format.
pub trait Exporter {
    /// The format's name, as the command line spells it.
    fn name(&self) -> &'static str;
    fn render_run(&self, run: &RunResult) -> Result<Rendered, ExportError>;
    fn render_sweep(&self, sweep: &SweepResult) -> Result<Rendered, ExportError>;
    /// `runs` are the compared documents in the comparison's order (the
    /// HTML overlays their distributions).
    fn render_compare(&self, c: &Comparison, runs: &[&RunResult]) -> Result<Rendered, ExportError>;
}

/// The formats a result can be exported to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Json,
    /// A folder: `summary.csv`, `requests.csv`, `points.csv`, `compare.csv`,
    /// `server_signals.csv`, `engine_series.csv`.
    Csv,
    Markdown,
    Html,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Json, Format::Csv, Format::Markdown, Format::Html];

    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Json => &json::Json,
            Format::Csv => &csv::Csv,
            Format::Markdown => &markdown::Markdown,
            Format::Html => &html::Html,
        }
    }

    /// Whether the destination is a folder rather than a file.
    pub fn is_folder(self) -> bool {
        self == Format::Csv
    }
}

/// A report format that goodput does not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format '{0}': use json, csv, markdown or html")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for Format {
    type Err = UnknownFormat;

    /// `json`, `csv`, `markdown` (or `md`), `html`.
    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "md" => Ok(Format::Markdown),
            name => Format::ALL
                .into_iter()
                .find(|f| f.exporter().name() == name)
                .ok_or_else(|| UnknownFormat(s.to_string())),
        }
    }
}

/// Renders `run` as `format` and writes it to `dest` (a folder for CSV).
pub fn export_run(format: Format, run: &RunResult, dest: &Path) -> Result<Vec<PathBuf>, ExportError> {
    format.exporter().render_run(run)?.write_to(dest)
}

/// [`export_run`] by a command that holds the run's `records` in memory:
/// the HTML page draws its CDFs and time series from them though the
/// document keeps none; the other formats are as [`export_run`] writes them.
pub fn export_run_with(
    format: Format,
    run: &RunResult,
    records: &[goodput_core::RequestRecord],
    dest: &Path,
) -> Result<Vec<PathBuf>, ExportError> {
    match format {
        Format::Html => Rendered::File(html::run_page_with(run, Some(records))?.into_bytes()).write_to(dest),
        _ => export_run(format, run, dest),
    }
}

/// Renders `sweep` as `format` and writes it to `dest` (a folder for CSV).
pub fn export_sweep(format: Format, sweep: &SweepResult, dest: &Path) -> Result<Vec<PathBuf>, ExportError> {
    format.exporter().render_sweep(sweep)?.write_to(dest)
}

/// [`export_sweep`] by the sweep command, which holds what it computed of
/// its points' records (`held`): the HTML page draws its TTFT
/// distributions and a stages run's timeline from them though the document
/// keeps no records; the other formats are as [`export_sweep`] writes them.
pub fn export_sweep_with(
    format: Format,
    sweep: &SweepResult,
    held: &crate::series::SweepSeries,
    dest: &Path,
) -> Result<Vec<PathBuf>, ExportError> {
    match format {
        Format::Html => Rendered::File(html::sweep_page_with(sweep, Some(held))?.into_bytes()).write_to(dest),
        _ => export_sweep(format, sweep, dest),
    }
}

/// Renders a comparison as `format` and writes it to `dest` (a folder for CSV).
pub fn export_compare(
    format: Format,
    c: &Comparison,
    runs: &[&RunResult],
    dest: &Path,
) -> Result<Vec<PathBuf>, ExportError> {
    format.exporter().render_compare(c, runs)?.write_to(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_rendering_to_a_file_name_writes_its_main_table_there() {
        let dir = tempfile::tempdir().unwrap();
        let r =
            Rendered::Folder(vec![("summary.csv".into(), b"a\n1\n".to_vec()), ("requests.csv".into(), b"x".to_vec())]);
        let file = dir.path().join("r.CSV");
        assert_eq!(r.write_to(&file).unwrap(), vec![file.clone()]);
        assert_eq!(std::fs::read(&file).unwrap(), b"a\n1\n");
        let folder = dir.path().join("out");
        assert_eq!(r.write_to(&folder).unwrap().len(), 2);
        assert!(folder.join("requests.csv").is_file());
    }

    #[test]
    fn formats_by_name() {
        for f in Format::ALL {
            assert_eq!(f.exporter().name().parse::<Format>(), Ok(f));
        }
        assert_eq!("MD".parse::<Format>(), Ok(Format::Markdown));
        assert!("pdf".parse::<Format>().unwrap_err().to_string().contains("use json, csv, markdown or html"));
    }
}
