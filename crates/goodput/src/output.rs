//! What a command writes: checking, before a run spends any time, that every
//! output can be written; writing result documents so that a finished run
//! is never lost; printing; and the exit code.

use crate::cli::{ExportArgs, JudgeArgs, OutputArgs};
use crate::common::unix_now;
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::{RequestRecord, RunResult};
use std::path::Path;
use std::process::ExitCode;

/// Checks, before a run spends any time, that every file it is asked to
/// write can be written, so that an hour's run does not end in "cannot
/// write", and that none is one of the files the command reads (`inputs`,
/// see [`distinct_files`]). A missing folder is created (as `--csv` creates
/// its own), and a file is made and removed in each folder, as the writes
/// at the end will.
pub fn check_outputs(out: &OutputArgs, inputs: &[(&str, &Path)]) -> Result<()> {
    distinct_files(inputs, &out.outputs())?;
    if let Some(p) = &out.records {
        check_named_as_written(p, "--records")?;
        check_file(p, "--records")?;
    }
    if let Some(p) = &out.output {
        check_named_as_written(p, "--output")?;
        check_file(p, "--output")?;
    }
    check_exports(&out.exports)
}

/// What a command's `-o` writes, and which other formats it writes (by
/// other flags), for [`check_document_named`].
pub struct Writes {
    /// The command, named where a format it cannot write is asked for.
    pub command: &'static str,
    /// What `-o` holds, e.g. "the result document".
    pub document: &'static str,
    /// Whether `--markdown` writes Markdown.
    pub markdown: bool,
    /// Whether `--records NAME.parquet` writes Parquet.
    pub records: bool,
}

impl Writes {
    /// bench, estimate and sweep: a result document, every rendering, and
    /// records.
    pub const RUN: Writes =
        Writes { command: "this command", document: "the result document", markdown: true, records: true };
}

/// Refuses a result document (`-o`, JSON) or a records file (`--records`,
/// JSON lines, or Parquet by its extension) named as another format would
/// be: `-o run.html` had written JSON into `run.html`, and `--records
/// run.csv` JSON lines into `run.csv`, without a word. The flag that
/// writes the format the name asks for is named. For bench, estimate and
/// sweep; [`check_document_named`] for another command's `-o`.
pub fn check_named_as_written(path: &Path, flag: &str) -> Result<()> {
    if flag == "--records" {
        let writes = "the per-request records as JSON lines (.jsonl), or Parquet when the name ends in .parquet";
        named_as(path, flag, writes, "jsonl", &Writes::RUN)
    } else {
        check_document_named(path, &Writes::RUN)
    }
}

/// Refuses `-o` (always JSON) named as another format would be: `report -o
/// run.md` had written JSON into run.md. The flag that writes the format
/// the name asks for is named, or, where the command writes none, that it
/// does not.
pub fn check_document_named(path: &Path, writes: &Writes) -> Result<()> {
    named_as(path, "--output", &format!("{} as JSON", writes.document), "json", writes)
}

fn named_as(path: &Path, flag: &str, holds: &str, own: &str, writes: &Writes) -> Result<()> {
    let Some(ext) = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase) else {
        return Ok(());
    };
    let (asked, by) = match ext.as_str() {
        "html" | "htm" => ("an HTML page", Some("--html")),
        "md" | "markdown" => ("Markdown", Some("--markdown").filter(|_| writes.markdown)),
        "csv" => ("CSV", Some("--csv")),
        "parquet" if flag == "--output" => ("Parquet", Some("--records").filter(|_| writes.records)),
        _ => return Ok(()),
    };
    let stem = path.with_extension(own);
    let then = match by {
        // `--csv NAME.csv` writes the main table alone; the records are a
        // folder's `requests.csv`.
        Some("--csv") if flag == "--records" => {
            " and write the records as CSV with --csv DIR (its requests.csv)".into()
        }
        Some(by) => format!(" and write {asked} with {by} {}", path.display()),
        None => format!(" ({} writes no {asked})", writes.command),
    };
    bail!("{flag} {} would hold {holds}, not {asked}: name it {}{then}", path.display(), stem.display())
}

