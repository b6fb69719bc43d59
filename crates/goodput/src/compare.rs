//! `goodput compare`: runs side by side against the first, and a non-zero
//! exit when a rule of `--fail-if` is broken, for CI.

use crate::cli::CompareArgs;
use anyhow::{anyhow, Result};
use goodput_core::RunResult;
use std::path::Path;
use std::process::ExitCode;

pub fn compare(a: CompareArgs) -> Result<ExitCode> {
    let mut outputs = vec![("--output", a.output.as_deref())];
    outputs.extend(a.exports.outputs());
    let mut inputs: Vec<(&str, &Path)> = a.runs.iter().map(|r| ("a compared run", r.as_path())).collect();
    inputs.extend(a.records.iter().map(|r| ("--records", r.as_path())));
    crate::output::distinct_files(&inputs, &outputs)?;
    crate::output::check_exports(&a.exports)?;
    if let Some(p) = &a.output {
        crate::output::check_file(p, "--output")?;
    }
    let mut runs: Vec<(String, RunResult)> = Vec::new();
    if !a.records.is_empty() && a.records.len() != a.runs.len() {
        anyhow::bail!(
            "--records: give one records file per run, in the runs' order ({} runs, {} records files)",
            a.runs.len(),
            a.records.len()
        );
    }
    for (i, p) in a.runs.iter().enumerate() {
        let mut run = goodput_report::read::read_json(p)?;
        if let Some(rp) = a.records.get(i) {
            run.requests = Some(goodput_report::read::records::read_run_records(rp, &run.run_id)?);
        }
        let label = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string());
        runs.push((label, run));
    }
    // A run's own --label names it, unless two runs share one.
    let own: Vec<Option<String>> = runs.iter().map(|(_, r)| r.config.label.clone()).collect();
    for (i, (label, _)) in runs.iter_mut().enumerate() {
        if let Some(l) = own[i].as_ref().filter(|l| own.iter().filter(|o| o.as_ref() == Some(*l)).count() == 1) {
            *label = l.clone();
        }
    }
    let rules = match &a.fail_if {
        Some(s) => goodput_report::parse_rules(s).map_err(|e| anyhow!("--fail-if: {e}"))?,
        None => Vec::new(),
    };
    let refs: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let c = goodput_report::compare(&refs, &rules);
    let table = goodput_report::compare::render_terminal(&c);
    // With `-o -` standard output carries the document alone.
    if a.output.as_deref() == Some(Path::new("-")) {
        eprint!("{table}");
    } else {
        crate::output::say(&table);
    }
    if let Some(p) = &a.output {
        crate::output::write_document(p, &c, "comparison")?;
        if p != Path::new("-") {
            eprintln!("comparison written to {}", p.display());
        }
    }
    let docs: Vec<&RunResult> = runs.iter().map(|(_, r)| r).collect();
    for (format, dest) in a.exports.targets() {
        for f in goodput_report::export_compare(format, &c, &docs, &dest)? {
            eprintln!("{} written to {}", format.exporter().name(), f.display());
        }
    }
    if !c.passed() {
        eprintln!("error: a --fail-if rule was broken (or could not be judged)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
