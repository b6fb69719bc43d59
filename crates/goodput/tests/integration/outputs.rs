//! Where a run's files go (issue 22, defects 1 and 6): `-o` writes into a
//! symbolic link's target, a FIFO and standard output rather than replacing
//! them with a new file, and two outputs that name one file are refused
//! before the run.

#[allow(dead_code)]
use crate::cmd;

use cmd::{goodput, goodput_child, GoodputCommand};
use std::path::Path;

/// A short bench on the embedded fixed-timing server.
const RUN: &[&str] = &[
    "bench",
    "-n",
    "2",
    "--quiet",
    "--sim-profile",
    "fixed",
    "--sim-ttft",
    "5ms",
    "--sim-itl",
    "1ms",
    "--output-tokens",
    "4",
    "--input-tokens",
    "8",
];

fn is_result(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v["schema"] == "goodput/v1")
}

#[test]
fn a_symbolic_link_is_followed_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let (target, link) = (dir.path().join("results/run.json"), dir.path().join("latest.json"));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink("results/run.json", &link).unwrap();
    goodput().args(RUN).arg("-o").arg(&link).assert().success();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link became a file");
    assert!(is_result(&std::fs::read_to_string(&target).unwrap()), "the link's target was not written");
    no_temporary_files(dir.path());
    no_temporary_files(target.parent().unwrap());
}

#[test]
fn a_fifo_is_written_into_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    goodput().args(RUN).arg("-o").arg(&fifo).assert().success();
    let got = reader.join().unwrap();
    assert!(is_result(&got), "the FIFO's reader got: {got:.200}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    no_temporary_files(dir.path());
}

#[test]
fn dash_writes_the_document_alone_to_standard_output() {
    let out = goodput().args(RUN).args(["-o", "-"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(is_result(&stdout), "stdout is not the document alone: {stdout:.300}");
    assert!(!Path::new("-").exists(), "a file named - was made");
}

/// With `-o -` standard output carries one document, written once at the
/// end, and nothing else, whatever the command: a sweep had written its
/// document there after each point and printed its rows and analysis
/// between them, `estimate` its engine's lines after the document, and
/// `report` a sweep's analysis. What they print goes to standard error.
#[test]
fn each_command_writes_one_document_alone_to_standard_output_with_dash() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // Standard output, parsed as one JSON document (trailing text fails),
    // and standard error.
    let alone = |args: &[std::ffi::OsString], what: &str| -> (serde_json::Value, String) {
        let out = goodput().args(args).args(["-o", "-"]).output().unwrap();
        let (stdout, stderr) =
            (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success(), "{what} failed: {stderr}");
        let doc = serde_json::from_str::<serde_json::Value>(&stdout)
            .unwrap_or_else(|e| panic!("{what}: stdout is not one document ({e}): {stdout:.600}"));
        assert_eq!(doc["schema"], "goodput/v1", "{what}");
        (doc, stderr)
    };
    let os = |v: &[&str]| v.iter().map(|s| std::ffi::OsString::from(*s)).collect::<Vec<_>>();
    let estimate = os(&["estimate", "--model", "llama-3.1-8b", "--rate", "10", "-n", "100"]);
    let (run, said) = alone(&estimate, "estimate");
    assert!(said.contains("engine (simulated)"), "estimate's engine lines went nowhere: {said}");
    std::fs::write(p("run.json"), run.to_string()).unwrap();
    let mut other = estimate.clone();
    other.extend(os(&["--seed", "7"]));
    let (other, _) = alone(&other, "estimate --seed 7");
    std::fs::write(p("other.json"), other.to_string()).unwrap();
    let sweep = os(&["sweep", "--estimate", "--model", "llama-3.1-8b", "--rate", "5,10", "-n", "100"]);
    let (doc, said) = alone(&sweep, "sweep --estimate");
    assert_eq!(doc["points"].as_array().map(Vec::len), Some(2), "the sweep's document is not its whole: {doc:.300}");
    assert!(said.contains("saturation"), "the sweep's analysis went nowhere: {said}");
    std::fs::write(p("sweep.json"), doc.to_string()).unwrap();
    for (args, what) in [
        (vec!["report".into(), p("sweep.json").into_os_string()], "report of a sweep"),
        (vec!["report".into(), p("run.json").into_os_string()], "report of a run"),
        (vec!["compare".into(), p("run.json").into_os_string(), p("other.json").into_os_string()], "compare"),
    ] {
        alone(&args, what);
    }
}

#[test]
fn two_outputs_naming_one_file_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.out");
    let err = goodput().args(RUN).arg("-o").arg(&same).arg("--records").arg(&same).refusal();
    assert!(err.contains("--output and --records both name"), "{err}");
    // Spelled otherwise, the same file all the same.
    let other = dir.path().join(".").join("same.out");
    let err = goodput().args(RUN).arg("--html").arg(&same).arg("--records").arg(&other).refusal();
    assert!(err.contains("--records and --html both name"), "{err}");
    assert!(!same.exists(), "the run went ahead");
    // A file the --csv folder writes, named by another output: the CSV had
    // replaced the result.
    let folder = dir.path().join("csv");
    let err = goodput().args(RUN).arg("-o").arg(folder.join("summary.csv")).arg("--csv").arg(&folder).refusal();
    assert!(err.contains("--output and --csv both name") && err.contains("summary.csv"), "{err}");
    assert!(!folder.exists(), "the run went ahead");
}