/// Refuses, before anything is written, a command whose outputs name one
/// file twice ([`distinct_outputs`]) or name a file it reads: `report -o
/// run.jsonl --records run.jsonl` would leave a result where the records
/// were, and `merge --html` over a shard's records would lose them. Each
/// command passes every file it reads (`inputs`: what names it, and the
/// path) and every file it writes (`outputs`: the flag, and the path where
/// given); a `--csv` folder stands for the files it writes there. The same
/// file is the same however it is named: through links, hard ones too,
/// `.` and `..`.
pub fn distinct_files(inputs: &[(&str, &Path)], outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    distinct_outputs(outputs)?;
    // What each input is, where it is a file a write could replace: a FIFO
    // or a device read is not overwritten by a write to it.
    let inputs: Vec<(&str, &Path, FileKey)> = inputs
        .iter()
        .filter(|(_, p)| *p != Path::new("-"))
        .filter(|(_, p)| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .map(|&(what, p)| (what, p, same_file_key(p)))
        .collect();
    for &(flag, out) in outputs {
        let Some(out) = out.filter(|p| *p != Path::new("-")) else { continue };
        let written: Vec<std::path::PathBuf> = match flag {
            "--csv" => goodput_report::export::CSV_FILES.iter().map(|n| out.join(n)).collect(),
            _ => vec![out.to_path_buf()],
        };
        for file in written {
            let key = same_file_key(&file);
            if let Some((what, input, _)) = inputs.iter().find(|(_, _, k)| *k == key) {
                bail!(
                    "{flag} {} would write over {}, an input of this command ({what}): give {flag} a {} of its own",
                    out.display(),
                    input.display(),
                    if flag == "--csv" && out.extension().is_none_or(|e| e != "csv") { "folder" } else { "file" }
                );
            }
        }
    }
    Ok(())
}

/// Refuses two outputs that name the same file (through a link, `.` or `..`
/// too, and `-` twice): the one written last would leave nothing of the
/// other. An output that is standard output (`-`) takes it for itself: from
/// then on [`say`] writes to standard error, so that standard output
/// carries that document alone.
pub fn distinct_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    if outputs.iter().any(|(_, p)| *p == Some(Path::new("-"))) {
        STDOUT_TAKEN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut seen: Vec<(&str, FileKey)> = Vec::new();
    for &(flag, path) in outputs {
        let Some(path) = path else { continue };
        // A --csv folder, and each file it writes there (`-o out/summary.csv
        // --csv out` had left the CSV where the result was).
        let mut written = vec![path.to_path_buf()];
        if flag == "--csv" && path != Path::new("-") {
            written.extend(goodput_report::export::CSV_FILES.iter().map(|n| path.join(n)));
        }
        for file in written {
            let key = same_file_key(&file);
            if let Some((other, _)) = seen.iter().find(|(_, k)| *k == key) {
                bail!("{other} and {flag} both name {}: give each its own file", file.display());
            }
            seen.push((flag, key));
        }
    }
    Ok(())
}

/// Whether two paths name one file, however each is spelled (`./a`, an
/// absolute path and a relative one, links), whether or not it exists yet.
pub fn same_place(a: &Path, b: &Path) -> bool {
    same_file_key(a) == same_file_key(b)
}

/// What a path names, whichever way it is spelled.
#[derive(Debug, PartialEq)]
enum FileKey {
    /// A file that exists: its device and inode, which every name of it
    /// shares (hard links too).
    Node(u64, u64),
    /// One yet to be made: the canonical path of its folder and its name,
    /// a link that points where it will be followed there.
    Path(std::path::PathBuf),
}

fn same_file_key(path: &Path) -> FileKey {
    #[cfg(unix)]
    if let Ok(m) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        return FileKey::Node(m.dev(), m.ino());
    }
    #[cfg(not(unix))]
    if let Ok(p) = std::fs::canonicalize(path) {
        return FileKey::Path(p);
    }
    let path = link_target(path);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(name)) => FileKey::Path(d.join(name)),
        _ => FileKey::Path(path),
    }
}

/// Where `path` leads when it is a link to a file yet to be made (a write
/// through it makes that file): the links followed, as far as they go.
fn link_target(path: &Path) -> std::path::PathBuf {
    let mut path = path.to_path_buf();
    // As the kernel does, a bounded number of links deep.
    for _ in 0..40 {
        let Ok(to) = std::fs::read_link(&path) else { break };
        path = match path.parent() {
            Some(dir) if to.is_relative() => dir.join(to),
            _ => to,
        };
    }
    path
}

