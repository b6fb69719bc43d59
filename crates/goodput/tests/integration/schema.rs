//! Real outputs of every command that writes a document — bench (with its
//! records, in the document and in the JSONL file), estimate, sweep and
//! compare — checked against the committed JSON Schema,
//! docs/schema/goodput-v1.schema.json (goodput-report's tests keep that file
//! equal to the one derived from the types). Also checked against a strict
//! copy that allows no field the schema does not name, so that a field the
//! binary writes under another name than the schema's is caught; and a
//! document missing its summary, or of the wrong kind, must fail.

#[allow(dead_code)]
use crate::cmd;

use cmd::{goodput, read_json, GoodputCommand, FAST};
use jsonschema::Validator;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/goodput-v1.schema.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A validator of one `$defs` entry of `schema` (`RunResult`, `RequestRecord`)
/// or, with `None`, of the whole document schema.
fn validator(schema: &Value, def: Option<&str>) -> Validator {
    let s = match def {
        Some(d) => json!({
            "$schema": schema["$schema"],
            "$ref": format!("#/$defs/{d}"),
            "$defs": schema["$defs"],
        }),
        None => schema.clone(),
    };
    jsonschema::draft202012::new(&s).unwrap()
}

/// `schema` with `additionalProperties: false` on every object schema that
/// names its properties and says nothing of others.
fn strict(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if m.get("properties").is_some_and(Value::is_object) && !m.contains_key("additionalProperties") {
                    m.insert("additionalProperties".into(), Value::Bool(false));
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

/// Every error of `doc` against `v`, one a line with where it is.
fn errors(v: &Validator, doc: &Value) -> String {
    v.iter_errors(doc).map(|e| format!("{}: {e}\n", e.instance_path())).collect()
}

/// Checks `doc` against its kind's definition (`def`, for errors that say
/// where), the whole schema, and the strict copy of both.
pub(crate) fn assert_valid(doc: &Value, def: &str, what: &str) {
    for s in [schema(), strict(schema())] {
        let errs = errors(&validator(&s, Some(def)), doc);
        assert!(errs.is_empty(), "{what} does not match $defs/{def}:\n{errs}");
        assert!(validator(&s, None).is_valid(doc), "{what} does not match the document schema");
    }
}

fn path(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

#[test]
fn every_command_writes_documents_the_schema_accepts() {
    let dir = tempfile::tempdir().unwrap();

    // bench against the embedded server, judged and priced, its records both
    // in the document and in the JSONL file.
    let (run, rec) = (path(&dir, "run.json"), path(&dir, "rec.jsonl"));
    goodput()
        .args(["bench", "-q", "-n", "6", "-c", "3", "--include-requests"])
        .args(["--slo", "ttft<=10s,ttft:p95<=10s", "--gpu-hour-usd", "2"])
        .args(FAST)
        .writing(&run, &rec)
        .assert()
        .success();
    let bench = read_json(&run);
    assert_eq!(bench["requests"].as_array().map(Vec::len), Some(6), "--include-requests");
    assert!(bench["slo"].is_object() && bench["cost"].is_object() && bench["summary"]["goodput"].is_object());
    assert_valid(&bench, "RunResult", "bench");
    let records: Vec<Value> =
        std::fs::read_to_string(&rec).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 6);
    for (i, r) in records.iter().enumerate() {
        assert_valid_record(r, &format!("record {i} of --records"));
    }

    // Two shards of one run (each against an embedded server of its own)
    // and their merge: the shard and merge blocks.
    let mut shards = Vec::new();
    for i in 0..2 {
        let (s, r) = (path(&dir, &format!("s{i}.json")), path(&dir, &format!("s{i}.jsonl")));
        goodput()
            .args(["bench", "-q", "-n", "6", "-c", "2", "--seed", "5", "--shard", &format!("{i}/2")])
            .args(FAST)
            .writing(&s, &r)
            .assert()
            .success();
        let shard = read_json(&s);
        assert_eq!(shard["shard"]["index"], i);
        assert_valid(&shard, "RunResult", "a shard");
        shards.push(s);
    }
    let merged = path(&dir, "merged.json");
    goodput().args(["merge", "-q"]).args(&shards).arg("-o").arg(&merged).assert().success();
    let merged = read_json(&merged);
    assert_eq!(merged["merge"]["shards"].as_array().map(Vec::len), Some(2));
    assert_valid(&merged, "RunResult", "a merged run");

    // estimate: the simulated engine's block, sessions and their turns.
    let est = path(&dir, "estimate.json");
    goodput()
        .args(["estimate", "-q", "-n", "4", "-c", "2", "--turns", "2", "--output-tokens", "8", "--input-tokens", "16"])
        .args(["--include-requests", "-o"])
        .arg(&est)
        .assert()
        .success();
    let estimate = read_json(&est);
    assert!(estimate["engine"].is_object() && estimate["summary"]["sessions"].is_object(), "{estimate}");
    assert_valid(&estimate, "RunResult", "estimate");

    // A sweep of simulated points under an SLO, so its analysis names them.
    let sw = path(&dir, "sweep.json");
    goodput()
        .args(["sweep", "--estimate", "-q", "--concurrency", "1,2", "-n", "4", "--output-tokens", "8"])
        .args(["--input-tokens", "16", "--slo", "ttft<=10s", "-o"])
        .arg(&sw)
        .assert()
        .success();
    let sweep = read_json(&sw);
    assert_eq!(sweep["points"].as_array().map(Vec::len), Some(2));
    assert_valid(&sweep, "SweepResult", "sweep");

    // compare to a file, and the same document on standard output (--json -).
    let cmp = path(&dir, "compare.json");
    let rules = ["--fail-if", "ttft_ms.p95>+10%"];
    let o = goodput().arg("compare").arg(&run).arg(&run).arg(&est).args(rules).arg("-o").arg(&cmp).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&o.stderr));
    let comparison = read_json(&cmp);
    assert_eq!((comparison["schema"].as_str(), comparison["kind"].as_str()), (Some("goodput/v1"), Some("compare")));
    assert!(comparison["note"].is_string() && !comparison["verdicts"].as_array().unwrap().is_empty(), "{comparison}");
    assert_valid(&comparison, "Comparison", "compare");
    let o = goodput().arg("compare").arg(&run).arg(&run).args(rules).args(["--json", "-"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout: Value = serde_json::from_slice(&o.stdout).expect("standard output holds the document alone");
    assert_valid(&stdout, "Comparison", "compare --json -");

    // A comparison is not a run: report says so rather than misread it.
    let err = goodput().arg("report").arg(&cmp).refusal();
    assert!(err.contains("is a comparison"), "{err}");
}

/// A record against `$defs/RequestRecord` and its strict copy.
fn assert_valid_record(r: &Value, what: &str) {
    for s in [schema(), strict(schema())] {
        let errs = errors(&validator(&s, Some("RequestRecord")), r);
        assert!(errs.is_empty(), "{what} does not match $defs/RequestRecord:\n{errs}");
    }
}

/// A document with its summary taken out, or whose kind names another kind,
/// fails: the kinds are told apart, and each has its required fields.
#[test]
fn a_document_missing_its_summary_or_of_the_wrong_kind_fails() {
    let dir = tempfile::tempdir().unwrap();
    let run = path(&dir, "run.json");
    goodput().args(["estimate", "-q", "-n", "2", "-c", "1", "--output-tokens", "4", "-o"]).arg(&run).assert().success();
    let doc = read_json(&run);
    let s = schema();
    let whole = validator(&s, None);
    assert!(whole.is_valid(&doc), "{}", errors(&validator(&s, Some("RunResult")), &doc));

    let mut no_summary = doc.clone();
    no_summary.as_object_mut().unwrap().remove("summary");
    assert!(!whole.is_valid(&no_summary), "a run without its summary passed");
    let errs = errors(&validator(&s, Some("RunResult")), &no_summary);
    assert!(errs.contains("summary"), "{errs}");

    for kind in ["sweep", "compare", "report", ""] {
        let mut wrong = doc.clone();
        wrong["kind"] = json!(kind);
        assert!(!whole.is_valid(&wrong), "a run of kind '{kind}' passed");
    }
    let mut wrong_schema = doc.clone();
    wrong_schema["schema"] = json!("goodput/v2");
    assert!(!whole.is_valid(&wrong_schema), "a run of schema goodput/v2 passed");

    // A sweep whose point lost its summary fails too: points are runs.
    let sweep = json!({
        "schema": "goodput/v1",
        "tool": doc["tool"],
        "kind": "sweep",
        "started_unix_s": 0.0,
        "config": {},
        "target": doc["target"],
        "points": [{ "load": { "kind": "concurrency", "value": 1 }, "origin": "grid", "result": doc }],
        "analysis": { "notes": [] },
    });
    assert!(whole.is_valid(&sweep), "{}", errors(&validator(&s, Some("SweepResult")), &sweep));
    let mut hollow = sweep.clone();
    hollow["points"][0]["result"].as_object_mut().unwrap().remove("summary");
    assert!(!whole.is_valid(&hollow), "a sweep point without its summary passed");
    let mut as_run = sweep;
    as_run["kind"] = json!("bench");
    assert!(!whole.is_valid(&as_run), "a sweep calling itself a bench run passed");
}