/// A run refused before it sends leaves the records file of an earlier run
/// as it was (it had been emptied when the server could not be reached).
#[test]
fn a_run_that_never_started_keeps_the_records_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("r.jsonl");
    std::fs::write(&records, "precious\n").unwrap();
    let err = goodput()
        .args(["bench", "-n", "2", "--url", "http://127.0.0.1:1", "--records"])
        .arg(&records)
        .timeout(std::time::Duration::from_secs(30))
        .refusal();
    assert!(err.contains("cannot reach"), "{err}");
    let err = goodput().args(["bench", "-n", "2", "--input-tokens", "200000", "--records"]).arg(&records).refusal();
    assert!(err.contains("context"), "{err}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), "precious\n");
}

/// `bench -o`, `report -o` and `merge -o` write their document through one
/// writer, streamed: each file is the document's pretty JSON and one
/// newline, byte for byte what serializing it whole gives, and no
/// temporary file is left beside it.
#[test]
fn bench_report_and_merge_write_their_documents_as_pretty_json_and_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    goodput().args(RUN).arg("-o").arg(p("bench.json")).arg("--include-requests").assert().success();
    goodput().arg("report").arg("-q").arg(p("bench.json")).arg("-o").arg(p("report.json")).assert().success();
    for i in 0..2 {
        let (out, rec) = (p(&format!("s{i}.json")), p(&format!("s{i}.jsonl")));
        goodput().args(RUN).args(["--seed", "4", "--shard", &format!("{i}/2")]).writing(&out, &rec).assert().success();
    }
    goodput()
        .args(["merge", "-q"])
        .arg(p("s0.json"))
        .arg(p("s1.json"))
        .arg("-o")
        .arg(p("merged.json"))
        .assert()
        .success();
    for name in ["bench.json", "report.json", "merged.json"] {
        let bytes = std::fs::read(p(name)).unwrap();
        let doc: goodput_core::RunResult = serde_json::from_slice(&bytes).expect(name);
        let mut whole = serde_json::to_vec_pretty(&doc).unwrap();
        whole.push(b'\n');
        assert!(bytes == whole, "{name} is not the document's pretty JSON and a newline");
    }
    assert!(std::fs::read_to_string(p("bench.json")).unwrap().contains("\n  \"requests\": [\n    {"));
    no_temporary_files(dir.path());
}