/// `(flag, path)` when `name` (a `--model`, which may be a Hugging Face
/// config.json) is a file: an input of its command.
pub fn named_file<'a>(flag: &'static str, name: &'a str) -> Option<(&'static str, &'a Path)> {
    Some((flag, Path::new(name))).filter(|(_, p)| p.is_file())
}

/// [`check_outputs`] for the renderings alone.
pub fn check_exports(e: &ExportArgs) -> Result<()> {
    if let Some(p) = &e.html {
        check_file(p, "--html")?;
    }
    if let Some(p) = &e.markdown {
        check_file(p, "--markdown")?;
    }
    if let Some(p) = &e.csv {
        // A name ending in .csv is the main table alone, written as a file
        // (goodput_report's `Rendered::write_to`); making it a folder here
        // would turn it into one.
        let names_a_file = p.extension().is_some_and(|x| x.eq_ignore_ascii_case("csv")) && !p.is_dir();
        if names_a_file {
            check_file(p, "--csv")?;
        } else if p.exists() && !p.is_dir() {
            bail!(
                "--csv {} is a file: --csv takes a folder to write its CSV files into, or a name ending in .csv for the main table alone",
                p.display()
            );
        } else {
            check_folder(p, "--csv")?;
        }
    }
    Ok(())
}

/// That `path` can be written as a file by `flag`. Standard output (`-`),
/// a device and a FIFO are written in place, and need no folder.
pub fn check_file(path: &Path, flag: &str) -> Result<()> {
    if path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    if path.is_dir() {
        let example = match flag {
            "--records" | "--record" => "records.jsonl",
            "--html" => "report.html",
            "--markdown" => "summary.md",
            _ => "run.json",
        };
        bail!("{flag} {} is a folder: name a file in it, e.g. {}", path.display(), path.join(example).display());
    }
    check_folder(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")), flag)
}

/// That `dir` exists, or can be made, and takes a new file.
fn check_folder(dir: &Path, flag: &str) -> Result<()> {
    // The nearest part of the path that exists must be a folder.
    if let Some(file) = dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
        bail!(
            "{} is a file, not a folder, so {flag} cannot write under it ({}): give {flag} a path in a folder",
            file.display(),
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| {
        format!("cannot create the folder {} for {flag}; pick a folder you can write to", dir.display())
    })?;
    // A file made anew under a name no one else holds, and removed when
    // dropped: a fixed name left there (or planted, a link to another file)
    // had been opened and truncated.
    tempfile::Builder::new()
        .prefix(".goodput-probe-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {} for {flag}; pick a folder you can write to", dir.display()))?;
    Ok(())
}

/// Writes a result document to `path`. When that fails (the disk filled, the
/// folder went away) the document is saved in the temporary folder instead
/// and the error says where, so that a finished run is never lost.
pub fn write_document<T: serde::Serialize>(path: &Path, doc: &T, kind: &str) -> Result<()> {
    write_or_rescue(path, doc, kind, |_| None)
}

/// [`write_document`] for a run's result, whose records file is named from
/// the document's own folder: a result saved in the temporary folder names
/// it from there, so that `report` on the saved copy finds it.
fn write_result(path: &Path, result: &RunResult) -> Result<()> {
    write_or_rescue(path, result, "result", |rescue| {
        let named = result.config.records_file.as_deref()?;
        let mut moved = result.clone();
        moved.config.records_file = path_from(rescue, &resolve_from(path, named));
        Some(moved)
    })
}

