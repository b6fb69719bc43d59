//! `goodput compare`: runs side by side against the first, and a non-zero
//! exit when a rule of `--fail-if` is broken, for CI.

use crate::cli::CompareArgs;
use anyhow::{anyhow, Context, Result};
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
        let writes =
            crate::output::Writes { command: "compare", document: "the comparison", markdown: true, records: false };
        crate::output::check_document_named(p, &writes)?;
        crate::output::check_file(p, "--output")?;
    }
    if let Some(code) = frontiers(&a)? {
        return Ok(code);
    }
    let mut runs: Vec<(String, RunResult)> = Vec::new();
    if !a.records.is_empty() && a.records.len() != a.runs.len() {
        anyhow::bail!(
            "--records: give one records file per run, in the runs' order ({} runs, {} records files)",
            a.runs.len(),
            a.records.len()
        );
    }
    let labels = labels(&a.runs);
    let mut companions = Vec::new();
    // The SLO each run was saved with, where --slo judges them again.
    let mut saved: Vec<Option<String>> = Vec::new();
    for (i, p) in a.runs.iter().enumerate() {
        let mut run = goodput_report::read::read_json(p)?;
        companions.extend(goodput_report::read::peers::companions(p, &run));
        if let Some(slo) = &a.slo {
            saved.push(run.slo.as_ref().map(|s| s.spec.clone()));
            runs.push((labels[i].clone(), judged_by(run, p, a.records.get(i), slo, &a)?));
            continue;
        }
        if let Some(rp) = a.records.get(i) {
            // Counted against the requests the run sent: a file cut short is compared as it is, and said.
            let (records, cut) = goodput_report::read::records::read_counted_records(rp, &run, p)?;
            run.requests = Some(records);
            run.warnings.extend(cut);
        }
        runs.push((labels[i].clone(), run));
    }
    // The files an import read beside the one named (AIPerf's records and
    // summary) are inputs too: checked before anything is written.
    if !companions.is_empty() {
        inputs.extend(companions.iter().map(|p| ("a file read with a compared run", p.as_path())));
        crate::output::distinct_files(&inputs, &outputs)?;
    }
    // A run's own --label names it, unless two runs share one or it is
    // blank (an edited document's `""`): then its file's name does.
    let own: Vec<Option<String>> =
        runs.iter().map(|(_, r)| r.config.label.clone().filter(|l| !l.trim().is_empty())).collect();
    for (i, (label, _)) in runs.iter_mut().enumerate() {
        if let Some(l) = own[i].as_ref().filter(|l| own.iter().filter(|o| o.as_ref() == Some(*l)).count() == 1) {
            *label = l.clone();
        }
    }
    // The same file given twice (or two runs of one label): told apart as
    // `x (2)`, and said (the CSV had two columns of one name).
    let given: Vec<String> = runs.iter().map(|(l, _)| l.clone()).collect();
    for (i, l) in distinct(&given).into_iter().enumerate() {
        if l != runs[i].0 {
            goodput_core::tell!(
                "warning: {} is given more than once: the later is shown as {}",
                crate::output::shown(&runs[i].0),
                crate::output::shown(&l)
            );
            runs[i].0 = l;
        }
    }
    let rules = match &a.fail_if {
        Some(s) => goodput_report::parse_rules(s).map_err(|e| anyhow!("{e}"))?,
        None => Vec::new(),
    };
    let refs: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let mut c = goodput_report::compare(&refs, &rules);
    // The document says that its verdicts are --slo's, not the runs' own.
    for (judged, was) in c.slo.iter_mut().zip(saved) {
        judged.judged_again = true;
        judged.saved_spec = was;
    }
    let table = goodput_report::compare::render_terminal(&c);
    // With `-o -` standard output carries the document alone.
    if a.output.as_deref() == Some(Path::new("-")) {
        goodput_core::tell_part!("{table}");
    } else {
        crate::output::say(&table);
    }
    if let Some(p) = &a.output {
        crate::output::write_document(p, &c, "comparison")?;
        if p != Path::new("-") {
            goodput_core::tell!("comparison written to {}", p.display());
        }
    }
    let docs: Vec<&RunResult> = runs.iter().map(|(_, r)| r).collect();
    for (format, dest) in a.exports.targets() {
        for f in goodput_report::export_compare(format, &c, &docs, &dest)? {
            goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
        }
    }
    if !c.passed() {
        goodput_core::tell!("error: a --fail-if rule was broken (or could not be judged)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `run`, read from `path`, judged again by `slo` from its records
/// (`records`, else the document's own, else the file beside it), as
/// `report RUN.json --slo SPEC` judges it: its goodput, attainment and
/// verdict are then those of the one SLO every run is compared by. The
/// records read stay with it, for the tests on per-request values and the
/// answers' pairing, as `--records` gives them.
fn judged_by(
    run: RunResult,
    path: &Path,
    records: Option<&std::path::PathBuf>,
    slo: &goodput_core::Slo,
    a: &CompareArgs,
) -> Result<RunResult> {
    let args = crate::cli::ReportArgs {
        run: path.to_path_buf(),
        records: records.cloned(),
        percentiles: None,
        window: None,
        judge: crate::cli::JudgeArgs {
            slo: Some(slo.clone()),
            attainment: None,
            fail_on_slo: false,
            fail_on_unsteady: false,
            confidence: goodput_core::analysis::interval::DEFAULT_CONFIDENCE,
            gpu_hour_usd: None,
            gpus: None,
            config: None,
            price: None,
        },
        // Compare's own outputs: a records file found beside a run is checked against them.
        output: a.output.clone(),
        quiet: false,
        exports: a.exports.clone(),
    };
    let judged = crate::report::analysed(run, &args).with_context(|| {
        format!(
            "--slo '{slo}' judges every run again from its records, and {} could not be (where a run's records \
                 are neither where it names them nor beside it, give --records once for each run, in the runs' \
                 order)",
            path.display()
        )
    })?;
    Ok(match judged {
        crate::report::Reported::Anew { mut result, records, .. } => {
            result.requests = Some(records);
            result
        }
        // An SLO is always drawn from the records: not reached.
        crate::report::Reported::AsSaved(run) => run,
    })
}

/// `goodput compare plan.json frontier.json`: when the documents are
/// frontiers, the predicted one beside the measured one, with the errors of
/// the prediction (`goodput_core::doc::overlay`). `None` when they are runs.
fn frontiers(a: &CompareArgs) -> Result<Option<ExitCode>> {
    use goodput_core::doc::frontier::{FrontierResult, FrontierSource};
    use goodput_report::read::{read_document, Document};
    let docs: Vec<Document> = a.runs.iter().map(|p| read_document(p)).collect::<Result<_, _>>()?;
    let n = docs.iter().filter(|d| matches!(d, Document::Frontier(_))).count();
    if n == 0 {
        return Ok(None);
    }
    if n != docs.len() || docs.len() != 2 {
        anyhow::bail!(
            "compare sets two frontier documents side by side (one from goodput plan, one from sweep --serve-grid), or \
             runs against each other: {} of the {} documents {}",
            n,
            docs.len(),
            if n == 1 { "is a frontier" } else { "are frontiers" }
        );
    }
    if a.fail_if.is_some() || !a.records.is_empty() || a.slo.is_some() {
        anyhow::bail!(
            "--fail-if, --records and --slo apply to runs: two frontiers are compared by the prediction's errors (to \
             search under another SLO, run goodput plan or the sweep again with --slo)"
        );
    }
    let mut frontiers: Vec<(String, FrontierResult)> = docs
        .into_iter()
        .zip(labels(&a.runs))
        .filter_map(|(d, l)| match d {
            Document::Frontier(f) => Some((l, *f)),
            _ => None,
        })
        .collect();
    // The predicted one first, whichever order they came in.
    if frontiers[0].1.source == FrontierSource::Measured && frontiers[1].1.source == FrontierSource::Predicted {
        frontiers.swap(0, 1);
    }
    let mut it = frontiers.into_iter();
    let (pl, pred) = it.next().expect("two documents");
    let (ml, meas) = it.next().expect("two documents");
    let c = goodput_core::doc::overlay::compare_frontiers((&pl, pred), (&ml, meas));
    let table = goodput_report::overlay::terminal(&c);
    if a.output.as_deref() == Some(Path::new("-")) {
        goodput_core::tell_part!("{table}");
    } else {
        crate::output::say(&table);
    }
    if let Some(p) = &a.output {
        crate::output::write_document(p, &c, "frontier comparison")?;
        if p != Path::new("-") {
            goodput_core::tell!("frontier comparison written to {}", p.display());
        }
    }
    for (format, dest) in a.exports.targets() {
        for f in goodput_report::overlay::export(format, &c, &dest)? {
            goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
        }
    }
    Ok(Some(ExitCode::SUCCESS))
}

/// The names the compared files go by: each its shortest path suffix that
/// no other file shares (`run.json` and `y/run.json` had both been labelled
/// `run.json`, in the table, the HTML, the CSV's columns and the FAIL
/// lines); a file given twice by one path is labelled by the whole path.
fn labels(paths: &[std::path::PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<std::path::Component>> = paths.iter().map(|p| p.components().collect()).collect();
    let suffix = |i: usize, k: usize| -> std::path::PathBuf {
        let c = &parts[i];
        c[c.len().saturating_sub(k)..].iter().collect()
    };
    (0..paths.len())
        .map(|i| {
            (1..=parts[i].len())
                .map(|k| (k, suffix(i, k)))
                .find(|(k, own)| (0..paths.len()).all(|j| j == i || suffix(j, *k) != *own))
                .map_or_else(|| paths[i].display().to_string(), |(_, own)| own.display().to_string())
        })
        .collect()
}

/// `labels` with each repeated one told apart by its count: `x`, `x (2)`.
fn distinct(labels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let mut name = l.clone();
        let mut k = 1;
        while out.contains(&name) {
            k += 1;
            name = format!("{l} ({k})");
        }
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{distinct, labels};

    #[test]
    fn labels_given_twice_are_told_apart() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(distinct(&v(&["a", "a", "b", "a"])), v(&["a", "a (2)", "b", "a (3)"]));
        assert_eq!(distinct(&v(&["a", "a (2)", "a"])), v(&["a", "a (2)", "a (3)"]));
    }

    use std::path::PathBuf;

    #[test]
    fn labels_are_the_shortest_suffixes_told_apart() {
        let p = |v: &[&str]| labels(&v.iter().map(PathBuf::from).collect::<Vec<_>>());
        assert_eq!(p(&["run.json", "y/run.json"]), ["run.json", "y/run.json"]);
        assert_eq!(p(&["a/b/run.json", "c/b/run.json", "base.json"]), ["a/b/run.json", "c/b/run.json", "base.json"]);
        assert_eq!(p(&["x/a.json", "x/b.json"]), ["a.json", "b.json"]);
        assert_eq!(p(&["same.json", "same.json"]), ["same.json", "same.json"]);
    }
}