/// A failed or finished write leaves none of its `.NAME.tmp-PID` files.
fn no_temporary_files(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `report` takes only the records of the run it reports: another run's
/// are refused, naming both runs.
#[test]
fn report_refuses_the_records_of_another_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    for run in ["a", "b"] {
        goodput()
            .args(RUN)
            .arg("-o")
            .arg(p(&format!("{run}.json")))
            .arg("--records")
            .arg(p(&format!("{run}.jsonl")))
            .assert()
            .success();
    }
    let err = goodput().arg("report").arg(p("a.json")).arg("--records").arg(p("b.jsonl")).refusal();
    assert!(err.contains("holds records of run") && err.contains("not of this result's run"), "{err}");
    goodput().arg("report").arg(p("a.json")).arg("--records").arg(p("a.jsonl")).assert().success();
    // A record whose first byte comes before its send (it had been read as
    // a TTFT of 0) is refused, with its line.
    let text = std::fs::read_to_string(p("a.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let first_byte = lines[1]["first_byte_ns"].as_u64().unwrap();
    lines[1]["sent_ns"] = (first_byte + 1_000).into();
    let edited: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(p("edited.jsonl"), edited).unwrap();
    let err = goodput().arg("report").arg(p("a.json")).arg("--records").arg(p("edited.jsonl")).refusal();
    let said = format!("whose first_byte_ns {first_byte} came before its sent_ns {}", first_byte + 1_000);
    assert!(err.contains("line 2 holds request ") && err.contains(&said), "{err}");
}

/// A records file whose last line was cut (a full disk) is read up to it,
/// with a warning, rather than refused whole.
#[test]
fn a_records_file_cut_mid_line_is_read_up_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("run.jsonl"));
    goodput().args(RUN).arg("-o").arg(&out).arg("--records").arg(&rec).assert().success();
    let text = std::fs::read_to_string(&rec).unwrap();
    let cut = &text[..text.len() - 40];
    std::fs::write(&rec, cut).unwrap();
    let assert = goodput()
        .arg("report")
        .arg(&out)
        .arg("--records")
        .arg(&rec)
        .arg("-o")
        .arg(dir.path().join("again.json"))
        .assert()
        .success();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(err.contains("line 2 was cut short") && err.contains("read the 1 complete records"), "{err}");
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("again.json")).unwrap()).unwrap();
    assert_eq!(again["summary"]["requests"]["sent"], 1);
}

/// `--records run.parquet` (the extension chooses, in any case) writes the
/// records as Parquet: they read back as the ones the result holds, and
/// `report` of them gives the same figures; a cut file is refused saying
/// why.
#[cfg(feature = "parquet")]
#[test]
fn parquet_records_give_the_same_report_as_the_records_held_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out, rec) = (p("run.json"), p("run.Parquet"));
    goodput().args(RUN).arg("--include-requests").arg("-o").arg(&out).arg("--records").arg(&rec).assert().success();
    assert_eq!(&std::fs::read(&rec).unwrap()[..4], b"PAR1");
    let doc: goodput_core::RunResult = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut held = doc.requests.clone().unwrap();
    let mut back = cmd::records(&rec);
    assert!(back.iter().all(|r| r.run_id.as_deref() == Some(doc.run_id.as_str())), "each row names its run");
    back.iter_mut().for_each(|r| r.run_id = None);
    back.sort_by_key(|r| r.id);
    held.sort_by_key(|r| r.id);
    assert_eq!(back.len(), 2);
    assert!(back == held, "the Parquet rows are the records the result holds");
    // report from the Parquet file and from the records the result holds.
    let from = |args: &[&std::ffi::OsStr], o: &Path| {
        goodput().arg("report").arg(&out).args(args).arg("-o").arg(o).assert().success();
        cmd::read_json(o)
    };
    let a = from(&["--records".as_ref(), rec.as_os_str()], &p("a.json"));
    let b = from(&[], &p("b.json"));
    assert_eq!(a["summary"], b["summary"]);
    assert_eq!(a["summary"]["requests"]["sent"], 2);
    // Cut short, as a killed run leaves it.
    let whole = std::fs::read(&rec).unwrap();
    std::fs::write(&rec, &whole[..whole.len() - 100]).unwrap();
    let err = goodput().arg("report").arg(&out).arg("--records").arg(&rec).refusal();
    assert!(err.contains("run.Parquet is not a readable Parquet records file") && err.contains("footer"), "{err}");
}