/// Writes `doc` to `path`, else to the temporary folder: as `moved` makes
/// it for the place it is saved, where it names files from its own folder.
fn write_or_rescue<T: serde::Serialize>(
    path: &Path,
    doc: &T,
    kind: &str,
    moved: impl FnOnce(&Path) -> Option<T>,
) -> Result<()> {
    let Err(e) = goodput_report::write_json(path, doc) else {
        return Ok(());
    };
    match rescue(doc, kind, moved) {
        Ok(rescue) => {
            bail!("cannot write {} ({e}); the {kind} was saved to {} instead", path.display(), rescue.display())
        }
        Err(_) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

/// Writes `doc` (or what `moved` makes of it for its place) to a file of
/// its own in the temporary folder: its path. The file is created anew
/// under a name no one else holds (`tempfile`, O_EXCL), so that two rescues
/// in one second of one process (a sweep's stages, tests on threads) do not
/// write over each other, and a name planted there beforehand, a link
/// included, is passed by rather than followed.
fn rescue<T: serde::Serialize>(
    doc: &T,
    kind: &str,
    moved: impl FnOnce(&Path) -> Option<T>,
) -> Result<std::path::PathBuf> {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .prefix(&format!("goodput-{kind}-{}-", unix_now() as u64))
        .suffix(".json")
        .tempfile()?;
    let moved = moved(file.path());
    {
        let mut w = std::io::BufWriter::new(file.as_file_mut());
        goodput_report::write_json_to(&mut w, moved.as_ref().unwrap_or(doc))?;
        w.flush()?;
    }
    file.as_file().sync_all()?;
    // Kept: the rescue is what the user reads next. Dropped on an error
    // above, it is removed.
    let (_, path) = file.keep()?;
    Ok(path)
}

/// `target` as a path from the folder of the file `from` (both as named
/// from the working folder): `../records/run.jsonl` for
/// `runs/a.json` and `records/run.jsonl`. `None` where either cannot be
/// made absolute. Between the places the links lead to where both exist
/// (a folder `out` linked to `/data/runs` is `/data/runs`, whose `..` is
/// `/data`, as [`resolve_from`]'s reading is resolved), else by the names.
pub fn path_from(from: &Path, target: &Path) -> Option<String> {
    use std::path::Component;
    let real = |p: &Path| std::fs::canonicalize(p).ok().or_else(|| std::path::absolute(p).ok().map(|a| lexical(&a)));
    let dir = real(std::path::absolute(from).ok()?.parent()?)?;
    let target = real(target)?;
    let (a, b): (Vec<_>, Vec<_>) = (dir.components().collect(), target.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = std::path::PathBuf::new();
    for _ in common..a.len() {
        rel.push(Component::ParentDir);
    }
    for c in &b[common..] {
        rel.push(c);
    }
    rel.to_str().map(str::to_owned)
}

/// A path a document names (`config.records_file`, [`path_from`]) as
/// named from the working folder: `rel` from the folder of `doc`, its
/// `..` left to the file system (which takes it from where a link leads).
pub fn resolve_from(doc: &Path, rel: &str) -> std::path::PathBuf {
    let dir = doc.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(rel)
}

/// `p` with each `..` taking the name before it away and each `.` dropped
/// (by the names alone).
fn lexical(p: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The exit status of a run or sweep cut short by Ctrl-C or SIGTERM (its
/// documents written, marked `interrupted`): the shells' own for a Ctrl-C,
/// so that CI can tell a run cut short from one that finished.
pub const EXIT_INTERRUPTED: u8 = 130;

/// [`finish`] for a run measured now: a run cut short exits
/// [`EXIT_INTERRUPTED`] whatever else it would have exited with (a saved
/// run read again by `report` or `merge` was not cut short now).
pub fn finish_live(
    result: &mut RunResult,
    out: &OutputArgs,
    judge: &JudgeArgs,
    records: &[RequestRecord],
) -> Result<ExitCode> {
    let code = finish(result, out, judge, records)?;
    if result.interrupted {
        goodput_core::tell!("error: the run was interrupted before its end: its figures cover what it sent until then");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(code)
}

/// The width the summary fits: the terminal's when standard output is one,
/// else `COLUMNS` when set, else 80.
pub fn columns() -> usize {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        if let Ok((w, _)) = ratatui::crossterm::terminal::size() {
            return usize::from(w);
        }
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()).unwrap_or(goodput_report::terminal::NARROW)
}

/// Prints the summary, writes `--output`, and picks the exit code: 1 when
/// no request succeeded, 3 when
/// `--fail-on-slo` and the SLO failed, 4 when `--fail-on-unsteady` and the
/// window was not a steady state.
/// A file that could not be written is an error (exit 2) once the rest are
/// written.
pub fn finish(
    result: &mut RunResult,
    out: &OutputArgs,
    judge: &JudgeArgs,
    records: &[RequestRecord],
) -> Result<ExitCode> {
    // The document names its records file, from its own folder, so that
    // `report` finds it wherever both were written.
    let doc = out.output.as_deref().filter(|p| *p != Path::new("-"));
    let named = out.records.as_deref().filter(|p| *p != Path::new("-"));
    result.config.records_file = doc.zip(named).and_then(|(d, r)| path_from(d, r));
    let result = &*result;
    let summary = goodput_report::terminal::render_width(result, columns());
    // With `-o -` standard output carries the document alone.
    if out.output.as_deref() == Some(Path::new("-")) {
        goodput_core::tell_part!("{summary}");
    } else {
        say(&summary);
    }
    let mut unwritten = Vec::new();
    if let Some(p) = &out.output {
        match write_result(p, result) {
            Ok(()) if !out.quiet && p != Path::new("-") => goodput_core::tell!("result written to {}", p.display()),
            Ok(()) => {}
            Err(e) => unwritten.push(e),
        }
    }
    for (format, dest) in out.exports.targets() {
        match goodput_report::export_run_with(format, result, records, &dest) {
            Ok(files) if !out.quiet => {
                for f in files {
                    goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
                }
            }
            Ok(_) => {}
            Err(e) => unwritten.push(anyhow!(e)),
        }
    }
    if let Some((last, rest)) = unwritten.split_last() {
        for e in rest {
            goodput_core::tell!("error: {e:#}");
        }
        bail!("{last:#}");
    }
    let q = &result.summary.requests;
    if q.completed == 0 {
        let first = records
            .iter()
            .find_map(|r| match &r.outcome {
                goodput_core::Outcome::Failed { kind, message } => Some(format!("{kind}: {message}")),
                _ => None,
            })
            .unwrap_or_else(|| "no request finished".into());
        // The server's words, shown as text: its escape sequences never reach the terminal.
        let first = goodput_report::escape::terminal(&first);
        let traced = result.config.workload.as_ref().is_some_and(|w| w.trace.is_some());
        goodput_core::tell!("error: {}", no_success(q, result.interrupted, traced, &first));
        return Ok(ExitCode::from(1));
    }
    if judge.fail_on_slo && result.slo.is_none() {
        goodput_core::tell!("error: --fail-on-slo needs an SLO: give --slo, or a config with slo = \"...\"");
        return Ok(ExitCode::from(2));
    }
    if let Some(slo) = result.slo.as_ref().filter(|s| judge.fail_on_slo && !s.pass) {
        goodput_core::tell!("error: the run missed its SLO (--fail-on-slo): {}", slo.misses().join("; "));
        return Ok(ExitCode::from(3));
    }
    if judge.fail_on_unsteady {
        if let Some(reason) = unsteady(result) {
            goodput_core::tell!("error: the run did not measure a steady state (--fail-on-unsteady): {reason}");
            return Ok(ExitCode::from(4));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Why no request of a run succeeded, in the error's words: `q`, its
/// counts; `interrupted`, whether it was stopped (Ctrl-C, SIGTERM);
/// `traced`, whether its requests are a trace's lines; `first`, the first
/// failure's words (shown as text).
fn no_success(
    q: &goodput_core::analysis::summary::RequestCounts,
    interrupted: bool,
    traced: bool,
    first: &str,
) -> String {
    if q.sent == 0 && q.warmup > 0 {
        // The warm-up took every request: none was left to measure. A
        // trace's requests are its lines: -n and --duration only cut it.
        let more = if traced { "a longer trace" } else { "more requests (-n, --duration)" };
        format!("no request was measured: the warm-up took all {} sent; give fewer to --warmup, or {more}", q.warmup)
    } else if q.failed == 0 && q.cancelled > 0 && interrupted {
        // None failed: the run was stopped with every one still in flight
        // ("first failure: no request finished" had named no cause).
        format!(
            "no request succeeded ({} sent, none failed): the {} in flight were cancelled when the run was stopped \
             (Ctrl-C or SIGTERM) before the server finished a response; let the run go to its end",
            q.sent, q.cancelled
        )
    } else if q.failed == 0 && q.cancelled > 0 {
        // None failed: every one was still waiting on the server when the
        // run's time ran out ("first failure: no request finished" had
        // named no cause).
        format!(
            "no request succeeded ({} sent, none failed): the {} still in flight when the duration and the grace \
             after it ended were cancelled, as the server had not finished a response; give a longer --grace (or \
             --duration), and check that the server answers",
            q.sent, q.cancelled
        )
    } else {
        format!("no request succeeded ({} sent, {} failed); first failure: {first}", q.sent, q.failed)
    }
}

/// Why a run is not steady, or `None` when it is: its window was not a
/// steady state, or the client itself stalled while requests were in
/// flight (their times are then bounds, not measurements).
fn unsteady(result: &RunResult) -> Option<String> {
    if let Some(stalled) = client_stalled(result) {
        return Some(stalled);
    }
    match &result.summary.stability {
        Some(s) if s.steady => None,
        Some(s) => Some(goodput_report::escape::terminal(s.reason.as_deref().unwrap_or("not steady"))),
        None => Some("no measured request succeeded, so nothing was measured".into()),
    }
}

/// How the client itself stalled while requests were due or in flight
/// (their sends late, or their times bounds), or `None` when it did not:
/// what `--fail-on-unsteady` fails a run, or a sweep's point, for.
pub(crate) fn client_stalled(result: &RunResult) -> Option<String> {
    let s = result.client_stalls.as_ref().filter(|s| s.requests > 0)?;
    Some(format!(
        "the client stalled {} time(s) (longest {:.0} ms) while {} request(s) were due or in flight",
        s.count, s.longest_ms, s.requests
    ))
}

/// Words from elsewhere (a server's answer, an error's text) as the
/// terminal may show them: credentials masked, control characters escaped.
pub fn shown(s: &str) -> String {
    goodput_report::escape::terminal(&goodput_core::util::redact::scrub(s))
}

/// Set once an output names standard output (`-o -`, `--markdown -`),
/// which then carries that document alone: by [`distinct_outputs`], which
/// every command that writes a document calls before it runs.
static STDOUT_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether standard output carries a document (an output named `-`), so
/// that what a command prints goes to standard error, and a document
/// rewritten as a run goes (a sweep's, after each point) is written once,
/// at the end.
pub fn stdout_taken() -> bool {
    STDOUT_TAKEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes `text` to standard output, or to standard error where a document
/// takes standard output ([`stdout_taken`]). A reader that went away
/// (`| head`) is no reason to stop, let alone panic as `print!` does:
/// whatever goes to files is still written.
pub fn say(text: &str) {
    use std::io::Write;
    if stdout_taken() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_records_file_is_named_from_the_documents_folder_and_read_back_so() {
        let cases = [
            ("run.json", "run.jsonl", "run.jsonl"),
            ("runs/a.json", "recs/r.jsonl", "../recs/r.jsonl"),
            ("runs/x/a.json", "runs/r.parquet", "../r.parquet"),
            ("a.json", "deep/er/r.jsonl", "deep/er/r.jsonl"),
            ("./runs/../a.json", "r.jsonl", "r.jsonl"),
        ];
        for (doc, rec, named) in cases {
            let rel = path_from(Path::new(doc), Path::new(rec)).unwrap();
            assert_eq!(rel, named, "{doc} {rec}");
            // Read back from the document's name, it is the file named at first.
            let back = std::path::absolute(resolve_from(Path::new(doc), &rel)).unwrap();
            assert_eq!(lexical(&back), lexical(&std::path::absolute(rec).unwrap()), "{doc} {rec}");
        }
        // Absolute names anywhere give a path from the one folder to the other.
        assert_eq!(path_from(Path::new("/a/b/run.json"), Path::new("/c/r.jsonl")).unwrap(), "../../c/r.jsonl");
    }

    /// Through a linked folder the path is between the places the links
    /// lead to, and reads back to the same file whichever name the
    /// document is then given by (`out/..` had been taken as the working
    /// folder, where the file system takes it as the link's parent).
    #[test]
    fn a_records_path_through_a_linked_folder_reads_back_by_either_name() {
        let tmp = tempfile::tempdir().unwrap();
        let (data, work) = (tmp.path().join("data"), tmp.path().join("work"));
        std::fs::create_dir_all(data.join("runs")).unwrap();
        std::fs::create_dir_all(work.join("recs")).unwrap();
        std::os::unix::fs::symlink(data.join("runs"), work.join("out")).unwrap();
        let rec = work.join("recs/r.jsonl");
        std::fs::write(&rec, "x").unwrap();
        let rel = path_from(&work.join("out/a.json"), &rec).unwrap();
        assert_eq!(rel, "../../work/recs/r.jsonl");
        for doc in [work.join("out/a.json"), data.join("runs/a.json")] {
            let back = resolve_from(&doc, &rel);
            assert_eq!(std::fs::canonicalize(&back).unwrap(), std::fs::canonicalize(&rec).unwrap(), "{doc:?}");
        }
    }

    #[test]
    fn a_document_that_cannot_be_written_is_saved_elsewhere_and_the_error_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("removed").join("run.json");
        let doc = json!({"schema": "goodput/v1", "summary": {"requests": {"completed": 3}}});
        let err = format!("{:#}", write_document(&gone, &doc, "result").unwrap_err());
        assert!(err.starts_with(&format!("cannot write {}", gone.display())), "{err}");
        let saved = err.split("saved to ").nth(1).and_then(|s| s.strip_suffix(" instead")).expect(&err);
        let back: Value = serde_json::from_slice(&std::fs::read(saved).unwrap()).unwrap();
        std::fs::remove_file(saved).unwrap();
        assert_eq!(back, doc);
        // Where the path can be written, it is, and nothing else is.
        let ok = dir.path().join("run.json");
        write_document(&ok, &doc, "result").unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&std::fs::read(&ok).unwrap()).unwrap(), doc);
    }

    /// A result saved in the temporary folder names its records from
    /// there: it had named them from the folder it could not be written to,
    /// so `report` on the saved copy looked for them beside it.
    #[test]
    fn a_rescued_result_names_its_records_from_where_it_was_saved() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("recs/a.jsonl");
        std::fs::create_dir_all(rec.parent().unwrap()).unwrap();
        std::fs::write(&rec, "x").unwrap();
        let gone = dir.path().join("removed/runs/a.json");
        use goodput_core::analysis::assemble::{assemble, Assembly};
        let a = Assembly {
            tool: crate::common::tool(),
            kind: "bench",
            run_id: "r".into(),
            started_unix_s: 0.0,
            interrupted: false,
            config: Default::default(),
            target: Default::default(),
            include_requests: false,
        };
        let mut result = assemble(a, &[], &Default::default());
        result.config.records_file = path_from(&gone, &rec);
        assert_eq!(result.config.records_file.as_deref(), Some("../../recs/a.jsonl"));
        let err = format!("{:#}", write_result(&gone, &result).unwrap_err());
        let saved = err.split("saved to ").nth(1).and_then(|s| s.strip_suffix(" instead")).expect(&err);
        let back: RunResult = serde_json::from_slice(&std::fs::read(saved).unwrap()).unwrap();
        std::fs::remove_file(saved).unwrap();
        let named = back.config.records_file.expect("the saved copy names its records");
        let found = resolve_from(Path::new(saved), &named);
        assert_eq!(std::fs::canonicalize(found).unwrap(), std::fs::canonicalize(&rec).unwrap(), "{named}");
        // Written where it was asked, it is written as it was.
        let ok = dir.path().join("runs/a.json");
        std::fs::create_dir_all(ok.parent().unwrap()).unwrap();
        result.config.records_file = path_from(&ok, &rec);
        write_result(&ok, &result).unwrap();
        let back: RunResult = serde_json::from_slice(&std::fs::read(&ok).unwrap()).unwrap();
        assert_eq!(back.config.records_file.as_deref(), Some("../recs/a.jsonl"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_document_whose_write_fails_midway_is_saved_whole_elsewhere() {
        // /dev/full takes the document in place and fails at its first
        // write: the document, streamed, is streamed again to the rescue.
        if !Path::new("/dev/full").exists() {
            return;
        }
        let records: Vec<Value> = (0..20_000).map(|i| json!({"id": i, "t_ns": [i, 2 * i]})).collect();
        let doc = json!({"schema": "goodput/v1", "requests": records});
        let err = format!("{:#}", write_document(Path::new("/dev/full"), &doc, "result").unwrap_err());
        assert!(err.starts_with("cannot write /dev/full ("), "{err}");
        let saved = err.split("saved to ").nth(1).and_then(|s| s.strip_suffix(" instead")).expect(&err);
        let bytes = std::fs::read(saved).unwrap();
        std::fs::remove_file(saved).unwrap();
        let mut whole = serde_json::to_vec_pretty(&doc).unwrap();
        whole.push(b'\n');
        assert!(bytes == whole, "the rescued document is not the one written whole");
    }

    /// Rescues at once from threads of one process, within one second:
    /// each is saved whole to a file of its own. They had shared a name
    /// (the kind, the second, the process), and all but one failed or were
    /// written over.
    #[cfg(target_os = "linux")]
    #[test]
    fn rescues_at_once_each_keep_their_own_document() {
        if !Path::new("/dev/full").exists() {
            return;
        }
        let saved: Vec<(usize, String)> = std::thread::scope(|s| {
            let each: Vec<_> = (0..8)
                .map(|i| {
                    s.spawn(move || {
                        let doc = json!({"schema": "goodput/v1", "n": i, "pad": "x".repeat(1 << 16)});
                        let err = format!("{:#}", write_document(Path::new("/dev/full"), &doc, "result").unwrap_err());
                        let saved = err.split("saved to ").nth(1).and_then(|s| s.strip_suffix(" instead"));
                        (i, saved.unwrap_or_else(|| panic!("not rescued: {err}")).to_owned())
                    })
                })
                .collect();
            each.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let names: std::collections::BTreeSet<_> = saved.iter().map(|(_, p)| p.clone()).collect();
        assert_eq!(names.len(), saved.len(), "{saved:?}");
        for (i, path) in saved {
            let back: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(back["n"], i, "{path}");
        }
    }

    /// A document that fails partway through its serialization.
    struct Unwritable;

    impl serde::Serialize for Unwritable {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::{Error, SerializeMap};
            let mut m = s.serialize_map(None)?;
            m.serialize_entry("schema", &"x".repeat(4 << 20))?;
            Err(S::Error::custom("no such document"))
        }
    }

    #[test]
    fn a_document_that_cannot_be_serialized_leaves_no_file_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let kind = "unserializable-test-document";
        let err = format!("{:#}", write_document(&path, &Unwritable, kind).unwrap_err());
        assert!(
            err.starts_with(&format!("cannot write {}", path.display())) && err.contains("no such document"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a file was left where it was to be written");
        let tmp = std::fs::read_dir(std::env::temp_dir()).unwrap();
        let rescued: Vec<_> =
            tmp.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().contains(kind)).collect();
        assert!(rescued.is_empty(), "{rescued:?}");
    }

    #[test]
    fn a_stopped_run_whose_requests_were_all_cancelled_says_so_not_no_request_finished() {
        use goodput_core::analysis::summary::RequestCounts;
        let q = RequestCounts { sent: 2, cancelled: 2, ..Default::default() };
        let stopped = no_success(&q, true, false, "no request finished");
        assert!(
            stopped.contains("none failed")
                && stopped.contains("the 2 in flight were cancelled when the run was stopped"),
            "{stopped}"
        );
        assert!(!stopped.contains("first failure") && !stopped.contains("--grace"), "{stopped}");
        // Run to its end, the same counts mean the server never finished.
        let ended = no_success(&q, false, false, "no request finished");
        assert!(ended.contains("--grace") && !ended.contains("stopped"), "{ended}");
        // A failure is named whether or not the run was stopped.
        let failed = RequestCounts { sent: 2, failed: 1, cancelled: 1, ..Default::default() };
        let said = no_success(&failed, true, false, "http_503: busy");
        assert!(said.contains("1 failed") && said.contains("first failure: http_503: busy"), "{said}");
    }

    #[test]
    fn output_checks_name_the_flag_and_the_fix_and_make_missing_folders() {
        let dir = tempfile::tempdir().unwrap();
        let err = format!("{:#}", check_file(dir.path(), "--html").unwrap_err());
        assert!(err.contains("--html") && err.contains("is a folder") && err.contains("report.html"), "{err}");
        let nested = dir.path().join("a").join("b").join("run.json");
        check_file(&nested, "--output").unwrap();
        assert!(nested.parent().unwrap().is_dir() && !nested.exists());
        assert_eq!(std::fs::read_dir(nested.parent().unwrap()).unwrap().count(), 0, "the probe file is removed");
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let csv = ExportArgs { csv: Some(file), ..Default::default() };
        assert!(format!("{:#}", check_exports(&csv).unwrap_err()).contains("takes a folder"));
        // A name ending in .csv is a file: checked as one, never made a folder.
        let table = dir.path().join("new").join("r.csv");
        check_exports(&ExportArgs { csv: Some(table.clone()), ..Default::default() }).unwrap();
        assert!(table.parent().unwrap().is_dir() && !table.exists(), "r.csv is not made a folder");
    }
}