/// A command's outputs never name one of its inputs (issue 29, defect 8):
/// `report`'s `-o`, `--html` or `--markdown` over its `--records`,
/// `merge`'s over a shard's records, `compare`'s over a run's records,
/// `bench`'s over its dataset. Each is refused before anything is written,
/// and the input is as it was.
#[test]
fn no_output_overwrites_an_input_of_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    goodput().args(RUN).arg("-o").arg(p("c.json")).arg("--records").arg(p("c.jsonl")).assert().success();
    for i in 0..2 {
        let (out, rec) = (p(&format!("s{i}.json")), p(&format!("s{i}.jsonl")));
        goodput().args(RUN).args(["--seed", "4", "--shard", &format!("{i}/2")]).writing(&out, &rec).assert().success();
    }
    let saved = |names: &[&str]| names.iter().map(|n| std::fs::read(p(n)).unwrap()).collect::<Vec<_>>();
    let inputs = ["c.json", "c.jsonl", "s0.json", "s0.jsonl", "s1.json", "s1.jsonl"];
    let before = saved(&inputs);
    let report = || {
        let mut c = goodput();
        c.arg("report").arg(p("c.json")).arg("--records").arg(p("c.jsonl"));
        c
    };
    for flag in ["-o", "--html", "--markdown"] {
        let err = report().arg(flag).arg(p("c.jsonl")).refusal();
        assert!(err.contains("c.jsonl") && err.contains("an input of this command (--records)"), "{flag}: {err}");
    }
    let err = report().arg("-o").arg(p("c.json")).refusal();
    assert!(err.contains("an input of this command (the result read)"), "{err}");
    let err = goodput().arg("merge").arg(p("s0.json")).arg(p("s1.json")).arg("--html").arg(p("s1.jsonl")).refusal();
    assert!(err.contains("s1.jsonl") && err.contains("an input of this command (a shard's records)"), "{err}");
    let err = goodput()
        .arg("compare")
        .args([p("c.json"), p("s0.json")])
        .arg("--records")
        .arg(p("c.jsonl"))
        .arg("--records")
        .arg(p("s0.jsonl"))
        .arg("--markdown")
        .arg(p("s0.jsonl"))
        .refusal();
    assert!(err.contains("an input of this command (--records)"), "{err}");
    let dataset = p("prompts.jsonl");
    std::fs::write(&dataset, "{\"prompt\": \"hello\"}\n").unwrap();
    // RUN without its --input-tokens, which a dataset's prompts refuse.
    let run = &RUN[..RUN.len() - 2];
    let err = goodput().args(run).arg("--dataset").arg(&dataset).arg("--records").arg(&dataset).refusal();
    assert!(err.contains("an input of this command (--dataset)"), "{err}");
    assert_eq!(std::fs::read(&dataset).unwrap(), b"{\"prompt\": \"hello\"}\n");
    assert!(saved(&inputs) == before, "an input was written over");
}

/// One file named twice through a link (issue 29, defect 9): a link to
/// an output that does not exist yet, and a second (hard) link to one that
/// does, are the same file, and refused as two outputs, or an output and
/// an input, naming it.
#[test]
fn one_file_named_twice_through_a_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::os::unix::fs::symlink("same.json", p("link.json")).unwrap();
    let err = goodput().args(RUN).arg("-o").arg(p("same.json")).arg("--records").arg(p("link.json")).refusal();
    assert!(err.contains("--output and --records both name"), "{err}");
    assert!(!p("same.json").exists(), "the run went ahead");
    goodput().args(RUN).arg("-o").arg(p("c.json")).arg("--records").arg(p("c.jsonl")).assert().success();
    std::fs::hard_link(p("c.jsonl"), p("hard.jsonl")).unwrap();
    let err = goodput().args(RUN).arg("-o").arg(p("c.jsonl")).arg("--records").arg(p("hard.jsonl")).refusal();
    assert!(err.contains("--output and --records both name"), "{err}");
    let err = goodput()
        .arg("report")
        .arg(p("c.json"))
        .arg("--records")
        .arg(p("c.jsonl"))
        .arg("--html")
        .arg(p("hard.jsonl"))
        .refusal();
    assert!(err.contains("an input of this command (--records)"), "{err}");
    std::os::unix::fs::symlink("c.jsonl", p("soft.jsonl")).unwrap();
    let err = goodput()
        .arg("report")
        .arg(p("c.json"))
        .arg("--records")
        .arg(p("soft.jsonl"))
        .arg("-o")
        .arg(p("c.jsonl"))
        .refusal();
    assert!(err.contains("an input of this command (--records)"), "{err}");
}

/// A records file holding a request twice (issue 29, defect 16: a file
/// concatenated with itself read as twice the run) is refused by `report`,
/// `compare` and `merge`, as another run's records are.
#[test]
fn records_holding_a_request_twice_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    goodput().args(RUN).arg("-o").arg(p("c.json")).arg("--records").arg(p("c.jsonl")).assert().success();
    let text = std::fs::read_to_string(p("c.jsonl")).unwrap();
    std::fs::write(p("twice.jsonl"), text.repeat(2)).unwrap();
    let err = goodput().arg("report").arg(p("c.json")).arg("--records").arg(p("twice.jsonl")).refusal();
    // The two requests end in either order: the first line's is met again on the third.
    assert!(err.contains("twice.jsonl holds request") && err.contains("twice (lines 1 and 3)"), "{err}");
    let err = goodput()
        .arg("compare")
        .args([p("c.json"), p("c.json")])
        .arg("--records")
        .arg(p("twice.jsonl"))
        .arg("--records")
        .arg(p("c.jsonl"))
        .refusal();
    assert!(err.contains("twice (lines 1 and 3)"), "{err}");
    for i in 0..2 {
        let (out, rec) = (p(&format!("s{i}.json")), p(&format!("s{i}.jsonl")));
        goodput().args(RUN).args(["--seed", "4", "--shard", &format!("{i}/2")]).writing(&out, &rec).assert().success();
    }
    let shard = std::fs::read_to_string(p("s1.jsonl")).unwrap();
    std::fs::write(p("s1.jsonl"), shard.repeat(2)).unwrap();
    let err = goodput().arg("merge").arg(p("s0.json")).arg(p("s1.json")).refusal();
    assert!(err.contains("s1.jsonl") && err.contains("twice"), "{err}");
    goodput().arg("report").arg(p("c.json")).arg("--records").arg(p("c.jsonl")).assert().success();
}

/// Records that cannot be written (a full disk: `/dev/full` answers every
/// write with ENOSPC) leave the run going, and the end says how many were
/// lost, where it once said only that writing failed.
#[test]
fn records_lost_to_a_full_disk_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = goodput().args(RUN).arg("-o").arg(&out).args(["--records", "/dev/full"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("writing records to /dev/full failed") && err.contains("after 0 records"), "{err}");
    assert!(err.contains("the 2 records from then on were not written"), "{err}");
    assert!(is_result(&std::fs::read_to_string(&out).unwrap()), "the result is written all the same");
}

#[test]
fn a_csv_name_ending_in_csv_is_the_main_table_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("r.csv");
    goodput().args(RUN).arg("--csv").arg(&table).assert().success();
    assert!(table.is_file(), "--csv r.csv writes a file, not a folder");
    let text = std::fs::read_to_string(&table).unwrap();
    assert_eq!(text.lines().count(), 2, "the summary: a header and one row\n{text}");
    // A name without the extension is still a folder of every table.
    let folder = dir.path().join("tables");
    goodput().args(RUN).arg("--csv").arg(&folder).assert().success();
    assert!(folder.is_dir() && folder.join("summary.csv").is_file());
}

/// A standard error whose reader went away (`2>&1 | head -1`) loses no
/// output: every file is written and the command ends as it would have.
/// (Its first line had panicked, exit 101, with the HTML unwritten.)
#[test]
fn a_standard_error_gone_loses_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("run.json"), dir.path().join("run.html"));
    let mut child = goodput_child()
        .args(["estimate", "-n", "20", "-c", "2", "-o"])
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .spawn()
        .unwrap();
    // Every write to the pipe now fails (EPIPE).
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(json.exists() && html.exists());
}

/// An output under a path whose part is a file says so (it had said it
/// could not create "the folder small.json").
#[test]
fn an_output_under_a_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("small.json");
    std::fs::write(&file, "{}").unwrap();
    for flag in ["-o", "--csv"] {
        let err = goodput().args(["estimate", "-n", "2", "-q", flag]).arg(file.join("x")).refusal();
        assert!(
            err.contains("small.json is a file, not a folder") && err.contains("a path in a folder"),
            "{flag}: {err}"
        );
    }
}

/// A warm-up that takes every request says so (it had said "0 sent, 0
/// failed; first failure: no request finished").
#[test]
fn a_warm_up_that_takes_every_request_says_so() {
    let err = goodput().args(["estimate", "-q", "--rate", "10", "--duration", "1s", "--warmup", "100"]).refusal();
    assert!(err.contains("the warm-up took all 10 sent") && err.contains("fewer to --warmup"), "{err}");
}

/// A result or records file named as another format is refused before the
/// run, naming the flag that writes that format: `-o run.html` had written
/// JSON into run.html, and `--records run.csv` JSON lines into run.csv.
#[test]
fn a_result_or_records_file_named_as_another_format_is_refused_with_the_flag_that_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let err = goodput().args(RUN).arg("-o").arg(&page).refusal();
    assert!(err.contains("would hold the result document as JSON, not an HTML page"), "{err}");
    assert!(err.contains("run.json") && err.contains("--html"), "{err}");
    let table = dir.path().join("rec.CSV");
    let err = goodput().args(RUN).arg("--records").arg(&table).refusal();
    assert!(err.contains("--records") && err.contains("not CSV") && err.contains("rec.jsonl"), "{err}");
    // `--csv NAME.csv` would write the summary alone: the records are a
    // folder's requests.csv.
    assert!(err.contains("write the records as CSV with --csv DIR (its requests.csv)"), "{err}");
    assert!(!page.exists() && !table.exists(), "the run went ahead");
    // Names of the formats they write are taken.
    let (out, rec) = (dir.path().join("r.json"), dir.path().join("r.parquet"));
    goodput().args(RUN).arg("-o").arg(&out).arg("--records").arg(&rec).assert().success();
    assert!(out.exists() && rec.exists());
}

/// `report -o` and `plan -o` write JSON too (a re-analysed result, a
/// frontier): a name that asks for another format is refused before
/// anything is written, naming the flag that writes it, or that the command
/// writes no such format (plan writes no Markdown; neither writes Parquet).
/// They had written JSON into `x.md` and `x.html` without a word.
#[test]
fn report_and_plan_refuse_an_output_named_as_another_format() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    goodput().args(RUN).arg("-o").arg(&run).assert().success();
    let md = dir.path().join("x.md");
    let err = goodput().arg("report").arg(&run).arg("-o").arg(&md).refusal();
    assert!(err.contains("would hold the result document as JSON, not Markdown"), "{err}");
    assert!(err.contains("name it") && err.contains("x.json") && err.contains("--markdown"), "{err}");
    let pq = dir.path().join("x.parquet");
    let err = goodput().arg("report").arg(&run).arg("-o").arg(&pq).refusal();
    assert!(err.contains("not Parquet") && err.contains("(report writes no Parquet)"), "{err}");
    // The names it does write are taken, and the refusals wrote nothing.
    let json = dir.path().join("again.json");
    goodput().arg("report").arg(&run).arg("-q").arg("-o").arg(&json).assert().success();
    assert!(is_result(&std::fs::read_to_string(&json).unwrap()));
    assert!(!md.exists() && !pq.exists());

    // plan refuses before it searches (each name below would cost a search).
    let plan = ["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "-o"];
    let page = dir.path().join("frontier.HTML");
    let err = goodput().args(plan).arg(&page).refusal();
    assert!(err.contains("would hold the frontier as JSON, not an HTML page"), "{err}");
    assert!(err.contains("frontier.json") && err.contains("--html"), "{err}");
    let err = goodput().args(plan).arg(&md).refusal();
    assert!(err.contains("not Markdown") && err.contains("(plan writes no Markdown)"), "{err}");
    assert!(!err.contains("--markdown"), "plan has no Markdown to offer: {err}");
    assert!(!page.exists() && !md.exists());
}

/// `merge` writes what bench does (a result document, records) and
/// `compare -o` a comparison as JSON: a name of another format is refused
/// as bench refuses it, before a shard or run is read.
#[test]
fn merge_and_compare_refuse_an_output_named_as_another_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    for i in 0..2 {
        let (out, rec) = (p(&format!("s{i}.json")), p(&format!("s{i}.jsonl")));
        goodput().args(RUN).args(["--seed", "4", "--shard", &format!("{i}/2")]).writing(&out, &rec).assert().success();
    }
    let merge = || {
        let mut c = goodput();
        c.args(["merge", "-q"]).arg(p("s0.json")).arg(p("s1.json"));
        c
    };
    let err = merge().arg("-o").arg(p("merged.md")).refusal();
    assert!(err.contains("would hold the result document as JSON, not Markdown"), "{err}");
    assert!(err.contains("merged.json") && err.contains("--markdown"), "{err}");
    let err = merge().arg("--records").arg(p("merged.csv")).refusal();
    assert!(err.contains("--records") && err.contains("not CSV") && err.contains("merged.jsonl"), "{err}");
    let err = goodput().arg("compare").arg(p("s0.json")).arg(p("s1.json")).arg("-o").arg(p("diff.html")).refusal();
    assert!(err.contains("would hold the comparison as JSON, not an HTML page"), "{err}");
    assert!(err.contains("diff.json") && err.contains("--html"), "{err}");
    let err = goodput().arg("compare").arg(p("s0.json")).arg(p("s1.json")).arg("-o").arg(p("d.parquet")).refusal();
    assert!(err.contains("(compare writes no Parquet)"), "{err}");
    for name in ["merged.md", "merged.csv", "diff.html", "d.parquet"] {
        assert!(!p(name).exists(), "{name} was written");
    }
    // The names of what they write are taken.
    merge().arg("-o").arg(p("merged.json")).arg("--records").arg(p("merged.parquet")).assert().success();
    assert!(is_result(&std::fs::read_to_string(p("merged.json")).unwrap()) && p("merged.parquet").exists());
}
